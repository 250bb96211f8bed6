//! Which processes descend from a run, told by the kernel's process tree rather than by anything
//! an agent can write (the journal, the lock's holder record, environment variables).
//!
//! A run makes itself a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`): every process its
//! agent starts, even one that calls `setsid` or double-forks and whose parent then exits, is
//! re-parented to the run instead of to init, so it stays the run's descendant. Then:
//! - `runner chunk` walks its own parent chain: a process inside a live run of the spec (an
//!   ancestor holds the spec's run lock open) is that run's agent, never a person;
//! - at each session's end the run kills every descendant still alive, so no job the agent left
//!   behind outlives the settle of the plan.
//!
//! Elsewhere than Linux there is no `/proc` tree and no subreaper: both checks find nothing and
//! runner falls back on the session's process group (see docs/recovery.md).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Set once this process is a subreaper (a run): only then does the end of a session kill the
/// run's descendants (never in a library test sharing the process with other tests).
static REAPER: AtomicBool = AtomicBool::new(false);

/// Make this process the reaper of its orphaned descendants. Linux only; a no-op elsewhere.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        if rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok() {
            REAPER.store(true, Ordering::SeqCst);
        }
    }
}

/// The parent and state of `pid`, from `/proc/<pid>/stat` ("pid (comm) S ppid …"; the command
/// name may hold spaces and parentheses, so the fields are read after the last `)`).
fn stat_of(pid: i32) -> Option<(i32, char)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

fn parse_stat(text: &str) -> Option<(i32, char)> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((ppid, state))
}

/// The chain of parents of `pid`, nearest first, up to init (bounded against a loop).
pub fn ancestors(pid: i32) -> Vec<i32> {
    let mut chain = Vec::new();
    let mut at = pid;
    while chain.len() < 4096 {
        match stat_of(at) {
            Some((ppid, _)) if ppid > 0 => {
                chain.push(ppid);
                at = ppid;
            }
            _ => break,
        }
    }
    chain
}

/// Does `pid` have `path` open (the file itself, or the file as it was before someone renamed
/// another over it)?
pub fn has_open(pid: i32, path: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    let want = path.as_os_str().as_encoded_bytes();
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| {
            let t = target.as_os_str().as_encoded_bytes();
            t == want || t.strip_suffix(b" (deleted)") == Some(want)
        })
    })
}

/// The ancestor of this process that holds `lock` open (the live run of that lock's spec), if
/// any. The holder record inside the lock file is not trusted: an agent can write it.
pub fn ancestor_holding(lock: &Path) -> Option<i32> {
    let lock = std::fs::canonicalize(lock).ok()?;
    ancestors(std::process::id() as i32)
        .into_iter()
        .find(|&pid| has_open(pid, &lock))
}

/// Pure: the processes of `parents` (pid → parent) whose parent chain leads to `root`.
pub fn descendants_in(parents: &HashMap<i32, i32>, root: i32) -> Vec<i32> {
    let mut out: Vec<i32> = parents
        .keys()
        .copied()
        .filter(|&pid| {
            let mut at = pid;
            for _ in 0..parents.len() {
                match parents.get(&at) {
                    Some(&p) if p == root => return true,
                    Some(&p) if p > 1 && p != at => at = p,
                    _ => return false,
                }
            }
            false
        })
        .collect();
    out.sort_unstable();
    out
}

/// Every process now in `/proc`: pid → (parent, state).
fn process_table() -> HashMap<i32, (i32, char)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, stat_of(pid)?)))
        .collect()
}

/// The pids a `/proc/<pid>/task/<tid>/children` file lists ("12 34 ": separated by spaces);
/// `None` if it holds anything else.
fn parse_children(text: &str) -> Option<Vec<i32>> {
    text.split_whitespace().map(|t| t.parse().ok()).collect()
}

/// Whether this process has a child (a zombie counts: it is on the list until reaped), from the
/// `children` file of each of its threads (a child belongs to the thread that forked it; an
/// orphan re-parented to a subreaper, to one of its threads). `None` when that cannot be told:
/// a file is missing or unreadable (a kernel without CONFIG_PROC_CHILDREN) or holds something
/// else, or a thread came or went while they were read (an exiting thread hands its children to
/// another one, perhaps one already read).
fn has_children() -> Option<bool> {
    let threads = || -> Option<std::collections::BTreeSet<std::ffi::OsString>> {
        std::fs::read_dir("/proc/self/task")
            .ok()?
            .map(|e| e.ok().map(|e| e.file_name()))
            .collect()
    };
    let before = threads()?;
    let mut task = std::path::PathBuf::from("/proc/self/task");
    let mut any = false;
    for tid in &before {
        task.push(tid);
        let text = std::fs::read_to_string(task.join("children")).ok()?;
        task.pop();
        any |= !parse_children(&text)?.is_empty();
    }
    (threads()? == before).then_some(any)
}

/// How many times [`has_children`] is asked before the `/proc` scan is made instead.
const CHILD_LOOKS: usize = 8;

