//! `runner run`: take a spec from "nothing planned" to "every chunk completed and committed",
//! resuming wherever the last run stopped.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use serde_json::{Value, json};

pub mod person;
mod report;
use report::Reporter;
use crate::store::workspace::{SpecPaths, Workspace};
use crate::config::{Config, parse_agent_command};
use crate::error::RunnerError;
use crate::git::{Slot, SlotState, branch_for, commit_all, dirty_paths, head_commit, slot_holding};
use crate::plan::{
    Attempt, Chunk, NextStep, Plan, PlanError, Status, check_planner_output, next_step,
    verification,
};
use crate::policy::{self, AfterFailure, CheckResult, Report, Verdict};
use crate::agent::{ChildSpec, Ended, Interrupt, Prompts, run_child};
use crate::store::{FileLock, Holder, Journal, LockState, lock};

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub spec: Option<String>,
    pub auto_continue: bool,
    pub base_branch: Option<String>,
    pub agent_command: Option<String>,
    pub slot: Option<String>,
    /// Overrides `[run] drain_timeout` (seconds).
    pub drain_timeout: Option<u64>,
    /// Never ask (with existing work and no `auto_continue`, that is a usage error).
    pub yes: bool,
}

/// What a finished run reports (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub spec: String,
    pub outcome: String,
    pub branch: String,
    pub worktree: PathBuf,
    pub base_branch: String,
    pub completed: usize,
    pub total: usize,
    pub sessions: u32,
    pub run_id: String,
}

const HEARTBEAT: Duration = Duration::from_secs(10);

/// Everything one run works with, set up once.
struct Run {
    paths: SpecPaths,
    config: Config,
    agent: Vec<String>,
    /// `--agent-command` as given: printed commands that run the spec again need it.
    agent_flag: Option<String>,
    run_id: String,
    journal: Journal,
    worktree: PathBuf,
    repo_root: PathBuf,
    /// The main repository's git dir: the worktree must be one of its worktrees.
    common_dir: PathBuf,
    base: String,
    prompts: Prompts,
    reporter: Reporter,
    interrupt: Interrupt,
    sessions: u32,
    drain: Duration,
    state_dir: PathBuf,
    /// Sessions cut off by the last shutdown, to be run again first.
    resume: Vec<crate::engine::recovery::interrupted::InterruptedSession>,
    /// Where a person's `runner chunk` reaches this run (Linux): the only record of a person's
    /// plan changes during a session that the settle trusts.
    person: Option<person::Listener>,
}

pub fn run(cwd: &Path, opts: RunOptions) -> anyhow::Result<RunSummary> {
    crate::engine::block_on(run_async(cwd, opts))
}

async fn run_async(cwd: &Path, opts: RunOptions) -> anyhow::Result<RunSummary> {
    let interrupt = Interrupt::install()?;
    let ws = Workspace::open(cwd)?;
    ws.main.ensure_excluded()?;
    let config = ws.config()?;
    let spec_name = pick_spec(&ws, opts.spec.as_deref())?;
    let paths = ws.spec(&spec_name)?;
    // Every session is given the feature: a spec.md that cannot be read stops the run here,
    // before anything is changed.
    crate::store::spec::read_text(&paths.spec_md)?;
    let agent = match &opts.agent_command {
        Some(text) => parse_agent_command(text)?,
        None => config.agent.command.clone(),
    };
    // What `main` prints if this run is interrupted: the exact command that resumes it.
    let _ = RESUME_COMMAND.set(run_again_command(
        &spec_name,
        opts.agent_command.as_deref(),
        true,
    ));
    if agent.is_empty() {
        return Err(RunnerError::bad_input(
            "no agent command: pass --agent-command \"claude -p\" or set [agent] command in .auto-claude/config.toml",
        )
        .into());
    }

    let run_id = format!("run-{}-{}", crate::clock::stamp(), std::process::id());
    let holder = new_holder(&run_id, Some(&spec_name));
    let spec_lock = take_lock(&paths.run_lock, &holder, || {
        format!("spec {spec_name} is being run by another runner")
    })?;
    // A merge, discard or undo of this spec cut off by a crash is finished or rolled back first:
    // its slot and branch are in its hands until then.
    if let Some(done) = crate::engine::recovery::lifecycle::finish_interrupted(
        &ws,
        &paths,
        &Journal::new(&paths.dir, &run_id),
        false,
    )? {
        eprintln!("runner: {}: {done}", paths.name);
    }
    // Without --slot, a spec already checked out in a slot builds there.
    let slot = match opts.slot.as_deref() {
        Some(name) => Slot::new(&ws.root, Some(name)),
        None => slot_holding(&ws.main, &branch_for(&spec_name))
            .unwrap_or_else(|| Slot::new(&ws.root, None)),
    };
    let slot_lock = take_lock(&ws.slot_lock(&slot.name), &holder, || {
        format!(
            "the worktree slot {} is in use by another runner",
            slot.path.display()
        )
    })?;
    let journal = Journal::new(&paths.dir, &run_id);
    let reporter = Reporter::new();
    let person = person::listen(&paths)?;
    // Every process the agents start stays our descendant, even after `setsid` (see
    // `agent::ancestry`).
    crate::agent::ancestry::become_subreaper();

    // Put right whatever an earlier run left interrupted, before anything else.
    let mut recover_opts = recover_options(&ws, &config, &agent, false, false);
    recover_opts.interrupt = interrupt.clone();
    let recovery = crate::engine::recovery::recover_spec(&ws, &paths, &journal, &recover_opts).await?;
    if interrupt.is_set() {
        return Err(RunnerError::Interrupted.into());
    }
    for action in &recovery.actions {
        reporter.line(format!("Recovered {}: {}", paths.name, action.line()));
    }
    if recovery.needs_human() {
        return Err(RunnerError::NeedsHuman(format!(
            "recovery of {} found state that needs a person:\n{}\nLook at the worktree and the journal {}; when it is sorted out, set the chunk back to \"pending\" in {} (or run `runner recover --spec {}` again)",
            paths.name,
            recovery
                .actions
                .iter()
                .filter(|a| a.decision == Some(crate::engine::recovery::Decision::HumanReview))
                .map(|a| format!("  - {}", a.line()))
                .collect::<Vec<_>>()
                .join("\n"),
            journal.path().display(),
            paths.plan.path().display(),
            crate::sh(&paths.name)
        ))
        .into());
    }

    let existing = paths.plan.load()?;
    // A plan with nothing to do is not "complete 0/0": it is what the planner is sent back for.
    if let Some(problems) = existing.as_ref().map(check_planner_output)
        && !problems.is_empty()
    {
        return Err(RunnerError::bad_input(format!(
            "the plan {} cannot be run ({}); fix it, or move it away to have the planner write a new one",
            paths.plan.path().display(),
            problems.join("; ")
        ))
        .into());
    }
    let pinned = existing.as_ref().and_then(|p| p.str_field("base_branch"));
    let checked_out = ws.main.current_branch();
    let choice = policy::choose_base(policy::BaseFacts {
        pinned,
        pinned_exists: pinned.is_some_and(|p| ws.main.branch_tip(p).is_some()),
        flag: opts.base_branch.as_deref(),
        config: config.git.base_branch.as_deref(),
        checked_out: checked_out.as_deref(),
        no_commits: has_no_commits(&ws.main.repo),
    })
    .map_err(RunnerError::BadInput)?;
    // The pin a confirmed re-pin replaced: put back if the run does not go ahead after all.
    let mut repinned_from = None;
    let base = match choice {
        policy::BaseChoice::Use(base) => base,
        policy::BaseChoice::Repin { from, to } => {
            repin_base(&ws, &paths, &journal, &from, &to, opts.yes)?;
            repinned_from = Some(from);
            to
        }
    };
    let base_tip = ws.main.branch_tip(&base).ok_or_else(|| {
        let text = if pinned == Some(base.as_str()) {
            format!(
                "the pinned base branch {base:?} of spec {spec_name} no longer exists. Recreate it (git branch {base} <commit>), or re-pin the spec to another branch: runner run --spec {} --base-branch NAME (it asks to confirm; --yes without a terminal)",
                crate::sh(&spec_name)
            )
        } else {
            format!(
                "base branch {base:?} does not exist. Create it, or pass --base-branch with an existing branch"
            )
        };
        RunnerError::bad_input(text)
    })?;

    // Existing work: ask what to do (on a terminal), or continue with --auto-continue.
    if let Some(work) = crate::ops::choice::existing_work(&ws, &paths, &base)? {
        let asked = crate::ops::choice::ask(
            &ws,
            &paths,
            &base,
            &work,
            opts.auto_continue,
            opts.yes,
            &journal,
            opts.agent_command.as_deref(),
        );
        // (A merge chosen there needs the new pin: it merges into the plan's base.)
        let choice = match asked {
            Ok(choice) => choice,
            Err(e) => {
                // Cancelled, or no terminal to ask on: "nothing was changed" must hold.
                if let Some(from) = &repinned_from {
                    undo_repin(&paths, &journal, from, &base)?;
                }
                return Err(e);
            }
        };
        if choice == crate::ops::choice::Choice::Merged {
            let plan = paths.plan.load()?.unwrap_or_else(empty_plan);
            return Ok(RunSummary {
                spec: spec_name.clone(),
                outcome: "merged".into(),
                branch: branch_for(&spec_name),
                worktree: slot.path.clone(),
                base_branch: base,
                completed: plan.count(Status::Completed),
                total: plan.total(),
                sessions: 0,
                run_id,
            });
        }
    }
    prepare_slot(&ws, &slot, &spec_name, base_tip, &journal, &reporter).await?;
    crate::failpoint::hit("after_prepare_slot");

    let locks = Arc::new((spec_lock, slot_lock));
    let heartbeat = tokio::spawn(heartbeat(locks.clone(), holder));

    // Sessions the last shutdown cut off run again first. The entries are removed now, before
    // they run, so that a crash during the re-run never loops.
    let resume = crate::engine::recovery::interrupted::take(&ws.state_dir, &spec_name)?;
    let drain = opts
        .drain_timeout
        .map(Duration::from_secs)
        .unwrap_or_else(|| config.run.drain_timeout());
    interrupt.set_drain(drain);
    let mut run = Run {
        prompts: Prompts::new(&ws.templates_dir()),
        repo_root: ws.root.clone(),
        common_dir: ws.main.repo.commondir().to_path_buf(),
        worktree: slot.path.clone(),
        state_dir: ws.state_dir.clone(),
        paths,
        config,
        agent,
        agent_flag: opts.agent_command.clone(),
        run_id,
        journal,
        base,
        reporter,
        interrupt,
        sessions: 0,
        drain,
        resume,
        person,
    };
    let snapshot = existing.as_ref().map(|p| p.to_value());
    run.journal.record(
        "run_start",
        None,
        json!({"spec": spec_name, "pid": std::process::id(), "slot": slot.name, "base_branch": run.base, "auto_continue": opts.auto_continue}),
    )?;
    if let Some(plan) = snapshot {
        run.journal
            .record("plan_snapshot", None, json!({"plan": plan}))?;
    }
    let result = run.drive(&ws).await;
    heartbeat.abort();
    run.reporter.finish();
    let outcome = match &result {
        Ok(()) => "complete".to_string(),
        Err(e) => match e.downcast_ref::<RunnerError>() {
            Some(RunnerError::Interrupted) => "interrupted".into(),
            Some(RunnerError::NeedsHuman(_)) => "needs_human".into(),
            Some(RunnerError::BudgetSpent(_)) => "budget_spent".into(),
            _ => "error".into(),
        },
    };
    let _ = run.journal.record(
        "run_end",
        None,
        json!({"outcome": outcome, "sessions": run.sessions}),
    );
    // The socket goes before the locks: it must never outlive them into another run's time.
    run.person.take();
    drop(locks);
    result?;
    let plan = run.paths.plan.load()?.unwrap_or_else(empty_plan);
    Ok(RunSummary {
        spec: run.paths.name.clone(),
        outcome,
        branch: branch_for(&run.paths.name),
        worktree: run.worktree.clone(),
        base_branch: run.base.clone(),
        completed: plan.count(Status::Completed),
        total: plan.total(),
        sessions: run.sessions,
        run_id: run.run_id.clone(),
    })
}

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
        let events = crate::store::read_events_containing(&paths.dir, "\"event\":\"run_");
        let unfinished_run = events
            .iter()
            .rev()
            .find(|e| e["event"] == "run_start" || e["event"] == "run_end")
            .is_some_and(|e| e["event"] == "run_start");
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

