//! `events.jsonl`: the append-only journal of what happened to a spec. Advisory: runner works
//! without it, it only knows less history. One JSON object a line; a torn last line (a crash in
//! the middle of an append) is skipped on read. Rotated by size into `events.<n>.jsonl`
//! segments (see `segments`); every reader here reads the segments in order, then the live file.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

mod entry;
pub mod failures;
pub mod lines;
mod read;
pub mod segments;

pub use crate::store::event::Event;
pub use entry::{Entry, JOURNAL_FILE, entry};
pub use lines::{parse_line, parse_line_of, scan_lines};
pub use read::*;

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
            segment_bytes: segments::segment_bytes(),
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
        self.write(&Event::ChunkStatus(crate::store::event::ChunkStatus {
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
            failures::record(&self.dir, &failed.session_id, at);
        }
        Ok(())
    }

    /// Write one line: the time, the run id, then `fields`. Returns where the line went.
    fn append(&self, fields: Map<String, Value>) -> std::io::Result<failures::LineAt> {
        let mut line = Map::new();
        line.insert("time".into(), json!(crate::clock::now()));
        line.insert("run_id".into(), json!(self.run_id));
        line.extend(fields);
        // The live file rotated first if it is full (one lstat otherwise). A rotation that fails
        // (a file system without RENAME_NOREPLACE, a link at the live file's name) leaves the
        // live file growing: the append below decides, as it always did.
        let _ = segments::rotate_if_full(&self.dir, self.segment_bytes);
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
        let (ino, end) = crate::store::safe::append_located(&self.path, &bytes)
            .map_err(crate::store::at(&self.path))?;
        let len = bytes.len() as u64 - u64::from(bytes.first() == Some(&b'\n'));
        Ok(failures::LineAt {
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

#[cfg(test)]
mod tests {
    use super::read::read_events;
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
        assert!(super::segments::list(dir.path()).len() > 5);
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
