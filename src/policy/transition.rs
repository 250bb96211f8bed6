//! A chunk's status changes in one place. Every change the engine, recovery or `runner chunk`
//! makes is an event ([`ChunkEvent`]) run through [`transition`], which looks the edge up in
//! [`TABLE`] and yields the journal's record of it ([`StatusChange`], the `chunk_status` line).
//! An event the table has no edge for from the chunk's status is refused, never applied.
//!
//! The edges, in words:
//! - a run takes a `pending` chunk for a new attempt: `in_progress`;
//! - the attempt's end judges it: `completed`, back to `pending` (attempts left), `failed`
//!   (`run.max_attempts` used), or `blocked` for a person (its commit refused, history
//!   rewritten, worktree unopenable, recovery's `human_review`). The session's chunk may read
//!   `completed` at that moment: an agent that sets its own chunk done in the plan file has only
//!   reported (see `settle_plan`), and the judgement is still to come;
//! - an attempt that ends unjudged (its agent never ran, a shutdown, recovery's continue or
//!   restart) is released: `pending`;
//! - an attempt cut short by the agent's usage limit (not reported done) goes back to
//!   `pending` without counting toward `run.max_attempts` (`policy::pause`);
//! - `recover --retry-failed` puts a `failed` chunk back to `pending`; `discard` puts every
//!   chunk back to `pending`;
//! - a person's `runner chunk done|fail` on a chunk not in progress sets it directly (on a chunk
//!   in progress it is a report on the attempt, not a status change).

use serde::{Deserialize, Serialize};

use crate::plan::{Chunk, Status};

/// Something that happens to a chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkEvent {
    /// A run takes the chunk for attempt `attempt` of session `session_id`, from `start_commit`.
    Take {
        attempt: u32,
        session_id: String,
        start_commit: String,
    },
    /// The attempt's work is done (and committed, `commit`): by the run's judgement or
    /// recovery's `next` (`why` then says so).
    Complete {
        attempt: Option<u32>,
        commit: Option<String>,
        verified: Option<bool>,
        why: Option<String>,
    },
    /// The attempt failed and attempts are left.
    AttemptFailed { attempt: u32 },
    /// The attempt failed and it was the last one `run.max_attempts` allows.
    GiveUp { attempt: u32 },
    /// The agent hit its usage limit before it reported the chunk done: back to `pending`,
    /// the attempt not counted as failed (the spec is paused, `policy::pause`).
    UsageLimited { attempt: u32 },
    /// The attempt ended without a judgement (`why`: `not_started`, a shutdown, recovery's
    /// continue or restart).
    Release { why: String, reason: Option<String> },
    /// A person must look (`why`).
    Block { why: String },
    /// `runner recover --retry-failed`.
    RetryFailed,
    /// `runner discard`: a fresh start from the same plan.
    Reset,
    /// A person's `runner chunk done` on a chunk not in progress.
    MarkDone,
    /// A person's `runner chunk fail` on a chunk not in progress.
    MarkFailed,
    /// The agent set its own chunk `completed` in the plan file during its session: kept as its
    /// report, judged at the session's end.
    ReportInFile,
}

/// An event's name, for the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    Take,
    Complete,
    AttemptFailed,
    GiveUp,
    UsageLimited,
    Release,
    Block,
    RetryFailed,
    Reset,
    MarkDone,
    MarkFailed,
    ReportInFile,
}

impl EventKind {
    pub const ALL: [EventKind; 12] = [
        EventKind::Take,
        EventKind::Complete,
        EventKind::AttemptFailed,
        EventKind::GiveUp,
        EventKind::UsageLimited,
        EventKind::Release,
        EventKind::Block,
        EventKind::RetryFailed,
        EventKind::Reset,
        EventKind::MarkDone,
        EventKind::MarkFailed,
        EventKind::ReportInFile,
    ];
}

