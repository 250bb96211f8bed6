//! A spec's agent sessions as folders: `sessions/<session-id>/` (its `prompt.md`, `output.log`,
//! `verification.log`). Session ids start with their UTC start time to the second
//! (`20261122T192400Z-3f9a-coder-subtask-1-1-a2`, see `ids::session_id`), so their names sort
//! in the order the sessions started, but for sessions started within the same second (a random
//! part follows the time): those are put in the order of their `session_start` lines in the
//! journal. Which run a session belongs to is in the journal too (those lines carry the run id).

use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Serialize;

use crate::store::event::Event;

/// The ids of the sessions under `sessions_dir`, oldest first. Only real folders whose names
/// have a session id's form are listed (a link, a file, a name planted by hand are not);
/// nothing when the folder is missing or cannot be read.
pub fn list(sessions_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(sessions_dir) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| is_session_id(name))
        .collect();
    ids.sort();
    if let Some(spec_dir) = sessions_dir.parent() {
        order_same_second(spec_dir, &mut ids);
    }
    ids
}

/// The newest session's id, if any.
pub fn latest(sessions_dir: &Path) -> Option<String> {
    list(sessions_dir).pop()
}

/// The start time of a session id, to the second (its first 16 characters).
fn second_of(id: &str) -> &str {
    id.get(..16).unwrap_or(id)
}

/// `ids`, sorted by name, with each group started within the same second put in the order of
/// their `session_start` lines (the journal read from its newest file back, only until every
/// such session is found); sessions the journal does not name come after those it does.
fn order_same_second(spec_dir: &Path, ids: &mut [String]) {
    let tied: std::collections::HashSet<&str> = ids
        .windows(2)
        .filter(|w| second_of(&w[0]) == second_of(&w[1]))
        .flat_map(|w| [w[0].as_str(), w[1].as_str()])
        .collect();
    if tied.is_empty() {
        return;
    }
    // Where each tied session's start line is: (files back from the newest, line).
    let found = std::cell::RefCell::new(std::collections::HashMap::new());
    let files_back = std::cell::Cell::new(0usize);
    crate::store::journal::segments::read_newest_first(spec_dir, |bytes| {
        let text = crate::store::lossy(bytes);
        let mut found = found.borrow_mut();
        for (n, line) in text.lines().enumerate() {
            if !line.contains("session_start") {
                continue;
            }
            let Some(id) = tied.iter().find(|id| line.contains(**id)) else {
                continue;
            };
            found.entry(id.to_string()).or_insert((files_back.get(), n));
        }
        files_back.set(files_back.get() + 1);
        (found.len() == tied.len()).then_some(())
    });
    let found = found.into_inner();
    let rank = |id: &str| match found.get(id) {
        Some((back, line)) => (false, std::cmp::Reverse(*back), *line),
        None => (true, std::cmp::Reverse(0), 0),
    };
    ids.sort_by(|a, b| {
        second_of(a)
            .cmp(second_of(b))
            .then_with(|| rank(a).cmp(&rank(b)))
            .then_with(|| a.cmp(b))
    });
}

/// The log of session `id` (`output.log`: what the agent printed, stdout and stderr).
pub fn log_of(sessions_dir: &Path, id: &str) -> PathBuf {
    sessions_dir.join(id).join("output.log")
}

/// Whether `name` has a session id's form: a `YYYYMMDDTHHMMSSZ-` time, then only the safe
/// characters `ids::session_id` writes.
pub fn is_session_id(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() > 17
        && bytes.len() <= 200
        && bytes[..8].iter().all(u8::is_ascii_digit)
        && bytes[8] == b'T'
        && bytes[9..15].iter().all(u8::is_ascii_digit)
        && bytes[15] == b'Z'
        && bytes[16] == b'-'
        && bytes[17..]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// What is known of a session's start: from its `session_start` journal line, else from its
/// id (which names its time, role, chunk and attempt; the chunk as the id spells it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Started {
    pub session_id: String,
    /// The run that started it (null: the journal does not say).
    pub run_id: Option<String>,
    /// planner, coder, recovery …
    pub role: String,
    pub chunk: Option<String>,
    pub attempt: u32,
    pub started: Option<DateTime<Utc>>,
}

