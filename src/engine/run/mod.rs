//! `runner run`: take a spec from "nothing planned" to "every chunk completed and committed",
//! resuming wherever the last run stopped.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use serde_json::{Value, json};

pub mod ask;
mod base;
mod budget;
mod chunk;
mod drive;
mod end;
mod hints;
mod interrupted;
mod keep;
mod notify;
mod pause;
pub mod person;
mod planner;
mod prompt;
mod reattach;
mod session;
mod shutdown;
mod slot;
mod start;

use crate::agent::{ChildSpec, Ended, Interrupt, Prompts, run_child};
use crate::config::{Config, parse_agent_command};
use crate::engine::progress::Reporter;
use crate::engine::run::ask::{Asker, RepinQuestion};
use crate::error::RunnerError;
use crate::git::{Slot, SlotState, branch_for, dirty_paths, head_commit, slot_holding};
use crate::plan::{
    Attempt, Chunk, NextStep, Plan, PlanError, Status, check_planner_output, next_step,
    verification,
};
use crate::policy::{self, AfterFailure, CheckResult, Report, Verdict};
use crate::store::guard::{self, Patience, new_holder};
use crate::store::workspace::{SpecPaths, Workspace};
use crate::store::{Journal, LockState, lock};
use base::{base_tip, choose_base, undo_repin, write_repin};
pub use budget::EXHAUSTED_KEY;
pub use hints::{resume_command, retry_failed_hint, run_again_command};
pub use interrupted::{ToContinue, interrupted_specs, recover_options, still_interrupted};
use session::read_report;
use slot::prepare_slot;
pub use start::agent_for;
pub use start::{Prepared, prepare};

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub spec: Option<String>,
    pub auto_continue: bool,
    pub base_branch: Option<String>,
    pub agent_command: Option<String>,
    /// `--agent NAME`: a preset (its program and args from the config when it names the same).
    pub agent: Option<String>,
    pub slot: Option<String>,
    /// Overrides `[run] drain_timeout` (seconds).
    pub drain_timeout: Option<u64>,
    /// Overrides `[budget] max_usd` (dollars, over all the spec's runs).
    pub max_usd: Option<f64>,
    /// Never ask (with existing work and no `auto_continue`, that is a usage error).
    pub yes: bool,
    /// `--wait`: on a usage limit, sleep until it resets and go on (as `run.wait_for_limits`).
    pub wait: bool,
    /// The run this one continues (`runner resume`): kept in its run record.
    pub resumed_from: Option<String>,
    /// The id this run takes (`--run-id`, hidden: chosen by whoever started it in the
    /// background, `ops::start`), instead of a new one. Must have the form of a run id and be
    /// unused for the spec.
    pub run_id: Option<String>,
    /// `--plan-only`: stop once the spec has a plan (its outcome `planned`), before any chunk.
    pub plan_only: bool,
}

impl RunOptions {
    /// The agent flag this run was given, as the commands it prints must repeat it.
    pub fn agent_flag(&self) -> Option<crate::policy::next_command::AgentFlag> {
        crate::policy::next_command::AgentFlag::of(
            self.agent_command.as_deref(),
            self.agent.as_deref(),
        )
    }
}

/// What a finished run reports (`--json`; read back by `run --jobs` from each spec's run).
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct RunReport {
    pub spec: String,
    pub outcome: crate::policy::outcome::RunOutcome,
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
    agent: crate::agent::AgentSetup,
    /// `--agent-command` or `--agent` as given: printed commands that run the spec again
    /// need it.
    agent_flag: Option<crate::policy::next_command::AgentFlag>,
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
    /// The spec's spending at the run's start plus every session report this run read: what
    /// is spent is never taken as less than this (an agent may edit the ledger).
    ledger_floor: crate::policy::budget::Spent,
    drain: Duration,
    state_dir: PathBuf,
    /// Sessions cut off by the last shutdown, to be run again first.
    resume: Vec<crate::engine::recovery::interrupted::InterruptedSession>,
    /// The mode of the next coder session, chosen as its chunk was taken (`resume`); the
    /// session takes it (`session_mode`), a planner's starts afresh.
    next_session: Option<reattach::NextSession>,
    /// Where a person's `runner chunk` reaches this run (Linux): the only record of a person's
    /// plan changes during a session that the settle trusts.
    person: Option<person::Listener>,
    /// The last branch tip whose history passed the check: the next check starts from it.
    history: crate::engine::integrity::HistoryMemo,
    /// The coder prompt's progress of the phases it did not change.
    progress: prompt::ProgressMemo,
    /// Wait for usage limits to reset (`--wait`, `run.wait_for_limits`) instead of exit 6.
    wait: bool,
    /// What this run spent waiting for usage limits (bounded by `run.max_wait`).
    waited: Duration,
    /// The pause a usage limit set in this run, honoured before the next session even if its
    /// file could not be written.
    limited: Option<crate::store::pause::Pause>,
    /// The run record and the checkpoint (`keep`).
    keeper: keep::Keeper,
    /// The chunks' commits: each looks only at what changed since the last (`git::stage`).
    stager: std::sync::Mutex<crate::git::Stager>,
    /// `--plan-only`: the run ends once the spec has a plan.
    plan_only: bool,
}

fn empty_plan() -> Plan {
    Plan::default()
}

static RESUME_COMMAND: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// The chunk runner is about to work on, as the prompt and the loop need it.
struct Taken {
    chunk: Chunk,
    phase_name: Option<String>,
    attempt: u32,
    session_id: String,
    /// The plan as it was written when the chunk was taken.
    plan: Plan,
    /// How its session starts: afresh, or continuing the interrupted attempt's agent session.
    session: reattach::NextSession,
}

/// What the loop does next.
enum Take {
    Chunk(Box<Taken>),
    Complete(usize),
    Stuck(Vec<String>),
    BudgetSpent,
}
