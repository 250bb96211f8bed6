//! Which specs were interrupted (for `run --auto-continue` with no spec), and recovery's options for a run.

use super::*;

/// Recovery's options as a run or `runner recover` uses them.
pub fn recover_options(
    ws: &Workspace,
    config: &Config,
    agent: Option<&crate::agent::AgentSetup>,
    dry_run: bool,
    retry_failed: bool,
) -> crate::engine::recovery::RecoverySettings {
    let evaluator = agent
        .filter(|_| config.recovery.evaluator == crate::config::Evaluator::Agent)
        .map(|agent| crate::engine::recovery::evaluator::AgentEvaluator {
            agent: agent.clone(),
            templates_dir: ws.templates_dir(),
            timeout: config.run.session_timeout(),
            max_log_bytes: config.agent.max_log_bytes,
            live: None,
        });
    crate::engine::recovery::RecoverySettings {
        dry_run,
        retry_failed,
        verification_timeout: config.run.verification_timeout(),
        max_log_bytes: config.agent.max_log_bytes,
        evaluator,
        interrupt: Default::default(),
        shutdown: false,
    }
}

/// What `run --auto-continue` without `--spec` finds: the specs to resume, and those it
/// skips because a usage limit still pauses them (with the time).
#[derive(Debug, Default)]
pub struct ToContinue {
    pub specs: Vec<String>,
    pub paused: Vec<(String, chrono::DateTime<chrono::Utc>)>,
}

/// Specs nobody is running whose last run did not end cleanly: a chunk left in progress, a
/// session cut off by a shutdown, a `run_start` with no `run_end` or a `run_end` of a run that
/// was interrupted, or a usage limit's pause that is over. Most recent first. A spec still paused is skipped (listed in `paused`).
pub fn interrupted_specs(ws: &Workspace) -> ToContinue {
    let listed = crate::engine::recovery::interrupted::specs(&ws.state_dir);
    let now = chrono::Utc::now();
    let mut found: Vec<(std::time::SystemTime, String)> = Vec::new();
    let mut paused = Vec::new();
    for name in crate::store::spec::list(&ws.specs_dir) {
        match interrupted_state(ws, &name, &listed, now) {
            Some(Interrupted::Resume(when)) => found.push((when, name)),
            Some(Interrupted::Paused(until)) => paused.push((name, until)),
            None => {}
        }
    }
    found.sort_by_key(|(when, _)| std::cmp::Reverse(*when));
    ToContinue {
        specs: found.into_iter().map(|(_, n)| n).collect(),
        paused,
    }
}

/// Whether `spec` is still one [`interrupted_specs`] resumes, asked again just before it is
/// started (`run --auto-continue --jobs`): another runner may have taken it, or run it to its
/// end, since the list was made.
pub fn still_interrupted(ws: &Workspace, spec: &str) -> bool {
    let listed = crate::engine::recovery::interrupted::specs(&ws.state_dir);
    matches!(
        interrupted_state(ws, spec, &listed, chrono::Utc::now()),
        Some(Interrupted::Resume(_))
    )
}

enum Interrupted {
    /// To resume; the time its journal last changed.
    Resume(std::time::SystemTime),
    /// A usage limit pauses it until then.
    Paused(chrono::DateTime<chrono::Utc>),
}

/// One spec's part of [`interrupted_specs`]: `None` when it is not to be resumed (running,
/// ended cleanly, or out of bounds).
fn interrupted_state(
    ws: &Workspace,
    name: &str,
    listed: &[String],
    now: chrono::DateTime<chrono::Utc>,
) -> Option<Interrupted> {
    // A spec whose folder links outside the repository is not touched (see `Workspace::spec`).
    let paths = ws.spec(name).ok()?;
    if !matches!(lock::probe(&paths.run_lock), Ok(LockState::Free)) {
        return None;
    }
    // Its build was thrown away (`runner discard`) and nothing ran since: the person chose
    // not to go on with it; a run names it to start it again.
    if crate::store::runs::last_run(&paths.dir) == crate::policy::last_run::LastRun::Discarded {
        return None;
    }
    // (A pause file that is not usable is the run's to report and clear.)
    let pause = match crate::store::pause::read(&ws.state_dir, name, now) {
        crate::store::pause::Found::Paused(p) => Some(p.until),
        _ => None,
    };
    if let Some(until) = pause.filter(|until| *until > now) {
        return Some(Interrupted::Paused(until));
    }
    let in_progress = matches!(paths.plan.load(), Ok(Some(p)) if p.count(Status::InProgress) > 0);
    // Only the last run_start/run_end matters (`integrity::last_run_unfinished`): read from
    // the live journal back, only as far as needed, and parse only those lines.
    // A run that never ended, or one that a Ctrl-C/SIGTERM/SIGHUP stopped (drained: its
    // chunk may be settled, but the plan is not done).
    let unfinished_run =
        match crate::store::journal::last_event_containing(&paths.dir, "\"event\":\"run_", |e| {
            matches!(
                e,
                crate::store::Event::RunStart(_) | crate::store::Event::RunEnd(_)
            )
        }) {
            Some(crate::store::Event::RunStart(_)) => true,
            Some(crate::store::Event::RunEnd(end)) => end.outcome == "interrupted",
            _ => false,
        };
    (in_progress || unfinished_run || listed.iter().any(|l| l == name) || pause.is_some()).then(
        || {
            Interrupted::Resume(
                crate::store::segments::modified(&paths.dir).unwrap_or(std::time::UNIX_EPOCH),
            )
        },
    )
}