/// The start of session `id` as its id tells it (see [`Started`]).
pub fn from_id(id: &str) -> Started {
    let started = id
        .get(..16)
        .and_then(|stamp| NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%SZ").ok())
        .map(|t| t.and_utc());
    // `<stamp>-<4 hex>-<role>[-<chunk>]-a<attempt>`
    let rest = id.splitn(3, '-').nth(2).unwrap_or_default();
    let (body, attempt) = match rest.rsplit_once("-a") {
        Some((body, n)) if n.parse::<u32>().is_ok() => (body, n.parse().unwrap_or(0)),
        _ => (rest, 0),
    };
    let (role, chunk) = match body.split_once('-') {
        Some((role, chunk)) => (role, Some(chunk.to_string())),
        None => (body, None),
    };
    Started {
        session_id: id.to_string(),
        run_id: None,
        role: role.to_string(),
        chunk,
        attempt,
        started,
    }
}

/// The start of session `id` as the journal tells it (read from its newest file back, only as
/// far as needed), else as its id does.
pub fn started(spec_dir: &Path, id: &str) -> Started {
    let found = crate::store::journal::segments::read_newest_first(spec_dir, |bytes| {
        let text = crate::store::lossy(bytes);
        text.lines()
            .rev()
            .filter(|l| l.contains(id) && l.contains("session_start"))
            .filter_map(|l| serde_json::from_str(l).ok())
            .filter_map(crate::store::journal::entry)
            .find_map(|e| of_entry(e).filter(|s| s.session_id == id))
    });
    found.unwrap_or_else(|| from_id(id))
}

/// The sessions run `run_id` started, in order, as the journal tells it (those whose folder
/// is gone included: the caller finds no log for them).
pub fn of_run(spec_dir: &Path, run_id: &str) -> Vec<Started> {
    crate::store::journal::read_entries_containing(spec_dir, run_id)
        .into_iter()
        .filter(|e| e.run_id.as_deref() == Some(run_id))
        .filter_map(of_entry)
        .filter(|s| is_session_id(&s.session_id))
        .collect()
}

fn of_entry(e: crate::store::journal::Entry) -> Option<Started> {
    let Event::SessionStart(s) = e.event else {
        return None;
    };
    Some(Started {
        started: e
            .time
            .as_deref()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
            .or_else(|| from_id(&s.session_id).started),
        session_id: s.session_id,
        run_id: e.run_id,
        role: s.role,
        chunk: s.chunk,
        attempt: s.attempt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_listed_oldest_first_and_only_real_folders_named_like_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let made = crate::ids::session_id("coder", Some("1-1"), 1);
        assert!(is_session_id(&made), "{made}");
        for name in [
            "20261122T192400Z-3f9a-coder-1-2-a1",
            "20261122T192300Z-0001-planner-a1",
        ] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        std::fs::write(dir.path().join("20261122T192500Z-0002-coder-a1"), "").unwrap();
        std::fs::create_dir(dir.path().join("notes")).unwrap();
        std::fs::create_dir(dir.path().join("20261122T192600Z-..")).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("notes"),
            dir.path().join("20261122T192700Z-0003-coder-a1"),
        )
        .unwrap();
        assert_eq!(
            list(dir.path()),
            vec![
                "20261122T192300Z-0001-planner-a1".to_string(),
                "20261122T192400Z-3f9a-coder-1-2-a1".to_string(),
                "20261122T192600Z-..".to_string(),
            ]
        );
        assert!(!is_session_id("../../etc"));
        assert!(!is_session_id("20261122T192400Z-a/b"));
        assert_eq!(list(&dir.path().join("missing")), Vec::<String>::new());
    }

    #[test]
    fn sessions_started_within_one_second_are_in_the_journals_order() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        // Started in this order, within one second: the random part sorts them otherwise.
        let ids = [
            "20261122T192300Z-ffff-planner-a1",
            "20261122T192300Z-0002-coder-c1-a1",
            "20261122T192301Z-aaaa-coder-c2-a1",
            "20261122T192301Z-0001-coder-c3-a1",
        ];
        let journal = crate::store::Journal::new(dir.path(), "r-one");
        for id in ids {
            std::fs::create_dir_all(sessions.join(id)).unwrap();
            let start = crate::store::event::Session {
                role: "coder".into(),
                session_id: id.into(),
                ..Default::default()
            };
            journal.write(&Event::SessionStart(start)).unwrap();
        }
        assert_eq!(list(&sessions), ids);
        assert_eq!(latest(&sessions).as_deref(), Some(ids[3]));
        // A session the journal does not name comes after those it does, in its second.
        std::fs::create_dir_all(sessions.join("20261122T192300Z-0000-coder-x-a1")).unwrap();
        assert_eq!(list(&sessions)[2], "20261122T192300Z-0000-coder-x-a1");
    }

    #[test]
    fn a_sessions_start_is_read_from_its_id_when_the_journal_is_silent() {
        let dir = tempfile::tempdir().unwrap();
        let s = started(dir.path(), "20261122T192400Z-3f9a-coder-subtask-1-1-a2");
        assert_eq!(s.role, "coder");
        assert_eq!(s.chunk.as_deref(), Some("subtask-1-1"));
        assert_eq!(s.attempt, 2);
        assert_eq!(s.run_id, None);
        assert_eq!(
            s.started.map(|t| t.to_rfc3339()),
            Some("2026-11-22T19:24:00+00:00".to_string())
        );
        let p = from_id("20261122T192300Z-0001-planner-a1");
        assert_eq!((p.role.as_str(), p.chunk, p.attempt), ("planner", None, 1));
        // Garbage in, nothing made up, no panic.
        let odd = from_id("20261122T192300Z-x");
        assert_eq!((odd.role.as_str(), odd.attempt), ("", 0));
    }

    #[test]
    fn a_runs_sessions_are_its_session_start_lines_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let journal = |run: &str| crate::store::Journal::new(dir.path(), run);
        let start = |role: &str, chunk: Option<&str>, id: &str| {
            Event::SessionStart(crate::store::event::Session {
                role: role.into(),
                chunk: chunk.map(str::to_string),
                attempt: 1,
                session_id: id.into(),
                ..Default::default()
            })
        };
        let (p, c, other) = (
            "20261122T192300Z-0001-planner-a1",
            "20261122T192400Z-0002-coder-c_1-a1",
            "20261122T192500Z-0003-coder-x-a1",
        );
        journal("r-one").write(&start("planner", None, p)).unwrap();
        journal("r-two")
            .write(&start("coder", Some("x"), other))
            .unwrap();
        journal("r-one")
            .write(&start("coder", Some("c 1"), c))
            .unwrap();
        let ids: Vec<String> = of_run(dir.path(), "r-one")
            .into_iter()
            .map(|s| s.session_id)
            .collect();
        assert_eq!(ids, [p, c]);
        let s = started(dir.path(), c);
        assert_eq!(
            s.chunk.as_deref(),
            Some("c 1"),
            "the journal's chunk, exact"
        );
        assert_eq!(s.run_id.as_deref(), Some("r-one"));
        assert!(of_run(dir.path(), "r-none").is_empty());
    }
}