impl ChunkEvent {
    pub fn kind(&self) -> EventKind {
        match self {
            ChunkEvent::Take { .. } => EventKind::Take,
            ChunkEvent::Complete { .. } => EventKind::Complete,
            ChunkEvent::AttemptFailed { .. } => EventKind::AttemptFailed,
            ChunkEvent::GiveUp { .. } => EventKind::GiveUp,
            ChunkEvent::UsageLimited { .. } => EventKind::UsageLimited,
            ChunkEvent::Release { .. } => EventKind::Release,
            ChunkEvent::Block { .. } => EventKind::Block,
            ChunkEvent::RetryFailed => EventKind::RetryFailed,
            ChunkEvent::Reset => EventKind::Reset,
            ChunkEvent::MarkDone => EventKind::MarkDone,
            ChunkEvent::MarkFailed => EventKind::MarkFailed,
            ChunkEvent::ReportInFile => EventKind::ReportInFile,
        }
    }
}

/// One legal edge: on `on`, a chunk in any status of `from` goes to `to`.
#[derive(Debug, Clone, Copy)]
pub struct Edge {
    pub on: EventKind,
    pub from: &'static [Status],
    pub to: Status,
}

use Status::{Blocked, Completed, Failed, InProgress, Pending};

/// The attempt is open: in progress, or marked `completed` in the file by its own agent.
const ATTEMPT_OPEN: &[Status] = &[InProgress, Completed];
/// Not in progress: where a person's mark sets the status.
const NOT_IN_PROGRESS: &[Status] = &[Pending, Completed, Failed, Blocked];

/// Every legal status change, and only those.
pub const TABLE: &[Edge] = &[
    Edge {
        on: EventKind::Take,
        from: &[Pending],
        to: InProgress,
    },
    Edge {
        on: EventKind::Complete,
        from: ATTEMPT_OPEN,
        to: Completed,
    },
    Edge {
        on: EventKind::AttemptFailed,
        from: ATTEMPT_OPEN,
        to: Pending,
    },
    Edge {
        on: EventKind::GiveUp,
        from: ATTEMPT_OPEN,
        to: Failed,
    },
    Edge {
        on: EventKind::UsageLimited,
        from: &[InProgress],
        to: Pending,
    },
    Edge {
        on: EventKind::Release,
        from: &[InProgress],
        to: Pending,
    },
    Edge {
        on: EventKind::Block,
        from: ATTEMPT_OPEN,
        to: Blocked,
    },
    Edge {
        on: EventKind::RetryFailed,
        from: &[Failed],
        to: Pending,
    },
    Edge {
        on: EventKind::Reset,
        from: &Status::ALL,
        to: Pending,
    },
    Edge {
        on: EventKind::MarkDone,
        from: NOT_IN_PROGRESS,
        to: Completed,
    },
    Edge {
        on: EventKind::MarkFailed,
        from: NOT_IN_PROGRESS,
        to: Failed,
    },
    Edge {
        on: EventKind::ReportInFile,
        from: &[InProgress],
        to: Completed,
    },
];

/// The journal's record of one status change (the fields of a `chunk_status` line besides
/// `chunk`). Only what the event knows is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusChange {
    pub from: Status,
    pub to: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

pub use crate::error::IllegalTransition;

/// The refusal of the event `on` for a chunk that is `from`.
fn illegal(from: Status, on: EventKind) -> IllegalTransition {
    IllegalTransition {
        from: from.to_string(),
        on: format!("{on:?}"),
    }
}

