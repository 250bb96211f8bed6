//! The journal's events, typed: one variant per kind of line, named by its `event` field, with
//! the field names the journal has always used (old journals read as they are). Every field
//! has a default on read, so a line a person wrote by hand with fewer fields still counts; a
//! line whose `event` this runner does not know (a newer runner's, a hand-written one) reads as
//! [`Event::Unknown`]: kept in the file, skipped by every reader.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::policy::transition::StatusChange;

/// One journal line's event (without `time` and `run_id`, which the journal adds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    // A chunk's life.
    ChunkStatus(ChunkStatus),
    ChunkReport(ChunkReport),
    AttemptFailed(AttemptFailed),
    Commit(Commit),
    Verification(Verification),
    RecoveryDecision(RecoveryDecision),
    // Runs and sessions.
    RunStart(RunStart),
    RunEnd(RunEnd),
    SessionStart(Session),
    SessionEnd(SessionEnd),
    ResumeFailed(ResumeFailed),
    ProcessStarted(Process),
    ProcessEnded(Process),
    LeftoversKilled(LeftoversKilled),
    Recovered(Recovered),
    // The plan.
    PlanSnapshot(PlanSnapshot),
    PlanReset(Empty),
    PlanAccepted(PlanAccepted),
    PlanRejected(PlanRejected),
    PlanSetAside(PlanSetAside),
    PlanRestored(PlanRestored),
    PlanEditUndone(PlanEditUndone),
    // The branch and the worktree.
    HistoryRewritten(HistoryRewritten),
    WorktreeUnopenable(WorktreeUnopenable),
    BaseRepinned(BaseRepinned),
    BranchCreated(BranchCreated),
    SlotCreated(SlotCreated),
    SlotCreationFinished(SlotCreationFinished),
    SlotPruned(SlotPruned),
    SlotRepaired(SlotRepaired),
    SlotSaved(SlotSaved),
    SlotSwitched(SlotSwitched),
    SlotSwitchFinished(SlotSwitchFinished),
    // Landing or throwing away the work.
    Merged(Merged),
    Discarded(Discarded),
    Undone(Undone),
    LifecycleRolledBack(LifecycleRolledBack),
    /// An event this runner does not know.
    #[serde(other)]
    Unknown,
}

impl Event {
    /// The chunk the event is about, if any.
    pub fn chunk(&self) -> Option<&str> {
        let id = match self {
            Event::ChunkStatus(e) => &e.chunk,
            Event::ChunkReport(e) => &e.chunk,
            Event::AttemptFailed(e) => &e.chunk,
            Event::Commit(e) => &e.chunk,
            Event::Verification(e) => &e.chunk,
            Event::RecoveryDecision(e) => &e.chunk,
            Event::SessionStart(e) => return e.chunk.as_deref(),
            Event::SessionEnd(e) => return e.start.chunk.as_deref(),
            Event::ResumeFailed(e) => &e.chunk,
            Event::PlanEditUndone(e) => return e.chunk.as_deref(),
            Event::HistoryRewritten(e) => return e.chunk.as_deref(),
            Event::WorktreeUnopenable(e) => return e.chunk.as_deref(),
            _ => return None,
        };
        Some(id)
    }
}

fn none<T>(v: &Option<T>) -> bool {
    v.is_none()
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Empty {}

/// A status change, as [`crate::policy::transition::transition`] yields it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkStatus {
    #[serde(default)]
    pub chunk: String,
    #[serde(flatten)]
    pub change: StatusChange,
}

