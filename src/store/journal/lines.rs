//! The journal's lines read for speed: one pass over its files ([`scan_lines`]), and a line's
//! event read without building its JSON tree when it is one readers want most
//! ([`parse_line_of`]), always with the answer of the general reading (`journal::entry`).

use std::path::Path;

use serde_json::Value;

use super::entry::{Entry, entry};
use crate::store::event::Event;

/// One pass over the journal (see `segments::fold`: one file in memory at a time): `visit`
/// gets, in order, each line that contains one of `needles` (a cheap filter before parsing; an
/// empty list passes every line), to parse as it needs ([`parse_line_of`]). Also
/// returns the `time` of the journal's last line that parses as JSON, as [`last_time`] does.
pub fn scan_lines<S>(
    spec_dir: &Path,
    needles: &[&str],
    start: impl Fn() -> S,
    visit: impl Fn(&mut S, &str),
) -> (S, Option<String>) {
    let finders: Vec<memchr::memmem::Finder> =
        needles.iter().map(memchr::memmem::Finder::new).collect();
    super::segments::fold(
        spec_dir,
        || (start(), None),
        |(state, last), bytes| {
            let text = crate::store::lossy(bytes);
            let wanted = |l: &str| {
                finders.is_empty() || finders.iter().any(|f| f.find(l.as_bytes()).is_some())
            };
            for line in text.lines().filter(|l| !l.trim().is_empty() && wanted(l)) {
                visit(state, line);
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

/// One line's known event, exactly as [`read_entries`] reads it (`None` for a line that does
/// not parse, is not an object, or whose event is unknown).
pub fn parse_line(line: &str) -> Option<Entry> {
    parse_line_of(line, None)
}

/// [`parse_line`] for the lines whose `event` is one of `kinds` only (`None` for any other):
/// the kind is read first, without building the rest of the line. A `chunk_status` or a
/// `verification` line, the ones readers want most, is then read straight into its fields;
/// anything that way does not read (a null where text belongs, a duplicate key) takes the
/// general way (the line's JSON tree, nulls dropped, defaults filled in), so the answer is
/// always the general way's.
pub fn parse_line_of(line: &str, kinds: Option<&[&str]>) -> Option<Entry> {
    let wanted = |kind: Option<&str>| kinds.is_none_or(|k| kind.is_some_and(|e| k.contains(&e)));
    if !line.trim_start().starts_with('{') {
        return None;
    }
    // A status change in one read of the line.
    if wanted(Some("chunk_status"))
        && let Ok(status) = serde_json::from_str::<StatusLine>(line)
        && status.event.as_deref() == Some("chunk_status")
    {
        return Some(status.entry());
    }
    if let Ok(head) = serde_json::from_str::<Head>(line) {
        if !wanted(head.event.as_deref()) {
            return None;
        }
        let event = match head.event.as_deref() {
            Some("chunk_status") => serde_json::from_str(line).ok().map(|change| {
                Event::ChunkStatus(crate::store::event::ChunkStatus {
                    chunk: head.chunk.clone().unwrap_or_default(),
                    change,
                })
            }),
            Some("verification") => serde_json::from_str(line).ok().map(Event::Verification),
            _ => None,
        };
        if let Some(event) = event {
            let text = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).map(str::to_string);
            return Some(Entry {
                time: text(&head.time),
                run_id: text(&head.run_id),
                event,
            });
        }
    }
    let value = serde_json::from_str::<Value>(line).ok()?;
    if !value.is_object() || !wanted(value["event"].as_str()) {
        return None;
    }
    entry(value)
}

/// A `chunk_status` line's fields, read in one go (the others skipped unread).
#[derive(serde::Deserialize)]
struct StatusLine {
    #[serde(default)]
    time: Option<Value>,
    #[serde(default)]
    run_id: Option<Value>,
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    chunk: Option<String>,
    from: crate::plan::Status,
    to: crate::plan::Status,
    #[serde(default)]
    attempt: Option<u32>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    start_commit: Option<String>,
    #[serde(default)]
    commit: Option<String>,
    #[serde(default)]
    verified: Option<bool>,
    #[serde(default)]
    why: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

impl StatusLine {
    fn entry(self) -> Entry {
        let text = |v: Option<Value>| v.as_ref().and_then(Value::as_str).map(str::to_string);
        // Every field named: a field added to `StatusChange` fails to compile here until it
        // is read above too.
        let change = crate::policy::transition::StatusChange {
            from: self.from,
            to: self.to,
            attempt: self.attempt,
            session_id: self.session_id,
            start_commit: self.start_commit,
            commit: self.commit,
            verified: self.verified,
            why: self.why,
            reason: self.reason,
        };
        Entry {
            time: text(self.time),
            run_id: text(self.run_id),
            event: Event::ChunkStatus(crate::store::event::ChunkStatus {
                chunk: self.chunk.unwrap_or_default(),
                change,
            }),
        }
    }
}

/// The fields every line shares, the others skipped unread.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(default)]
    time: Option<Value>,
    #[serde(default)]
    run_id: Option<Value>,
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    chunk: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_reading_of_a_line_is_the_general_one() {
        let general = |l: &str| {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(Value::is_object)
                .and_then(entry)
        };
        let lines = [
            r#"{"time":"2026-11-23T08:00:00Z","run_id":"r1","event":"chunk_status","chunk":"a","from":"pending","to":"in_progress","attempt":1,"session_id":"s","start_commit":"ab"}"#,
            r#"{"time":"t","event":"chunk_status","chunk":"a","from":"in_progress","to":"completed","commit":"cd","verified":true,"why":"w","reason":"r"}"#,
            r#"{"event": "chunk_status", "chunk": null, "from": "pending", "to": "Done", "commit": null}"#,
            r#"{"event":"chunk_status","chunk":"a","to":"completed"}"#,
            r#"{"event":"chunk_status","chunk":"a","from":"pending","to":"completed","to":"failed"}"#,
            r#"{"event":"chunk_status","chunk":"a","from":"pending","to":"archived"}"#,
            r#"{"event":"chunk_status","chunk":7,"from":"pending","to":"completed"}"#,
            r#"{"time":12,"run_id":null,"event":"chunk_status","chunk":"a","from":"pending","to":"completed","attempt":null}"#,
            r#"{"event":"chunk_status","chunk":"a","from":"pending","to":"completed","attempt":1.5}"#,
            r#"["chunk_status","a","pending","completed"]"#,
            r#"{"event":"chunk_status","event":"plan_reset"}"#,
            r#"{"time":"t","event":"verification","chunk":"a","command":"make","passed":true,"detail":"ok"}"#,
            r#"{"event":"verification","chunk":"a","passed":null}"#,
            r#"{"event":"verification","chunk":"a","passed":"yes"}"#,
            r#"{"event":"plan_snapshot","plan":{"phases":[{"chunks":[{"verification":{"type":"command"}}]}]}}"#,
            r#"{"event":"plan_reset"}"#,
            r#"{"event":"from_the_future","chunk":"a","from":"pending","to":"completed"}"#,
            r#"{"event":"chunk_status","chunk":"a","from":"pending","to":"completed"} trailing"#,
            "{\"event\":\"chunk_status\",\"chunk\":\"\u{fffd}\",\"from\":\"pending\",\"to\":\"failed\"}",
            "",
            "not json",
        ];
        let kinds: &[&str] = &["chunk_status", "verification", "plan_reset"];
        for line in lines {
            assert_eq!(parse_line(line), general(line), "{line}");
            let wanted = general(line).filter(|e| {
                let kind = serde_json::to_value(&e.event).unwrap()["event"].clone();
                kinds.iter().any(|k| kind == *k)
            });
            assert_eq!(parse_line_of(line, Some(kinds)), wanted, "{line}");
        }
    }
}
