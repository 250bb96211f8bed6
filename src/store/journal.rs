//! `events.jsonl`: the append-only journal of what happened to a spec. Advisory: runner works
//! without it, it only knows less history. One JSON object a line; a torn last line (a crash in
//! the middle of an append) is skipped on read.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

pub const JOURNAL_FILE: &str = "events.jsonl";

#[derive(Debug, Clone)]
pub struct Journal {
    path: PathBuf,
    run_id: String,
}

impl Journal {
    pub fn new(spec_dir: &Path, run_id: &str) -> Journal {
        Journal {
            path: spec_dir.join(JOURNAL_FILE),
            run_id: run_id.to_string(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one event. `details` must be a JSON object; its fields are merged into the line.
    pub fn record(&self, event: &str, chunk: Option<&str>, details: Value) -> std::io::Result<()> {
        let mut line = Map::new();
        line.insert("time".into(), json!(crate::clock::now()));
        line.insert("run_id".into(), json!(self.run_id));
        line.insert("event".into(), json!(event));
        if let Some(chunk) = chunk {
            line.insert("chunk".into(), json!(chunk));
        }
        if let Value::Object(extra) = details {
            line.extend(extra);
        }
        let mut bytes = Vec::with_capacity(256);
        // A torn last line (runner killed mid-write) would swallow this event: start afresh.
        if ends_torn(&self.path) {
            bytes.push(b'\n');
        }
        serde_json::to_writer(&mut bytes, &Value::Object(line)).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        // One write with O_APPEND (never through a link): concurrent appenders never
        // interleave within a line.
        // No fsync: the journal is advisory, and what recovery reads from it (the process
        // groups of running agents) only matters after runner itself was killed, when the
        // page cache still holds every line; after a power cut those processes are gone too.
        // (An fsync per event cost about 2 ms a chunk on our CI disk.)
        super::safe::append(&self.path, &bytes, false).map_err(super::at(&self.path))
    }
}

/// Whether the journal's last byte is not a newline (one pread; never through a link). A
/// journal that is missing, empty or unreadable is not torn.
fn ends_torn(path: &Path) -> bool {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut last = [0u8; 1];
    len > 0 && file.read_at(&mut last, len - 1).is_ok_and(|n| n == 1) && last[0] != b'\n'
}

/// Every event that parses, in order. Lines that do not parse (a torn last line) are skipped.
pub fn read_events(spec_dir: &Path) -> Vec<Value> {
    read_events_containing(spec_dir, "")
}

/// The events whose line contains `needle` (cheap pre-filter before parsing a long journal).
pub fn read_events_containing(spec_dir: &Path, needle: &str) -> Vec<Value> {
    let Some(text) = read_text(spec_dir) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| !l.trim().is_empty() && l.contains(needle))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(Value::is_object)
        .collect()
}

/// The journal's text, read as bytes: a byte that is not UTF-8 (an agent's output quoted in a
/// reason, a hand edit) spoils only its own line, which then fails to parse and is skipped
/// like a torn one, never the whole journal. `None` if there is no journal.
pub fn read_text(spec_dir: &Path) -> Option<String> {
    // Never through a FIFO or a link an agent planted (see `store::safe`).
    let bytes = crate::store::safe::read(spec_dir.join(JOURNAL_FILE)).ok()?;
    Some(crate::store::lossy(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::io::Write;

    #[test]
    fn appends_and_tolerates_a_torn_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path(), "run-1");
        journal
            .record("run_start", None, json!({"spec": "001"}))
            .unwrap();
        journal
            .record("chunk_status", Some("c1"), json!({"to": "in_progress"}))
            .unwrap();
        // Simulate a crash halfway through an append.
        let mut f = OpenOptions::new()
            .append(true)
            .open(journal.path())
            .unwrap();
        f.write_all(b"{\"time\":\"2026-").unwrap();
        let events = read_events(dir.path());
        assert_eq!(events.len(), 2);
        assert_eq!(events[0]["event"], "run_start");
        assert_eq!(events[0]["spec"], "001");
        assert_eq!(events[1]["chunk"], "c1");
        assert_eq!(events[1]["run_id"], "run-1");
    }

    #[test]
    fn a_non_utf8_byte_does_not_hide_the_other_lines() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path(), "run-1");
        journal.record("run_start", None, json!({})).unwrap();
        let mut f = OpenOptions::new()
            .append(true)
            .open(journal.path())
            .unwrap();
        f.write_all(b"{\"event\":\"attempt_failed\",\"reason\":\"bad \xff byte\"}\n")
            .unwrap();
        journal.record("run_end", None, json!({})).unwrap();
        let events = read_events(dir.path());
        let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
        assert_eq!(names, ["run_start", "attempt_failed", "run_end"]);
        assert_eq!(events[1]["reason"], "bad \u{fffd} byte");
    }
}
