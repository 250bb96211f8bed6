//! The forge's own command-line tool (`gh`, `glab`): found on `PATH`, run as an agent is
//! (`agent::run_child`: a process group of its own, SIGTERM when runner dies, stopped at its
//! timeout, its output capped in a log), with an argv (never a shell) and no way to ask: stdin
//! is `/dev/null`, stdout a pipe, and `GH_PROMPT_DISABLED=1`. What to run and what its output
//! means are decided in `policy::pr`.

use std::path::Path;
use std::time::Duration;

use crate::agent::{ChildSpec, Ended, Interrupt, run_child};

/// What the log keeps of the tool's output (its head and its tail): the URL and any error.
const MAX_LOG_BYTES: u64 = 64 * 1024;

/// How a tool's run ended.
#[derive(Debug, Clone)]
pub struct ToolRun {
    /// Its exit status; `None` when it did not exit by itself (killed at the timeout, by a
    /// signal).
    pub exit_code: Option<i32>,
    /// Why it did not exit by itself, in words.
    pub stopped: Option<String>,
    /// What it printed on stdout and stderr, in order (as the log kept it).
    pub output: String,
}

/// The environment every tool gets over runner's: never a prompt, no colour, no update
/// notice, no git question on a terminal.
fn quiet_env() -> Vec<(String, String)> {
    [
        ("GH_PROMPT_DISABLED", "1"),
        ("GH_NO_UPDATE_NOTIFIER", "1"),
        ("NO_COLOR", "1"),
        ("GIT_TERMINAL_PROMPT", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Run `argv` in `cwd` to its end or `timeout`, its output to `log` (created there, never
/// through a link). An error is one that kept it from starting.
pub async fn run(
    argv: &[String],
    cwd: &Path,
    log: &Path,
    timeout: Duration,
) -> anyhow::Result<ToolRun> {
    let spec = ChildSpec {
        argv: argv.to_vec(),
        cwd: cwd.to_path_buf(),
        env: quiet_env(),
        stdin: None,
        log_path: log.to_path_buf(),
        timeout,
        drain: Duration::ZERO,
        max_log_bytes: MAX_LOG_BYTES,
        watch_for: None,
    };
    // No signal of runner's is listened to here: a Ctrl-C ends runner, and the tool gets its
    // SIGTERM from the parent-death signal `run_child` sets.
    let end = run_child(&spec, &Interrupt::default(), &mut |_| {}).await?;
    let output = crate::store::spec_text::read_prefix(log, 2 * MAX_LOG_BYTES)
        .map(|(bytes, _)| crate::fs::lossy(bytes))
        .unwrap_or_default();
    let (exit_code, stopped) = match end.ended {
        Ended::Exited(code) => (Some(code), None),
        Ended::TimedOut => (
            None,
            Some(format!("was stopped after {} s", timeout.as_secs())),
        ),
        other => (None, Some(other.describe())),
    };
    Ok(ToolRun {
        exit_code,
        stopped,
        output,
    })
}