fn empty_plan() -> Plan {
    Plan::default()
}

/// `--spec` resolved, or the only spec there is.
pub fn pick_spec(ws: &Workspace, query: Option<&str>) -> anyhow::Result<String> {
    if let Some(q) = query {
        crate::store::spec::check_name(q)?;
        // Several matches: on a terminal, a numbered choice; otherwise the list and exit 2.
        let names = crate::store::spec::list(&ws.specs_dir);
        if let crate::store::spec::Resolution::Many(matches) = crate::store::spec::resolve_among(&names, q)
            && crate::ops::interact::can_ask()
        {
            let numbered: Vec<String> = matches
                .iter()
                .enumerate()
                .map(|(i, m)| format!("{}. {m}", i + 1))
                .collect();
            let title = format!("{q:?} matches several specs:");
            let picked =
                crate::ops::interact::ask(|| inquire::Select::new(&title, numbered).raw_prompt())?;
            return Ok(matches[picked.index].clone());
        }
        return Ok(crate::store::spec::resolve(&ws.specs_dir, q)?);
    }
    let names = crate::store::spec::list(&ws.specs_dir);
    match names.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(RunnerError::bad_input(
            "no specs yet: create .auto-claude/specs/001-my-feature/spec.md describing the feature, then run `runner run --spec 001`",
        )
        .into()),
        _ => Err(RunnerError::bad_input(format!(
            "several specs; pick one with --spec: {}",
            names.join(", ")
        ))
        .into()),
    }
}

/// A fresh `git init`: HEAD is unborn and no branch exists. (git2's `is_empty` only knows an
/// unborn `master`.)
fn has_no_commits(repo: &git2::Repository) -> bool {
    let unborn = matches!(repo.head(), Err(e) if e.code() == git2::ErrorCode::UnbornBranch);
    unborn
        && repo
            .branches(Some(git2::BranchType::Local))
            .map(|mut b| b.next().is_none())
            .unwrap_or(false)
}

/// The spec's pinned base branch is gone and `--base-branch` names another: pin that one, once
/// the user confirmed (a question on a terminal, else `--yes`). Its work will merge there.
fn repin_base(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
    from: &str,
    to: &str,
    yes: bool,
) -> anyhow::Result<()> {
    if ws.main.branch_tip(to).is_none() {
        return Err(RunnerError::bad_input(format!(
            "base branch {to:?} does not exist. Create it, or pass --base-branch with an existing branch"
        ))
        .into());
    }
    // Short: a question wider than the terminal is redrawn badly.
    let question = format!("Base {from:?} is gone. Re-pin {} to {to:?}?", paths.name);
    if !yes {
        if !crate::ops::interact::can_ask() {
            return Err(RunnerError::bad_input(format!(
                "spec {} is pinned to base branch {from:?}, which no longer exists; re-pinning it to {to:?} (its work will then merge there) needs a confirmation and there is no terminal to ask on: pass --yes",
                paths.name
            ))
            .into());
        }
        if !crate::ops::interact::confirm(&question)? {
            return Err(RunnerError::Cancelled.into());
        }
    }
    paths.plan.update(|plan| {
        plan.set_field("base_branch", Value::String(to.to_string()));
        Ok(())
    })?;
    crate::failpoint::hit("after_base_repin");
    journal.record("base_repinned", None, json!({"from": from, "to": to}))?;
    Ok(())
}

/// Put back the pin a re-pin replaced: the run it was confirmed for did not go ahead.
fn undo_repin(paths: &SpecPaths, journal: &Journal, from: &str, to: &str) -> anyhow::Result<()> {
    paths.plan.update(|plan| {
        plan.set_field("base_branch", Value::String(from.to_string()));
        Ok(())
    })?;
    journal.record(
        "base_repinned",
        None,
        json!({"from": to, "to": from, "why": "the run did not go ahead: the re-pin is undone"}),
    )?;
    Ok(())
}

/// What to do about chunks that failed for good: a command, never a hand edit of the plan.
/// `agent_flag`: the run's `--agent-command`, if the agent came from it.
pub fn retry_failed_hint(spec: &str, agent_flag: Option<&str>) -> String {
    format!(
        "after fixing the cause, `runner recover --spec {} --retry-failed` sets them back to pending (their attempts are kept); then `{}` again",
        crate::sh(spec),
        run_again_command(spec, agent_flag, false)
    )
}

/// The command that runs `spec` again as this run did, to print for a person: the agent given
/// with `--agent-command` is part of it (without, there may be no agent at all), and
/// `--auto-continue` where existing work would otherwise need a question on a terminal.
pub fn run_again_command(spec: &str, agent_flag: Option<&str>, auto_continue: bool) -> String {
    let mut command = format!("runner run --spec {}", crate::sh(spec));
    if auto_continue {
        command.push_str(" --auto-continue");
    }
    if let Some(agent) = agent_flag {
        command.push_str(&format!(" --agent-command {}", crate::sh(agent)));
    }
    command
}

static RESUME_COMMAND: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The command that resumes the spec this process ran, once a run got that far.
pub fn resume_command() -> Option<&'static str> {
    RESUME_COMMAND.get().map(String::as_str)
}

