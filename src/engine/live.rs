//! An agent session watched while it runs, for a sink that shows it live (a terminal): the
//! session's start and end, and, every [`POLL`], the agent's latest activity — read from the
//! session's log only when the log changed (a stat otherwise). Without a live sink the session
//! runs exactly as it would unwatched: no timer, no file looked at, no event — but for its
//! start and end to a sink that asks for them (`ProgressSink::session_bounds`: a job's parent).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::engine::progress::Reporter;

/// How often the session's log is looked at.
pub const POLL: Duration = Duration::from_millis(300);

/// Run `session` (an agent's process, which writes `log`) to its end and return what it gave;
/// meanwhile, when `reporter`'s sink is live, tell it the session started (named `label`),
/// each new activity of its agent, and that it ended (whatever way: an error, or this future
/// dropped, says so too).
pub async fn watched<T>(
    reporter: Option<&Reporter>,
    label: &str,
    log: &Path,
    session: impl Future<Output = T>,
) -> T {
    let Some(reporter) = reporter.filter(|r| r.session_bounds()) else {
        return session.await;
    };
    reporter.session_started(label, SystemTime::now());
    let _ended = SaysEnded(reporter);
    if !reporter.live() {
        // Its start and end only (a job's parent): no log looked at.
        return session.await;
    }
    let mut tail = LogTail::new(log);
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut session = std::pin::pin!(session);
    loop {
        tokio::select! {
            // The session first: its end is never held up by a look at the log.
            biased;
            out = &mut session => return out,
            _ = tick.tick() => {
                if let Some(line) = tail.changed() {
                    reporter.activity(&line);
                }
            }
        }
    }
}

/// Says the session ended when dropped.
struct SaysEnded<'a>(&'a Reporter);

impl Drop for SaysEnded<'_> {
    fn drop(&mut self) {
        self.0.session_ended();
    }
}

/// A session's log, looked at again and again for its agent's latest activity.
#[derive(Debug)]
pub struct LogTail {
    path: PathBuf,
    /// The log's size and modification time when it was last read.
    seen: Option<(u64, SystemTime)>,
    /// The activity last returned.
    said: Option<String>,
}

impl LogTail {
    pub fn new(path: &Path) -> LogTail {
        LogTail {
            path: path.to_path_buf(),
            seen: None,
            said: None,
        }
    }

    /// The agent's latest activity when it is new since the last call. The log is read only
    /// when its size or modification time changed (it grows as the agent writes, and shrinks
    /// when its cap cuts it at the end); a log that is missing, or anything but a plain file
    /// (a link planted in its place), is not read.
    pub fn changed(&mut self) -> Option<String> {
        let meta = std::fs::symlink_metadata(&self.path)
            .ok()
            .filter(|m| m.is_file())?;
        let seen = (
            meta.len(),
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        );
        if self.seen == Some(seen) {
            return None;
        }
        self.seen = Some(seen);
        let latest = crate::agent::output::activity::latest_in_log(&self.path)?;
        let line = crate::policy::live::activity_line(&latest)?;
        if self.said.as_deref() == Some(line.as_str()) {
            return None;
        }
        self.said = Some(line.clone());
        Some(line)
    }
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;
