//! The second source: one pass over the journal's typed events (every segment, then the live
//! file; one file in memory at a time), keeping per chunk only its last status. Cost: one read
//! of the journal, a substring test per line, and a parse of the lines that matter: each
//! `chunk_status`, `verification` (both read straight into their fields, `journal::parse_line`)
//! and `plan_reset`; a hash lookup per status change. Memory: one journal file, a few words per
//! chunk.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::plan::Status;
use crate::store::Event;
use crate::store::checkpoint::LastVerification;
use crate::store::journal::parse_line_of;

/// What the journal's events say about a spec's chunks.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    /// Each chunk's last status (and the commit that completed it, if the event says), from the
    /// status changes since the last `plan_reset` (a discard or a new plan voids what came before).
    pub statuses: HashMap<String, (Status, Option<String>)>,
    /// The checkpoint's statuses (given to [`replay`]) with the status changes newer than it
    /// replayed on top, each only where it continues the chunk's status (its `from` is the
    /// status so far): a change of the checkpoint's own second that came before it (journal
    /// times have whole seconds), or one a clock put after it, changes nothing.
    pub on_top: HashMap<String, (Status, Option<String>)>,
    /// How many status changes `statuses` was built from, and how many were replayed on top.
    pub status_events: usize,
    pub newer_events: usize,
    /// The time of the last status change replayed on top.
    pub last_on_top: Option<DateTime<Utc>>,
    /// The time of the last status change (the journal's last chunk event).
    pub last_chunk_event: Option<DateTime<Utc>>,
    /// The time of the journal's last line.
    pub last_event: Option<DateTime<Utc>>,
    /// The chunk of the last status change.
    pub last_chunk: Option<String>,
    /// The time of the last `plan_reset` (a new plan started).
    pub last_plan_reset: Option<DateTime<Utc>>,
    pub verification: Option<LastVerification>,
}

/// The kinds of event replayed.
const KINDS: &[&str] = &["chunk_status", "plan_reset", "verification"];

/// The lines worth looking at (every other kind of line is skipped unparsed).
const NEEDLES: &[&str] = &["chunk_status", "plan_reset", "\"verification\""];

fn time_of(text: Option<&str>) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// A checkpoint's time and chunk statuses, to replay newer status changes on top of.
#[derive(Debug, Clone, Default)]
pub struct Base {
    /// Changes at or after this time are newer.
    pub after: DateTime<Utc>,
    pub statuses: HashMap<String, (Status, Option<String>)>,
}