/// [`has_children`], asked again while it cannot tell because a thread came or went: the
/// thread that copied the agent's output ends as the agent does, often while the list is read
/// (then the scan of every process on the machine ran after most sessions). An answer is given
/// only by a read that saw the same threads before and after; a missing `children` file, or
/// one that holds anything but pids, still sends the caller to the scan.
fn has_children_settled() -> Option<bool> {
    for look in 0..CHILD_LOOKS {
        match has_children() {
            Some(answer) => return Some(answer),
            None if !std::path::Path::new("/proc/self/task").is_dir() => return None,
            None if look > 0 => std::thread::sleep(Duration::from_micros(200)),
            None => std::thread::yield_now(),
        }
    }
    None
}

/// At a session's end, with nothing else of the run's running: kill every process descending
/// from this run (the agent's leftovers, `setsid` jobs and double-forked daemons included, which
/// the subreaper keeps in the tree), and reap those re-parented to it. Returns how many were
/// killed. Does nothing unless this process became a subreaper.
///
/// Every descendant of a subreaper is its child or a child's descendant: a run without a child
/// (the usual case, its agent waited for) has none, and the scan of every process in `/proc`
/// (one read per process on the machine) is skipped. When that cannot be told, it is made.
pub fn kill_descendants() -> usize {
    if !REAPER.load(Ordering::SeqCst) || has_children_settled() == Some(false) {
        return 0;
    }
    let me = std::process::id() as i32;
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut killed = std::collections::HashSet::new();
    loop {
        let table = process_table();
        let parents: HashMap<i32, i32> = table.iter().map(|(&p, &(pp, _))| (p, pp)).collect();
        let live: Vec<i32> = descendants_in(&parents, me)
            .into_iter()
            .filter(|p| table.get(p).is_some_and(|&(_, s)| s != 'Z' && s != 'X'))
            .collect();
        for &pid in &live {
            // A process already gone gives ESRCH.
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            killed.insert(pid);
        }
        // Our own children that died (orphans re-parented to us) are reaped here: tokio waits
        // only for the children it started, which have all been waited for by now.
        for (&pid, &(ppid, state)) in &table {
            if ppid == me && (state == 'Z' || live.contains(&pid)) {
                // WNOHANG on that pid only reaps that child.
                if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                    let nohang = rustix::process::WaitOptions::NOHANG;
                    let _ = rustix::process::waitpid(Some(pid), nohang);
                }
            }
        }
        if live.is_empty() || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    killed.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_command_name() {
        assert_eq!(parse_stat("12 (a b) c) S 7 12 12 0"), Some((7, 'S')));
        assert_eq!(parse_stat("12 (x) Z 1 0"), Some((1, 'Z')));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn children_files_are_read_as_lists_of_pids() {
        assert_eq!(parse_children(""), Some(vec![]));
        assert_eq!(parse_children("12 345 "), Some(vec![12, 345]));
        assert_eq!(parse_children("7\n"), Some(vec![7]));
        assert_eq!(parse_children("12 x"), None);
        assert_eq!(parse_children("-"), None);
    }

    /// `has_children_settled`, asked until it can tell: other tests' threads come and go
    /// meanwhile. (Other tests may have children too, so "no child" cannot be asserted here;
    /// the run's tests of leftovers prove that a session leaves none behind.)
    fn settled() -> Option<bool> {
        for _ in 0..1000 {
            if let Some(answer) = has_children_settled() {
                return Some(answer);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        None
    }

    /// A live child and an exited, unreaped one are both seen.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_live_or_unreaped_is_seen() {
        let mut live = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert_eq!(settled(), Some(true));
        live.kill().unwrap();
        // Wait for it to exit without reaping it: a zombie is still a child.
        use rustix::process::{Pid, WaitId, WaitIdOptions};
        let pid = Pid::from_raw(live.id() as i32).unwrap();
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
        assert!(rustix::process::waitid(WaitId::Pid(pid), options).is_ok());
        assert_eq!(settled(), Some(true));
        live.wait().unwrap();
    }

    #[test]
    fn descendants_follow_the_parent_chain_to_the_root() {
        // 10 is the run; 11 its agent; 12 the agent's child; 13 an orphan re-parented to 10;
        // 20 and 21 belong to someone else.
        let parents: HashMap<i32, i32> = [(10, 5), (11, 10), (12, 11), (13, 10), (20, 1), (21, 20)]
            .into_iter()
            .collect();
        assert_eq!(descendants_in(&parents, 10), vec![11, 12, 13]);
        assert_eq!(descendants_in(&parents, 20), vec![21]);
        assert!(descendants_in(&parents, 99).is_empty());
    }

    #[test]
    fn this_process_has_ancestors_and_no_lock_holding_one() {
        let chain = ancestors(std::process::id() as i32);
        assert!(!chain.is_empty() || cfg!(not(target_os = "linux")));
        assert_eq!(ancestor_holding(Path::new("/nonexistent/run.lock")), None);
    }
}
