//! Starting an agent without copying runner: a `vfork`-style start, as `posix_spawn` does,
//! plus the one thing `posix_spawn` cannot do — `PR_SET_PDEATHSIG`, so that an agent never
//! goes on editing the worktree behind a runner that died.
//!
//! std starts a child with `fork` whenever it is given a `pre_exec` step (or an environment
//! with its own `PATH` and a bare program name), and `fork` copies the parent's page tables
//! and marks all its memory copy-on-write: a cost that grows with runner's memory, which grows
//! with the plan (0.22 ms a start at 50 chunks, 0.56–0.84 ms at 800, plus the faults after).
//! `clone(CLONE_VM | CLONE_VFORK)` shares runner's memory until the child calls `execve`, so a
//! start costs the same whatever runner holds. The price is care in the child, which runs on
//! runner's memory: it only makes system calls on data prepared before (no allocation, no
//! lock, no panic), with every signal blocked until its handlers are set back to the default
//! (a handler of runner's must not run in it). glibc's `posix_spawn` works the same way.
//!
//! The child is reaped by a thread of its own (`waitid` with `WNOWAIT`, then `waitpid` under a
//! lock), so that a kill on drop can never hit a reused pid.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};

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
    pid: i32,
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

/// Everything the child reads, made before it exists: it must not allocate.
struct Prepared {
    /// Each path to try, in `PATH` order; the first that is not missing is executed.
    candidates: Vec<*const libc::c_char>,
    argv: Vec<*const libc::c_char>,
    /// `/bin/sh <script> <args…>` for a file with no `#!` line (`ENOEXEC`), as `execvp` does;
    /// slot 1 is filled in the child with the candidate that gave `ENOEXEC`.
    sh_argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    cwd: *const libc::c_char,
    stdin: libc::c_int,
    stdout: libc::c_int,
    stderr: libc::c_int,
    parent: libc::pid_t,
    /// Written by the child when it fails before or at `execve` (it shares this memory).
    error: libc::c_int,
}

const SH: &CStr = c"/bin/sh";

/// Signals are numbered below this (glibc's `NSIG`); `sigaction` refuses those it reserves.
const NSIG: libc::c_int = 65;

/// The size of the child's stack: it only makes system calls.
const STACK_BYTES: usize = 128 * 1024;

/// Start the child. An error is the reason it could not start (`execve`'s, say a missing
/// program); nothing is left running then.
pub fn start(spec: Start) -> std::io::Result<Child> {
    let Some(program) = spec.argv.first() else {
        return Err(std::io::Error::other("empty command"));
    };
    if program.is_empty() {
        return Err(std::io::Error::from_raw_os_error(libc::ENOENT));
    }
    let owned = Owned::new(&spec, program)?;
    let stdin = match &spec.stdin {
        Some(fd) => above_stdio(fd)?,
        None => above_stdio(&OwnedFd::from(std::fs::File::open("/dev/null")?))?,
    };
    let (stdout, stderr) = (above_stdio(&spec.stdout)?, above_stdio(&spec.stderr)?);
    let mut prepared = owned.prepared(stdin.as_raw_fd(), stdout.as_raw_fd(), stderr.as_raw_fd());
    let pid = clone_vfork(&mut prepared)?;
    // SAFETY: the child wrote `error` (if at all) through a pointer this function does not
    // see; it has ended or called execve by now.
    let error = unsafe { std::ptr::read_volatile(&prepared.error) };
    if error != 0 {
        let mut status = 0;
        // SAFETY: our own child, which has exited (vfork returns after exit or execve).
        unsafe { libc::waitpid(pid, &mut status, 0) };
        return Err(std::io::Error::from_raw_os_error(error));
    }
    drop((prepared, owned));
    Child::watch(pid)
}

/// A copy of `fd` numbered 3 or above (close-on-exec): the child moves its three descriptors
/// onto 0, 1 and 2, which must not overwrite one another (runner started with a standard
/// stream closed hands out those numbers).
fn above_stdio(fd: &OwnedFd) -> std::io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC on an open descriptor returns a new one we own.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    match new {
        -1 => Err(std::io::Error::last_os_error()),
        // SAFETY: `new` is a fresh descriptor nobody else owns.
        new => Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(new) }),
    }
}

/// The strings behind `Prepared`'s pointers.
struct Owned {
    candidates: Vec<CString>,
    args: Vec<CString>,
    env: Vec<CString>,
    cwd: CString,
}

