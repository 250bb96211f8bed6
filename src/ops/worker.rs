//! `runner worker`: build specs published on a git remote, in this clone (a host), under a
//! lease each (docs/fleet.md). One worker per clone: a second one is refused (busy, exit 4).
//! The engine does the work (`engine::worker`); this door takes the clone's worker lock,
//! settles the remote, the lease, the account and the jobs' flags from the options and the
//! config.

use std::ffi::OsString;
use std::path::PathBuf;

pub use crate::engine::worker::{LostLease, TakenSpec, WorkerReport};

use super::Ctx;
use crate::error::RunnerError;

/// `runner worker`'s options (the front end's flags).
#[derive(Debug, Clone, Default)]
pub struct WorkerOptions {
    /// `--remote`; none: `fleet.remote`.
    pub remote: Option<String>,
    /// `--jobs` (≥ 1; none: 1).
    pub jobs: Option<usize>,
    pub exit_when_idle: bool,
    /// `--agent` / `--agent-command`: given to every job's run, and naming the account when
    /// `fleet.account` does not.
    pub agent: Option<String>,
    pub agent_command: Option<String>,
    /// runner's own executable (the jobs' program).
    pub program: PathBuf,
    /// Flags every job's run gets besides the agent's (colour, verbosity).
    pub args: Vec<OsString>,
    /// Agent sessions shown live (a terminal).
    pub live: bool,
}

/// The file whose OS lock one worker per clone holds.
const WORKER_LOCK: &str = "worker.lock";

/// Work as a worker (see the module).
pub fn worker(ctx: &Ctx, opts: WorkerOptions) -> anyhow::Result<WorkerReport> {
    if opts.jobs == Some(0) {
        return Err(RunnerError::bad_input("--jobs 0 would build nothing; give 1 or more").into());
    }
    let config = ctx.ws.config()?;
    // Checked as every fleet command checks it: a name git does not list would be read by git
    // as a path (a folder in the clone, where the worker would publish).
    let remote = super::remote::remote_name(ctx, opts.remote.as_deref())?;
    // As every command that writes runner's folder: it is never part of the clone's changes.
    ctx.ws.main.ensure_excluded()?;
    let path = ctx.ws.state_dir.join(WORKER_LOCK);
    let _lock = crate::fs::lock::FileLock::try_acquire(&path)?.ok_or_else(|| {
        RunnerError::Busy(format!(
            "another runner worker works in this clone ({})",
            ctx.ws.root.display()
        ))
        .with_hint("one worker per clone: start another worker in a clone of its own")
    })?;
    let account = account(&config, &opts)?;
    let mut args = opts.args.clone();
    for (flag, value) in [
        ("--agent", &opts.agent),
        ("--agent-command", &opts.agent_command),
    ] {
        if let Some(value) = value {
            args.push(flag.into());
            args.push(value.into());
        }
    }
    let engine_opts = crate::engine::worker::WorkerOptions {
        remote,
        jobs: opts.jobs.unwrap_or(1),
        exit_when_idle: opts.exit_when_idle,
        lease: config.fleet.lease(),
        account,
        program: opts.program,
        cwd: ctx.ws.root.clone(),
        args,
        live: opts.live,
    };
    let progress = ctx.progress().clone();
    let job_progress = |spec: &str| progress.job(spec);
    crate::engine::worker::work(&ctx.ws, &engine_opts, progress.clone(), &job_progress)
}

/// The agent account whose usage limit the worker's runs share: as `run --jobs` names it
/// (`policy::account::account_of`) for the agent every run of this worker uses (the flag,
/// else the config's).
fn account(config: &crate::config::Config, opts: &WorkerOptions) -> anyhow::Result<String> {
    use crate::policy::agent_choice::AgentChoice;
    let agent = match (&opts.agent_command, &opts.agent) {
        (Some(text), _) => Some(AgentChoice::command(
            &crate::config::parse_agent_command(text)?,
            config.agent.permission,
        )),
        (None, Some(name)) => {
            let preset = crate::config::parse_preset(name)
                .map_err(|_| RunnerError::bad_input(format!("--agent {name:?} is not known")))?;
            Some(config.agent.choice_of(preset))
        }
        (None, None) => config.agent.choice(),
    };
    let configured = config.fleet.account.as_deref();
    Ok(match agent {
        Some(agent) => crate::policy::account::account_of(configured, &agent),
        None => configured.unwrap_or("none").to_string(),
    })
}
