//! Running git's own program for a network step: in the repository's root, never asking on a
//! terminal, no hook of the user's, and a timeout that kills git's whole process group (the
//! `ssh`, `git-remote-https` or `git-receive-pack` it started included), so that a remote that
//! accepts the connection and never answers cannot hold runner (or a worker's lease) forever.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::RunnerError;

/// The most of git's stdout or stderr kept: a push's `--porcelain` lines and `ls-remote`'s are a
/// line per ref; a remote that prints without end must not fill runner's memory.
const MAX_OUTPUT: u64 = 16 << 20;

/// What a git program that ran to its end left.
#[derive(Debug)]
pub struct Ran {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Ran {
    /// Git's own words of why it failed: its `fatal:`/`error:` lines, else its last lines.
    pub fn why(&self) -> String {
        let lines: Vec<&str> = self.stderr.lines().map(str::trim).collect();
        let said: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.starts_with("fatal:") || l.starts_with("error:"))
            .collect();
        let chosen = if said.is_empty() {
            lines[lines.len().saturating_sub(3)..].to_vec()
        } else {
            said
        };
        let text = chosen.join("; ");
        let text: String = text.chars().take(1000).collect();
        match (text.is_empty(), self.status.code(), self.status.signal()) {
            (false, _, _) => text,
            (true, Some(code), _) => format!("git exited with {code}"),
            (true, None, Some(sig)) => format!("git was killed by signal {sig}"),
            (true, None, None) => "git failed".into(),
        }
    }
}

/// `git` with runner's fixed settings, in `root`, with `args` after them. What a user's
/// configuration may not change for runner's network steps:
/// - no hook of theirs runs (`core.hooksPath=/dev/null`: a fetch updates refs and would run
///   `reference-transaction`; pushes also pass `--no-verify`);
/// - no question on a terminal: `GIT_TERMINAL_PROMPT=0`, `GCM_INTERACTIVE=never` (Git
///   Credential Manager), stdin from /dev/null, and git in a process group of its own, so an
///   `ssh` that would ask on the terminal is stopped by it (SIGTTIN) and killed at the timeout.
///   An askpass program the user set (`GIT_ASKPASS`, `SSH_ASKPASS`) is kept: it is how
///   credentials reach a worker without a terminal, and a GUI one that waits is cut by the
///   timeout too.
/// - English messages (`LC_ALL=C`), which [`Ran::why`] passes on.
pub fn command(root: &Path, args: &[String]) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(root)
        .args(["-c", "core.hooksPath=/dev/null"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GCM_INTERACTIVE", "never")
        .env("LC_ALL", "C")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    cmd
}

/// Run `git args` in `root` until it ends or `timeout` passes. At the timeout git's process
/// group is killed (SIGKILL), git is waited for, and the error is `RunnerError::Remote` naming
/// `what`; a git that could not be started is an error too.
pub fn run(root: &Path, args: &[String], timeout: Duration, what: &str) -> anyhow::Result<Ran> {
    let deadline = Instant::now() + timeout;
    let mut child = command(root, args)
        .spawn()
        .map_err(|e| anyhow::anyhow!("starting git for {what}: {e} (is git installed?)"))?;
    let pgid = child.id() as i32;
    let (tx, rx) = mpsc::channel();
    for (n, pipe) in [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .enumerate()
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(pipe) = pipe {
                let _ = pipe.take(MAX_OUTPUT).read_to_end(&mut bytes);
            }
            let _ = tx.send((n, bytes));
        });
    }
    drop(tx);
    // Waited for without reaping it (`WNOWAIT`): while git is an unreaped zombie its id cannot
    // be reused, so the group killed below is surely git's.
    // Polled from 1 ms up to 10 ms apart: a local push takes tens of milliseconds, and the
    // time a publication costs over a plain `git push` is measured (issue 29, ≤ 1.5×).
    let mut pause = Duration::from_millis(1);
    let ended = loop {
        if exited_unreaped(pgid) {
            break true;
        }
        if Instant::now() >= deadline {
            break false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    };
    // Whatever git started and left behind goes with it; an ended git's group is usually gone.
    kill_group(pgid, !ended);
    let status = child
        .wait()
        .map_err(|e| anyhow::anyhow!("waiting for git ({what}): {e}"))?;
    if !ended {
        return Err(RunnerError::Remote(format!(
            "{what}: no answer from the remote within {}s; git was stopped",
            timeout.as_secs_f64()
        ))
        .with_hint("check the remote's address (`git remote -v`) and the network, then run again")
        .into());
    }
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    // The group is gone, so the pipes close; a process that left the group may hold one open,
    // and its output is not waited for beyond the deadline (and a short grace).
    let grace = deadline.max(Instant::now()) + Duration::from_millis(500);
    for _ in 0..2 {
        match rx.recv_timeout(grace.saturating_duration_since(Instant::now())) {
            Ok((0, bytes)) => stdout = bytes,
            Ok((_, bytes)) => stderr = bytes,
            Err(_) => break,
        }
    }
    Ok(Ran {
        status,
        stdout,
        stderr: crate::fs::lossy(stderr),
    })
}

/// Whether the child `pid` has ended, leaving it unreaped.
fn exited_unreaped(pid: i32) -> bool {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    let Some(pid) = Pid::from_raw(pid) else {
        return true;
    };
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    // An error (ECHILD: already reaped) counts as ended: nothing is left to wait for.
    !matches!(waitid(WaitId::Pid(pid), options), Ok(None))
}

/// SIGKILL to the process group `pgid` (gone already: nothing happens); with `settle`, a short
/// wait (at most 200 ms) for its members to be gone, as a killed process takes a moment to
/// exit. (Not after git ended on its own: its group is then all but always empty, and the
/// look at /proc would cost every push a few milliseconds.)
fn kill_group(pgid: i32, settle: bool) {
    let Some(group) = rustix::process::Pid::from_raw(pgid) else {
        return;
    };
    if rustix::process::kill_process_group(group, rustix::process::Signal::KILL).is_err() || !settle
    {
        return;
    }
    let until = Instant::now() + Duration::from_millis(200);
    // Signal 0 tells whether any member is left (the leader, a zombie until it is reaped,
    // counts: it is waited for below, so only members other than it are waited for here).
    while Instant::now() < until && others_in_group(pgid) {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Whether a live process other than the leader `pgid` is in its group (from /proc).
fn others_in_group(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            return false;
        };
        pid != pgid
            && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let Some(rest) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
                    return false;
                };
                let fields: Vec<&str> = rest.split_whitespace().collect();
                fields.first().is_some_and(|state| *state != "Z")
                    && fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
            })
    })
}

/// Refuse a remote name git would read as an option (`--upload-pack=…` runs a program).
pub fn check_remote_arg(remote: &str) -> anyhow::Result<()> {
    if remote.is_empty() || remote.starts_with('-') || remote.contains(['\n', '\0']) {
        return Err(
            RunnerError::bad_input(format!("invalid git remote {remote:?}"))
                .with_hint("`git remote -v` lists the remotes of this repository")
                .into(),
        );
    }
    Ok(())
}