impl Owned {
    fn new(spec: &Start, program: &str) -> std::io::Result<Owned> {
        let c = |s: &[u8]| {
            CString::new(s).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "an argument, a variable of the environment or the folder holds a NUL byte",
                )
            })
        };
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| !spec.env.iter().any(|(key, _)| OsStr::new(key) == k))
            .collect();
        // A key given twice counts once, its last value (as std's Command).
        for (i, (k, v)) in spec.env.iter().enumerate() {
            if !spec.env[i + 1..].iter().any(|(later, _)| later == k) {
                env.push((k.into(), v.into()));
            }
        }
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "/bin:/usr/bin".into());
        let candidates = candidates(program, &path)
            .iter()
            .map(|p| c(p.as_os_str().as_bytes()))
            .collect::<Result<_, _>>()?;
        let env = env
            .into_iter()
            .map(|(k, v)| {
                let mut kv = k.into_vec();
                kv.push(b'=');
                kv.extend(v.into_vec());
                c(&kv)
            })
            .collect::<Result<_, _>>()?;
        Ok(Owned {
            candidates,
            args: spec
                .argv
                .iter()
                .map(|a| c(a.as_bytes()))
                .collect::<Result<_, _>>()?,
            env,
            cwd: c(spec.cwd.as_os_str().as_bytes())?,
        })
    }

    fn prepared(&self, stdin: i32, stdout: i32, stderr: i32) -> Prepared {
        let end = std::iter::once(std::ptr::null());
        let argv: Vec<_> = self
            .args
            .iter()
            .map(|a| a.as_ptr())
            .chain(end.clone())
            .collect();
        let sh_argv = [SH.as_ptr(), std::ptr::null()]
            .into_iter()
            .chain(self.args.iter().skip(1).map(|a| a.as_ptr()))
            .chain(end.clone())
            .collect();
        Prepared {
            candidates: self.candidates.iter().map(|c| c.as_ptr()).collect(),
            argv,
            sh_argv,
            envp: self.env.iter().map(|e| e.as_ptr()).chain(end).collect(),
            cwd: self.cwd.as_ptr(),
            stdin,
            stdout,
            stderr,
            // SAFETY: getpid has no preconditions.
            parent: unsafe { libc::getpid() },
            error: 0,
        }
    }
}

/// The paths `execvp` would try for `program` with this `PATH`: the program itself when its
/// name holds a `/` (relative to the child's folder), else each folder of `PATH` in turn (an
/// empty entry is the child's folder).
fn candidates(program: &str, path: &OsStr) -> Vec<PathBuf> {
    if program.contains('/') {
        return vec![PathBuf::from(program)];
    }
    std::env::split_paths(path)
        .map(|dir| match dir.as_os_str().is_empty() {
            true => PathBuf::from(program),
            false => dir.join(program),
        })
        .collect()
}

/// `clone(CLONE_VM | CLONE_VFORK)` into `child_main`, every signal blocked around it; the
/// child's pid once it has called `execve` or exited.
fn clone_vfork(prepared: &mut Prepared) -> std::io::Result<i32> {
    let mut stack = vec![0u8; STACK_BYTES];
    // The stack grows down: its top, aligned to 16 bytes.
    let top = (stack.as_mut_ptr() as usize + STACK_BYTES) & !15;
    // SAFETY: sigset_t values are plain data, filled by sigfillset; the old mask is restored
    // below on every path.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // The raw system call, as glibc's posix_spawn: pthread_sigmask leaves glibc's own two
    // signals unblocked, and their handlers must not run in the child either.
    let mask = |how: libc::c_int, set: *const libc::sigset_t, old: *mut libc::sigset_t| {
        // SAFETY: valid sigset pointers (or null for `old`); the kernel's sigset is 8 bytes.
        unsafe { libc::syscall(libc::SYS_rt_sigprocmask, how, set, old, 8usize) }
    };
    // SAFETY: as above.
    unsafe { libc::sigfillset(&mut all) };
    mask(libc::SIG_SETMASK, &all, &mut old);
    // SAFETY: `child_main` only makes async-signal-safe system calls on `prepared`, which
    // outlives the child's use of it (CLONE_VFORK suspends this thread until the child has
    // called execve or exited), on a stack of its own that lives until then too.
    let pid = unsafe {
        libc::clone(
            child_main,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            prepared as *mut Prepared as *mut libc::c_void,
        )
    };
    let error = std::io::Error::last_os_error();
    // Restores the mask saved above.
    mask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    drop(stack);
    match pid {
        -1 => Err(error),
        pid => Ok(pid),
    }
}

