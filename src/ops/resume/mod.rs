//! `runner resume`: which run the user means (`policy::resolve` over `facts`), what it was
//! doing and what to do next (`summary`, from `engine::resume::reconstruct`), optionally as a
//! handoff document (`handoff`), and the whole operation (`go`: continuing the run is
//! `ops::run`'s, with `resumed_from`). [`summarize`] starts nothing.

pub mod facts;
mod go;
pub mod handoff;
pub mod summary;

pub use go::{ResumeAsker, ResumeReport, ambiguous, match_line, resume, resume_spec};
pub use summary::ResumeSummary;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::RunnerError;
use crate::policy::resolve::{self, Candidate, Reading, Resolved};
use crate::store::workspace::Workspace;

/// What the user asked to resume: a hint read every way, or one forced reading.
#[derive(Debug, Clone, Default)]
pub struct ResumeOptions {
    pub hint: Option<String>,
    /// `--run ID`: the hint read as a run id or prefix only.
    pub run: Option<String>,
    /// `--spec S`: as a spec name, number or part only.
    pub spec: Option<String>,
    /// `--chunk C`: as a chunk id only.
    pub chunk: Option<String>,
    /// `--choice N`: the Nth of several matches (1-based).
    pub choice: Option<usize>,
    /// Write the handoff document (also when `[resume] handoff` says so).
    pub handoff: bool,
    /// Summarise only: continue nothing.
    pub no_run: bool,
    /// The run that continues it: agent, slot, budget, drain (spec and `resumed_from` are
    /// the resolved run's).
    pub go: crate::engine::run::RunOptions,
}

/// One of several matches: what the disambiguation list shows, and the command that picks it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Match {
    /// Its number for `--choice`.
    pub choice: usize,
    /// The run it continues (full id); null for a spec with no run record.
    pub run_id: Option<String>,
    /// The run id at its shortest unique prefix.
    pub shown: Option<String>,
    pub spec: String,
    pub chunk: Option<String>,
    pub last_activity: Option<DateTime<Utc>>,
    /// What to type to go on with it: the one continue command of its spec
    /// (`runner run --spec S --auto-continue`). `--choice N` picks it for `runner resume`.
    pub command: String,
}

/// Which run a request names: one, or several to choose from.
#[derive(Debug, Clone)]
pub enum Target {
    One(Candidate),
    Ambiguous {
        matches: Vec<Match>,
        user_hint: Option<String>,
    },
}

impl ResumeOptions {
    /// The hint and how to read it; two of them at once is a usage error. An empty or blank
    /// one is refused, never read as no hint (the most recent run): `runner resume ""` and the
    /// MCP server's `{"hint": ""}` both come here, and answer alike.
    fn reading(&self) -> anyhow::Result<(Option<&str>, Reading)> {
        let given = [
            (self.hint.as_deref(), Reading::Any),
            (self.run.as_deref(), Reading::Run),
            (self.spec.as_deref(), Reading::Spec),
            (self.chunk.as_deref(), Reading::Chunk),
        ];
        let names = ["the hint", "--run", "--spec", "--chunk"];
        if let Some((name, _)) = names
            .iter()
            .zip(&given)
            .find(|(_, (value, _))| value.is_some_and(|v| v.trim().is_empty()))
        {
            return Err(RunnerError::bad_input(format!("{name} is empty"))
                .with_hint("leave the hint out to resume the most recent run: runner resume")
                .into());
        }
        let mut said = given.into_iter().filter(|(h, _)| h.is_some());
        let first = said.next().unwrap_or((None, Reading::Any));
        if said.next().is_some() {
            return Err(RunnerError::bad_input(
                "give one of HINT, --run, --spec and --chunk, not several",
            )
            .into());
        }
        Ok(first)
    }
}

/// [`ResumeOutcome`] as one object (the MCP server's `summarize_interrupted_run`): the summary,
/// or the matches to choose from.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SummaryReport {
    /// Where the run stands and what to do next; null when the hint matched several.
    pub summary: Option<Box<ResumeSummary>>,
    /// The runs the hint matched, when it matched several: call again with `choice`.
    pub matches: Vec<Match>,
    /// The hint that matched several.
    pub user_hint: Option<String>,
}

impl From<ResumeOutcome> for SummaryReport {
    fn from(outcome: ResumeOutcome) -> SummaryReport {
        match outcome {
            ResumeOutcome::Summary(summary) => SummaryReport {
                summary: Some(summary),
                matches: Vec::new(),
                user_hint: None,
            },
            ResumeOutcome::Ambiguous { matches, user_hint } => SummaryReport {
                summary: None,
                matches,
                user_hint,
            },
        }
    }
}

/// What `runner resume` (and the MCP server's `summarize_interrupted_run`) answers without starting anything.
#[derive(Debug, Clone)]
pub enum ResumeOutcome {
    Summary(Box<ResumeSummary>),
    Ambiguous {
        matches: Vec<Match>,
        user_hint: Option<String>,
    },
}