/// The status `event` moves a chunk in `status` to, with the journal's record of the change.
pub fn transition(status: Status, event: &ChunkEvent) -> Result<StatusChange, IllegalTransition> {
    let on = event.kind();
    let edge = TABLE
        .iter()
        .find(|e| e.on == on && e.from.contains(&status))
        .ok_or_else(|| illegal(status, on))?;
    let mut change = StatusChange {
        from: status,
        to: edge.to,
        attempt: None,
        session_id: None,
        start_commit: None,
        commit: None,
        verified: None,
        why: None,
        reason: None,
    };
    match event {
        ChunkEvent::Take {
            attempt,
            session_id,
            start_commit,
        } => {
            change.attempt = Some(*attempt);
            change.session_id = Some(session_id.clone());
            change.start_commit = Some(start_commit.clone());
        }
        ChunkEvent::Complete {
            attempt,
            commit,
            verified,
            why,
        } => {
            change.attempt = *attempt;
            change.commit = commit.clone();
            change.verified = *verified;
            change.why = why.clone();
        }
        ChunkEvent::AttemptFailed { attempt } | ChunkEvent::GiveUp { attempt } => {
            change.attempt = Some(*attempt);
        }
        ChunkEvent::UsageLimited { attempt } => {
            change.attempt = Some(*attempt);
            change.why = Some("usage_limited".into());
        }
        ChunkEvent::Release { why, reason } => {
            change.why = Some(why.clone());
            change.reason = reason.clone();
        }
        ChunkEvent::Block { why } => change.why = Some(why.clone()),
        ChunkEvent::RetryFailed => change.why = Some("recover --retry-failed".into()),
        ChunkEvent::Reset => change.why = Some("discard".into()),
        ChunkEvent::MarkDone | ChunkEvent::MarkFailed => {
            change.why = Some("runner chunk (a person)".into())
        }
        ChunkEvent::ReportInFile => change.why = Some("the agent marked it in the plan".into()),
    }
    Ok(change)
}

