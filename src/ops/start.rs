//! Start a spec's run in the background (the MCP server's `start_run`): `runner run --spec S
//! --auto-continue` as a process of its own — its own process group, stdin from /dev/null,
//! its output in `runs/<run id>.log` of the spec — so that it goes on when the caller (an MCP
//! session, an IDE) goes away.
//!
//! The run id is chosen here and handed to the run (`--run-id`, hidden), so the caller has it
//! at once; this waits only until the run has taken the spec (its record is written under its
//! lock) or has stopped, so that a refusal (busy, a bad flag, a plan to fix) is the caller's
//! error and not a line in a log nobody reads.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Serialize;

use super::{Ctx, Person};
use crate::error::RunnerError;
use crate::store::runs;
use crate::store::workspace::SpecPaths;
use crate::store::{LockState, lock};

/// How long `start` waits for the run to take its spec.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// How the run goes (the flags `runner run` takes).
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// The spec (fuzzy, as everywhere); none: the slot's, or the only one.
    pub spec: Option<String>,
    /// runner's own program (`std::env::current_exe`).
    pub program: PathBuf,
    pub agent_command: Option<String>,
    pub agent: Option<String>,
    pub slot: Option<String>,
    pub base_branch: Option<String>,
    pub drain_timeout: Option<u64>,
    pub max_usd: Option<f64>,
    /// `--plan-only`: plan the spec if it has no plan yet, and stop before any chunk.
    pub plan_only: bool,
}

/// The run started.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StartReport {
    pub spec: String,
    /// The new run's id: show_run and list_runs follow it.
    pub run_id: String,
    /// Its process.
    pub pid: u32,
    /// Where its output goes.
    pub log: String,
    /// `running`: it has taken the spec; `ended`: it already finished (nothing was left to
    /// do); `starting`: it had not taken the spec yet when this answered.
    pub state: String,
}

/// Start the run of the spec `opts` names in the background (see the module comment). A spec a
/// runner holds is refused (exit 4), as is a run that stops at once (its error, with its exit
/// code).
pub fn start(ctx: &Ctx, opts: StartOptions, person: &dyn Person) -> anyhow::Result<StartReport> {
    if let Some(slot) = &opts.slot {
        crate::store::spec::check_name(slot)
            .map_err(|e| RunnerError::bad_input(format!("slot: {e}")))?;
    }
    let name = ctx.spec_name(opts.spec.as_deref(), person)?;
    let paths = &ctx.ws.spec(&name)?;
    let opts = &opts;
    refuse_if_held(paths)?;
    let run_id = crate::store::ids::run_id();
    let dir = crate::store::safe::create_real_dirs(&paths.dir, &[runs::RUNS_DIR])?;
    let log_path = dir.join(format!("{run_id}.log"));
    let log = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&log_path)
        .map_err(crate::store::at(&log_path))?;
    let mut cmd = std::process::Command::new(&opts.program);
    cmd.args([
        "--color",
        "never",
        "run",
        "--spec",
        &paths.name,
        "--auto-continue",
    ])
    .args(["--run-id", &run_id])
    .args(flags(opts))
    .current_dir(&ctx.ws.root)
    .stdin(std::process::Stdio::null())
    .stdout(log.try_clone()?)
    .stderr(log);
    // Not an agent session's: the run sets its own for its agents.
    for var in [
        "RUNNER_SPEC_DIR",
        "RUNNER_CHUNK_ID",
        "RUNNER_SESSION_ID",
        "RUNNER_RUN_ID",
    ] {
        cmd.env_remove(var);
    }
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .map_err(|e| anyhow::anyhow!("starting {}: {e}", opts.program.display()))?;
    let pid = child.id();
    let state = wait_for_start(paths, &run_id, &mut child, &log_path)?;
    // Reaped when it ends (while this process lives; after, by whoever adopts it).
    std::thread::spawn(move || child.wait());
    Ok(StartReport {
        spec: paths.name.clone(),
        run_id,
        pid,
        log: log_path.display().to_string(),
        state: state.into(),
    })
}

