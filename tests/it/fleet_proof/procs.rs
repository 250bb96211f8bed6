//! A fleet's processes, found in `/proc` by the mark they all carry (harness::MARK_VAR), told
//! apart by their command line, and killed through a pidfd so that a pid reused in between is
//! never hit.

use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use super::harness::MARK_VAR;
use crate::common::*;

/// What a marked process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `runner worker`.
    Worker,
    /// `runner run`: a worker's job, the run that builds one spec.
    Run,
    /// Any other runner: `runner chunk done` called by an agent.
    Report,
    /// The fake agent (bash running fixtures/fake-agent).
    Agent,
    /// Anything else: git, sleep, ip.
    Other,
}

#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: i32,
    pub kind: Kind,
    pub cmdline: String,
}

fn read_nul_list(path: &str) -> Option<Vec<String>> {
    let bytes = std::fs::read(path).ok()?;
    Some(
        bytes
            .split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect(),
    )
}

fn carries(pid: i32, mark: &str) -> bool {
    let want = format!("{MARK_VAR}={mark}");
    read_nul_list(&format!("/proc/{pid}/environ")).is_some_and(|env| env.contains(&want))
}

fn kind_of(argv: &[String]) -> Kind {
    let agent = fixture("fake-agent").display().to_string();
    if argv.first().is_some_and(|a| a == RUNNER) {
        match argv.get(1).map(String::as_str) {
            Some("worker") => Kind::Worker,
            Some("run") => Kind::Run,
            _ => Kind::Report,
        }
    } else if argv.iter().take(3).any(|a| *a == agent) {
        Kind::Agent
    } else {
        Kind::Other
    }
}

/// Every live process that carries `mark` (zombies, already dead, left out).
pub fn marked(mark: &str) -> Vec<Proc> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if !carries(pid, mark) {
            continue;
        }
        let Some(argv) = read_nul_list(&format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if argv.is_empty() {
            // A zombie: dead, waiting for its parent to reap it.
            continue;
        }
        out.push(Proc {
            pid,
            kind: kind_of(&argv),
            cmdline: argv.join(" "),
        });
    }
    out
}

/// SIGKILL `pid` if it is still the marked process of `kind`: the pidfd pins the process, so
/// the check and the signal name the same one. Whether the signal was sent.
pub fn kill9(pid: i32, kind: Kind, mark: &str) -> bool {
    let Some(p) = Pid::from_raw(pid) else {
        return false;
    };
    let Ok(fd) = pidfd_open(p, PidfdFlags::empty()) else {
        return false;
    };
    let still = carries(pid, mark)
        && read_nul_list(&format!("/proc/{pid}/cmdline")).is_some_and(|a| kind_of(&a) == kind);
    still && pidfd_send_signal(&fd, Signal::KILL).is_ok()
}

/// Signal `sig` to `pid` if it still carries `mark`.
pub fn signal(pid: i32, sig: Signal, mark: &str) -> bool {
    let Some(p) = Pid::from_raw(pid) else {
        return false;
    };
    let Ok(fd) = pidfd_open(p, PidfdFlags::empty()) else {
        return false;
    };
    carries(pid, mark) && pidfd_send_signal(&fd, sig).is_ok()
}

/// One line per process: pid, kind, command line.
pub fn describe(procs: &[Proc]) -> String {
    procs
        .iter()
        .map(|p| format!("{} {:?} {}\n", p.pid, p.kind, p.cmdline))
        .collect()
}

/// Wait up to `limit` for every process with `mark` to be gone; the ones left, if any.
pub fn wait_none_left(mark: &str, limit: Duration) -> Vec<Proc> {
    let deadline = Instant::now() + limit;
    loop {
        let left = marked(mark);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Kill every process with `mark` until none is left (a failing test's clean-up).
pub fn kill_all(mark: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let left = marked(mark);
        if left.is_empty() {
            return;
        }
        for p in left {
            kill9(p.pid, p.kind, mark);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills every process with its mark when dropped: declared before a test's workers start, a
/// failing assertion leaves none of them running.
pub struct Reaper(pub String);

impl Drop for Reaper {
    fn drop(&mut self) {
        kill_all(&self.0);
    }
}
