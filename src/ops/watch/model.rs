//! What `runner watch` shows, worked out from what was read: one row per spec as `status`
//! judged it (its report is the one rule for a spec's state), with, for a spec whose run is
//! active, that run's chunk, attempt, elapsed time and the agent's latest line. Pure: no file is
//! read here, so every rule is unit-tested on plain data.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::ops::status::{SpecStatus, StatusReport};
use crate::store::runs::RunRecord;

/// What was read of a spec's active run beyond its status line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Live {
    /// The run's record (its chunk, agent, start); none when it cannot be read.
    pub record: Option<RunRecord>,
    /// The spec's newest session folder (its id).
    pub session: Option<String>,
    /// The agent's latest activity in that session's log, on one line (raw text).
    pub latest: Option<String>,
}

/// One spec as watch shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub spec: String,
    /// The status word, as `runner status` says it.
    pub state: String,
    /// A live runner holds the spec.
    pub active: bool,
    pub run_id: Option<String>,
    /// The chunk being worked on or left interrupted; else the next one a run would take
    /// (`next` says which).
    pub chunk: Option<String>,
    pub next: bool,
    /// The attempt of the active run's current session (from the session's id).
    pub attempt: Option<u32>,
    /// The active run's current session is the planner's.
    pub planning: bool,
    pub done: usize,
    pub total: usize,
    /// Seconds since the active run started.
    pub elapsed_secs: Option<u64>,
    pub usd: f64,
    pub tokens: u64,
    /// The active run's agent (preset name, or `command`).
    pub agent: Option<String>,
    /// The agent's latest line in the active run's current session (raw: the front end
    /// escapes it).
    pub latest: Option<String>,
}

/// The rows, in the report's order.
pub fn rows(report: &StatusReport, live: &HashMap<String, Live>, now: DateTime<Utc>) -> Vec<Row> {
    report
        .specs
        .iter()
        .map(|s| row(s, live.get(&s.spec), now))
        .collect()
}

fn row(s: &SpecStatus, live: Option<&Live>, now: DateTime<Utc>) -> Row {
    let active = s.running.is_some();
    let run_id = s.running.as_ref().and_then(|r| r.run_id.clone());
    // A record is this run's only when it names it (a lock's holder and its record agree).
    let record = live
        .and_then(|l| l.record.as_ref())
        .filter(|r| active && run_id.as_deref() == Some(r.run_id.as_str()));
    let started = record.map(|r| r.started).or_else(|| {
        let since = s.running.as_ref()?.since.as_deref()?;
        DateTime::parse_from_rfc3339(since)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    });
    // The newest session counts only when this run started it: before its first session the
    // newest one is an earlier run's, whose words are not what the agent is doing now.
    let session = live
        .and_then(|l| l.session.as_deref())
        .filter(|id| active && started.is_some_and(|t| session_of_run(id, t)));
    let planning = session.is_some_and(|id| session_role(id) == Some("planner"))
        || (active && s.status == "planning");
    let current = record
        .and_then(|r| r.chunk.clone())
        .or_else(|| s.current_chunk.clone());
    let (chunk, next) = match (current, planning) {
        (_, true) => (None, false),
        (Some(c), _) => (Some(c), false),
        (None, _) if active => (None, false),
        (None, _) => (s.next_chunk.clone(), s.next_chunk.is_some()),
    };
    Row {
        spec: s.spec.clone(),
        state: s.status.clone(),
        active,
        run_id,
        chunk,
        next,
        attempt: session.and_then(session_attempt),
        planning,
        done: s.chunks.completed,
        total: s.chunks.total,
        elapsed_secs: started
            .filter(|_| active)
            .map(|t| (now - t).num_seconds().max(0) as u64),
        usd: s.spent.usd,
        tokens: s.spent.tokens,
        agent: record.and_then(|r| r.agent.clone()),
        latest: session.and(live.and_then(|l| l.latest.clone())),
    }
}

/// The attempt a session id names (`…-a2` → 2).
pub fn session_attempt(id: &str) -> Option<u32> {
    let (_, n) = id.rsplit_once("-a")?;
    n.parse().ok().filter(|n| *n > 0)
}

/// The role a session id names: `coder`, `planner`, … (the word after its time and random
/// part, `20261122T192400Z-3f9a-coder-…`).
pub fn session_role(id: &str) -> Option<&str> {
    id.split('-').nth(2).filter(|r| !r.is_empty())
}

/// Whether session `id` started at or after `started` (its id starts with its UTC start time,
/// to the second).
pub fn session_of_run(id: &str, started: DateTime<Utc>) -> bool {
    let Some(stamp) = id.get(..16) else {
        return false;
    };
    match chrono::NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%SZ") {
        Ok(t) => t.and_utc().timestamp() >= started.timestamp(),
        Err(_) => false,
    }
}

/// `1:02:03`, `2:03`: an elapsed time.
pub fn clock(secs: u64) -> String {
    match (secs / 3600, secs / 60 % 60, secs % 60) {
        (0, m, s) => format!("{m}:{s:02}"),
        (h, m, s) => format!("{h}:{m:02}:{s:02}"),
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
