//! Reading the journal: every segment in order, then the live file (`segments`); a torn last
//! line is skipped.

use std::path::Path;

use serde_json::Value;

use super::entry::{Entry, entry};
use crate::store::event::Event;

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
pub(super) fn read_events(spec_dir: &Path) -> Vec<Value> {
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
