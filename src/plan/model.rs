//! The plan as runner sees it: a typed view over the JSON that keeps every byte of meaning.
//!
//! Each level keeps its whole JSON object (`raw`) in file order. The typed fields are read from
//! it, and every change runner makes is written through to it, so fields runner does not know
//! (Auto-Claude's `qa_signoff`, `recoveryNote`, an agent's own notes …) survive a load → save
//! round trip untouched, in their original position.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Status;

/// How a phase is named: the subtasks era used string `id`s, the chunks era numeric `phase`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PhaseKey {
    pub id: Option<String>,
    pub number: Option<i64>,
}

/// One entry of a phase's `depends_on`, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhaseRef {
    Name(String),
    Number(i64),
}

impl PhaseRef {
    /// Does this reference name the phase with `key`? A number matches `phase: N` or `id: "N"`,
    /// a string matches `id` or the decimal form of `phase`.
    pub fn matches(&self, key: &PhaseKey) -> bool {
        match self {
            PhaseRef::Name(s) => {
                key.id.as_deref() == Some(s.as_str())
                    || key.number.is_some_and(|n| n.to_string() == *s)
            }
            PhaseRef::Number(n) => {
                key.number == Some(*n) || key.id.as_deref() == Some(n.to_string().as_str())
            }
        }
    }
}

impl std::fmt::Display for PhaseRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PhaseRef::Name(s) => write!(f, "{s:?}"),
            PhaseRef::Number(n) => write!(f, "{n}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// The whole top-level object; `phases` in it (or, for `PlanShape::TopLevelChunks`, the
    /// chunk lists) is stale and rebuilt on save.
    pub raw: Map<String, Value>,
    pub phases: Vec<Phase>,
    pub shape: PlanShape,
    /// What the file has that runner reads but Auto-Claude would not have written so (a phase
    /// whose `subtasks` and `chunks` differ): one line each, with the JSON paths. Never saved.
    pub warnings: Vec<String>,
}

/// Where the file keeps its chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlanShape {
    /// In `phases[].subtasks` / `phases[].chunks`: every plan a planner writes.
    #[default]
    Phases,
    /// In a top-level `subtasks` (or `chunks`) list and no `phases`, as Auto-Claude's QA fixes
    /// write it. It reads as one phase (`phases[0]`, with an empty `raw`) and is written back
    /// in the same shape.
    TopLevelChunks,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub raw: Map<String, Value>,
    pub key: PhaseKey,
    pub depends_on: Vec<PhaseRef>,
    /// `"chunks"` or `"subtasks"`, whichever the file used (with both, the one read:
    /// `"subtasks"` unless it was empty and `chunks` was not); `None` if it had neither.
    pub chunks_key: Option<&'static str>,
    /// Current Auto-Claude writes every phase with both lists, equal: the second key, written
    /// back with the same chunks so that the two stay equal.
    pub mirror_key: Option<&'static str>,
    pub chunks: Vec<Chunk>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub raw: Map<String, Value>,
    pub id: String,
    pub status: Status,
}