/// Replay the journal of the spec in `spec_dir`, and the changes newer than `base` on top of it.
pub fn replay(spec_dir: &std::path::Path, base: Option<&Base>) -> Replay {
    let start = || Replay {
        on_top: base.map(|b| b.statuses.clone()).unwrap_or_default(),
        ..Replay::default()
    };
    let (mut replay, last) =
        crate::store::journal::scan_lines(spec_dir, NEEDLES, start, |r, line| {
            let Some(entry) = parse_line_of(line, Some(KINDS)) else {
                return;
            };
            match entry.event {
                Event::ChunkStatus(e) => {
                    let time = time_of(entry.time.as_deref());
                    let commit = (e.change.to == Status::Completed)
                        .then_some(e.change.commit)
                        .flatten();
                    let fact = (e.change.to, commit);
                    if let (Some(base), Some(t)) = (base, time)
                        && t >= base.after
                        && let Some(now) = r.on_top.get_mut(&e.chunk)
                        && now.0 == e.change.from
                    {
                        *now = fact.clone();
                        r.newer_events += 1;
                        r.last_on_top = Some(t);
                    }
                    r.statuses.insert(e.chunk.clone(), fact);
                    r.status_events += 1;
                    r.last_chunk = Some(e.chunk);
                    if time.is_some() {
                        r.last_chunk_event = time;
                    }
                }
                Event::PlanReset(_) => {
                    r.statuses.clear();
                    r.last_plan_reset = time_of(entry.time.as_deref()).or(r.last_plan_reset);
                }
                Event::Verification(v) => {
                    r.verification = Some(LastVerification {
                        chunk: v.chunk,
                        passed: v.passed,
                        command: v.command,
                        detail: v.detail,
                        time: time_of(entry.time.as_deref()).unwrap_or_default(),
                    });
                }
                _ => {}
            }
        });
    replay.last_event = time_of(last.as_deref()).or(replay.last_chunk_event);
    replay
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Journal;
    use crate::store::journal::read_entries;
    use serde_json::json;

    fn write(journal: &Journal, v: serde_json::Value) {
        journal.write(&serde_json::from_value(v).unwrap()).unwrap();
    }

    /// The replay, the slow way: every entry read, then folded.
    fn slow(dir: &std::path::Path) -> HashMap<String, (Status, Option<String>)> {
        let mut statuses = HashMap::new();
        for e in read_entries(dir) {
            match e.event {
                Event::ChunkStatus(e) => {
                    let commit = (e.change.to == Status::Completed)
                        .then_some(e.change.commit)
                        .flatten();
                    statuses.insert(e.chunk, (e.change.to, commit));
                }
                Event::PlanReset(_) => statuses.clear(),
                _ => {}
            }
        }
        statuses
    }

    #[test]
    fn the_one_pass_replay_gives_what_reading_every_entry_gives() {
        let dir = tempfile::tempdir().unwrap();
        // Tiny segments: the replay crosses many files.
        let journal = Journal::new(dir.path(), "r0123456789ab").with_segment_bytes(600);
        let status = |chunk: &str, from: &str, to: &str, commit: Option<&str>| json!({"event": "chunk_status", "chunk": chunk, "from": from, "to": to, "commit": commit});
        write(&journal, status("a", "pending", "completed", Some("c0")));
        write(&journal, json!({"event": "plan_reset"}));
        let mut last: HashMap<String, &str> = HashMap::new();
        for i in 0..30 {
            let chunk = format!("c{}", i % 7);
            let from = last.get(&chunk).copied().unwrap_or("pending");
            write(&journal, status(&chunk, from, "in_progress", None));
            write(
                &journal,
                json!({"event": "verification", "chunk": chunk, "command": "make",
                "passed": i % 2 == 0, "detail": format!("run {i}")}),
            );
            let to = if i % 3 == 0 { "failed" } else { "completed" };
            write(
                &journal,
                status(&chunk, "in_progress", to, Some(&format!("{i:040x}"))),
            );
            last.insert(chunk, to);
        }
        // A torn last line is skipped by both.
        std::fs::write(
            dir.path().join("events.jsonl"),
            [
                std::fs::read(dir.path().join("events.jsonl")).unwrap_or_default(),
                b"{\"event\":\"chunk_st".to_vec(),
            ]
            .concat(),
        )
        .unwrap();
        let r = replay(dir.path(), None);
        assert!(crate::store::segments::list(dir.path()).len() > 5);
        assert_eq!(r.statuses, slow(dir.path()));
        assert_eq!(r.statuses.len(), 7);
        assert_eq!(r.status_events, 61);
        assert_eq!(r.last_chunk.as_deref(), Some("c1"));
        let v = r.verification.unwrap();
        assert_eq!(
            (v.chunk.as_str(), v.detail.as_str(), v.passed),
            ("c1", "run 29", false)
        );
        assert_eq!(
            r.last_event
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            crate::store::journal::last_time(dir.path())
        );
        // Nothing is newer than a time after every event.
        let base = |after: DateTime<Utc>, status: Status| Base {
            after,
            statuses: (0..7).map(|i| (format!("c{i}"), (status, None))).collect(),
        };
        let later = replay(
            dir.path(),
            Some(&base(
                Utc::now() + chrono::Duration::hours(1),
                Status::Pending,
            )),
        );
        assert_eq!(later.newer_events, 0);
        assert_eq!(later.on_top, base(Utc::now(), Status::Pending).statuses);
        // From a time before every event, the changes that chain from the base's statuses: all
        // of them from `pending` (the first change of each chunk starts there), none from
        // `blocked` (no change starts there).
        let earlier = replay(
            dir.path(),
            Some(&base(
                Utc::now() - chrono::Duration::hours(1),
                Status::Pending,
            )),
        );
        assert_eq!(earlier.on_top, r.statuses);
        assert_eq!(earlier.newer_events, 60);
        let none = replay(
            dir.path(),
            Some(&base(
                Utc::now() - chrono::Duration::hours(1),
                Status::Blocked,
            )),
        );
        assert_eq!((none.newer_events, none.on_top.len()), (0, 7));
    }
}
