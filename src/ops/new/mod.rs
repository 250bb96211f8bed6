//! `runner new DESCRIPTION`: look for unfinished work like it first (`ops::detect`), let the
//! person continue that instead (asked through the [`Person`]; `choice` or `new_spec` without
//! one), else create the spec (`create`); with `run`, go straight on as `runner resume <spec>`
//! or `runner run --spec <spec>` would.

mod create;

pub use create::{Created, NewSpec, check_description, check_name, create, requirements};

use std::path::PathBuf;

use serde::Serialize;

use super::detect::{Candidate, ContinueWith, DETECTION_BOUND, Detection};
use super::resume::ResumeAsker;
use super::{Ctx, Nobody};
use crate::engine::run::{RunOptions, RunReport};
use crate::error::RunnerError;

#[derive(Debug, Clone, Default)]
pub struct NewOptions {
    /// What to build, in a sentence or more.
    pub description: String,
    /// The slug instead of one made from the description.
    pub name: Option<String>,
    /// This file's text as the spec's spec.md.
    pub spec_file: Option<PathBuf>,
    /// Start a new spec without looking for unfinished work like it.
    pub new_spec: bool,
    /// Continue the Nth candidate found (1-based), without asking.
    pub choice: Option<usize>,
    /// Go straight on: run the new spec, or continue the one chosen.
    pub run: bool,
    /// The run's agent, slot, budget, drain (with `run`).
    pub go: RunOptions,
}

/// Where `runner new` ended (`--json`: `{"schema":1,"created","resumed","candidates",…}`).
#[derive(Debug, Default, Serialize, schemars::JsonSchema)]
pub struct NewReport {
    pub created: Option<String>,
    pub resumed: Option<String>,
    pub candidates: Vec<Candidate>,
    /// An unfinished spec with the same description.
    pub identical: Option<Candidate>,
    /// Detection ran past its bound and was given up (as if nothing matched).
    pub timed_out: bool,
    /// The command that continues the chosen spec, or runs the one created: the one continue
    /// command, with the agent flag given to `new`.
    pub next_command: Option<String>,
    /// No agent is given, configured or remembered for the spec: `next_command` needs one
    /// (`--agent-command`, `--agent`, or `[agent]` in the config).
    pub needs_agent: bool,
    /// With `run`: the run's report.
    pub run: Option<RunReport>,
    /// Why it stopped, when it did: a choice is needed, the same spec is being run, or the
    /// run stopped (needs a person, budget, interrupted). The report above still says what
    /// was created or continued; the error's exit code is the command's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::error::ErrorReport>,
    #[serde(skip)]
    pub stopped: Option<anyhow::Error>,
}

/// The person `runner new` meets: which unfinished spec like the new one to continue, and
/// what was decided, shown before a run goes on.
pub trait NewAsker: ResumeAsker {
    /// Unfinished specs look like the new one: `Some(Some(i))` continues `found[i]`,
    /// `Some(None)` starts a new spec, `None` when nobody can be asked.
    fn similar_work(
        &self,
        _found: &[Candidate],
        _now: chrono::DateTime<chrono::Utc>,
    ) -> anyhow::Result<Option<Option<usize>>> {
        Ok(None)
    }

    /// The spec was created.
    fn show_created(&self, _spec: &str) {}

    /// The unfinished spec `spec` is the one to go on with (`identical`: same description;
    /// `now`: a run continues it at once, else nothing is started).
    fn show_continuing(&self, _spec: &str, _identical: bool, _now: bool) {}
}

impl NewAsker for Nobody {}

/// What happens after detection.
enum Decision {
    Create,
    /// Continue this candidate; `identical`: it has the very same description.
    Continue {
        spec: Candidate,
        identical: bool,
    },
}

pub fn new(ctx: &Ctx, opts: NewOptions, person: &dyn NewAsker) -> anyhow::Result<NewReport> {
    // Every refusal before anything is read or written.
    check_description(&opts.description)?;
    if let Some(name) = &opts.name {
        check_name(name)?;
    }
    if opts.choice == Some(0) {
        return Err(
            RunnerError::bad_input("--choice 0: the candidates are numbered from 1")
                .with_hint("run without --choice to see them")
                .into(),
        );
    }
    let ws = &ctx.ws;
    let spec_text = match &opts.spec_file {
        Some(file) => Some(crate::store::new_spec::read_spec_file(&ws.root, file)?),
        None => None,
    };
    let now = ctx.now();
    // Listed before detection, so that a spec another `runner new` makes meanwhile is seen
    // under the lock (`NewSpec::seen_specs`).
    let seen_specs = (!opts.new_spec).then(|| crate::store::spec::list(&ws.specs_dir));
    let detection = if opts.new_spec {
        Detection::default()
    } else {
        super::detect::detect(ws, &opts.description, now, DETECTION_BOUND)
    };
    if detection.timed_out {
        tracing::info!(
            "looking for unfinished specs like this one took over {} ms ({} scanned); going on as if none matched",
            DETECTION_BOUND.as_millis(),
            detection.scanned
        );
    }
    let mut report = NewReport {
        candidates: detection.candidates.clone(),
        identical: detection.identical.clone(),
        timed_out: detection.timed_out,
        ..NewReport::default()
    };
    // The same description as a spec being built right now: nothing to continue or create.
    if let Some(same) = detection
        .identical
        .as_ref()
        .filter(|c| c.is_busy() && opts.choice.is_none())
    {
        report.stopped = Some(being_run(same).into());
        return Ok(report);
    }
    let decision = match decide(&opts, &detection, now, person)? {
        Some(d) => d,
        // Candidates, and nobody to ask: each choice's command, exit 2, nothing created.
        None => {
            report.stopped = Some(choice_needed(&opts.description, &detection.candidates).into());
            return Ok(report);
        }
    };
    let go = opts.go.clone();
    let run = opts.run;
    let result = match decision {
        Decision::Continue { spec, identical } => {
            person.show_continuing(&spec.spec, identical, run);
            report.resumed = Some(spec.spec.clone());
            report.next_command = Some(crate::policy::next_command::continue_command(
                &spec.spec,
                go.agent_flag().as_ref(),
            ));
            report.needs_agent = needs_agent(ws, &spec.spec, &go);
            run.then(|| continue_spec(ctx, &spec, go, person))
        }
        Decision::Create => {
            let request = NewSpec {
                description: opts.description.clone(),
                spec_text,
                name: opts.name.clone(),
                seen_specs,
            };
            let created = create(ws, &request, now)?;
            person.show_created(&created.spec);
            report.next_command = Some(crate::policy::next_command::continue_command(
                &created.spec,
                go.agent_flag().as_ref(),
            ));
            report.needs_agent = needs_agent(ws, &created.spec, &go);
            report.created = Some(created.spec.clone());
            let opts = RunOptions {
                spec: Some(created.spec),
                ..go
            };
            run.then(|| super::run::run(ctx, opts, person))
        }
    };
    match result {
        Some(Ok(done)) => report.run = Some(done),
        Some(Err(e)) => report.stopped = Some(e),
        None => {}
    }
    Ok(report)
}

