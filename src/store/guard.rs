//! The one way runner takes a lock that says who holds it: take it (or refuse at once with the
//! busy error, exit 4, naming the holder), write the holder record, keep its heartbeat.
//! runner never waits for another runner; it only retries for a moment, because `runner
//! status` and other probes hold these locks for an instant and that must not look like a run.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::lock::{self, FileLock, Holder};
use crate::error::RunnerError;

/// How often a long-held lock's holder record says its holder is still alive.
pub const HEARTBEAT: Duration = Duration::from_secs(10);

/// How long to try for a lock somebody else holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patience {
    /// One try.
    Once,
    /// A few tries over a quarter of a second: outlasts a probe's instant.
    Moment,
}

/// The holder record of this process for `run_id`, working on `spec` (if on one).
pub fn new_holder(run_id: &str, spec: Option<&str>) -> Holder {
    let now = crate::clock::now();
    Holder {
        run_id: run_id.to_string(),
        pid: std::process::id(),
        host: hostname(),
        since: now.clone(),
        heartbeat: now,
        spec: spec.map(str::to_string),
    }
}

/// Is the process `pid` of a record written on `host` known to be gone? Only on this host, and
/// only when no process has the pid (a pid that is not a process's, 0 or past `i32::MAX`, is
/// gone; so is this very process, which is not the run the record names). A pid of another
/// user's process (EPERM) is not known to be gone.
pub fn process_gone(host: &str, pid: u32) -> bool {
    if host != hostname() {
        return false;
    }
    let Ok(pid) = i32::try_from(pid) else {
        return true;
    };
    if pid <= 0 || pid as u32 == std::process::id() {
        return true;
    }
    // Signal 0 only checks for existence and permission; pid > 0 names one process.
    rustix::process::Pid::from_raw(pid)
        .is_some_and(|pid| rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH))
}

pub(crate) fn hostname() -> String {
    // gethostname(2) on Linux is uname's node name.
    let uname = rustix::system::uname();
    String::from_utf8_lossy(uname.nodename().to_bytes()).into_owned()
}

/// The lock at `path` if it can be had within `patience`; `None` if somebody holds it. No
/// holder record is written (a dry run that only proves a lock free leaves the last one).
pub fn try_take(path: &Path, patience: Patience) -> std::io::Result<Option<FileLock>> {
    let tries = match patience {
        Patience::Once => 1,
        Patience::Moment => 5,
    };
    for n in 1..=tries {
        // (An error names the lock file itself.)
        if let Some(lock) = FileLock::try_acquire(path)? {
            return Ok(Some(lock));
        }
        if n < tries {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(None)
}

/// Take the lock at `path` for `holder` and record it, or fail with [`busy`]: `what` says what
/// did not happen ("spec X is being run, so merge did not start").
pub fn take(
    path: &Path,
    holder: &Holder,
    patience: Patience,
    what: impl FnOnce() -> String,
) -> anyhow::Result<FileLock> {
    let Some(lock) = try_take(path, patience)? else {
        return Err(busy(path, &what()));
    };
    lock.write_holder(holder)?;
    Ok(lock)
}

/// The busy error (exit 4): what did not happen and who holds the lock at `path`, with the
/// advice as a hint.
pub fn busy(path: &Path, what: &str) -> anyhow::Error {
    RunnerError::Busy(format!("{what}: {}", holder_of(path)))
        .with_hint(BUSY_HINT)
        .into()
}

/// What to do about a lock another runner holds.
pub const BUSY_HINT: &str =
    "runner does not wait: run this again once it has finished, or stop it first";

/// Who holds the lock at `path`, as its holder record says.
pub fn holder_of(path: &Path) -> String {
    match lock::read_holder(path) {
        Some(h) => format!(
            "pid {} on {}, run {}, since {} (last heartbeat {}){}",
            h.pid,
            h.host,
            h.run_id,
            h.since,
            h.heartbeat,
            h.spec.map(|s| format!(", spec {s}")).unwrap_or_default()
        ),
        None => "its holder did not say who it is".into(),
    }
}

/// Rewrite the holder records of `locks` every [`HEARTBEAT`] until the task is aborted.
pub async fn heartbeat(locks: Arc<Vec<FileLock>>, holder: Holder) {
    heartbeat_then(locks, holder, || {}).await
}

/// [`heartbeat`], calling `also` after each beat (a run rewrites its run record there).
pub async fn heartbeat_then(
    locks: Arc<Vec<FileLock>>,
    mut holder: Holder,
    also: impl Fn() + Send + 'static,
) {
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        holder.heartbeat = crate::clock::now();
        for lock in locks.iter() {
            let _ = lock.write_holder(&holder);
        }
        also();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_refused_as_busy_naming_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.lock");
        let holder = new_holder("r0123456789ab", Some("001-x"));
        let first = take(&path, &holder, Patience::Once, || "first".into()).unwrap();
        let err = take(&path, &holder, Patience::Moment, || {
            "spec 001-x is being run".into()
        })
        .unwrap_err();
        assert_eq!(crate::error::exit_code_of(&err), crate::error::exit::BUSY);
        let text = err.to_string();
        assert!(text.starts_with("spec 001-x is being run: pid "), "{text}");
        assert!(
            text.contains("run r0123456789ab") && text.contains(", spec 001-x"),
            "{text}"
        );
        drop(first);
        // A moment, not one try: a process another test thread is starting right now holds a
        // copy of every descriptor of this one (the lock's too) until it execs.
        assert!(try_take(&path, Patience::Moment).unwrap().is_some());
    }
}
