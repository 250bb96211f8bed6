//! `runner resume`, the whole operation: resolve the run meant (a choice among several is the
//! person's, or the report's), summarise where it stood, write the handoff document when asked
//! (or configured), show the summary, then continue it as `runner run --spec S
//! --auto-continue` would, as a new run with `resumed_from`.

use serde::Serialize;

use super::{Match, ResumeOptions, ResumeSummary, Target, handoff, resolve, summary_of};
use crate::engine::run::{RunOptions, RunReport};
use crate::error::RunnerError;
use crate::ops::{Ctx, Nobody, Person};
use crate::policy::resolve::Candidate;

/// The person `runner resume` meets: which of several runs, and where the run stood, shown
/// before it goes on.
pub trait ResumeAsker: Person {
    /// Several runs could be resumed: the `choice` number of the one picked, or `None` when
    /// nobody can be asked (the report then lists them).
    fn pick_run(&self, _hint: Option<&str>, _matches: &[Match]) -> anyhow::Result<Option<usize>> {
        Ok(None)
    }

    /// Where the run being resumed stood, before it continues (`continuing`; false: nothing
    /// is started, `--no-run`).
    fn show_summary(&self, _summary: &ResumeSummary, _continuing: bool) {}
}

impl ResumeAsker for Nobody {}

/// Where `runner resume` ended.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ResumeReport {
    /// The run resolved, summarised and (unless `no_run`) continued.
    Resumed {
        #[serde(flatten)]
        summary: Box<ResumeSummary>,
        /// The run that continued it (none with `no_run`).
        run: Option<RunReport>,
    },
    /// Several runs match and nobody picked one: the list to choose from (`--choice N` or
    /// `--run ID` names one).
    ChoiceNeeded {
        success: bool,
        matches: Vec<Match>,
        user_hint: Option<String>,
    },
}

/// `runner resume`.
pub fn resume(
    ctx: &Ctx,
    opts: ResumeOptions,
    person: &dyn ResumeAsker,
) -> anyhow::Result<ResumeReport> {
    let now = ctx.now();
    let target = match resolve(&ctx.ws, &opts, now)? {
        Target::One(c) => c,
        Target::Ambiguous { matches, user_hint } => {
            let Some(picked) = person.pick_run(user_hint.as_deref(), &matches)? else {
                return Ok(ResumeReport::ChoiceNeeded {
                    success: false,
                    matches,
                    user_hint,
                });
            };
            // Resolve again by what was picked (its full run id, else its exact spec name),
            // never by its position: the list may have changed while the person chose.
            let chosen = matches
                .iter()
                .find(|m| m.choice == picked)
                .ok_or_else(|| RunnerError::bad_input("no such choice"))?;
            let again = match &chosen.run_id {
                Some(id) => ResumeOptions {
                    run: Some(id.clone()),
                    ..ResumeOptions::default()
                },
                None => ResumeOptions {
                    spec: Some(chosen.spec.clone()),
                    ..ResumeOptions::default()
                },
            };
            match resolve(&ctx.ws, &again, now)? {
                Target::One(c) => c,
                Target::Ambiguous { matches, .. } => {
                    return Err(ambiguous(Some(&chosen.spec), &matches).into());
                }
            }
        }
    };
    continue_with(ctx, &target, &opts, person)
}

/// `runner resume --spec <spec>` for a spec known by its exact name (`runner new` continuing
/// the one chosen): several matches are an error.
pub fn resume_spec(
    ctx: &Ctx,
    spec: &str,
    run: RunOptions,
    person: &dyn ResumeAsker,
) -> anyhow::Result<(ResumeSummary, RunReport)> {
    let opts = ResumeOptions {
        spec: Some(spec.to_string()),
        go: run,
        ..ResumeOptions::default()
    };
    let target = match resolve(&ctx.ws, &opts, ctx.now())? {
        Target::One(c) => c,
        Target::Ambiguous { matches, .. } => return Err(ambiguous(Some(spec), &matches).into()),
    };
    match continue_with(ctx, &target, &opts, person)? {
        ResumeReport::Resumed {
            summary,
            run: Some(done),
        } => Ok((*summary, done)),
        _ => Err(anyhow::anyhow!("resuming {spec} started no run")),
    }
}

/// Summarise `target`, write the handoff when asked, show the summary, and (unless `no_run`)
/// continue it.
fn continue_with(
    ctx: &Ctx,
    target: &Candidate,
    opts: &ResumeOptions,
    person: &dyn ResumeAsker,
) -> anyhow::Result<ResumeReport> {
    let now = ctx.now();
    let mut summary = summary_of(&ctx.ws, target, now)?;
    let mut written = None;
    if opts.handoff || ctx.ws.config()?.resume.handoff {
        let path = handoff::write(&ctx.ws, &summary, now)?;
        summary.handoff_document = Some(path.display().to_string());
        written = Some(path);
    }
    person.show_summary(&summary, !opts.no_run);
    if opts.no_run {
        return Ok(ResumeReport::Resumed {
            summary: Box::new(summary),
            run: None,
        });
    }
    let run = RunOptions {
        spec: Some(target.spec.clone()),
        auto_continue: true,
        resumed_from: target.run_id.clone(),
        ..opts.go.clone()
    };
    let done = crate::ops::run::run(ctx, run, person).inspect_err(|e| {
        // The handoff was written before the run's own checks (a budget spent, a busy
        // slot): say in it that the run did not go on.
        let Some(path) = &written else { return };
        let code = crate::error::exit_code_of(e);
        let why = format!("{e:#}");
        if let Err(w) = handoff::note_not_continued(path, &summary, now, code, &why) {
            crate::output::warn(&format!("the handoff document was not updated: {w}"));
        }
    })?;
    Ok(ResumeReport::Resumed {
        summary: Box::new(summary),
        run: Some(done),
    })
}

/// Several runs match and nobody picked one: exit 2, with each one's command.
pub fn ambiguous(hint: Option<&str>, matches: &[Match]) -> RunnerError {
    let what = hint.map_or("The hint".to_string(), |h| format!("'{h}'"));
    let mut e = RunnerError::bad_input(format!(
        "{what} matches {}; name one",
        crate::text::count(matches.len(), "resumable run")
    ));
    for m in matches {
        e = e.with_hint(format!("{}: {}", match_line(m), m.command));
    }
    e.with_hint("or pass --choice N to take the Nth")
}

/// One match as the list shows it.
pub fn match_line(m: &Match) -> String {
    let t = |s: &str| crate::text::for_terminal(s).into_owned();
    format!(
        "{}. {}  spec {}  chunk {}  last active {}",
        m.choice,
        m.shown.as_deref().unwrap_or("(no run record)"),
        t(&m.spec),
        m.chunk.as_deref().map_or("-".into(), t),
        m.last_activity.map_or("unknown".into(), |a| a
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
    )
}
