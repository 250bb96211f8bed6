//! The agent as a child process: its own process group (so a timeout or Ctrl-C reaches every
//! process it started), the prompt on stdin, stdout and stderr through one pipe into the
//! session log, capped (`capture`).

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::capture::{CappedLog, OutputSummary};
use super::interrupt::Interrupt;

/// How long a timed-out process group gets between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(5);

pub struct ChildSpec {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub stdin: Option<String>,
    pub log_path: PathBuf,
    pub timeout: Duration,
    /// After an interrupt: how long the group may finish on its own after SIGTERM.
    pub drain: Duration,
    /// The log keeps at most this many bytes of output (head and tail; `agent.max_log_bytes`).
    pub max_log_bytes: u64,
    /// Bytes to look for in the whole output (a verification's expected output).
    pub watch_for: Option<String>,
}

/// How long, after the child's group is gone, its output may take to reach end-of-file: a
/// process that left the group (setsid) may hold the pipe open forever.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// How a child ended: plain data, defined with the decisions that read it.
pub use crate::policy::Ended;

#[derive(Debug, Clone)]
pub struct ChildEnd {
    pub ended: Ended,
    pub duration: Duration,
    pub pgid: Option<i32>,
    pub output: OutputSummary,
}

/// Run the child to its end, a timeout, or an interrupt. The child's whole process group is
/// gone when this returns. `on_spawn` gets the process group id as soon as the child runs, so
/// it can be recorded before anything else can happen.
pub async fn run_child(
    spec: &ChildSpec,
    interrupt: &Interrupt,
    on_spawn: &mut dyn FnMut(i32),
) -> anyhow::Result<ChildEnd> {
    let Some(program) = spec.argv.first() else {
        anyhow::bail!("empty command");
    };
    let log = crate::fs::safe::create(&spec.log_path)
        .with_context(|| format!("creating {}", spec.log_path.display()))?;
    // stdout and stderr share one pipe, so their lines stay in the order they were written.
    let (reader, writer) = std::io::pipe()?;
    let (stdin_reader, stdin_writer) = match spec.stdin {
        Some(_) => {
            let (r, w) = std::io::pipe()?;
            (Some(OwnedFd::from(r)), Some(w))
        }
        None => (None, None),
    };
    let started = Instant::now();
    // Its own process group, and SIGTERM when runner dies: an agent must not go on editing
    // the worktree behind a crashed runner's back (see `spawn`). The start consumes runner's
    // copies of the pipes' child ends: without closing them the output would never end.
    let spawned = super::spawn::start(super::spawn::Start {
        argv: &spec.argv,
        cwd: &spec.cwd,
        env: &spec.env,
        stdin: stdin_reader,
        stdout: OwnedFd::from(writer.try_clone()?),
        stderr: OwnedFd::from(writer),
    });
    let mut child = spawned.map_err(|e| {
        crate::error::RunnerError::bad_input(format!("cannot start {program:?}: {e}")).with_hint(
            "check the agent command ([agent] command in .auto-claude/config.toml, or --agent-command)",
        )
    })?;
    let watch = spec.watch_for.as_deref().unwrap_or("").as_bytes();
    let capture = Capture::start(reader, CappedLog::new(log, spec.max_log_bytes, watch));
    // The child leads its own group (see `spawn`): its pid is the group's id.
    let pgid = child.id();
    on_spawn(pgid);
    tracing::debug!(?pgid, argv = ?spec.argv, cwd = %spec.cwd.display(), "started child");
    if let (Some(text), Some(mut stdin)) = (spec.stdin.clone(), stdin_writer) {
        // An agent that never reads its stdin must not block us: write from a thread of its
        // own, which ends at the latest when the agent does (a closed pipe).
        std::thread::Builder::new()
            .spawn(move || {
                let _ = std::io::Write::write_all(&mut stdin, text.as_bytes());
            })
            .context("starting the thread that gives the agent its prompt")?;
    }
    let ended = tokio::select! {
        status = child.wait() => exit_of(status?),
        _ = tokio::time::sleep(spec.timeout) => {
            stop_group(&mut child, pgid, interrupt, TERM_GRACE).await;
            Ended::TimedOut
        }
        _ = interrupt.wait() => {
            let drained = stop_group(&mut child, pgid, interrupt, spec.drain).await;
            Ended::Interrupted { drained }
        }
    };
    // The session is over: whatever it left running in its group goes too.
    kill_group(pgid, libc::SIGKILL);
    let output = capture.finish(OUTPUT_GRACE).await;
    tracing::debug!(?pgid, ?ended, elapsed = ?started.elapsed(), ?output, "child ended");
    Ok(ChildEnd {
        ended,
        duration: started.elapsed(),
        pgid: Some(pgid),
        output,
    })
}