/// `runner chunk done|fail`: by the agent of `session_id`, or by a person (`None`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ChunkReport {
    pub chunk: String,
    pub report: String,
    pub text: Option<String>,
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AttemptFailed {
    pub chunk: String,
    pub attempt: u32,
    pub session_id: String,
    pub reason: String,
    pub log: PathBuf,
    pub failed_attempts: u32,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Commit {
    pub chunk: String,
    pub commit: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Verification {
    pub chunk: String,
    pub command: String,
    pub passed: bool,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RecoveryDecision {
    pub chunk: String,
    pub decision: String,
    pub reason: String,
    pub source: String,
    pub saved_ref: Option<String>,
    #[serde(skip_serializing_if = "none")]
    pub commit: Option<String>,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunStart {
    pub spec: String,
    pub pid: u32,
    pub slot: String,
    pub base_branch: String,
    pub auto_continue: bool,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunEnd {
    pub outcome: String,
    pub sessions: u32,
}

/// A session's start; its end adds how it ended.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Session {
    #[serde(skip_serializing_if = "none")]
    pub chunk: Option<String>,
    pub role: String,
    pub attempt: u32,
    pub session_id: String,
    pub start_commit: Option<String>,
    #[serde(skip_serializing_if = "none")]
    pub command: Option<Vec<String>>,
    /// The agent preset that ran the session (`claude`, …, `command`).
    #[serde(skip_serializing_if = "none")]
    pub preset: Option<String>,
    /// The agent's own session id, when runner chose it (claude's `--session-id`) or resumed it.
    #[serde(skip_serializing_if = "none")]
    pub agent_session_id: Option<String>,
    /// `true` when the session continues the agent's own session `agent_session_id`
    /// (`agent.resume_sessions`); absent for a fresh one.
    #[serde(skip_serializing_if = "none")]
    pub resumed: Option<bool>,
}

/// A resumed agent session failed at once (`policy::reattach::failed_at_once`): the same attempt
/// goes on with a fresh session (`fresh_session_id`) and the full prompt; not a failed attempt.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ResumeFailed {
    pub chunk: String,
    pub attempt: u32,
    /// runner's session that tried the resume, and the agent session it asked for.
    pub session_id: String,
    pub agent_session_id: String,
    pub reason: String,
    pub fresh_session_id: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionEnd {
    #[serde(flatten)]
    pub start: Session,
    pub exit_status: Option<i32>,
    pub signal: Option<i32>,
    pub ended: String,
    pub duration_ms: u64,
    pub pgid: Option<i32>,
    /// What the agent said about the session in its output (its preset's parser); absent for
    /// the generic `command` preset, which says nothing runner reads.
    #[serde(skip_serializing_if = "none")]
    pub report: Option<Box<crate::plan::session_facts::SessionFacts>>,
}

/// An agent's (or a check's) process group, started or ended.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Process {
    pub pgid: Option<i32>,
    pub session_id: String,
    #[serde(skip_serializing_if = "none")]
    pub role: Option<String>,
    #[serde(skip_serializing_if = "none")]
    pub why: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LeftoversKilled {
    pub session_id: String,
    pub processes: u64,
}

/// What recovery did (its actions as `runner recover --json` shows them).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Recovered {
    pub outcome: String,
    pub actions: Value,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanSnapshot {
    pub plan: Value,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanAccepted {
    pub session_id: String,
    pub phases: usize,
    pub chunks: usize,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanRejected {
    pub session_id: String,
    pub attempt: u32,
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanSetAside {
    pub path: PathBuf,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanRestored {
    pub source: Option<String>,
    #[serde(skip_serializing_if = "none")]
    pub broken_copy: Option<PathBuf>,
    #[serde(skip_serializing_if = "none")]
    pub problems: Option<Vec<String>>,
    #[serde(skip_serializing_if = "none")]
    pub why: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanEditUndone {
    #[serde(skip_serializing_if = "none")]
    pub chunk: Option<String>,
    #[serde(skip_serializing_if = "none")]
    pub session_id: Option<String>,
    pub undone: Vec<String>,
    #[serde(skip_serializing_if = "none")]
    pub why: Option<String>,
}

/// A completed chunk's commit missing from the branch.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MissingCommit {
    pub chunk: String,
    pub commit: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct HistoryRewritten {
    #[serde(skip_serializing_if = "none")]
    pub chunk: Option<String>,
    pub missing: Vec<MissingCommit>,
    pub start_lost: Option<String>,
    pub branch_gone: bool,
    pub saved_ref: Option<String>,
    pub rewritten_ref: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct WorktreeUnopenable {
    #[serde(skip_serializing_if = "none")]
    pub chunk: Option<String>,
    pub worktree: PathBuf,
    pub why: String,
    pub saved_ref: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BaseRepinned {
    pub from: String,
    pub to: String,
    #[serde(skip_serializing_if = "none")]
    pub why: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BranchCreated {
    pub branch: String,
    pub at: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SlotCreated {
    pub slot: String,
    pub branch: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SlotCreationFinished {
    pub slot: String,
    pub what: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SlotPruned {
    pub slot: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SlotRepaired {
    pub slot: String,
    pub repair: String,
}

/// Uncommitted work of a slot kept under a ref before the slot changed hands.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SlotSaved {
    pub slot: String,
    #[serde(skip_serializing_if = "none")]
    pub spec: Option<String>,
    #[serde(rename = "ref")]
    pub saved_ref: String,
    #[serde(skip_serializing_if = "none")]
    pub paths: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SlotSwitched {
    pub slot: String,
    pub from: Option<String>,
    pub to: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SlotSwitchFinished {
    pub slot: String,
    pub to: String,
}

/// The spec's branch landed on `into` (`runner merge`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Merged {
    pub into: String,
    pub mode: String,
    pub commit: Option<String>,
    pub backup: String,
    pub cleaned_up: bool,
    /// Where changes made in the slot after the merge began were saved.
    pub late_changes: Option<String>,
}

/// The spec's work was thrown away (`runner discard`); `backup` can bring it back.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Discarded {
    pub backup: String,
    pub branch_tip: Option<String>,
    pub late_changes: Option<String>,
}

/// A merge or discard was undone from its backup (`runner undo`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Undone {
    pub kind: String,
    pub backup: String,
    /// The branch brought back, if the undo restored one.
    pub restored_branch: Option<String>,
    /// The target reset to where it was, if the undo moved it.
    pub reset_target: Option<String>,
}

/// A merge, discard or undo cut off half-way was rolled back by recovery.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LifecycleRolledBack {
    pub op: String,
    pub backup: String,
    pub saved: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Status;

    #[test]
    fn a_status_line_reads_back_with_todays_field_names() {
        let line = r#"{"event":"chunk_status","chunk":"c1","from":"in_progress","to":"pending","why":"interrupted","reason":"r"}"#;
        let Event::ChunkStatus(e) = serde_json::from_str(line).unwrap() else {
            panic!("not a status line");
        };
        assert_eq!(e.chunk, "c1");
        assert_eq!(
            (e.change.from, e.change.to),
            (Status::InProgress, Status::Pending)
        );
        assert_eq!(e.change.why.as_deref(), Some("interrupted"));
        let back = serde_json::to_value(Event::ChunkStatus(e)).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(line).unwrap());
    }

    #[test]
    fn the_lifecycle_lines_read_back_typed_with_their_field_names() {
        let lines = [
            r#"{"event":"merged","into":"main","mode":"squash","commit":"abc","backup":"refs/auto-claude/backup/x","cleaned_up":true,"late_changes":null}"#,
            r#"{"event":"discarded","backup":"refs/b","branch_tip":"def","late_changes":"refs/s"}"#,
            r#"{"event":"undone","kind":"merge","backup":"refs/b","restored_branch":"auto-claude/001","reset_target":null}"#,
            r#"{"event":"lifecycle_rolled_back","op":"merge","backup":"refs/b","saved":null}"#,
        ];
        for line in lines {
            let event: Event = serde_json::from_str(line).unwrap();
            assert!(!matches!(event, Event::Unknown), "{line}");
            let back = serde_json::to_value(&event).unwrap();
            assert_eq!(back, serde_json::from_str::<Value>(line).unwrap(), "{line}");
        }
        let merged: Event = serde_json::from_str(lines[0]).unwrap();
        assert!(matches!(merged, Event::Merged(m) if m.cleaned_up && m.into == "main"));
    }

    #[test]
    fn an_unknown_event_reads_as_unknown() {
        let e: Event = serde_json::from_str(r#"{"event":"from_the_future","x":[1]}"#).unwrap();
        assert_eq!(e, Event::Unknown);
    }

    #[test]
    fn a_hand_written_line_with_few_fields_still_counts() {
        let e: Event = serde_json::from_str(r#"{"event":"run_start"}"#).unwrap();
        assert!(matches!(e, Event::RunStart(_)));
    }
}