/// A runner holds the spec: busy (exit 4), naming its run.
fn refuse_if_held(paths: &SpecPaths) -> anyhow::Result<()> {
    let LockState::Held(holder) = lock::probe(&paths.run_lock)? else {
        return Ok(());
    };
    let by = holder
        .map(|h| format!(" (run {}, pid {})", h.run_id, h.pid))
        .unwrap_or_default();
    Err(RunnerError::Busy(format!(
        "spec {} is being run{by}; no other run was started",
        paths.name
    ))
    .with_hint("follow it with status or show_run, or wait for it to end")
    .into())
}

/// The flags of `opts` for `runner run`.
fn flags(opts: &StartOptions) -> Vec<String> {
    let mut out = Vec::new();
    // `--name=value`, one word: a value that starts with `-` is the flag's value, not a flag.
    let mut flag = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            out.push(format!("{name}={value}"));
        }
    };
    flag("--agent-command", opts.agent_command.clone());
    flag("--agent", opts.agent.clone());
    flag("--slot", opts.slot.clone());
    flag("--base-branch", opts.base_branch.clone());
    flag("--drain-timeout", opts.drain_timeout.map(|s| s.to_string()));
    flag("--max-usd", opts.max_usd.map(|usd| usd.to_string()));
    if opts.plan_only {
        out.push("--plan-only".into());
    }
    out
}

/// How long a run whose record is written is watched before it is said to be `running`: the
/// record is written before the run's own checks (the plan, the base branch, the budget), so a
/// refusal comes just after it, and must be the caller's error, not `running`.
pub const SETTLE: Duration = Duration::from_millis(1500);

/// Until the run's record is written and it has not stopped for [`SETTLE`] (`running`), the
/// process ends (`ended`, or its error), or [`PATIENCE`] passes (`starting`).
fn wait_for_start(
    paths: &SpecPaths,
    run_id: &str,
    child: &mut std::process::Child,
    log: &std::path::Path,
) -> anyhow::Result<&'static str> {
    let deadline = Instant::now() + PATIENCE;
    let mut recorded: Option<Instant> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            if status.success() {
                return Ok("ended");
            }
            return Err(stopped(status, log));
        }
        if let runs::Found::Record(record) = runs::read(&paths.dir, run_id) {
            let since = *recorded.get_or_insert_with(Instant::now);
            // An ended record: the process is about to exit with its error.
            if record.ended.is_none() && since.elapsed() >= SETTLE {
                return Ok("running");
            }
        }
        if Instant::now() > deadline {
            return Ok(if recorded.is_some() {
                "running"
            } else {
                "starting"
            });
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The error of a run that stopped at once: its last `runner: …` line and hints from its log
/// (else the argument parser's `error: …` line, for a flag value it refused), with the kind
/// its exit code says.
fn stopped(status: std::process::ExitStatus, log: &std::path::Path) -> anyhow::Error {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().rposition(|l| l.starts_with("runner: "));
    let refused = lines.iter().find_map(|l| l.strip_prefix("error: "));
    let (message, hints) = match (at, refused) {
        (None, Some(refused)) => (refused.to_string(), Vec::new()),
        (None, None) => (format!("the run stopped at once ({status})"), Vec::new()),
        (Some(at), _) => (
            lines[at].trim_start_matches("runner: ").to_string(),
            lines[at + 1..]
                .iter()
                .filter_map(|l| l.trim_start().strip_prefix("hint: "))
                .map(str::to_string)
                .collect(),
        ),
    };
    let message = format!("{message} (the run's output: {})", log.display());
    use crate::error::exit;
    let err = match status.code() {
        Some(exit::BAD_INPUT) => RunnerError::BadInput(message),
        Some(exit::NEEDS_HUMAN) => RunnerError::NeedsHuman(message),
        Some(exit::BUSY) => RunnerError::Busy(message),
        Some(exit::BUDGET_SPENT) => RunnerError::BudgetSpent(message),
        Some(exit::USAGE_LIMITED) => RunnerError::UsageLimited(message),
        _ => return anyhow::anyhow!(message),
    };
    hints.into_iter().fold(err, RunnerError::with_hint).into()
}
