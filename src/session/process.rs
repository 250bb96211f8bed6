//! The agent as a child process: its own process group (so a timeout or Ctrl-C reaches every
//! process it started), the prompt on stdin, stdout and stderr into the session log.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::interrupt::Interrupt;

/// How long a process group gets between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(5);

pub struct ChildSpec {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub stdin: Option<String>,
    pub log_path: PathBuf,
    pub timeout: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Exited(i32),
    Signaled(i32),
    TimedOut,
    Interrupted,
}

impl Ended {
    pub fn describe(&self) -> String {
        match self {
            Ended::Exited(code) => format!("exited with status {code}"),
            Ended::Signaled(sig) => format!("killed by signal {sig}"),
            Ended::TimedOut => "timed out and was killed".to_string(),
            Ended::Interrupted => "interrupted".to_string(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ChildEnd {
    pub ended: Ended,
    pub duration: Duration,
    pub pgid: Option<i32>,
}

/// Run the child to its end, a timeout, or an interrupt. The child's whole process group is
/// gone when this returns.
pub async fn run_child(spec: &ChildSpec, interrupt: &Interrupt) -> anyhow::Result<ChildEnd> {
    let Some((program, args)) = spec.argv.split_first() else {
        anyhow::bail!("empty command");
    };
    let log = std::fs::File::create(&spec.log_path)
        .with_context(|| format!("creating {}", spec.log_path.display()))?;
    let log_err = log.try_clone()?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log_err))
        .process_group(0)
        .kill_on_drop(true);
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec here.
    unsafe {
        cmd.pre_exec(|| {
            // Die with runner: an agent must not go on editing the worktree behind a crashed
            // runner's back.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| {
        crate::error::RunnerError::bad_input(format!(
            "cannot start {program:?}: {e}. Check the agent command ([agent] command in .auto-claude/config.toml or --agent-command)"
        ))
    })?;
    let pgid = child.id().map(|pid| pid as i32);
    tracing::debug!(?pgid, argv = ?spec.argv, cwd = %spec.cwd.display(), "started child");
    if let (Some(text), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
        // An agent that never reads its stdin must not block us: write in the background and
        // ignore a closed pipe.
        tokio::spawn(async move {
            let _ = stdin.write_all(text.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
    }
    let ended = tokio::select! {
        status = child.wait() => exit_of(status?),
        _ = tokio::time::sleep(spec.timeout) => {
            stop_group(&mut child, pgid, interrupt).await;
            Ended::TimedOut
        }
        _ = interrupt.wait() => {
            stop_group(&mut child, pgid, interrupt).await;
            Ended::Interrupted
        }
    };
    // The session is over: whatever it left running in its group goes too.
    if let Some(pgid) = pgid {
        kill_group(pgid, libc::SIGKILL);
    }
    tracing::debug!(?pgid, ?ended, elapsed = ?started.elapsed(), "child ended");
    Ok(ChildEnd {
        ended,
        duration: started.elapsed(),
        pgid,
    })
}

fn exit_of(status: std::process::ExitStatus) -> Ended {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ended::Exited(code),
        (None, Some(sig)) => Ended::Signaled(sig),
        (None, None) => Ended::Exited(-1),
    }
}

/// SIGTERM the group, give it `TERM_GRACE` (cut short by a second interrupt), then SIGKILL.
async fn stop_group(child: &mut tokio::process::Child, pgid: Option<i32>, interrupt: &Interrupt) {
    let Some(pgid) = pgid else { return };
    kill_group(pgid, libc::SIGTERM);
    let already = interrupt.count();
    tokio::select! {
        _ = child.wait() => {}
        _ = tokio::time::sleep(TERM_GRACE) => {}
        _ = interrupt.wait_beyond(already) => {}
    }
    kill_group(pgid, libc::SIGKILL);
    let _ = child.wait().await;
}

pub fn kill_group(pgid: i32, signal: i32) {
    if pgid > 0 {
        // SAFETY: killpg has no memory effects; a group that is gone gives ESRCH, ignored.
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}