/// Create, continue a candidate, or (`None`) a choice is needed and nobody can be asked.
fn decide(
    opts: &NewOptions,
    detection: &Detection,
    now: chrono::DateTime<chrono::Utc>,
    person: &dyn NewAsker,
) -> anyhow::Result<Option<Decision>> {
    let found = &detection.candidates;
    // An identical spec is continued, unless --choice names one of the candidates (the
    // identical one is among them, first).
    if let Some(same) = detection
        .identical
        .as_ref()
        .filter(|_| opts.choice.is_none())
    {
        return Ok(Some(Decision::Continue {
            spec: same.clone(),
            identical: true,
        }));
    }
    if let Some(n) = opts.choice {
        return match found.get(n - 1) {
            Some(c) => Ok(Some(Decision::Continue {
                spec: c.clone(),
                identical: false,
            })),
            None => Err(RunnerError::bad_input(format!(
                "--choice {n}: {} like this one {} found",
                crate::text::count(found.len(), "unfinished spec"),
                if found.len() == 1 { "was" } else { "were" }
            ))
            .with_hint("run without --choice to see them, or pass --new-spec to start fresh")
            .into()),
        };
    }
    if found.is_empty() {
        return Ok(Some(Decision::Create));
    }
    Ok(match person.similar_work(found, now)? {
        None => None,
        Some(Some(i)) if i < found.len() => Some(Decision::Continue {
            spec: found[i].clone(),
            identical: false,
        }),
        Some(_) => Some(Decision::Create),
    })
}

/// Continue `c` as its `continue_with` says: `runner resume <spec>`, or `runner run --spec
/// <spec>` (a spec planned but never started has no run to resume).
fn continue_spec(
    ctx: &Ctx,
    c: &Candidate,
    go: RunOptions,
    person: &dyn NewAsker,
) -> anyhow::Result<RunReport> {
    if c.continue_with == ContinueWith::Resume {
        return Ok(super::resume::resume_spec(ctx, &c.spec, go, person)?.1);
    }
    let opts = RunOptions {
        spec: Some(c.spec.clone()),
        auto_continue: true,
        ..go
    };
    super::run::run(ctx, opts, person)
}

/// No agent for `spec`'s next run: none given to `new`, none in the config, none remembered
/// for the spec. (A config that cannot be read is the run's to report.)
fn needs_agent(ws: &crate::store::workspace::Workspace, spec: &str, go: &RunOptions) -> bool {
    use crate::store::agent_memory::{Recall, recall};
    go.agent_flag().is_none()
        && ws.config().is_ok_and(|c| c.agent.choice().is_none())
        && !matches!(recall(&ws.state_dir, spec), Recall::Agent(_))
}

/// A live run holds the spec with the same description (exit 4).
fn being_run(same: &Candidate) -> RunnerError {
    let spec = crate::text::for_terminal(&same.spec);
    RunnerError::Busy(format!(
        "spec {spec} has this description and is being run right now; nothing was created"
    ))
    .with_hint(format!(
        "follow it with `runner status --spec {}`",
        crate::sh(&same.spec)
    ))
    .with_hint("pass --new-spec to start another spec anyway")
}

/// Candidates and no way to ask: exit 2 with the command of each choice.
fn choice_needed(description: &str, found: &[Candidate]) -> RunnerError {
    let t = |s: &str| crate::text::for_terminal(s).into_owned();
    let base = format!("runner new {}", crate::sh(description));
    let mut e = RunnerError::bad_input(format!(
        "found {} like this one; say which to continue, or start fresh",
        crate::text::count(found.len(), "unfinished spec")
    ));
    for (i, c) in found.iter().enumerate() {
        e = e.with_hint(format!(
            "{}. {} ({}, {}/{} {}, score {:.2}): {base} --choice {}",
            i + 1,
            t(&c.spec),
            t(&c.status),
            c.chunks.completed,
            c.chunks.total,
            crate::text::noun(c.chunks.total, "chunk"),
            c.score,
            i + 1
        ));
    }
    e.with_hint(format!("start fresh: {base} --new-spec"))
}
