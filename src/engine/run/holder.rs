//! The run's locks: holder records and their heartbeat.

use super::*;
use crate::store::lock;

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

pub(super) fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Take an exclusive lock for the whole run, or say who holds it (exit 4).
pub(super) fn take_lock(
    path: &Path,
    holder: &Holder,
    what: impl FnOnce() -> String,
) -> anyhow::Result<FileLock> {
    // A few tries: `runner status` and other probes hold a lock for an instant, and that
    // must not look like a live run.
    for attempt in 0..5 {
        // (An error names the lock file itself.)
        if let Some(lock) = FileLock::try_acquire(path)? {
            lock.write_holder(holder)?;
            return Ok(lock);
        }
        if attempt < 4 {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Err(
        RunnerError::Busy(format!("{}: {}", what(), holder_of(path)))
            .with_hint(BUSY_HINT)
            .into(),
    )
}

/// What to do about a lock another runner holds.
pub const BUSY_HINT: &str =
    "runner does not wait: run this again once it has finished, or stop it first";

/// Who holds the lock at `path`, and the advice, in one sentence (for messages that have no
/// room for a hint of their own).
pub fn describe_holder(path: &Path) -> String {
    format!("{}. {BUSY_HINT}", holder_of(path))
}

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

pub(super) async fn heartbeat(locks: Arc<(FileLock, FileLock)>, mut holder: Holder) {
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        holder.heartbeat = crate::clock::now();
        let _ = locks.0.write_holder(&holder);
        let _ = locks.1.write_holder(&holder);
    }
}