/// The child, on runner's memory until `execve`: system calls only.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Prepared` that `clone_vfork` passed, alive and not touched by the
    // suspended parent until this function has called execve or _exit.
    let p = unsafe { &mut *(arg as *mut Prepared) };
    // SAFETY: each call below is async-signal-safe and reads only `p`'s prepared data.
    unsafe {
        // Runner's handlers must not run here: every caught signal back to the default, and
        // SIGPIPE too (runner ignores it; an ignored signal stays ignored across execve).
        for sig in 1..NSIG {
            let mut action: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut action) != 0 {
                continue;
            }
            let handler = action.sa_sigaction;
            let caught = handler != libc::SIG_IGN && handler != libc::SIG_DFL;
            if caught || (sig == libc::SIGPIPE && handler == libc::SIG_IGN) {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) != 0
            || libc::getppid() != p.parent
            || libc::setpgid(0, 0) != 0
            || libc::dup2(p.stdin, 0) < 0
            || libc::dup2(p.stdout, 1) < 0
            || libc::dup2(p.stderr, 2) < 0
            || libc::chdir(p.cwd) != 0
        {
            return fail(p);
        }
        // A stop (Ctrl-Z) sent to runner's group while the child was still in it waits,
        // blocked; let through now, in a group `fg` does not wake, it would stop the child
        // before execve — and runner with it, which waits for the execve. Ignoring a signal
        // discards it when pending; the child then takes the default again.
        for sig in [libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU] {
            let mut action: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut action) == 0
                && action.sa_sigaction == libc::SIG_DFL
            {
                libc::signal(sig, libc::SIG_IGN);
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        let mut refused = false;
        for &candidate in &p.candidates {
            libc::execve(candidate, p.argv.as_ptr(), p.envp.as_ptr());
            match *libc::__errno_location() {
                libc::ENOEXEC => {
                    // A script with no `#!` line: the shell runs it, as execvp does.
                    if let Some(slot) = p.sh_argv.get_mut(1) {
                        *slot = candidate;
                    }
                    libc::execve(SH.as_ptr(), p.sh_argv.as_ptr(), p.envp.as_ptr());
                    return fail(p);
                }
                // Not in this folder of PATH, or not to be run from it: the next (as execvp).
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                libc::EACCES => refused = true,
                _ => return fail(p),
            }
        }
        *libc::__errno_location() = if refused { libc::EACCES } else { libc::ENOENT };
        fail(p)
    }
}

/// Say why the child failed (in the shared `error`) and end it.
unsafe fn fail(p: &mut Prepared) -> libc::c_int {
    // SAFETY: reading errno and _exit are async-signal-safe.
    unsafe {
        p.error = (*libc::__errno_location()).max(1);
        libc::_exit(127)
    }
}

impl Child {
    /// Watch the started child `pid`; if no thread can be made to reap it, it is killed and
    /// reaped here, and the error returned (nothing is left running).
    fn watch(pid: i32) -> std::io::Result<Child> {
        let state = Arc::new(Mutex::new(Reaped::default()));
        let (tx, ended) = tokio::sync::oneshot::channel();
        let shared = Arc::clone(&state);
        let spawned = std::thread::Builder::new().spawn(move || {
            // Wait for the end without reaping, so that the pid stays this child's (a zombie)
            // until the lock is held: `Drop` kills only a pid that is not reaped.
            // SAFETY: siginfo_t is plain data; waitid on our own child's pid.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let waited = loop {
                let r = unsafe {
                    libc::waitid(
                        libc::P_PID,
                        pid as libc::id_t,
                        &mut info,
                        libc::WEXITED | libc::WNOWAIT,
                    )
                };
                let e = std::io::Error::last_os_error();
                if r == 0 || e.kind() != std::io::ErrorKind::Interrupted {
                    break if r == 0 { Ok(()) } else { Err(e) };
                }
            };
            let mut reaped = shared.lock().unwrap_or_else(|e| e.into_inner());
            let mut status = 0;
            // SAFETY: our own child, ended. Someone else reaping it (nothing in runner does)
            // is an error, never a made-up exit status.
            let result =
                waited.and_then(|()| match unsafe { libc::waitpid(pid, &mut status, 0) } {
                    -1 => Err(std::io::Error::last_os_error()),
                    _ => Ok(std::os::unix::process::ExitStatusExt::from_raw(status)),
                });
            reaped.done = true;
            drop(reaped);
            let _ = tx.send(result);
        });
        if let Err(e) = spawned {
            // SAFETY: our own child, not reaped (no thread is waiting for it).
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
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
        self.pid
    }

    /// The child's exit status once it ended. Cancel-safe, and may be called again after.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = match self.outcome {
            Some(status) => status,
            None => {
                let got = (&mut self.ended)
                    .await
                    .unwrap_or(Err(std::io::Error::from_raw_os_error(libc::ECHILD)));
                let status = got.map_err(|e| e.raw_os_error().unwrap_or(libc::ECHILD));
                self.outcome = Some(status);
                status
            }
        };
        status.map_err(std::io::Error::from_raw_os_error)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let reaped = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !reaped.done {
            // SAFETY: the pid is still this child's: it is not reaped while the lock is held.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
    }
}

#[cfg(test)]
#[path = "spawn_tests.rs"]
mod tests;
