//! `runner run`: typed options in, a summary out. The engine does the work
//! (`engine::run`); this operation settles a spec's existing work first (continue, merge, or
//! discard and start fresh, answered through the front end's [`Asker`]), and runs every
//! interrupted spec for `run --auto-continue` without `--spec`. Progress goes to the sink it is
//! given; nothing here prints or asks.

pub use crate::engine::jobs::JobsOptions;
pub use crate::engine::progress::{Progress, ProgressSink};
pub use crate::engine::run::ask::{Asker, Nobody};
pub use crate::engine::run::{RunOptions, RunReport};

use super::{Ctx, Person};

/// Run one spec: `opts.spec` (fuzzy; several matches are asked of `person` where it can ask),
/// the slot's, or the only one there is.
pub fn run(ctx: &Ctx, mut opts: RunOptions, person: &dyn Person) -> anyhow::Result<RunReport> {
    opts.spec = Some(ctx.spec_name(opts.spec.as_deref(), person)?);
    run_spec(ctx, opts, person)
}

/// What `runner run --plan-only` did, and the plan to read.
#[derive(Debug)]
pub struct PlanOnlyReport {
    /// The run that planned the spec; none when it had a plan already (nothing was started).
    pub planned: Option<RunReport>,
    pub plan: super::plan::PlanReport,
}

/// `runner run --plan-only`: the spec's plan, written first by a run that stops before any
/// chunk when there is none yet. A plan that is there (and reads) is only shown: no run, no
/// lock, nothing changed. One that does not read goes to the run, whose recovery deals with it
/// as for any run.
pub fn plan_only(
    ctx: &Ctx,
    mut opts: RunOptions,
    person: &dyn Person,
) -> anyhow::Result<PlanOnlyReport> {
    let name = ctx.spec_name(opts.spec.as_deref(), person)?;
    let paths = ctx.ws.spec(&name)?;
    let max_attempts = ctx.ws.config()?.run.max_attempts;
    let planned = match paths.plan.load() {
        Ok(Some(_)) => None,
        _ => {
            opts.spec = Some(name);
            opts.plan_only = true;
            Some(run_spec(ctx, opts, person)?)
        }
    };
    Ok(PlanOnlyReport {
        planned,
        plan: super::plan::plan_of(&paths, max_attempts)?,
    })
}

/// Run the spec `opts.spec` names exactly.
fn run_spec(ctx: &Ctx, opts: RunOptions, asker: &dyn Asker) -> anyhow::Result<RunReport> {
    let progress = ctx.progress().clone();
    crate::engine::block_on(async {
        let mut prepared =
            crate::engine::run::prepare(&ctx.ws, &ctx.cwd, &opts, progress, asker).await?;
        match super::choice::settle_existing_work(&prepared, &opts, asker) {
            Ok(super::choice::Choice::Merged) => prepared.merged().await,
            Ok(choice) => {
                if matches!(choice, super::choice::Choice::DiscardedStartFresh) {
                    prepared.started_afresh();
                }
                prepared.execute().await
            }
            Err(e) => {
                // Cancelled, or no terminal to ask on: "nothing was changed" must hold. (A
                // confirmed re-pin is written only once every question is answered, so a
                // signal that ends runner at a question leaves the pin as it was.)
                prepared.abandon(&e);
                prepared.undo_repin()?;
                Err(e)
            }
        }
    })
}

/// `runner run --auto-continue` with no `--spec`: every spec that was interrupted, most recent
/// first, each recovered and resumed by a run of its own. A spec that fails does not stop the
/// others (its error is reported as progress and the first one returned at the end); an
/// interruption stops them all.
pub fn run_interrupted(
    ctx: &Ctx,
    opts: RunOptions,
    asker: &dyn Asker,
) -> anyhow::Result<Vec<RunReport>> {
    let found = crate::engine::run::interrupted_specs(&ctx.ws);
    let take = found
        .specs
        .into_iter()
        .map(|s| (s, super::jobs::Kind::Interrupted))
        .collect();
    let chosen = super::jobs::Chosen {
        take,
        skipped: Vec::new(),
        paused: found.paused,
    };
    one_by_one(ctx, opts, chosen, asker)
}

/// `runner run --jobs 1 [SPEC…]`: the specs `run --jobs` chooses (`ops::jobs::choose`), one
/// after the other in this process, as `run_interrupted` runs its specs.
pub fn run_chosen(
    ctx: &Ctx,
    opts: RunOptions,
    named: &[String],
    asker: &dyn Asker,
) -> anyhow::Result<Vec<RunReport>> {
    let chosen = super::jobs::choose(ctx, named)?;
    one_by_one(ctx, opts, chosen, asker)
}

/// Each spec of `chosen` by a run of its own, one after the other. After a spec stopped by its
/// agent account's usage limit (exit 6), the other specs of that account are left (exit 6 at
/// the end if nothing else failed); with `--wait` each run waits out its own pause.
fn one_by_one(
    ctx: &Ctx,
    opts: RunOptions,
    chosen: super::jobs::Chosen,
    asker: &dyn Asker,
) -> anyhow::Result<Vec<RunReport>> {
    let progress = ctx.progress().clone();
    let mut summaries = Vec::new();
    let mut first_error = FirstError::paused(&chosen.paused, progress.as_ref());
    say_skipped(&chosen.skipped, progress.as_ref());
    let mut list = super::jobs::List::new(
        &ctx.ws,
        chosen.take,
        &chosen.paused,
        &opts,
        progress.clone(),
    );
    while let Some(job) = crate::engine::jobs::JobSource::next(&mut list, &[]) {
        let spec = job.spec;
        let line = crate::engine::jobs::JobSource::starting(&list, &spec);
        progress.report(Progress::Line(&line));
        let one = RunOptions {
            spec: Some(spec.clone()),
            ..opts.clone()
        };
        let limited = match run_spec(ctx, one, asker) {
            Ok(summary) => {
                summaries.push(summary);
                false
            }
            Err(e) if crate::error::exit_code_of(&e) == crate::error::exit::INTERRUPTED => {
                return Err(e);
            }
            Err(e) => {
                progress.report(Progress::Line(&format!("runner: {e:#}")));
                let limited = crate::error::exit_code_of(&e) == crate::error::exit::USAGE_LIMITED;
                first_error.add(e);
                limited
            }
        };
        list.job_ended(&spec, limited);
    }
    first_error.limited(&list.limited);
    first_error.or(summaries)
}

