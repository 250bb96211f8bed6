//! Starting an agent: std's `Command`, in a process group of its own, with
//! `PR_SET_PDEATHSIG` set between `fork` and `execve` so that an agent never goes on editing
//! the worktree behind a runner that died.
//!
//! std starts a child with `fork` when it is given a `pre_exec` step, and `fork` copies the
//! parent's page tables: a start costs a little more as runner's memory grows with the plan
//! (0.22 ms at 50 chunks, 0.56–0.84 ms at 800, strace). That is far inside the per-chunk
//! target (under 50 ms at 800 chunks, within 1.5× of 50; BENCHMARKS.md), and beside an agent
//! session of minutes; a hand-written `clone(CLONE_VM | CLONE_VFORK)` that avoided it was
//! removed for std's well-kept code (issue 26).
//!
//! The child is reaped by a thread of its own (`waitid` with `WNOWAIT`, then `waitpid` under a
//! lock), so that a kill on drop can never hit a reused pid.

use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, WaitOptions};

/// What to start: the agent's command in its own process group, with `env` over runner's.
pub struct Start<'a> {
    pub argv: &'a [String],
    pub cwd: &'a Path,
    pub env: &'a [(String, String)],
    /// The child's stdin (`None`: `/dev/null`), stdout and stderr.
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// A started child; killed (SIGKILL) when dropped before it ended, as tokio's `kill_on_drop`.
pub struct Child {
    pid: Pid,
    state: Arc<Mutex<Reaped>>,
    ended: tokio::sync::oneshot::Receiver<std::io::Result<ExitStatus>>,
    /// What `ended` gave (a receiver must not be polled again once it has): the status, or
    /// the error number of a wait that failed.
    outcome: Option<Result<ExitStatus, i32>>,
}

#[derive(Default)]
struct Reaped {
    done: bool,
}

/// Start the child: `PATH` looked up as `execvp` does (in the child's environment), a script
/// without `#!` run by `/bin/sh`, a key given twice in `env` counted once with its last
/// value, every signal unblocked and SIGPIPE back to its default. An error is the reason it
/// could not start (`execve`'s, say a missing program); nothing is left running then.
pub fn start(spec: Start) -> std::io::Result<Child> {
    let Some(program) = spec.argv.first() else {
        return Err(std::io::Error::other("empty command"));
    };
    if program.is_empty() {
        return Err(std::io::Error::from(std::io::ErrorKind::NotFound));
    }
    let mut cmd = std::process::Command::new(program);
    cmd.args(&spec.argv[1..])
        .current_dir(spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(spec.stdin.map_or_else(Stdio::null, Stdio::from))
        .stdout(Stdio::from(spec.stdout))
        .stderr(Stdio::from(spec.stderr))
        .process_group(0);
    term_with_runner(&mut cmd);
    let child = cmd.spawn()?;
    let pid = Pid::from_raw(child.id() as i32)
        .ok_or_else(|| std::io::Error::other("the child has no pid"))?;
    // std's `Child` holds none of the child's streams (all were given), and dropping it
    // neither waits nor kills: the thread below owns the child from here.
    drop(child);
    Child::watch(pid)
}

/// Have the child `cmd` starts get a SIGTERM when the thread that starts it (runner) ends.
pub(super) fn term_with_runner(cmd: &mut std::process::Command) {
    let runner = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child before `execve`; it makes two system
    // calls through rustix (prctl and getppid, both async-signal-safe), allocates nothing
    // and takes no lock.
    unsafe { cmd.pre_exec(move || die_with(runner)) };
}

/// In the child: SIGTERM when the thread that started it (runner) ends. If runner ended
/// before the call, the signal would never come: the start fails instead.
fn die_with(runner: Pid) -> std::io::Result<()> {
    rustix::process::set_parent_process_death_signal(Some(Signal::TERM))?;
    if rustix::process::getppid() != Some(runner) {
        return Err(std::io::Error::other(
            "runner ended while the agent started",
        ));
    }
    Ok(())
}

impl Child {
    /// Watch the started child `pid`; if no thread can be made to reap it, it is killed and
    /// reaped here, and the error returned (nothing is left running).
    fn watch(pid: Pid) -> std::io::Result<Child> {
        let state = Arc::new(Mutex::new(Reaped::default()));
        let (tx, ended) = tokio::sync::oneshot::channel();
        let shared = Arc::clone(&state);
        let spawned = std::thread::Builder::new().spawn(move || {
            // Wait for the end without reaping, so that the pid stays this child's (a zombie)
            // until the lock is held: `Drop` kills only a pid that is not reaped.
            let waited = loop {
                let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
                match rustix::process::waitid(WaitId::Pid(pid), options) {
                    Err(rustix::io::Errno::INTR) => continue,
                    r => break r.map(|_| ()).map_err(std::io::Error::from),
                }
            };
            let mut reaped = shared.lock().unwrap_or_else(|e| e.into_inner());
            // Someone else reaping it (nothing in runner does) is an error, never a made-up
            // exit status.
            let result = waited.and_then(|()| reap(pid));
            reaped.done = true;
            drop(reaped);
            let _ = tx.send(result);
        });
        if let Err(e) = spawned {
            // Our own child, not reaped (no thread is waiting for it).
            let _ = rustix::process::kill_process(pid, Signal::KILL);
            let _ = reap(pid);
            return Err(e);
        }
        Ok(Child {
            pid,
            state,
            ended,
            outcome: None,
        })
    }

    pub fn id(&self) -> i32 {
        self.pid.as_raw_nonzero().get()
    }

    /// The child's exit status once it ended. Cancel-safe, and may be called again after.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        const ECHILD: i32 = rustix::io::Errno::CHILD.raw_os_error();
        let status = match self.outcome {
            Some(status) => status,
            None => {
                let got = (&mut self.ended)
                    .await
                    .unwrap_or(Err(std::io::Error::from_raw_os_error(ECHILD)));
                let status = got.map_err(|e| e.raw_os_error().unwrap_or(ECHILD));
                self.outcome = Some(status);
                status
            }
        };
        status.map_err(std::io::Error::from_raw_os_error)
    }
}

/// Reap the ended child `pid`: its exit status.
fn reap(pid: Pid) -> std::io::Result<ExitStatus> {
    loop {
        match rustix::process::waitpid(Some(pid), WaitOptions::empty()) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(Some((_, status))) => {
                return Ok(std::os::unix::process::ExitStatusExt::from_raw(
                    status.as_raw(),
                ));
            }
            Ok(None) => return Err(rustix::io::Errno::CHILD.into()),
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let reaped = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !reaped.done {
            // The pid is still this child's: it is not reaped while the lock is held.
            let _ = rustix::process::kill_process(self.pid, Signal::KILL);
        }
    }
}

#[cfg(test)]
#[path = "spawn_tests.rs"]
mod tests;