/// Run `event` through [`transition`] on `chunk` and set the status it yields (nothing changes
/// when it is refused). The caller journals the change it returns.
pub fn apply(chunk: &mut Chunk, event: &ChunkEvent) -> Result<StatusChange, IllegalTransition> {
    let change = transition(chunk.status, event)?;
    chunk.set_status(change.to);
    Ok(change)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One event of each kind.
    fn sample(kind: EventKind) -> ChunkEvent {
        match kind {
            EventKind::Take => ChunkEvent::Take {
                attempt: 2,
                session_id: "s".into(),
                start_commit: "abc".into(),
            },
            EventKind::Complete => ChunkEvent::Complete {
                attempt: Some(2),
                commit: Some("def".into()),
                verified: Some(true),
                why: None,
            },
            EventKind::AttemptFailed => ChunkEvent::AttemptFailed { attempt: 2 },
            EventKind::GiveUp => ChunkEvent::GiveUp { attempt: 3 },
            EventKind::UsageLimited => ChunkEvent::UsageLimited { attempt: 2 },
            EventKind::Release => ChunkEvent::Release {
                why: "not_started".into(),
                reason: Some("no agent".into()),
            },
            EventKind::Block => ChunkEvent::Block {
                why: "history rewritten".into(),
            },
            EventKind::RetryFailed => ChunkEvent::RetryFailed,
            EventKind::Reset => ChunkEvent::Reset,
            EventKind::MarkDone => ChunkEvent::MarkDone,
            EventKind::MarkFailed => ChunkEvent::MarkFailed,
            EventKind::ReportInFile => ChunkEvent::ReportInFile,
        }
    }

    /// The legal (from, event) pairs, written out by hand: a change of the table must change
    /// this list too, so it is reviewed.
    const LEGAL: &[(Status, EventKind, Status)] = &[
        (Pending, EventKind::Take, InProgress),
        (InProgress, EventKind::Complete, Completed),
        (Completed, EventKind::Complete, Completed),
        (InProgress, EventKind::AttemptFailed, Pending),
        (Completed, EventKind::AttemptFailed, Pending),
        (InProgress, EventKind::GiveUp, Failed),
        (Completed, EventKind::GiveUp, Failed),
        (InProgress, EventKind::UsageLimited, Pending),
        (InProgress, EventKind::Release, Pending),
        (InProgress, EventKind::Block, Blocked),
        (Completed, EventKind::Block, Blocked),
        (Failed, EventKind::RetryFailed, Pending),
        (Pending, EventKind::Reset, Pending),
        (InProgress, EventKind::Reset, Pending),
        (Completed, EventKind::Reset, Pending),
        (Failed, EventKind::Reset, Pending),
        (Blocked, EventKind::Reset, Pending),
        (Pending, EventKind::MarkDone, Completed),
        (Completed, EventKind::MarkDone, Completed),
        (Failed, EventKind::MarkDone, Completed),
        (Blocked, EventKind::MarkDone, Completed),
        (Pending, EventKind::MarkFailed, Failed),
        (Completed, EventKind::MarkFailed, Failed),
        (Failed, EventKind::MarkFailed, Failed),
        (Blocked, EventKind::MarkFailed, Failed),
        (InProgress, EventKind::ReportInFile, Completed),
    ];

    #[test]
    fn every_edge_of_the_table_is_exercised_and_everything_else_is_refused() {
        let mut used = vec![0usize; TABLE.len()];
        for from in Status::ALL {
            for on in EventKind::ALL {
                let got = transition(from, &sample(on));
                match LEGAL.iter().find(|(f, e, _)| *f == from && *e == on) {
                    Some(&(_, _, to)) => {
                        let change = got.unwrap_or_else(|e| panic!("{from} on {on:?}: {e}"));
                        assert_eq!((change.from, change.to), (from, to), "{from} on {on:?}");
                        let edge = TABLE
                            .iter()
                            .position(|e| e.on == on && e.from.contains(&from))
                            .unwrap();
                        used[edge] += 1;
                    }
                    None => assert_eq!(got, Err(illegal(from, on))),
                }
            }
        }
        for (edge, n) in TABLE.iter().zip(&used) {
            assert_eq!(
                *n,
                edge.from.len(),
                "edge {edge:?} not exercised from every status"
            );
        }
        // Each (status, event) has at most one edge: the table is a function.
        for from in Status::ALL {
            for on in EventKind::ALL {
                let edges = TABLE
                    .iter()
                    .filter(|e| e.on == on && e.from.contains(&from));
                assert!(edges.count() <= 1, "{from} on {on:?} is ambiguous");
            }
        }
    }

    #[test]
    fn the_change_carries_what_the_event_knows() {
        let c = transition(Pending, &sample(EventKind::Take)).unwrap();
        assert_eq!(c.attempt, Some(2));
        assert_eq!(c.session_id.as_deref(), Some("s"));
        assert_eq!(c.start_commit.as_deref(), Some("abc"));
        let line = serde_json::to_value(&c).unwrap();
        assert_eq!(
            line,
            serde_json::json!({"from": "pending", "to": "in_progress", "attempt": 2,
                               "session_id": "s", "start_commit": "abc"})
        );
        let c = transition(InProgress, &sample(EventKind::Release)).unwrap();
        assert_eq!(c.why.as_deref(), Some("not_started"));
        assert_eq!(c.reason.as_deref(), Some("no agent"));
        let c = transition(InProgress, &sample(EventKind::Complete)).unwrap();
        assert_eq!((c.commit.as_deref(), c.verified), (Some("def"), Some(true)));
    }

    #[test]
    fn a_refused_event_leaves_the_chunk_as_it_was() {
        let mut plan = crate::plan::parse_plan(
            std::path::Path::new("p"),
            br#"{"phases":[{"id":"1","chunks":[{"id":"a","description":"d","status":"completed"}]}]}"#,
        )
        .unwrap();
        let chunk = plan.chunk_mut(plan.find_chunk("a").unwrap());
        assert!(apply(chunk, &sample(EventKind::Take)).is_err());
        assert_eq!(chunk.status, Completed);
        let change = apply(chunk, &ChunkEvent::MarkFailed).unwrap();
        assert_eq!(
            (change.from, change.to, chunk.status),
            (Completed, Failed, Failed)
        );
        assert_eq!(chunk.raw()["status"], "failed");
    }
}
