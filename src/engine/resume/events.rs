//! The second source: one pass over the journal's typed events (every segment, then the live
//! file; one file in memory at a time), keeping per chunk only its last status. Cost: one read
//! of the journal, a substring test per line, and a parse of the few kinds of line that matter
//! (`chunk_status`, `plan_reset`, `verification`, `session_end`); a hash lookup per status
//! change. Memory: one journal file, and a few words per chunk.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::plan::Status;
use crate::store::Event;
use crate::store::checkpoint::LastVerification;

/// What the journal's events say about a spec's chunks.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    /// Each chunk's last status (and the commit that completed it, if the event says), from the
    /// status changes since the last `plan_reset` (a discard or a new plan voids what came before).
    pub statuses: HashMap<String, (Status, Option<String>)>,
    /// The same, from the status changes strictly newer than the `after` time given.
    pub newer: HashMap<String, (Status, Option<String>)>,
    /// How many status changes `statuses` and `newer` were built from.
    pub status_events: usize,
    pub newer_events: usize,
    /// The time of the last status change (the journal's last chunk event).
    pub last_chunk_event: Option<DateTime<Utc>>,
    /// The time of the journal's last line.
    pub last_event: Option<DateTime<Utc>>,
    /// The chunk of the last status change.
    pub last_chunk: Option<String>,
    pub verification: Option<LastVerification>,
    /// Sums over the sessions the journal recorded (every run of the spec).
    pub seconds_spent: u64,
    pub cost_usd: f64,
    pub tokens: u64,
    /// A journal file (the live one or a segment) was there.
    pub found: bool,
}

/// The lines worth parsing (every other kind of line is skipped unparsed).
const NEEDLES: &[&str] = &[
    "chunk_status",
    "plan_reset",
    "\"verification\"",
    "session_end",
];

fn time_of(text: Option<&str>) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Replay the journal of the spec in `spec_dir`. Status changes strictly newer than `after`
/// (the checkpoint's time) are also kept apart, to be replayed on top of the checkpoint.
pub fn replay(spec_dir: &std::path::Path, after: Option<DateTime<Utc>>) -> Replay {
    let (mut replay, last) =
        crate::store::journal::scan(spec_dir, NEEDLES, Replay::default, |r, entry| {
            let time = time_of(entry.time.as_deref());
            match entry.event {
                Event::ChunkStatus(e) => {
                    let commit = (e.change.to == Status::Completed)
                        .then_some(e.change.commit)
                        .flatten();
                    let fact = (e.change.to, commit);
                    if after.is_some_and(|after| time.is_some_and(|t| t > after)) {
                        r.newer.insert(e.chunk.clone(), fact.clone());
                        r.newer_events += 1;
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
                    r.newer.clear();
                }
                Event::Verification(v) => {
                    r.verification = Some(LastVerification {
                        chunk: v.chunk,
                        passed: v.passed,
                        command: v.command,
                        detail: v.detail,
                        time: time.unwrap_or_default(),
                    });
                }
                Event::SessionEnd(s) => {
                    r.seconds_spent = r.seconds_spent.saturating_add(s.duration_ms / 1000);
                    if let Some(report) = s.report {
                        let cost = report.cost_usd.unwrap_or(0.0);
                        if cost.is_finite() && cost > 0.0 {
                            r.cost_usd += cost;
                        }
                        r.tokens = r.tokens.saturating_add(report.tokens.total());
                    }
                }
                _ => {}
            }
        });
    replay.last_event = time_of(last.as_deref()).or(replay.last_chunk_event);
    replay.found = crate::store::segments::exists(spec_dir);
    replay
}