/// The thread that drains the child's output pipe into its capped log. It reads until
/// end-of-file whatever happens, so the child never blocks on a full pipe.
struct Capture {
    log: Arc<Mutex<Option<CappedLog<std::fs::File>>>>,
    done: tokio::sync::oneshot::Receiver<OutputSummary>,
}

impl Capture {
    fn start(mut reader: std::io::PipeReader, log: CappedLog<std::fs::File>) -> Capture {
        let log = Arc::new(Mutex::new(Some(log)));
        let shared = Arc::clone(&log);
        let (tx, done) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                let Ok(mut slot) = shared.lock() else {
                    continue;
                };
                // A full disk stops the logging inside `feed`, never the search or the drain.
                if let Some(log) = slot.as_mut() {
                    log.feed(&buf[..n]);
                }
            }
            if let Some(summary) = take_and_finish(&shared) {
                let _ = tx.send(summary);
            }
        });
        Capture { log, done }
    }

    /// The summary once the output ended, or after `grace` with what arrived by then.
    async fn finish(self, grace: Duration) -> OutputSummary {
        match tokio::time::timeout(grace, self.done).await {
            Ok(Ok(summary)) => summary,
            _ => take_and_finish(&self.log).unwrap_or_default(),
        }
    }
}

/// Finish the log if nobody has yet (exactly one of the reader and the waiter does).
fn take_and_finish(log: &Mutex<Option<CappedLog<std::fs::File>>>) -> Option<OutputSummary> {
    let log = log.lock().ok()?.take()?;
    let (summary, _) = log.finish();
    if let Some(e) = &summary.log_incomplete {
        tracing::warn!(error = %e, "the session log is incomplete");
    }
    Some(summary)
}

fn exit_of(status: std::process::ExitStatus) -> Ended {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ended::Exited(code),
        (None, Some(sig)) => Ended::Signaled(sig),
        (None, None) => Ended::Exited(-1),
    }
}

/// SIGTERM the group and give it `grace` (cut short by a further interrupt) to end, then
/// SIGKILL. Returns whether the child ended within the grace period.
async fn stop_group(
    child: &mut super::spawn::Child,
    pgid: i32,
    interrupt: &Interrupt,
    grace: Duration,
) -> bool {
    kill_group(pgid, libc::SIGTERM);
    // Cut short by any signal after the first: one that came with it (a second Ctrl-C at the
    // same instant, or a job's parent stopping it at once with two signals) already has.
    let already = interrupt.count().min(1);
    let drained = tokio::select! {
        _ = child.wait() => true,
        _ = tokio::time::sleep(grace) => false,
        _ = interrupt.wait_beyond(already) => false,
    };
    kill_group(pgid, libc::SIGKILL);
    let _ = child.wait().await;
    drained
}

pub fn kill_group(pgid: i32, signal: i32) {
    // A group that is gone gives ESRCH, ignored.
    if pgid > 0
        && let (Some(group), Some(signal)) = (
            rustix::process::Pid::from_raw(pgid),
            rustix::process::Signal::from_named_raw(signal),
        )
    {
        let _ = rustix::process::kill_process_group(group, signal);
    }
}

/// Have the child started by `cmd` get a SIGTERM when this process dies: a spec's run under
/// `run --jobs` is not left working behind a runner that crashed. (Agents are started by
/// `spawn`, which does the same.)
pub fn term_with_runner(cmd: &mut tokio::process::Command) {
    super::spawn::term_with_runner(cmd.as_std_mut());
}
