//! `events.jsonl`: the append-only journal of what happened to a spec. Advisory: runner works
//! without it, it only knows less history. One JSON object a line; a torn last line (a crash in
//! the middle of an append) is skipped on read. Rotated by size into `events.<n>.jsonl`
//! segments (see `segments`); every reader here reads the segments in order, then the live file.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

pub use super::event::Event;

pub const JOURNAL_FILE: &str = "events.jsonl";

#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
    path: PathBuf,
    run_id: String,
    segment_bytes: u64,
}

impl Journal {
    pub fn new(spec_dir: &Path, run_id: &str) -> Journal {
        Journal {
            dir: spec_dir.to_path_buf(),
            path: spec_dir.join(JOURNAL_FILE),
            run_id: run_id.to_string(),
            segment_bytes: super::segments::segment_bytes(),
        }
    }

    /// The same journal, rotated at `bytes` instead of the configured size (tests, benches).
    pub fn with_segment_bytes(mut self, bytes: u64) -> Journal {
        self.segment_bytes = bytes.max(1);
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The run id every line of this journal carries.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Append a chunk's status change, as `policy::transition` yielded it.
    pub fn status(
        &self,
        chunk: &str,
        change: crate::policy::transition::StatusChange,
    ) -> std::io::Result<()> {
        self.write(&Event::ChunkStatus(super::event::ChunkStatus {
            chunk: chunk.to_string(),
            change,
        }))
    }

    /// Append one event, stamped with the time and this journal's run id. A failed attempt is
    /// also kept beside its session (see `failures`), once it is in the journal.
    pub fn write(&self, event: &Event) -> std::io::Result<()> {
        let at = match serde_json::to_value(event).map_err(std::io::Error::other)? {
            Value::Object(fields) => self.append(fields)?,
            _ => return Err(std::io::Error::other("a journal event is not an object")),
        };
        if let Event::AttemptFailed(failed) = event {
            super::failures::record(&self.dir, &failed.session_id, at);
        }
        Ok(())
    }

    /// Write one line: the time, the run id, then `fields`. Returns where the line went.
    fn append(&self, fields: Map<String, Value>) -> std::io::Result<super::failures::LineAt> {
        let mut line = Map::new();
        line.insert("time".into(), json!(crate::clock::now()));
        line.insert("run_id".into(), json!(self.run_id));
        line.extend(fields);
        // The live file rotated first if it is full (one lstat otherwise). A rotation that fails
        // (a file system without RENAME_NOREPLACE, a link at the live file's name) leaves the
        // live file growing: the append below decides, as it always did.
        let _ = super::segments::rotate_if_full(&self.dir, self.segment_bytes);
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
        let (ino, end) =
            super::safe::append_located(&self.path, &bytes).map_err(super::at(&self.path))?;
        let len = bytes.len() as u64 - u64::from(bytes.first() == Some(&b'\n'));
        Ok(super::failures::LineAt {
            ino,
            offset: end.saturating_sub(len),
            len,
        })
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

/// One journal line, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub time: Option<String>,
    pub run_id: Option<String>,
    pub event: Event,
}

/// Every event this runner knows, in order. A line that does not parse (torn, not JSON) or
/// whose event is unknown (a newer runner's, a hand-written one) is skipped, never an error,
/// and stays in the file.
pub fn read_entries(spec_dir: &Path) -> Vec<Entry> {
    read_entries_containing(spec_dir, "")
}

/// The known events whose line contains `needle` (cheap pre-filter before parsing).
pub fn read_entries_containing(spec_dir: &Path, needle: &str) -> Vec<Entry> {
    read_events_containing(spec_dir, needle)
        .into_iter()
        .filter_map(entry)
        .collect()
}

/// One line's JSON as a known event, or `None`.
pub(super) fn entry(mut line: Value) -> Option<Entry> {
    let text = |key: &str| line[key].as_str().map(str::to_string);
    let (time, run_id) = (text("time"), text("run_id"));
    // A null reads as a missing field, which takes its default: one null (an older or
    // hand-written line) does not make the whole line unreadable.
    if let Value::Object(fields) = &mut line {
        fields.retain(|_, v| !v.is_null());
    }
    match serde_json::from_value::<Event>(line) {
        Ok(Event::Unknown) | Err(_) => None,
        Ok(event) => Some(Entry {
            time,
            run_id,
            event,
        }),
    }
}

/// The last known event whose line contains `needle` and that `wanted` accepts: the same as
/// the last such event of [`read_typed_containing`], but read from the newest file back, only
/// as far as needed (the live file alone, mostly).
pub fn last_event_containing(
    spec_dir: &Path,
    needle: &str,
    wanted: impl Fn(&Event) -> bool,
) -> Option<Event> {
    super::segments::read_newest_first(spec_dir, |bytes| {
        let text = crate::store::lossy(bytes);
        text.lines()
            .rev()
            .filter(|l| l.contains(needle))
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(Value::is_object)
            .filter_map(entry)
            .map(|e| e.event)
            .find(|e| wanted(e))
    })
}

/// The last `n` known events, oldest first: the same as the end of [`read_entries`], read
/// from the newest file only when it holds `n` of them (the whole journal otherwise: a journal
/// just rotated, or a short one).
pub fn last_entries(spec_dir: &Path, n: usize) -> Vec<Entry> {
    let newest = super::segments::read_newest_first(spec_dir, |bytes| {
        let text = crate::store::lossy(bytes);
        let found: Vec<Entry> = text
            .lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(Value::is_object)
            .filter_map(entry)
            .take(n)
            .collect();
        // Only the newest file is looked at: `None` sends the reader to the whole journal.
        Some((found.len() >= n).then_some(found))
    });
    let mut found = match newest.flatten() {
        Some(found) => found,
        None => {
            let all = read_entries(spec_dir);
            all.into_iter().rev().take(n).collect()
        }
    };
    found.reverse();
    found
}

/// The last `max` lines (JSON objects, newest first) whose `run_id` is `run_id`, read from the
/// newest file back: a file whose first line is older than `since` (the run's start, as runner
/// writes times) ends the search, and no more than [`MAX_FILES_BACK`] files are read, so a
/// long journal is never read whole.
pub fn last_lines_of_run(spec_dir: &Path, run_id: &str, since: &str, max: usize) -> Vec<Value> {
    let found = std::cell::RefCell::new(Vec::new());
    let files = std::cell::Cell::new(0);
    super::segments::read_newest_first(spec_dir, |bytes| {
        let text = crate::store::lossy(bytes);
        let mut found = found.borrow_mut();
        for line in text.lines().rev().filter(|l| l.contains(run_id)) {
            if found.len() >= max {
                break;
            }
            if let Ok(v) = serde_json::from_str::<Value>(line)
                && v.is_object()
                && v["run_id"] == run_id
            {
                found.push(v);
            }
        }
        files.set(files.get() + 1);
        let first_time = text
            .lines()
            .find_map(|l| serde_json::from_str::<Value>(l).ok())
            .and_then(|v| v["time"].as_str().map(str::to_string));
        let older = first_time.is_some_and(|t| t.as_str() < since);
        (found.len() >= max || older || files.get() >= MAX_FILES_BACK).then_some(())
    });
    found.into_inner()
}

/// How many of the journal's files [`last_lines_of_run`] reads at most (4 MiB each by default).
pub const MAX_FILES_BACK: usize = 4;

/// The `time` of the journal's last line that parses as JSON: the same as reading
/// [`read_text`]'s last such line, from the newest file back only as far as needed.
pub fn last_time(spec_dir: &Path) -> Option<String> {
    super::segments::read_newest_first(spec_dir, |bytes| {
        crate::store::lossy(bytes)
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<Value>(l).ok())
    })
    .and_then(|v| v["time"].as_str().map(str::to_string))
}

/// One pass over the journal (see `segments::fold`: one file in memory at a time): `visit`
/// gets, in order, each known event whose line contains one of `needles` (a cheap filter before
/// parsing; an empty list passes every line), as [`read_entries_containing`] reads them. Also
/// returns the `time` of the journal's last line that parses as JSON, as [`last_time`] does.
pub fn scan<S>(
    spec_dir: &Path,
    needles: &[&str],
    start: impl Fn() -> S,
    visit: impl Fn(&mut S, Entry),
) -> (S, Option<String>) {
    super::segments::fold(
        spec_dir,
        || (start(), None),
        |(state, last), bytes| {
            let text = crate::store::lossy(bytes);
            let wanted = |l: &str| needles.is_empty() || needles.iter().any(|n| l.contains(n));
            for line in text.lines().filter(|l| !l.trim().is_empty() && wanted(l)) {
                if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(line)
                    && let Some(e) = entry(value)
                {
                    visit(state, e);
                }
            }
            let time = text
                .lines()
                .rev()
                .find_map(|l| serde_json::from_str::<Value>(l).ok())
                .map(|v| v["time"].as_str().map(str::to_string));
            if let Some(time) = time {
                *last = time;
            }
        },
    )
}

/// The events alone (see [`read_entries`]).
pub fn read_typed(spec_dir: &Path) -> Vec<Event> {
    read_typed_containing(spec_dir, "")
}

/// The known events whose line contains `needle`, alone.
pub fn read_typed_containing(spec_dir: &Path, needle: &str) -> Vec<Event> {
    read_entries_containing(spec_dir, needle)
        .into_iter()
        .map(|e| e.event)
        .collect()
}

/// Every line that parses as a JSON object, in order, untyped (the file as it is, for the
/// tests of reading it). Lines that do not parse (a torn last line) are skipped.
#[cfg(test)]
fn read_events(spec_dir: &Path) -> Vec<Value> {
    read_events_containing(spec_dir, "")
}

/// The lines, as JSON objects, that contain `needle` (cheap pre-filter before parsing a long
/// journal); the typed readers above parse them into events.
fn read_events_containing(spec_dir: &Path, needle: &str) -> Vec<Value> {
    // File by file: a torn last line of a segment stays a line of its own.
    let mut events = Vec::new();
    for bytes in super::segments::read_all(spec_dir) {
        let text = crate::store::lossy(bytes);
        events.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty() && l.contains(needle))
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(Value::is_object),
        );
    }
    events
}

