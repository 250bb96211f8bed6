//! One line of the journal, typed: the file's name and how a line reads as an event. The
//! other journal modules build on this one (the writer in `super`, the readers in `read` and
//! `lines`, the segments, the failure records).

use serde_json::Value;

use crate::store::event::Event;

pub const JOURNAL_FILE: &str = "events.jsonl";

/// One journal line, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub time: Option<String>,
    pub run_id: Option<String>,
    pub event: Event,
}

/// One line's JSON as a known event, or `None`.
pub fn entry(mut line: Value) -> Option<Entry> {
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
