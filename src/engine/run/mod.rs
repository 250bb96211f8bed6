//! `runner run`: take a spec from "nothing planned" to "every chunk completed and committed",
//! resuming wherever the last run stopped.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use serde_json::{Value, json};

mod base;
mod chunk;
mod drive;
mod hints;
mod interrupted;
pub mod person;
mod planner;
mod prompt;
mod report;
mod session;
mod shutdown;
mod slot;

use crate::agent::{ChildSpec, Ended, Interrupt, Prompts, run_child};
use crate::config::{Config, parse_agent_command};
use crate::error::RunnerError;
use crate::git::{Slot, SlotState, branch_for, commit_all, dirty_paths, head_commit, slot_holding};
use crate::plan::{
    Attempt, Chunk, NextStep, Plan, PlanError, Status, check_planner_output, next_step,
    verification,
};
use crate::policy::{self, AfterFailure, CheckResult, Report, Verdict};
use crate::store::guard::{self, Patience, new_holder};
use crate::store::workspace::{SpecPaths, Workspace};
use crate::store::{Journal, LockState, lock};
use base::{has_no_commits, repin_base, undo_repin};
pub use hints::{resume_command, retry_failed_hint, run_again_command};
pub use interrupted::{interrupted_specs, recover_options, run_interrupted};
use report::Reporter;
use session::read_report;
use slot::prepare_slot;

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

    let run_id = crate::store::ids::run_id();
    let holder = new_holder(&run_id, Some(&spec_name));
    let spec_lock = guard::take(&paths.run_lock, &holder, Patience::Moment, || {
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
    let slot_lock = guard::take(&ws.slot_lock(&slot.name), &holder, Patience::Moment, || {
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
    let recovery =
        crate::engine::recovery::recover_spec(&ws, &paths, &journal, &recover_opts).await?;
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

    let locks = Arc::new(vec![spec_lock, slot_lock]);
    let heartbeat = tokio::spawn(guard::heartbeat(locks.clone(), holder));

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

fn empty_plan() -> Plan {
    Plan::default()
}

/// `--spec` resolved, or the only spec there is.
pub fn pick_spec(ws: &Workspace, query: Option<&str>) -> anyhow::Result<String> {
    if let Some(q) = query {
        crate::store::spec::check_name(q)?;
        // Several matches: on a terminal, a numbered choice; otherwise the list and exit 2.
        let names = crate::store::spec::list(&ws.specs_dir);
        if let crate::store::spec::Resolution::Many(matches) =
            crate::store::spec::resolve_among(&names, q)
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

static RESUME_COMMAND: std::sync::OnceLock<String> = std::sync::OnceLock::new();

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