pub fn new_holder(run_id: &str, spec: Option<&str>) -> Holder {
    let now = crate::clock::now();
    Holder {
        run_id: run_id.to_string(),
        pid: std::process::id(),
        host: hostname(),
        since: now.clone(),
        heartbeat: now,
        spec: spec.map(str::to_string),
    }
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Take an exclusive lock for the whole run, or say who holds it (exit 4).
fn take_lock(
    path: &Path,
    holder: &Holder,
    what: impl FnOnce() -> String,
) -> anyhow::Result<FileLock> {
    // A few tries: `runner status` and other probes hold a lock for an instant, and that
    // must not look like a live run.
    for attempt in 0..5 {
        // (An error names the lock file itself.)
        if let Some(lock) = FileLock::try_acquire(path)? {
            lock.write_holder(holder)?;
            return Ok(lock);
        }
        if attempt < 4 {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Err(RunnerError::Busy(format!("{}: {}", what(), describe_holder(path))).into())
}

pub fn describe_holder(path: &Path) -> String {
    match lock::read_holder(path) {
        Some(h) => format!(
            "pid {} on {}, run {}, since {} (last heartbeat {}){}. runner does not wait: run this again once it has finished, or stop it first",
            h.pid,
            h.host,
            h.run_id,
            h.since,
            h.heartbeat,
            h.spec.map(|s| format!(", spec {s}")).unwrap_or_default()
        ),
        None => "its holder did not say who it is. runner does not wait: run this again once it has finished, or stop it first".into(),
    }
}

async fn heartbeat(locks: Arc<(FileLock, FileLock)>, mut holder: Holder) {
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        holder.heartbeat = crate::clock::now();
        let _ = locks.0.write_holder(&holder);
        let _ = locks.1.write_holder(&holder);
    }
}

/// Make `slot` hold the spec's branch, creating the branch and the worktree as needed.
async fn prepare_slot(
    ws: &Workspace,
    slot: &Slot,
    spec: &str,
    base_tip: git2::Oid,
    journal: &Journal,
    reporter: &Reporter,
) -> anyhow::Result<()> {
    let main = &ws.main;
    let branch = branch_for(spec);
    finish_unfinished_creation(ws, slot, journal, reporter)?;
    if matches!(slot.inspect(main), SlotState::Ready { .. })
        && let Some(to) =
            slot.finish_interrupted_switch(main, &ws.slot_switch_marker(&slot.name))?
    {
        reporter.line(format!(
            "Finished switching the slot {} to {to}, which an earlier run was doing when it stopped.",
            slot.path.display()
        ));
        journal.record(
            "slot_switch_finished",
            None,
            json!({"slot": slot.name, "to": to}),
        )?;
    }
    if main.branch_tip(&branch).is_none() {
        main.create_branch(&branch, base_tip)?;
        journal.record(
            "branch_created",
            None,
            json!({"branch": branch, "at": base_tip.to_string()}),
        )?;
    }
    if main.current_branch().as_deref() == Some(branch.as_str()) {
        return Err(RunnerError::bad_input(format!(
            "branch {branch} is checked out in your main worktree; runner builds it in {}. Switch your main worktree to another branch first",
            slot.path.display()
        ))
        .into());
    }
    if let Some(other) = slot_holding(main, &branch)
        && other != *slot
    {
        let suffix = other
            .name
            .strip_prefix("auto-claude-")
            .unwrap_or(&other.name);
        return Err(RunnerError::bad_input(format!(
            "spec {spec} is already in the slot {}: run it there with --slot {suffix}",
            other.path.display()
        ))
        .into());
    }
    match slot.inspect(main) {
        SlotState::Missing => create_slot(ws, slot, &branch, journal, reporter),
        SlotState::Broken { reason } if !slot.path.exists() => {
            // The folder is gone; the work is safe on the branch. Forget the registration.
            reporter.line(format!(
                "The worktree {} was registered but {reason}; recreating it from branch {branch}.",
                slot.path.display()
            ));
            slot.prune_missing(main)?;
            journal.record("slot_pruned", None, json!({"slot": slot.name, "reason": reason}))?;
            create_slot(ws, slot, &branch, journal, reporter)
        }
        SlotState::Broken { reason } => Err(RunnerError::bad_input(format!(
            "the worktree slot {} is broken ({reason}). Move the folder away, run `git worktree prune`, and run again",
            slot.path.display()
        ))
        .into()),
        SlotState::Unregistered => {
            if let Some(repair) = crate::engine::recovery::repair::repair_slot(main, slot, false)? {
                reporter.line(format!("Repaired: {}.", repair.describe()));
                journal.record("slot_repaired", None, json!({"slot": slot.name, "repair": repair.describe()}))?;
            }
            create_slot(ws, slot, &branch, journal, reporter)
        }
        SlotState::Ready { branch: Some(b) } if b == branch => Ok(()),
        SlotState::Ready { branch: held } => {
            let held_desc = held.clone().unwrap_or_else(|| "a detached HEAD".into());
            // Held while the slot switches: the other spec must not start meanwhile.
            let mut _other_lock = None;
            if let Some(other_spec) = held.as_deref().and_then(crate::git::spec_of_branch) {
                let other = ws.spec(other_spec)?;
                let Some(other_lock) = FileLock::try_acquire(&other.run_lock)? else {
                    return Err(RunnerError::Busy(format!(
                        "the slot {} holds spec {other_spec}, which is being run: {}",
                        slot.path.display(),
                        describe_holder(&other.run_lock)
                    ))
                    .into());
                };
                // An interrupted chunk of the other spec is recovered while its worktree is
                // still here: its work is committed or saved by the rules, never just swept
                // into a ref behind its plan's back.
                let refuse = |why: String| -> anyhow::Error {
                    RunnerError::NeedsHuman(format!(
                        "the slot {} holds spec {other_spec}, and {why}; runner will not switch it to {spec} and sweep that away. Sort out {other_spec} first, or build {spec} in another slot: runner run --spec {spec} --slot NAME",
                        slot.path.display()
                    ))
                    .into()
                };
                match other.plan.load() {
                    Ok(Some(p)) if p.count(Status::InProgress) > 0 => {
                        let run_id = format!("slot-switch-{}-{}", crate::clock::stamp(), std::process::id());
                        let other_journal = Journal::new(&other.dir, &run_id);
                        let config = ws.config()?;
                        let opts = recover_options(ws, &config, &[], false, false);
                        let rec = crate::engine::recovery::recover_spec(ws, &other, &other_journal, &opts).await?;
                        for action in &rec.actions {
                            reporter.line(format!("Recovered {other_spec}: {}", action.line()));
                        }
                        if rec.needs_human() {
                            return Err(refuse("its interrupted work needs a person".into()));
                        }
                    }
                    Ok(Some(p)) if p.count(Status::Blocked) > 0 => {
                        return Err(refuse("it has blocked chunks whose state may be in the worktree".into()));
                    }
                    Ok(_) => {}
                    Err(_) => return Err(refuse("its plan is invalid".into())),
                }
                if let Some(op) = crate::engine::recovery::inspect::operation_in_progress(&slot.open(main)?) {
                    return Err(refuse(format!("a {op} is half done in its worktree")));
                }
                _other_lock = Some(other_lock);
            } else if held.is_none() {
                // A detached HEAD may carry commits no branch has: keep them reachable.
                if let Some(kept) = keep_detached_head(ws, slot)? {
                    reporter.line(format!("The slot's detached HEAD had commits on no branch: kept at {kept}."));
                    journal.record("slot_saved", None, json!({"slot": slot.name, "ref": kept}))?;
                }
            }
            let dirty = slot.dirty_paths(main)?;
            if !dirty.is_empty() {
                let other_spec = held.as_deref().and_then(crate::git::spec_of_branch);
                let Some(other_spec) = other_spec else {
                    // Not a runner branch: runner has no spec to keep the changes for.
                    let wt = slot.path.display();
                    return Err(RunnerError::bad_input(format!(
                        "the slot {wt} holds {held_desc} with uncommitted changes:\n{}\nrunner will not switch it to {spec} and risk them. Either\n  keep them:  git -C {wt} add -A && git -C {wt} commit -m \"wip\"\n  drop them:  git -C {wt} reset --hard && git -C {wt} clean -fd\n  or build {spec} in another slot:  runner run --spec {spec} --slot NAME",
                        dirty.iter().take(20).map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n")
                    ))
                    .into());
                };
                let saved = save_and_clean_slot(ws, slot, other_spec)?;
                reporter.line(format!(
                    "The slot held uncommitted changes of spec {other_spec}: saved at {saved} (on top of {held_desc}), then cleaned."
                ));
                journal.record("slot_saved", None, json!({"slot": slot.name, "spec": other_spec, "ref": saved, "paths": dirty}))?;
            }
            slot.switch_to(main, &branch, &ws.slot_switch_marker(&slot.name))?;
            reporter.line(format!(
                "Switched the slot {} from {held_desc} to {branch} (the previous work is safe on its branch).",
                slot.path.display()
            ));
            journal.record("slot_switched", None, json!({"slot": slot.name, "from": held, "to": branch}))?;
            Ok(())
        }
    }
}

/// If the slot's HEAD is detached on a commit no branch or runner ref contains, point
/// `refs/auto-claude/recovery/_detached/<slot>/<n>` at it.
fn keep_detached_head(ws: &Workspace, slot: &Slot) -> anyhow::Result<Option<String>> {
    let wt = slot.open(&ws.main)?;
    let Ok(head) = head_commit(&wt) else {
        return Ok(None);
    };
    let repo = &ws.main.repo;
    for r in repo.references()?.flatten() {
        let Some(name) = r.name() else { continue };
        if !(name.starts_with("refs/heads/") || name.starts_with("refs/auto-claude/")) {
            continue;
        }
        if let Some(tip) = r.target()
            && (tip == head || repo.graph_descendant_of(tip, head).unwrap_or(false))
        {
            return Ok(None);
        }
    }
    let refname = crate::git::refs::next_detached_ref(repo, &slot.name)?;
    repo.reference(
        &refname,
        head,
        false,
        "runner: keep a detached HEAD's commits",
    )?;
    Ok(Some(refname))
}

/// Save a slot's uncommitted changes to `spec`'s recovery ref (named after its chunk in
/// progress, if any), then clean the slot: nothing is lost, and the slot can switch.
fn save_and_clean_slot(ws: &Workspace, slot: &Slot, spec: &str) -> anyhow::Result<String> {
    let wt = slot.open(&ws.main)?;
    let chunk = ws
        .spec(spec)?
        .plan
        .load()
        .ok()
        .flatten()
        .and_then(|p| {
            p.chunks()
                .find(|c| c.status == Status::InProgress)
                .map(|c| c.id.clone())
        })
        .unwrap_or_else(|| "worktree".to_string());
    let refname = crate::git::refs::next_recovery_ref(&wt, spec, &chunk)?;
    let message =
        format!("auto-claude: uncommitted changes of {spec} saved before switching the slot");
    crate::git::refs::snapshot_worktree(&wt, &refname, &message)?;
    crate::failpoint::hit("after_slot_snapshot");
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.force().remove_untracked(true);
    wt.checkout_head(Some(&mut checkout))
        .context("cleaning the slot after saving its changes")?;
    Ok(refname)
}

/// See `repair::unfinished_creation`: before anything else looks at the slot.
fn finish_unfinished_creation(
    ws: &Workspace,
    slot: &Slot,
    journal: &Journal,
    reporter: &Reporter,
) -> anyhow::Result<()> {
    let marker = ws.slot_create_marker(&slot.name);
    if let Some(what) =
        crate::engine::recovery::repair::unfinished_creation(&ws.main, slot, &marker, false)?
    {
        reporter.line(format!("{what}."));
        journal.record(
            "slot_creation_finished",
            None,
            json!({"slot": slot.name, "what": what}),
        )?;
    }
    Ok(())
}

fn create_slot(
    ws: &Workspace,
    slot: &Slot,
    branch: &str,
    journal: &Journal,
    reporter: &Reporter,
) -> anyhow::Result<()> {
    slot.create(&ws.main, branch, &ws.slot_create_marker(&slot.name))?;
    reporter.line(format!(
        "Created worktree {} on branch {branch}.",
        slot.path.display()
    ));
    journal.record(
        "slot_created",
        None,
        json!({"slot": slot.name, "branch": branch}),
    )?;
    Ok(())
}

/// The chunk runner is about to work on, as the prompt and the loop need it.
struct Taken {
    chunk: Chunk,
    phase_name: Option<String>,
    attempt: u32,
    session_id: String,
    /// The plan as it was written when the chunk was taken.
    plan: Plan,
}

/// What the loop does next.
enum Take {
    Chunk(Box<Taken>),
    Complete(usize),
    Stuck(Vec<String>),
    BudgetSpent,
}

impl Run {
    async fn drive(&mut self, ws: &Workspace) -> anyhow::Result<()> {
        let resume = std::mem::take(&mut self.resume);
        if self.paths.plan.load()?.is_none() {
            let planner = resume.iter().find(|r| r.role == "planner");
            let prompt = planner.and_then(|r| self.resume_prompt(r));
            self.plan_feature(prompt).await?;
        } else {
            self.pin_base()?;
        }
        // A blocked chunk needs a person; the worktree may hold its unresolved state, which
        // another chunk must not build on (or commit).
        let plan = self.load_plan()?;
        let blocked: Vec<String> = plan
            .chunks()
            .filter(|c| c.status == Status::Blocked)
            .map(|c| {
                format!(
                    "  - {}: {}",
                    c.id,
                    c.str_field("blocked_reason").unwrap_or("blocked")
                )
            })
            .collect();
        if !blocked.is_empty() {
            return Err(RunnerError::NeedsHuman(format!(
                "spec {} has blocked chunks that need a person first:\n{}\nLook at the worktree {}; when it is sorted out, set the chunk back to \"pending\" in {} and run again",
                self.paths.name,
                blocked.join("\n"),
                self.worktree.display(),
                self.paths.plan.path().display()
            ))
            .into());
        }
        // Coder sessions the last shutdown cut off go first, with the prompt they were given.
        for entry in resume.iter().filter(|r| r.role == "coder") {
            let Some(chunk_id) = entry.chunk_id.as_deref() else {
                continue;
            };
            let plan = self.load_plan()?;
            let pending = plan
                .find_chunk(chunk_id)
                .is_some_and(|pos| plan.chunk(pos).status == Status::Pending);
            let Some(prompt) = self.resume_prompt(entry).filter(|_| pending) else {
                tracing::debug!(
                    chunk = chunk_id,
                    "interrupted session skipped: its chunk is gone or no longer pending"
                );
                continue;
            };
            self.reporter.line(format!(
                "Resuming interrupted work for {} on {}/{}: \"{}…\"",
                entry.role,
                entry.spec,
                chunk_id,
                crate::engine::recovery::interrupted::preview(&entry.prompt_preview, 80)
            ));
            if !self.budget_left() {
                return Err(self.budget_spent().into());
            }
            if let Take::Chunk(taken) = self.take_chunk(Some(chunk_id))? {
                self.work_on(ws, taken, Some(prompt)).await?;
            }
        }
        loop {
            if self.interrupt.is_set() {
                return Err(RunnerError::Interrupted.into());
            }
            let taken = match self.take_chunk(None)? {
                Take::Chunk(taken) => taken,
                Take::Complete(total) => {
                    // "Completed" only with every chunk's commit still on the branch.
                    let plan = self.paths.plan.load()?.unwrap_or_else(empty_plan);
                    if let Some(guarded) = crate::engine::recovery::integrity::guard_history(
                        &ws.main,
                        &self.paths,
                        &self.journal,
                        &plan,
                        None,
                        self.open_worktree().ok().as_ref(),
                        Some(&self.worktree),
                        false,
                    )? {
                        return Err(RunnerError::NeedsHuman(guarded.message).into());
                    }
                    self.reporter.progress(total, total, "done");
                    self.reporter.line(format!(
                        "All {total} chunks of {} are completed on branch {}.",
                        self.paths.name,
                        branch_for(&self.paths.name)
                    ));
                    return Ok(());
                }
                Take::Stuck(reasons) => {
                    // Failed chunks have a command; anything else (a chunk another process
                    // holds in progress, phases waiting on them) follows from it.
                    let plan = self.load_plan()?;
                    let what_to_do = if plan.count(Status::Failed) > 0 {
                        format!(
                            "For failed chunks: {}",
                            retry_failed_hint(&self.paths.name, self.agent_flag.as_deref())
                        )
                    } else {
                        format!(
                            "After fixing, set the chunk back to pending in {} and run again",
                            self.paths.plan.path().display()
                        )
                    };
                    return Err(RunnerError::NeedsHuman(format!(
                        "spec {} cannot go on:\n{}\nLook at the journal {} and the session logs in {}. {what_to_do}",
                        self.paths.name,
                        reasons.iter().map(|r| format!("  - {r}")).collect::<Vec<_>>().join("\n"),
                        self.journal.path().display(),
                        self.paths.sessions_dir.display(),
                    ))
                    .into());
                }
                Take::BudgetSpent => return Err(self.budget_spent().into()),
            };
            self.work_on(ws, taken, None).await?;
        }
    }

    /// The original prompt of an interrupted session, with a note on what happened since.
    fn resume_prompt(
        &self,
        entry: &crate::engine::recovery::interrupted::InterruptedSession,
    ) -> Option<String> {
        let original = crate::store::safe::read_to_string(&entry.prompt_path).ok()?;
        let mut note = format!(
            "\n\n## Note: this session was interrupted\n\nThis is the prompt of session {}, which was cut off at {} when runner was stopped. Work it did may already be in the worktree",
            entry.session_id, entry.time
        );
        if let Some(chunk) = entry.chunk_id.as_deref()
            && let Ok(plan) = self.load_plan()
            && let Some(pos) = plan.find_chunk(chunk)
            && let Some(partial) = crate::engine::recovery::partial_work_note(plan.chunk(pos))
        {
            note.push_str(&format!(
                ": {} commit(s) since {}{}",
                partial["new_commits"],
                partial["start_commit"].as_str().unwrap_or("the start"),
                partial["saved_ref"]
                    .as_str()
                    .map(|r| format!(", and its uncommitted changes (saved at {r})"))
                    .unwrap_or_default()
            ));
        }
        note.push_str(". Check what is there before you continue.\n");
        Some(original + &note)
    }

    fn load_plan(&self) -> anyhow::Result<Plan> {
        match self.paths.plan.load() {
            Ok(Some(plan)) => Ok(plan),
            Ok(None) => Err(RunnerError::NeedsHuman(format!(
                "the plan {} disappeared during the run",
                self.paths.plan.path().display()
            ))
            .into()),
            Err(e) => match e.downcast::<PlanError>() {
                Ok(plan_err) => Err(RunnerError::NeedsHuman(format!(
                    "{plan_err}\n(the plan was valid when the run started: an agent or a person broke it)"
                ))
                .into()),
                Err(other) => Err(other),
            },
        }
    }

    fn budget_left(&self) -> bool {
        self.sessions < self.config.run.max_sessions
    }

    fn budget_spent(&self) -> RunnerError {
        RunnerError::BudgetSpent(format!(
            "this run started its {} sessions (run.max_sessions); the spec is not finished. Run `{}` again to go on",
            self.sessions,
            run_again_command(&self.paths.name, self.agent_flag.as_deref(), true)
        ))
    }

    /// Pin the base branch in the plan the first time the spec has one.
    fn pin_base(&self) -> anyhow::Result<()> {
        let plan = self.load_plan()?;
        if plan.str_field("base_branch").is_none() {
            let base = self.base.clone();
            self.paths.plan.update(|plan| {
                plan.set_field("base_branch", Value::String(base));
                Ok(())
            })?;
        }
        Ok(())
    }

    /// After a shutdown signal: the session's chunk goes through recovery's rules; a session
    /// still busy when the drain ran out is listed in `interrupted-sessions.json` so the next
    /// start runs it again (and a stale entry is removed if it finished). Always ends the run.
    async fn interrupted(
        &mut self,
        ws: Option<&Workspace>,
        role: &str,
        taken: Option<&Taken>,
        session_id: &str,
        prompt: &str,
        drained: bool,
    ) -> anyhow::Result<()> {
        // Recovery completed the session's chunk from the work it reported: nothing to re-run.
        let mut completed = false;
        if let (Some(ws), Some(taken)) = (ws, taken) {
            let plan = self.load_plan()?;
            let chunk = plan
                .find_chunk(&taken.chunk.id)
                .map(|pos| plan.chunk(pos).clone())
                .filter(|c| c.status == Status::InProgress);
            if let Some(chunk) = chunk {
                let wt = self.open_worktree()?;
                let opts = crate::engine::recovery::RecoverOptions {
                    // The user asked to stop: the check gets no longer than the drain, and
                    // a second Ctrl-C stops it at once. Cut short, it decides nothing.
                    verification_timeout: self.drain.min(self.config.run.verification_timeout()),
                    max_log_bytes: self.config.agent.max_log_bytes,
                    interrupt: self.interrupt.next_signal(),
                    shutdown: true,
                    ..Default::default()
                };
                let decided = crate::engine::recovery::recover_chunk(
                    ws,
                    &self.paths,
                    &self.journal,
                    &chunk,
                    Some(&wt),
                    &opts,
                    "interrupted",
                )
                .await;
                match decided {
                    Ok(action) => {
                        completed = action.decision == Some(crate::engine::recovery::Decision::Next);
                        self.reporter
                            .line(format!("Interrupted: {}", action.line()));
                    }
                    Err(e) if crate::error::is_interrupted(&e) => self.reporter.line(format!(
                        "Interrupted: chunk {}: left in progress — its verification was cut short, so nothing was decided; the next `runner recover` or `runner run` checks it again",
                        chunk.id
                    )),
                    Err(e) => return Err(e),
                }
            }
        }
        let entries = if drained {
            Vec::new()
        } else if completed {
            self.reporter.line(format!(
                "The {role} session {session_id} was stopped; its chunk is completed from the work it reported, so it is not run again."
            ));
            Vec::new()
        } else {
            let why = if self.interrupt.forced() {
                "when you stopped it with a second Ctrl-C".to_string()
            } else {
                format!(
                    "when the drain timeout ran out ({} s)",
                    self.drain.as_secs()
                )
            };
            self.reporter.line(format!(
                "The {role} session {session_id} was still working {why}; the next start runs it again."
            ));
            vec![crate::engine::recovery::interrupted::InterruptedSession {
                session_id: session_id.to_string(),
                spec: self.paths.name.clone(),
                role: role.to_string(),
                chunk_id: taken.map(|t| t.chunk.id.clone()),
                prompt_path: self.paths.sessions_dir.join(session_id).join("prompt.md"),
                prompt_preview: crate::engine::recovery::interrupted::preview(prompt, 200),
                time: crate::clock::now(),
            }]
        };
        crate::engine::recovery::interrupted::record(&self.state_dir, &self.paths.name, entries)?;
        Err(RunnerError::Interrupted.into())
    }

    /// Put a chunk that did not finish back to `pending`, recording why.
    fn release_chunk(&self, id: &str, outcome: &str, reason: &str) -> anyhow::Result<()> {
        self.paths.plan.update(|plan| {
            if let Some(pos) = plan.find_chunk(id) {
                plan.chunk_mut(pos)
                    .return_to_pending(outcome, reason, &crate::clock::now());
            }
            Ok(())
        })?;
        self.journal.record(
            "chunk_status",
            Some(id),
            json!({"from": "in_progress", "to": "pending", "why": outcome, "reason": reason}),
        )?;
        Ok(())
    }

    async fn plan_feature(&mut self, mut resumed_prompt: Option<String>) -> anyhow::Result<()> {
        let spec_text = crate::store::spec::read_text(&self.paths.spec_md)?;
        // A new plan starts: the copies of an old one (last-good, journal snapshots) must never
        // be "restored" over it. The old copy is kept aside; the journal gets a barrier.
        let last_good = self.paths.plan.last_good_path().to_path_buf();
        if last_good.exists() {
            let aside = crate::store::unused_path(&last_good.with_file_name(format!(
                "{}.replaced-{}",
                crate::plan::LAST_GOOD_FILE,
                crate::clock::stamp()
            )));
            crate::store::safe::rename(&last_good, &aside)
                .with_context(|| format!("moving {} aside", last_good.display()))?;
        }
        self.journal.record("plan_reset", None, json!({}))?;
        let mut errors: Vec<String> = Vec::new();
        let max = self.config.run.max_attempts;
        for attempt in 1..=max {
            if !self.budget_left() {
                return Err(self.budget_spent().into());
            }
            self.reporter.line(format!(
                "Planning {} (attempt {attempt} of {max})…",
                self.paths.name
            ));
            let prompt = match resumed_prompt.take() {
                Some(p) => {
                    self.reporter.line(format!(
                        "Resuming interrupted work for planner on {}: \"{}…\"",
                        self.paths.name,
                        crate::engine::recovery::interrupted::preview(&p, 80)
                    ));
                    p
                }
                None => self.prompts.render(
                    crate::agent::prompt::PLANNER,
                    json!({
                        "spec_name": self.paths.name,
                        "spec_text": spec_text,
                        "plan_file": self.paths.plan.path(),
                        "attempt": attempt,
                        "errors": errors,
                    }),
                )?,
            };
            let session_id = session_id("planner", None, attempt);
            let end = self
                .session("planner", None, attempt, &session_id, &prompt)
                .await?;
            if let Ended::Interrupted { drained } = end.ended {
                self.set_aside_partial_plan()?;
                return self
                    .interrupted(None, "planner", None, &session_id, &prompt, drained)
                    .await;
            }
            errors = match self.paths.plan.load() {
                Ok(Some(plan)) => check_planner_output(&plan),
                Ok(None) => vec![format!(
                    "the planner did not write {}",
                    self.paths.plan.path().display()
                )],
                Err(e) => match e.downcast::<PlanError>() {
                    Ok(pe) => plan_error_lines(&pe),
                    Err(other) => return Err(other),
                },
            };
            if errors.is_empty() {
                let base = self.base.clone();
                let plan = self.paths.plan.update(|plan| {
                    if plan.str_field("base_branch").is_none() {
                        plan.set_field("base_branch", Value::String(base));
                    }
                    Ok(plan.clone())
                })?;
                crate::failpoint::hit("after_plan_accepted");
                self.journal.record(
                    "plan_accepted",
                    None,
                    json!({"session_id": session_id, "phases": plan.phases.len(), "chunks": plan.total()}),
                )?;
                self.journal
                    .record("plan_snapshot", None, json!({"plan": plan.to_value()}))?;
                self.reporter.line(format!(
                    "Plan ready: {} phases, {} chunks.",
                    plan.phases.len(),
                    plan.total()
                ));
                return Ok(());
            }
            self.journal.record(
                "plan_rejected",
                None,
                json!({"session_id": session_id, "attempt": attempt, "errors": errors}),
            )?;
            self.reporter.line(format!(
                "The planner's output was not a valid plan:\n{}",
                errors
                    .iter()
                    .map(|e| format!("  - {e}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
        }
        Err(RunnerError::NeedsHuman(format!(
            "the planner did not produce a valid plan in {max} attempts. Last problems:\n{}\nThe planner's last output is at {} (left as it is); logs are in {}. Fix the plan by hand, or delete it to plan again",
            errors.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n"),
            self.paths.plan.path().display(),
            self.paths.sessions_dir.display()
        ))
        .into())
    }

    /// A planner cut off mid-write may leave half a plan. Keep it (renamed, never overwritten)
    /// so that the next run plans again instead of stopping on an invalid file.
    fn set_aside_partial_plan(&self) -> anyhow::Result<()> {
        let path = self.paths.plan.path();
        if !path.exists() || self.paths.plan.load().is_ok() {
            return Ok(());
        }
        let aside = crate::store::unused_path(&path.with_file_name(format!(
            "{}.interrupted-{}",
            crate::plan::PLAN_FILE,
            crate::clock::stamp()
        )));
        crate::store::safe::rename(path, &aside)
            .with_context(|| format!("moving {} aside", path.display()))?;
        self.reporter.line(format!(
            "The interrupted planner left an incomplete plan; it is kept as {}.",
            aside.display()
        ));
        self.journal.record(
            "plan_set_aside",
            None,
            json!({"path": aside, "why": "planner interrupted"}),
        )?;
        Ok(())
    }

    /// Under one plan lock: decide what comes next (`prefer`, if it is pending, else the plan's
    /// next chunk) and, if it is a chunk and the session budget allows, mark it `in_progress`
    /// with a new attempt.
    fn take_chunk(&self, prefer: Option<&str>) -> anyhow::Result<Take> {
        let start_commit = head_commit(&self.open_worktree()?)?.to_string();
        let run_id = self.run_id.clone();
        let budget_left = self.budget_left();
        let take = self.paths.plan.update_if(|plan| {
            let preferred = prefer
                .and_then(|id| plan.find_chunk(id))
                .filter(|&pos| plan.chunk(pos).status == Status::Pending);
            let step = match preferred {
                Some(pos) => NextStep::Chunk(pos),
                None => next_step(plan),
            };
            let pos = match step {
                NextStep::Chunk(pos) if budget_left => pos,
                NextStep::Chunk(_) => return Ok((Take::BudgetSpent, false)),
                NextStep::Complete => return Ok((Take::Complete(plan.total()), false)),
                NextStep::Stuck(reasons) => return Ok((Take::Stuck(reasons), false)),
            };
            let phase_name = plan.phases[pos.phase].name().map(str::to_string);
            let chunk = plan.chunk_mut(pos);
            let mut attempts = chunk.attempts();
            let attempt = attempts.len() as u32 + 1;
            let session_id = session_id("coder", Some(&chunk.id), attempt);
            let now = crate::clock::now();
            attempts.push(Attempt {
                n: attempt,
                session_id: Some(session_id.clone()),
                run_id: Some(run_id),
                started_at: Some(now.clone()),
                start_commit: Some(start_commit.clone()),
                ..Attempt::default()
            });
            chunk.set_attempts(&attempts);
            chunk.set_status(Status::InProgress);
            chunk.set_str("started_at", &now);
            chunk.set_str("session_id", &session_id);
            let chunk = chunk.clone();
            let taken = Taken {
                chunk,
                phase_name,
                attempt,
                session_id,
                plan: plan.clone(),
            };
            Ok((Take::Chunk(Box::new(taken)), true))
        })?;
        if matches!(take, Take::Chunk(_)) {
            crate::failpoint::hit("after_take");
        }
        if let Take::Chunk(t) = &take {
            self.journal.record(
                "chunk_status",
                Some(&t.chunk.id),
                json!({"from": "pending", "to": "in_progress", "attempt": t.attempt, "session_id": t.session_id, "start_commit": start_commit}),
            )?;
        }
        Ok(take)
    }

    fn open_worktree(&self) -> anyhow::Result<git2::Repository> {
        crate::git::repo::open_worktree_exactly(&self.worktree, &self.common_dir)
            .map_err(anyhow::Error::msg)
    }

    /// After a session, before anything is judged or committed: put the plan right (the agent
    /// may have edited, replaced or deleted it), then check that the worktree still opens as
    /// itself and that the branch still holds every commit runner recorded and the attempt's
    /// start. Otherwise the chunk is blocked for a person (exit 3), its state saved.
    fn guard_after_session(&self, ws: &Workspace, taken: &Taken) -> anyhow::Result<()> {
        use crate::engine::recovery::integrity;
        let id = taken.chunk.id.as_str();
        let by_person = match &self.person {
            Some(listener) => listener.take_changes(),
            None => integrity::changed_by_person(
                &crate::store::read_events(&self.paths.dir),
                &taken.session_id,
            ),
        };
        for line in integrity::settle_after_session(
            &self.paths,
            &self.journal,
            &taken.plan,
            id,
            &taken.session_id,
            &by_person,
        )? {
            self.reporter.line(line);
        }
        let wt = match self.open_worktree() {
            Ok(wt) => wt,
            Err(why) => {
                let message = integrity::unopenable_worktree(
                    &ws.main,
                    &self.paths,
                    &self.journal,
                    &self.worktree,
                    &format!("{why:#}"),
                    Some(id),
                    false,
                )?;
                return Err(RunnerError::NeedsHuman(message).into());
            }
        };
        let plan = self.load_plan()?;
        let current = plan.find_chunk(id).map(|pos| plan.chunk(pos).clone());
        if let Some(guarded) = integrity::guard_history(
            &ws.main,
            &self.paths,
            &self.journal,
            &plan,
            current.as_ref(),
            Some(&wt),
            Some(&self.worktree),
            false,
        )? {
            return Err(RunnerError::NeedsHuman(guarded.message).into());
        }
        Ok(())
    }

    async fn work_on(
        &mut self,
        ws: &Workspace,
        taken: Box<Taken>,
        prompt_override: Option<String>,
    ) -> anyhow::Result<()> {
        let plan = &taken.plan;
        let done = plan.count(Status::Completed);
        let id = taken.chunk.id.clone();
        self.reporter.progress(done, plan.total(), &id);
        self.reporter.line(format!(
            "[{}/{}] {id}: {} (attempt {})",
            done + 1,
            plan.total(),
            taken.chunk.description(),
            taken.attempt
        ));
        let prompt = match prompt_override.map_or_else(|| self.coder_prompt(plan, &taken), Ok) {
            Ok(prompt) => prompt,
            Err(e) => {
                // No prompt (say, spec.md was deleted meanwhile): the agent never ran.
                self.release_chunk(&id, "not_started", &format!("{e:#}"))?;
                return Err(e);
            }
        };
        // The plan as runner left it when the session started: if this run dies before the
        // session end settles the plan, recovery settles it against this copy (advisory, like
        // the session's other files; `runner chunk` never rewrites it, unlike last-good).
        let before_path = self
            .paths
            .session_dir(&taken.session_id)
            .map_err(crate::store::at(&self.paths.dir))?
            .join(crate::engine::recovery::PLAN_BEFORE_SESSION);
        crate::store::safe::write(&before_path, &crate::plan::plan_to_bytes(plan))
            .map_err(crate::store::at(&before_path))?;
        let end = match self
            .session(
                "coder",
                Some(&id),
                taken.attempt,
                &taken.session_id,
                &prompt,
            )
            .await
        {
            Ok(end) => end,
            Err(e) => {
                // The agent never ran (say, its command does not exist): not a failed attempt.
                self.release_chunk(&id, "not_started", &format!("{e:#}"))?;
                return Err(e);
            }
        };
        crate::failpoint::hit("after_coder_session");
        self.guard_after_session(ws, &taken)?;
        if let Ended::Interrupted { drained } = end.ended {
            return self
                .interrupted(
                    Some(ws),
                    "coder",
                    Some(&taken),
                    &taken.session_id,
                    &prompt,
                    drained,
                )
                .await;
        }

        let after = self.load_plan()?;
        let pos = after.find_chunk(&id).ok_or_else(|| {
            RunnerError::NeedsHuman(format!(
                "chunk {id} vanished from the plan during its session"
            ))
        })?;
        let chunk = after.chunk(pos);
        let report = read_report(chunk);
        let check = if policy::needs_check(&report) {
            self.verify(chunk, &taken.session_id).await?
        } else {
            None
        };
        match policy::judge(&report, &end.ended, check.as_ref()) {
            Verdict::Completed => self.complete(&taken, check.as_ref()),
            Verdict::Failed(reason) => self.fail_attempt(&taken, &reason),
        }
    }

    fn coder_prompt(&self, plan: &Plan, taken: &Taken) -> anyhow::Result<String> {
        let chunk = &taken.chunk;
        let spec_text = crate::store::spec::read_text(&self.paths.spec_md)?;
        let failures = self.previous_failures(chunk);
        let partial = crate::engine::recovery::partial_work_note(chunk);
        let leftovers = if taken.attempt > 1 {
            dirty_paths(&self.open_worktree()?)?
        } else {
            Vec::new()
        };
        let progress = json!({
            "completed": plan.count(Status::Completed),
            "total": plan.total(),
            "phases": plan.phases.iter().enumerate().map(|(i, p)| json!({
                "label": p.label(i),
                "name": p.name(),
                "chunks": p.chunks.iter().map(|c| json!({"id": c.id, "status": c.status.as_str()})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        let context = json!({
            "spec_name": self.paths.name,
            "spec_text": spec_text,
            "attempt": taken.attempt,
            "chunk": {
                "id": chunk.id,
                "description": chunk.description(),
                "phase_name": taken.phase_name,
                "service": chunk.str_field("service"),
                "files_to_modify": chunk.list_field("files_to_modify"),
                "files_to_create": chunk.list_field("files_to_create"),
                "patterns_from": chunk.list_field("patterns_from"),
                "verification": verification::describe(chunk),
                "check_command": verification::command_check(chunk).map(|c| c.command),
            },
            "progress": progress,
            "failures": failures,
            "leftovers": leftovers,
            "partial": partial,
        });
        let template = if failures.is_empty() && partial.is_none() {
            crate::agent::prompt::CODER
        } else {
            crate::agent::prompt::CODER_RETRY
        };
        self.prompts.render(template, context)
    }

    /// What went wrong before, from the journal; from the plan's attempt records if the journal
    /// (advisory) is gone.
    fn previous_failures(&self, chunk: &Chunk) -> Vec<Value> {
        let sessions: Vec<String> = chunk
            .attempts()
            .into_iter()
            .filter_map(|a| a.session_id)
            .collect();
        let from_journal: Vec<Value> = crate::store::read_events(&self.paths.dir)
            .into_iter()
            .filter(|e| e["event"] == "attempt_failed" && e["chunk"] == chunk.id.as_str())
            // Only this plan's attempts: a discarded build's failures are not this one's.
            .filter(|e| {
                e["session_id"]
                    .as_str()
                    .is_some_and(|s| sessions.iter().any(|own| own == s))
            })
            .map(|e| {
                json!({
                    "attempt": e["attempt"],
                    "reason": e["reason"],
                    "log": e["log"],
                })
            })
            .collect();
        if !from_journal.is_empty() {
            return from_journal;
        }
        chunk
            .attempts()
            .into_iter()
            .filter(|a| a.outcome.as_deref() == Some("failed"))
            .map(|a| json!({"attempt": a.n, "reason": a.reason, "log": Value::Null}))
            .collect()
    }

    async fn verify(&self, chunk: &Chunk, session_id: &str) -> anyhow::Result<Option<CheckResult>> {
        let Some(check) = verification::command_check(chunk) else {
            return Ok(None);
        };
        // Through the safe session-folder helper, like every session file (`store::safe`).
        let log_path = self
            .paths
            .session_dir(session_id)
            .with_context(|| format!("creating the session folder of {session_id}"))?
            .join("verification.log");
        let spec = ChildSpec {
            argv: vec!["sh".into(), "-c".into(), check.command.clone()],
            cwd: self.worktree.clone(),
            env: self.agent_env("coder", Some(&chunk.id), 0, session_id),
            stdin: None,
            log_path: log_path.clone(),
            timeout: self.config.run.verification_timeout(),
            drain: self.drain,
            max_log_bytes: self.config.agent.max_log_bytes,
            watch_for: check.expect_output.clone(),
        };
        let end = self
            .run_journaled(&spec, session_id, "verification")
            .await?;
        if let Ended::Interrupted { .. } = end.ended {
            // The agent's report stands; recovery re-runs the verification next time.
            return Err(RunnerError::Interrupted.into());
        }
        let status_ok = end.ended == Ended::Exited(check.expect_status);
        // Searched in the whole output as it streamed, as bytes: a part cut from the capped
        // log or a non-UTF-8 byte cannot hide it.
        let output_ok = end.output.found;
        let mut detail = end.ended.describe();
        if let Some(want) = check.expect_output.as_deref().filter(|_| !output_ok) {
            detail.push_str(&format!("; its output lacks {want:?}"));
        }
        detail.push_str(&format!(" (log: {})", log_path.display()));
        if let Some(e) = &end.output.log_incomplete {
            // Judged on every byte all the same; only the log misses some.
            detail.push_str(&format!("; the log is incomplete: {e}"));
        }
        let result = CheckResult {
            command: check.command,
            passed: status_ok && output_ok,
            detail,
        };
        self.journal.record(
            "verification",
            Some(&chunk.id),
            json!({"command": result.command, "passed": result.passed, "detail": result.detail}),
        )?;
        Ok(Some(result))
    }

    fn complete(&self, taken: &Taken, check: Option<&CheckResult>) -> anyhow::Result<()> {
        let id = &taken.chunk.id;
        let message = taken.chunk.commit_message();
        let wt = self.open_worktree()?;
        // Commit only onto the spec's branch, in a clean repository state: an agent that
        // switched branches, detached HEAD or left a rebase stopped would otherwise have its
        // work committed where the branch never sees it.
        let on_branch =
            crate::git::head_branch(&wt).as_deref() == Some(branch_for(&self.paths.name).as_str());
        let operation = crate::engine::recovery::inspect::operation_in_progress(&wt);
        if !on_branch || operation.is_some() {
            let reason = match operation {
                Some(op) => format!("a {op} is half done in the worktree"),
                None => format!(
                    "the worktree is not on {} any more (the agent switched branches or detached HEAD)",
                    branch_for(&self.paths.name)
                ),
            };
            self.paths.plan.update(|plan| {
                if let Some(pos) = plan.find_chunk(id) {
                    let chunk = plan.chunk_mut(pos);
                    chunk.update_last_attempt(|a| {
                        a.outcome = Some("blocked".into());
                        a.reason = Some(reason.clone());
                        a.ended_at = Some(crate::clock::now());
                    });
                    chunk.set_status(Status::Blocked);
                    chunk.set_str("blocked_reason", &reason);
                }
                Ok(())
            })?;
            self.journal.record(
                "chunk_status",
                Some(id),
                json!({"from": "in_progress", "to": "blocked", "why": reason}),
            )?;
            return Err(RunnerError::NeedsHuman(format!(
                "chunk {id} was reported done, but {reason}; nothing was committed. Look at {} (git status, git log), put the work on {} and set the chunk back to \"pending\" in {}",
                self.worktree.display(),
                branch_for(&self.paths.name),
                self.paths.plan.path().display()
            ))
            .into());
        }
        let commit = commit_all(&wt, &message)?;
        crate::failpoint::hit("after_commit");
        if let Some(oid) = commit {
            self.journal.record(
                "commit",
                Some(id),
                json!({"commit": oid.to_string(), "message": message}),
            )?;
        }
        let head = head_commit(&self.open_worktree()?)?.to_string();
        // The attempt's own commit: runner's, else the agent's (HEAD moved since the start,
        // which the history guard proved an ancestor); never the start commit, which is an
        // earlier chunk's.
        let start = taken.chunk.last_attempt().and_then(|a| a.start_commit);
        let own_commit = match commit {
            Some(oid) => Some(oid.to_string()),
            None if start.as_deref() != Some(head.as_str()) => Some(head.clone()),
            None => None,
        };
        let (done, total) = self.paths.plan.update(|plan| {
            if let Some(pos) = plan.find_chunk(id) {
                let chunk = plan.chunk_mut(pos);
                let now = crate::clock::now();
                chunk.update_last_attempt(|a| {
                    a.outcome = Some("completed".into());
                    a.ended_at = Some(now.clone());
                    a.commit = own_commit.clone();
                });
                chunk.set_status(Status::Completed);
                chunk.set_str("completed_at", &now);
            }
            Ok((plan.count(Status::Completed), plan.total()))
        })?;
        crate::failpoint::hit("after_complete");
        self.journal.record(
            "chunk_status",
            Some(id),
            json!({"from": "in_progress", "to": "completed", "attempt": taken.attempt, "commit": own_commit, "verified": check.map(|c| c.passed)}),
        )?;
        self.reporter.progress(done, total, id);
        self.reporter.line(match (commit, &own_commit) {
            (Some(oid), _) => format!("  ✓ {id} completed, committed {}", &oid.to_string()[..10]),
            (None, Some(_)) => format!("  ✓ {id} completed (the agent committed its own work)"),
            (None, None) => format!("  ✓ {id} completed (no changes: the session changed nothing)"),
        });
        Ok(())
    }

    fn fail_attempt(&self, taken: &Taken, reason: &str) -> anyhow::Result<()> {
        let id = &taken.chunk.id;
        let max = self.config.run.max_attempts;
        let log = self
            .paths
            .sessions_dir
            .join(&taken.session_id)
            .join("output.log");
        let (failed_count, decision) = self.paths.plan.update(|plan| {
            let pos = plan.find_chunk(id).ok_or_else(|| {
                RunnerError::NeedsHuman(format!("chunk {id} vanished from the plan"))
            })?;
            let chunk = plan.chunk_mut(pos);
            let now = crate::clock::now();
            chunk.update_last_attempt(|a| {
                a.outcome = Some("failed".into());
                a.reason = Some(reason.to_string());
                a.ended_at = Some(now.clone());
            });
            let failed = chunk
                .attempts()
                .iter()
                .filter(|a| a.outcome.as_deref() == Some("failed"))
                .count() as u32;
            let decision = policy::after_failure(failed, max);
            match decision {
                AfterFailure::Retry => chunk.set_status(Status::Pending),
                AfterFailure::GiveUp => {
                    chunk.set_status(Status::Failed);
                    chunk.set_str("failure_reason", reason);
                }
            }
            Ok((failed, decision))
        })?;
        crate::failpoint::hit("after_fail");
        self.journal.record(
            "attempt_failed",
            Some(id),
            json!({"attempt": taken.attempt, "session_id": taken.session_id, "reason": reason, "log": log, "failed_attempts": failed_count}),
        )?;
        let to = match decision {
            AfterFailure::Retry => "pending",
            AfterFailure::GiveUp => "failed",
        };
        self.journal.record(
            "chunk_status",
            Some(id),
            json!({"from": "in_progress", "to": to, "attempt": taken.attempt}),
        )?;
        self.reporter.line(format!(
            "  ✗ {id} attempt {} failed: {reason}",
            taken.attempt
        ));
        match decision {
            AfterFailure::Retry => Ok(()),
            AfterFailure::GiveUp => Err(RunnerError::NeedsHuman(format!(
                "chunk {id} failed {failed_count} times (run.max_attempts = {max}); last reason: {reason}\nSession logs: {}\nJournal: {}\nTo retry it: {}",
                self.paths.sessions_dir.display(),
                self.journal.path().display(),
                retry_failed_hint(&self.paths.name, self.agent_flag.as_deref())
            ))
            .into()),
        }
    }

    fn agent_env(
        &self,
        role: &str,
        chunk: Option<&str>,
        attempt: u32,
        session_id: &str,
    ) -> Vec<(String, String)> {
        let exe = std::env::current_exe().ok();
        let mut env = vec![
            ("RUNNER_ROLE".to_string(), role.to_string()),
            ("RUNNER_SPEC".into(), self.paths.name.clone()),
            (
                "RUNNER_SPEC_DIR".into(),
                self.paths.dir.display().to_string(),
            ),
            (
                "RUNNER_PLAN_FILE".into(),
                self.paths.plan.path().display().to_string(),
            ),
            ("RUNNER_ATTEMPT".into(), attempt.to_string()),
            ("RUNNER_SESSION_ID".into(), session_id.to_string()),
            (
                "RUNNER_WORKTREE".into(),
                self.worktree.display().to_string(),
            ),
            ("RUNNER_REPO".into(), self.repo_root.display().to_string()),
            ("RUNNER_RUN_ID".into(), self.run_id.clone()),
        ];
        if let Some(chunk) = chunk {
            env.push(("RUNNER_CHUNK_ID".into(), chunk.to_string()));
        }
        if let Some(exe) = exe {
            env.push(("RUNNER_BIN".into(), exe.display().to_string()));
            // Let the agent call `runner chunk done` by name.
            if let Some(dir) = exe.parent() {
                let path = std::env::var_os("PATH").unwrap_or_default();
                let mut dirs = vec![dir.to_path_buf()];
                dirs.extend(std::env::split_paths(&path));
                if let Ok(joined) = std::env::join_paths(dirs) {
                    env.push(("PATH".into(), joined.to_string_lossy().into_owned()));
                }
            }
        }
        env
    }

    /// Run a child and journal its process group as soon as it exists, so that recovery can
    /// find it if runner dies, and its end.
    async fn run_journaled(
        &self,
        spec: &ChildSpec,
        session_id: &str,
        role: &str,
    ) -> anyhow::Result<crate::agent::ChildEnd> {
        let journal = &self.journal;
        let mut on_spawn = |pgid: i32| {
            let _ = journal.record(
                "process_started",
                None,
                json!({"pgid": pgid, "session_id": session_id, "role": role}),
            );
            crate::failpoint::hit("after_spawn");
        };
        let end = run_child(spec, &self.interrupt, &mut on_spawn).await?;
        // Whatever the agent left running — in its group or not (`setsid`, a double fork: the
        // subreaper keeps them our descendants) — goes now, before the plan is settled.
        let killed = crate::agent::ancestry::kill_descendants();
        if killed > 0 {
            self.journal.record(
                "leftovers_killed",
                None,
                json!({"session_id": session_id, "processes": killed}),
            )?;
        }
        if let Some(pgid) = end.pgid {
            self.journal.record(
                "process_ended",
                None,
                json!({"pgid": pgid, "session_id": session_id, "role": role}),
            )?;
        }
        Ok(end)
    }

    async fn session(
        &mut self,
        role: &str,
        chunk: Option<&str>,
        attempt: u32,
        session_id: &str,
        prompt: &str,
    ) -> anyhow::Result<crate::agent::ChildEnd> {
        // After Ctrl-C no new session starts.
        if self.interrupt.is_set() {
            return Err(RunnerError::Interrupted.into());
        }
        let dir = self
            .paths
            .session_dir(session_id)
            .with_context(|| format!("creating the folder of session {session_id}"))?;
        let prompt_path = dir.join("prompt.md");
        crate::store::safe::write(&prompt_path, prompt.as_bytes())
            .map_err(crate::store::at(&prompt_path))?;
        let start_commit = head_commit(&self.open_worktree()?)?.to_string();
        self.sessions += 1;
        let spec = ChildSpec {
            argv: self.agent.clone(),
            cwd: self.worktree.clone(),
            env: self.agent_env(role, chunk, attempt, session_id),
            stdin: Some(prompt.to_string()),
            log_path: dir.join("output.log"),
            timeout: self.config.run.session_timeout(),
            drain: self.drain,
            max_log_bytes: self.config.agent.max_log_bytes,
            watch_for: None,
        };
        self.journal.record(
            "session_start",
            chunk,
            json!({"role": role, "attempt": attempt, "session_id": session_id, "start_commit": start_commit, "command": self.agent}),
        )?;
        let end = self.run_journaled(&spec, session_id, role).await?;
        let (exit_code, signal) = match end.ended {
            Ended::Exited(c) => (Some(c), None),
            Ended::Signaled(s) => (None, Some(s)),
            _ => (None, None),
        };
        self.journal.record(
            "session_end",
            chunk,
            json!({
                "role": role, "attempt": attempt, "session_id": session_id,
                "start_commit": start_commit, "exit_status": exit_code, "signal": signal,
                "ended": self.describe_end(&end.ended), "duration_ms": end.duration.as_millis() as u64,
                "pgid": end.pgid,
            }),
        )?;
        Ok(end)
    }

    /// How a session ended, in words; a second Ctrl-C is the user's stop, not a drain timeout.
    fn describe_end(&self, ended: &Ended) -> String {
        match ended {
            Ended::Interrupted { drained: false } if self.interrupt.forced() => {
                "was killed: you stopped runner with a second Ctrl-C".to_string()
            }
            other => other.describe(),
        }
    }
}

/// What the agent said, read from the plan: `runner chunk done|fail` records it on the attempt;
/// an agent that edited the plan itself and set `completed` counts as done.
fn read_report(chunk: &Chunk) -> Report {
    let last = chunk.last_attempt();
    match last.as_ref().and_then(|a| a.reported.as_deref()) {
        Some("done") => Report::Done,
        Some("fail") => Report::Fail(
            last.and_then(|a| a.report_notes)
                .unwrap_or_else(|| "no reason given".into()),
        ),
        _ if chunk.status == Status::Completed => Report::Done,
        _ => Report::Silent,
    }
}

fn plan_error_lines(e: &PlanError) -> Vec<String> {
    let at = match (e.line, e.column) {
        (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
        _ => String::new(),
    };
    e.problems.iter().map(|p| format!("{p}{at}")).collect()
}

/// `20261122T192400Z-coder-subtask-1-1-a2`: sortable, readable, safe as a folder name.
pub fn session_id(role: &str, chunk: Option<&str>, attempt: u32) -> String {
    let chunk: String = chunk
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut id = format!(
        "{}-{:04x}-{role}",
        crate::clock::stamp(),
        (nanos >> 10) & 0xffff
    );
    if !chunk.is_empty() {
        id.push('-');
        id.push_str(&chunk);
    }
    id.push_str(&format!("-a{attempt}"));
    id
}