/// `runner run --jobs N [SPEC…]` (N ≥ 2): the specs `ops::jobs::choose` finds, up to N at the
/// same time, each by a `runner run` of its own in a slot of its own (`engine::jobs`). Exit
/// as `run_interrupted`: the first error (a skipped pause counting least), interrupted when
/// stopped — once every job has drained. A spec another runner took meanwhile is skipped,
/// never run twice.
pub fn run_jobs(
    ctx: &Ctx,
    jobs: &JobsOptions,
    opts: &RunOptions,
    named: &[String],
) -> anyhow::Result<Vec<RunReport>> {
    use crate::engine::jobs::JobEnd;
    let chosen = super::jobs::choose(ctx, named)?;
    let progress = ctx.progress().clone();
    let mut first_error = FirstError::paused(&chosen.paused, progress.as_ref());
    say_skipped(&chosen.skipped, progress.as_ref());
    let job_progress = |spec: &str| progress.job(spec);
    let mut source =
        super::jobs::List::new(&ctx.ws, chosen.take, &chosen.paused, opts, progress.clone());
    let report = crate::engine::jobs::drive_jobs(
        &ctx.ws,
        &mut source,
        jobs,
        progress.clone(),
        &job_progress,
    )?;
    let mut interrupted = report.interrupted;
    let mut summaries = Vec::new();
    for (_, end) in report.ends {
        match end {
            JobEnd::Ran(summary) => summaries.push(summary),
            JobEnd::Skipped(_) => {}
            JobEnd::Failed(e) if crate::error::is_interrupted(&e) => interrupted = true,
            JobEnd::Failed(e) => first_error.add(e),
        }
    }
    if interrupted {
        return Err(crate::error::RunnerError::Interrupted.into());
    }
    first_error.limited(&source.limited);
    first_error.or(summaries)
}

/// The specs left for a reason of their own, each said with it.
fn say_skipped(skipped: &[(String, String)], progress: &dyn ProgressSink) {
    for (spec, why) in skipped {
        progress.report(Progress::Line(&format!("Skipped spec {spec}: {why}")));
    }
}

/// The error several runs end with: the first one, except that a spec skipped because a usage
/// limit still pauses it (exit 6) gives way to any other.
struct FirstError(Option<anyhow::Error>);

impl FirstError {
    /// Specs a usage limit still pauses are left for later: the run says so and ends with
    /// exit 6 if nothing else went wrong.
    fn paused(
        paused: &[(String, chrono::DateTime<chrono::Utc>)],
        progress: &dyn ProgressSink,
    ) -> FirstError {
        let mut first = None;
        let now = chrono::Utc::now();
        for (spec, until) in paused {
            let message = format!(
                "spec {spec} is paused by a usage limit {} ({}); skipped (run again after it)",
                crate::clock::until_words(*until, now),
                until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            );
            progress.report(Progress::Line(&message));
            first.get_or_insert(crate::error::RunnerError::UsageLimited(message).into());
        }
        FirstError(first)
    }

    /// Specs not started because a job of their agent account hit its usage limit: exit 6
    /// if nothing else went wrong, naming them.
    fn limited(&mut self, limited: &[(String, String, chrono::DateTime<chrono::Utc>)]) {
        let Some((_, account, until)) = limited.first() else {
            return;
        };
        let specs: Vec<&str> = limited.iter().map(|(s, _, _)| s.as_str()).collect();
        let message = format!(
            "not started: {} (account {account} is paused by a usage limit {} ({})); run again after it, or pass --wait",
            specs.join(", "),
            crate::clock::until_words(*until, chrono::Utc::now()),
            until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
        match &self.0 {
            None => self.0 = Some(crate::error::RunnerError::UsageLimited(message).into()),
            // Another usage limit (the job's own that held these back, a paused spec): one
            // error says both, with the first one's hints.
            Some(first)
                if crate::error::exit_code_of(first) == crate::error::exit::USAGE_LIMITED =>
            {
                let report = crate::error::ErrorReport::of(first);
                let both = crate::error::RunnerError::UsageLimited(format!(
                    "{}\n{message}",
                    report.message
                ));
                let both = report.hints.into_iter().fold(both, |e, h| e.with_hint(h));
                self.0 = Some(both.into());
            }
            Some(_) => {}
        }
    }

    fn add(&mut self, e: anyhow::Error) {
        // Any other error outranks a skipped pause.
        match &self.0 {
            Some(first)
                if crate::error::exit_code_of(first) != crate::error::exit::USAGE_LIMITED => {}
            _ => self.0 = Some(e),
        }
    }

    fn or(self, summaries: Vec<RunReport>) -> anyhow::Result<Vec<RunReport>> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(summaries),
        }
    }
}
