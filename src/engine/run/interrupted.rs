//! Runs over every interrupted spec (`run --auto-continue` with no spec), and recovery before a run.

use super::*;

/// Recovery's options as a run or `runner recover` uses them.
pub fn recover_options(
    ws: &Workspace,
    config: &Config,
    agent: &[String],
    dry_run: bool,
    retry_failed: bool,
) -> crate::engine::recovery::RecoverOptions {
    let evaluator = (config.recovery.evaluator == crate::config::Evaluator::Agent
        && !agent.is_empty())
    .then(|| crate::engine::recovery::evaluator::AgentEvaluator {
        argv: agent.to_vec(),
        templates_dir: ws.templates_dir(),
        timeout: config.run.session_timeout(),
        max_log_bytes: config.agent.max_log_bytes,
    });
    crate::engine::recovery::RecoverOptions {
        dry_run,
        retry_failed,
        verification_timeout: config.run.verification_timeout(),
        max_log_bytes: config.agent.max_log_bytes,
        evaluator,
        interrupt: Default::default(),
        shutdown: false,
    }
}

/// `runner run --auto-continue` with no `--spec`: every spec that was interrupted, most recent
/// first, each recovered and resumed by a run of its own.
pub fn run_interrupted(cwd: &Path, opts: RunOptions) -> anyhow::Result<Vec<RunSummary>> {
    let ws = Workspace::open(cwd)?;
    let specs = interrupted_specs(&ws);
    let mut summaries = Vec::new();
    let mut first_error = None;
    for spec in specs {
        eprintln!("Resuming interrupted spec {spec}");
        match run(
            cwd,
            RunOptions {
                spec: Some(spec),
                ..opts.clone()
            },
        ) {
            Ok(summary) => summaries.push(summary),
            Err(e) if crate::error::exit_code_of(&e) == crate::error::exit::INTERRUPTED => {
                return Err(e);
            }
            Err(e) => {
                eprintln!("runner: {e:#}");
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(summaries),
    }
}

/// Specs nobody is running whose last run did not end cleanly: a chunk left in progress, a
/// session cut off by a shutdown, or a `run_start` with no `run_end`. Most recent first.
pub fn interrupted_specs(ws: &Workspace) -> Vec<String> {
    let listed = crate::engine::recovery::interrupted::specs(&ws.state_dir);
    let mut found: Vec<(std::time::SystemTime, String)> = Vec::new();
    for name in crate::store::spec::list(&ws.specs_dir) {
        // A spec whose folder links outside the repository is not touched (see `Workspace::spec`).
        let Ok(paths) = ws.spec(&name) else { continue };
        if !matches!(lock::probe(&paths.run_lock), Ok(LockState::Free)) {
            continue;
        }
        let in_progress =
            matches!(paths.plan.load(), Ok(Some(p)) if p.count(Status::InProgress) > 0);
        // Only run_start/run_end lines matter here: skip parsing the rest of the journal.
        let events = crate::store::journal::read_typed_containing(&paths.dir, "\"event\":\"run_");
        let unfinished_run = crate::engine::recovery::integrity::last_run_unfinished(&events);
        if in_progress || unfinished_run || listed.contains(&name) {
            let when = std::fs::metadata(paths.dir.join(crate::store::journal::JOURNAL_FILE))
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            found.push((when, name));
        }
    }
    found.sort_by_key(|(when, _)| std::cmp::Reverse(*when));
    found.into_iter().map(|(_, n)| n).collect()
}