/// Resolve `req`, rebuild the run's state and summarise it; never starts an agent, writes
/// nothing but the resolution cache (the handoff document is `handoff::write`'s).
pub fn summarize(
    ws: &Workspace,
    req: &ResumeOptions,
    now: DateTime<Utc>,
) -> anyhow::Result<ResumeOutcome> {
    Ok(match resolve(ws, req, now)? {
        Target::One(target) => ResumeOutcome::Summary(Box::new(summary_of(ws, &target, now)?)),
        Target::Ambiguous { matches, user_hint } => ResumeOutcome::Ambiguous { matches, user_hint },
    })
}

/// The summary of one resolved target; "No data found to resume from" (exit 3) when there is
/// nothing to rebuild its state from.
pub fn summary_of(
    ws: &Workspace,
    target: &Candidate,
    now: DateTime<Utc>,
) -> anyhow::Result<ResumeSummary> {
    let paths = ws.spec(&target.spec)?;
    let Some(recon) = crate::engine::resume::reconstruct(ws, &paths, now)? else {
        return Err(RunnerError::NeedsHuman("No data found to resume from".into())
            .with_hint(format!(
                "spec {} has no checkpoint, no journal, no branch and no plan; `runner run --spec {}` starts it",
                target.spec,
                crate::sh(&target.spec)
            ))
            .into());
    };
    Ok(summary::build(ws, &paths, target, recon))
}

/// Resolve `req` to one candidate or the list to choose from (`--choice` applied); the errors
/// carry their exit codes: no match 2, an active run 4, nothing to resume 3.
pub fn resolve(ws: &Workspace, req: &ResumeOptions, now: DateTime<Utc>) -> anyhow::Result<Target> {
    let (hint, reading) = req.reading()?;
    let facts = facts::DiskFacts::new(ws, now, stale_after(ws));
    let resolved = resolve::resolve(hint, reading, &facts);
    facts.save();
    for warning in facts.warnings.borrow().iter() {
        crate::output::warn(warning);
    }
    let candidates = match resolved {
        Resolved::One(c) => vec![c],
        Resolved::Several { candidates, .. } => candidates,
        Resolved::Active(a) => return Err(active_error(&a, now).into()),
        Resolved::NoMatch { hint, finished } => return Err(no_match(&hint, &finished).into()),
        Resolved::Nothing => {
            return Err(
                RunnerError::NeedsHuman("No data found to resume from".into())
                    .with_hint("no run or spec is left to resume; `runner status` lists the specs")
                    .into(),
            );
        }
    };
    if let Some(n) = req.choice {
        return match resolve::pick(&candidates, n) {
            Some(c) => Ok(Target::One(c.clone())),
            None => Err(RunnerError::bad_input(format!(
                "--choice {n}: there {} {} (choose 1 to {})",
                if candidates.len() == 1 { "is" } else { "are" },
                crate::text::count(candidates.len(), "match"),
                candidates.len()
            ))
            .into()),
        };
    }
    if candidates.len() == 1 {
        return Ok(Target::One(
            candidates
                .into_iter()
                .next()
                .unwrap_or_else(|| unreachable!()),
        ));
    }
    let ids = facts.run_ids_shown();
    let matches = candidates
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let shown = c
                .run_id
                .as_ref()
                .map(|id| ids.get(id).cloned().unwrap_or(id.clone()));
            // How to go on with it: the one continue command (a resume of the run would end by
            // running it), not a second way to the same place.
            let command = crate::policy::next_command::continue_command(&c.spec, None);
            Match {
                choice: i + 1,
                run_id: c.run_id,
                shown,
                spec: c.spec,
                chunk: c.chunk,
                last_activity: c.last_activity,
                command,
            }
        })
        .collect();
    Ok(Target::Ambiguous {
        matches,
        user_hint: hint.map(str::to_string),
    })
}

/// `resume.stale_after` (the default when the config cannot be read: the error is the run's
/// to report).
fn stale_after(ws: &Workspace) -> chrono::Duration {
    ws.config()
        .map(|c| c.resume.stale_after())
        .unwrap_or(crate::policy::runs::STALE_AFTER_DEFAULT)
}

fn active_error(a: &resolve::Active, now: DateTime<Utc>) -> RunnerError {
    let age = a
        .heartbeat
        .map(|h| {
            format!(
                "heartbeat {}",
                crate::policy::age::ago(crate::policy::age::age_secs(h, now))
            )
        })
        .unwrap_or_else(|| "no heartbeat recorded".into());
    let pid = a.pid.map_or("unknown".to_string(), |p| p.to_string());
    let host = a.host.as_deref().unwrap_or("unknown");
    RunnerError::Busy(format!(
        "Cannot resume an active run: {age} (pid {pid}, host {host})"
    ))
    .with_hint(format!(
        "{} is running spec {}; wait for it to end, or stop it (Ctrl-C in its terminal), then resume",
        a.run_id.as_deref().unwrap_or("a runner"),
        a.spec
    ))
}

fn no_match(hint: &str, finished: &[(String, String)]) -> RunnerError {
    let mut e = RunnerError::bad_input(format!("No run found matching '{hint}'"));
    for (what, why) in finished {
        e = e.with_hint(format!("{what} is not resumable: {why}"));
    }
    e.with_hint(
        "`runner runs` lists the runs and `runner status` the specs; `runner resume` alone takes the most recent run",
    )
}