/// The journal's text (segments in order, then the live file; a newline is added after a
/// file's torn last line, so it never joins the next file's first line), read as bytes: a byte
/// that is not UTF-8 (an agent's output quoted in a reason, a hand edit) spoils only its own
/// line, which then fails to parse and is skipped like a torn one, never the whole journal.
/// `None` if there is no journal.
pub fn read_text(spec_dir: &Path) -> Option<String> {
    // Never through a FIFO or a link an agent planted (see `store::safe`, `segments`).
    let files = super::segments::read_all(spec_dir);
    if files.is_empty() {
        return None;
    }
    let mut text = String::new();
    for bytes in files {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&crate::store::lossy(bytes));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::event::{Empty, RunEnd, RunStart};
    use std::fs::OpenOptions;
    use std::io::Write;

    fn run_start(spec: &str) -> Event {
        Event::RunStart(RunStart {
            spec: spec.into(),
            ..RunStart::default()
        })
    }

    fn run_end() -> Event {
        Event::RunEnd(RunEnd::default())
    }

    #[test]
    fn appends_and_tolerates_a_torn_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path(), "run-1");
        journal.write(&run_start("001")).unwrap();
        journal
            .status(
                "c1",
                crate::policy::transition::transition(
                    crate::plan::Status::Pending,
                    &crate::policy::transition::ChunkEvent::MarkDone,
                )
                .unwrap(),
            )
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
        journal.write(&run_start("")).unwrap();
        let mut f = OpenOptions::new()
            .append(true)
            .open(journal.path())
            .unwrap();
        f.write_all(b"{\"event\":\"attempt_failed\",\"reason\":\"bad \xff byte\"}\n")
            .unwrap();
        journal.write(&run_end()).unwrap();
        let events = read_events(dir.path());
        let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
        assert_eq!(names, ["run_start", "attempt_failed", "run_end"]);
        assert_eq!(events[1]["reason"], "bad \u{fffd} byte");
    }

    #[test]
    fn typed_reading_skips_unknown_and_malformed_lines_and_keeps_them() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::new(dir.path(), "run-1");
        journal
            .write(&Event::RunEnd(RunEnd {
                outcome: "complete".into(),
                sessions: 2,
            }))
            .unwrap();
        let mut f = OpenOptions::new()
            .append(true)
            .open(journal.path())
            .unwrap();
        f.write_all(b"{\"event\":\"from_the_future\",\"chunk\":\"c1\"}\n")
            .unwrap();
        f.write_all(b"{\"event\":\"run_start\",\"spec\":\"001\",\"base_branch\":null}\n")
            .unwrap();
        f.write_all(b"{\"event\":\"chunk_status\",\"chunk\":\"c1\",\"to\":\"archived\"}\n")
            .unwrap();
        journal.write(&Event::PlanReset(Empty {})).unwrap();
        let entries = read_entries(dir.path());
        assert_eq!(entries.len(), 3, "{entries:?}");
        assert_eq!(entries[0].run_id.as_deref(), Some("run-1"));
        assert!(entries[0].time.is_some());
        assert!(matches!(&entries[0].event, Event::RunEnd(e) if e.sessions == 2));
        assert!(matches!(&entries[1].event, Event::RunStart(e) if e.spec == "001"));
        assert!(matches!(entries[2].event, Event::PlanReset(_)));
        // Every line is still in the file, and reads as JSON as it was.
        assert_eq!(read_events(dir.path()).len(), 5);
    }

    #[test]
    fn a_runs_last_lines_read_newest_first_equal_those_of_the_whole_journal() {
        let dir = tempfile::tempdir().unwrap();
        let ids = ["r00000000000a", "r00000000000b"];
        // Small segments: the lines spread over many files.
        let journals = ids.map(|id| Journal::new(dir.path(), id).with_segment_bytes(600));
        for n in 0..60 {
            journals[n % 3 / 2]
                .write(&run_start(&format!("s{n}")))
                .unwrap();
        }
        assert!(super::super::segments::list(dir.path()).len() > 5);
        for id in ids {
            let mut slow: Vec<Value> = read_events(dir.path())
                .into_iter()
                .filter(|v| v["run_id"] == id)
                .collect();
            slow.reverse();
            for max in [1, 2, 3] {
                assert_eq!(
                    last_lines_of_run(dir.path(), id, "", max),
                    slow[..max],
                    "{id}"
                );
            }
            // Asked for everything, it stops MAX_FILES_BACK files back: the newest lines, in
            // order, and not the whole journal.
            let bounded = last_lines_of_run(dir.path(), id, "", 1000);
            assert!(bounded.len() > 3 && bounded.len() < slow.len(), "{id}");
            assert_eq!(bounded[..], slow[..bounded.len()], "{id}");
        }
        // A start later than every line: only the newest file is read.
        let newest = last_lines_of_run(dir.path(), ids[0], "9999", 1000);
        assert!(newest.len() <= 600 / 50, "{}", newest.len());
    }
}