// Serialisation streams each level's `raw` map and puts the typed children in place of the
// stale `phases` / `chunks` entries, without copying the plan first.
impl Serialize for Plan {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.raw.len()))?;
        // The one implicit phase of a top-level chunk list writes its chunks back there.
        let top_level = match self.shape {
            PlanShape::TopLevelChunks => self.phases.first(),
            PlanShape::Phases => None,
        };
        for (key, value) in &self.raw {
            match top_level {
                Some(phase) if phase.holds_chunks(key) => {
                    map.serialize_entry(key, &phase.chunks)?
                }
                None if key == "phases" => map.serialize_entry(key, &self.phases)?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

impl Serialize for Phase {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.raw.len()))?;
        for (key, value) in &self.raw {
            if self.holds_chunks(key) {
                map.serialize_entry(key, &self.chunks)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

impl Serialize for Chunk {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

/// One try at a chunk, recorded by runner in the chunk's `attempts` list.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Attempt {
    pub n: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// The worktree's HEAD when the attempt began: recovery compares it with the real state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// What the agent said through `runner chunk done|fail`: `"done"` or `"fail"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_notes: Option<String>,
    /// runner's verdict: `completed`, `failed`, `interrupted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Fields a later runner (or a person) added: kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

const COMMIT_PREFIX: &str = "auto-claude: ";

/// The chunk id in an `auto-claude: <chunk-id> - <description>` commit subject.
pub fn chunk_id_of_commit(subject: &str) -> Option<&str> {
    let (id, _) = subject.strip_prefix(COMMIT_PREFIX)?.split_once(" - ")?;
    Some(id)
}

/// Where a chunk sits in the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPos {
    pub phase: usize,
    pub chunk: usize,
}

impl Plan {
    pub fn chunk(&self, pos: ChunkPos) -> &Chunk {
        &self.phases[pos.phase].chunks[pos.chunk]
    }

    pub fn chunk_mut(&mut self, pos: ChunkPos) -> &mut Chunk {
        &mut self.phases[pos.phase].chunks[pos.chunk]
    }

    pub fn find_chunk(&self, id: &str) -> Option<ChunkPos> {
        self.positions().find(|&pos| self.chunk(pos).id == id)
    }

    /// Every chunk position in file order.
    pub fn positions(&self) -> impl Iterator<Item = ChunkPos> + '_ {
        self.phases.iter().enumerate().flat_map(|(p, phase)| {
            (0..phase.chunks.len()).map(move |c| ChunkPos { phase: p, chunk: c })
        })
    }

    pub fn chunks(&self) -> impl Iterator<Item = &Chunk> {
        self.phases.iter().flat_map(|p| p.chunks.iter())
    }

    pub fn count(&self, status: Status) -> usize {
        self.chunks().filter(|c| c.status == status).count()
    }

    pub fn total(&self) -> usize {
        self.chunks().count()
    }

    /// A top-level string field, e.g. `base_branch` or `feature`.
    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.raw.get(key).and_then(Value::as_str)
    }

    pub fn set_field(&mut self, key: &str, value: Value) {
        self.raw.insert(key.to_string(), value);
    }

    /// Back to JSON, in the original field order, with runner's changes written in.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Phase {
    /// A short human name: `phase-1-types`, `phase 2`, or the position.
    pub fn label(&self, index: usize) -> String {
        match (&self.key.id, self.key.number) {
            (Some(id), _) => id.clone(),
            (None, Some(n)) => format!("phase {n}"),
            (None, None) => format!("phase #{}", index + 1),
        }
    }

    pub fn name(&self) -> Option<&str> {
        self.raw.get("name").and_then(Value::as_str)
    }

    pub fn is_complete(&self) -> bool {
        self.chunks.iter().all(|c| c.status == Status::Completed)
    }

    /// Is `key` one of the lists this phase's chunks are written to?
    pub fn holds_chunks(&self, key: &str) -> bool {
        self.chunks_key == Some(key) || self.mirror_key == Some(key)
    }
}

impl Chunk {
    /// `description`, else `title`, else the id.
    pub fn description(&self) -> &str {
        let text = |key| self.str_field(key).filter(|s| !s.trim().is_empty());
        text("description")
            .or_else(|| text("title"))
            .unwrap_or(&self.id)
    }

    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.raw.get(key).and_then(Value::as_str)
    }

    /// Set the status. `completed_at` belongs to completed chunks only: any other status
    /// clears it, as Auto-Claude's `fail()` and `start()` do.
    pub fn set_status(&mut self, status: Status) {
        self.status = status;
        self.raw
            .insert("status".into(), Value::String(status.as_str().into()));
        if status != Status::Completed {
            self.remove("completed_at");
        }
    }

    pub fn set_str(&mut self, key: &str, value: &str) {
        self.raw.insert(key.into(), Value::String(value.into()));
    }

    pub fn remove(&mut self, key: &str) {
        // shift_remove keeps the order of the remaining fields.
        self.raw.shift_remove(key);
    }

    /// runner's attempt records. Validation guarantees they parse.
    pub fn attempts(&self) -> Vec<Attempt> {
        self.raw
            .get("attempts")
            .and_then(|v| Vec::<Attempt>::deserialize(v).ok())
            .unwrap_or_default()
    }

    pub fn set_attempts(&mut self, attempts: &[Attempt]) {
        let value = serde_json::to_value(attempts).unwrap_or(Value::Array(Vec::new()));
        self.raw.insert("attempts".into(), value);
    }

    pub fn last_attempt(&self) -> Option<Attempt> {
        self.attempts().pop()
    }

    /// Change the most recent attempt in place; does nothing if there is none.
    pub fn update_last_attempt(&mut self, f: impl FnOnce(&mut Attempt)) {
        let mut attempts = self.attempts();
        if let Some(last) = attempts.last_mut() {
            f(last);
            self.set_attempts(&attempts);
        }
    }

    /// Put an unfinished chunk back to `pending`, closing its open attempt (if any) with
    /// `outcome` and `reason`. An attempt that already has an outcome keeps it.
    pub fn return_to_pending(&mut self, outcome: &str, reason: &str, now: &str) {
        self.update_last_attempt(|a| {
            if a.outcome.is_none() {
                a.outcome = Some(outcome.to_string());
                a.reason = Some(reason.to_string());
                a.ended_at = Some(now.to_string());
            }
        });
        self.set_status(Status::Pending);
    }

    /// The subject of the commit that lands this chunk: `auto-claude: <id> - <description>`.
    /// Recovery and review read chunk ids back from it (`chunk_id_of_commit`).
    pub fn commit_message(&self) -> String {
        format!("{COMMIT_PREFIX}{} - {}", self.id, self.description())
    }

    /// A list-of-strings field such as `files_to_modify`. Auto-Claude sometimes wrote a single
    /// string instead of a list; both are read.
    pub fn list_field(&self, key: &str) -> Vec<String> {
        match self.raw.get(key) {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
            Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
            _ => Vec::new(),
        }
    }
}
