//! Agents that outlived their runner. Every child runner starts is journaled with its process
//! group (`process_started`) and, when it ends, `process_ended`. A group started but never seen
//! ending may still be editing the worktree: recovery stops it before it looks at anything.
//!
//! A process group id can be reused by an unrelated program after the agent is gone, so a group
//! is only signalled if one of its processes still carries the session's `RUNNER_SESSION_ID`
//! in its environment (read from /proc; on systems without /proc nothing is signalled).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::store::Event;

use crate::agent::process::kill_group;

/// A child that was started and never seen ending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    pub session_id: String,
    pub pgid: i32,
}

/// From journal events: children started without a matching end.
pub fn leftovers(events: &[Event]) -> Vec<Leftover> {
    let mut open: BTreeMap<i32, String> = BTreeMap::new();
    for e in events {
        match e {
            Event::ProcessStarted(p) if let Some(pgid) = p.pgid => {
                open.insert(pgid, p.session_id.clone());
            }
            Event::ProcessEnded(p) if let Some(pgid) = p.pgid => {
                open.remove(&pgid);
            }
            _ => {}
        }
    }
    open.into_iter()
        .map(|(pgid, session_id)| Leftover { session_id, pgid })
        .collect()
}

/// The sessions some live process on this machine carries (`RUNNER_SESSION_ID=…` in its
/// environment, zombies aside), from one look through /proc; `None` without /proc. A leftover
/// agent (`members_of_session`) is one of them, so where none is live no spec has one, and
/// `recover --all` need not read any journal to know it.
pub fn live_sessions() -> Option<std::collections::HashSet<String>> {
    const MARKER: &[u8] = b"RUNNER_SESSION_ID=";
    let entries = std::fs::read_dir("/proc").ok()?;
    let mut live = std::collections::HashSet::new();
    for pid in entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
    {
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let sessions: Vec<String> = env
            .split(|&b| b == 0)
            .filter_map(|kv| kv.strip_prefix(MARKER))
            .map(|id| String::from_utf8_lossy(id).into_owned())
            .collect();
        if !sessions.is_empty() && process_group(pid).is_some() {
            live.extend(sessions);
        }
    }
    Some(live)
}

/// Processes (pids) of group `pgid` that carry `RUNNER_SESSION_ID=<session_id>`.
pub fn members_of_session(pgid: i32, session_id: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let marker = format!("RUNNER_SESSION_ID={session_id}");
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| process_group(pid) == Some(pgid))
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|&b| b == 0).any(|kv| kv == marker.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

/// The process group of `pid`, from /proc/<pid>/stat (zombies included).
fn process_group(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    if state == "Z" {
        return None;
    }
    fields.next()?; // ppid
    fields.next()?.parse().ok()
}

/// Stop the group if it still runs the session: SIGTERM, up to `grace`, then SIGKILL.
/// Returns whether anything was stopped.
pub fn stop_leftover(leftover: &Leftover, grace: Duration) -> bool {
    if leftover.session_id.is_empty()
        || members_of_session(leftover.pgid, &leftover.session_id).is_empty()
    {
        return false;
    }
    kill_group(leftover.pgid, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if members_of_session(leftover.pgid, &leftover.session_id).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    kill_group(leftover.pgid, libc::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline
        && !members_of_session(leftover.pgid, &leftover.session_id).is_empty()
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_started_child_without_an_end_is_a_leftover() {
        let events = vec![
            json!({"event": "process_started", "pgid": 10, "session_id": "a"}),
            json!({"event": "process_ended", "pgid": 10}),
            json!({"event": "process_started", "pgid": 11, "session_id": "b"}),
            json!({"event": "session_end", "pgid": 11}),
        ];
        let events: Vec<Event> = events
            .into_iter()
            .map(|line| serde_json::from_value(line).unwrap())
            .collect();
        assert_eq!(
            leftovers(&events),
            vec![Leftover {
                session_id: "b".into(),
                pgid: 11
            }]
        );
    }

    #[test]
    fn a_live_group_with_the_session_marker_is_stopped_and_others_are_not() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("RUNNER_SESSION_ID", "s-test-1")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id() as i32;
        // Recovery meets agents long after they started; give this one a moment to be
        // visible in /proc with its environment (a loaded CI machine once was not that fast).
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while members_of_session(pgid, "s-test-1").is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "the child never showed up in /proc"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // Wrong session: left alone.
        let other = Leftover {
            session_id: "s-other".into(),
            pgid,
        };
        assert!(!stop_leftover(&other, Duration::from_millis(100)));
        assert!(child.try_wait().unwrap().is_none());
        // The right one: stopped.
        let mine = Leftover {
            session_id: "s-test-1".into(),
            pgid,
        };
        assert!(stop_leftover(&mine, Duration::from_secs(2)));
        let status = child.wait().unwrap();
        assert!(!status.success());
    }
}
