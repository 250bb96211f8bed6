//! The plan as runner sees it: a typed view over the JSON that keeps every byte of meaning.
//!
//! Each level keeps its whole JSON object (`raw`) in file order. The typed fields are read from
//! it, and every change runner makes is written through to it, so fields runner does not know
//! (Auto-Claude's `qa_signoff`, `recoveryNote`, an agent's own notes …) survive a load → save
//! round trip untouched, in their original position.

use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::Status;
use super::attempt::Attempt;

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
    /// Shared by the copies of the plan (a run copies its plan several times a chunk): a copy
    /// costs a count per phase, and a change copies the chunk list of its phase only
    /// (`Plan::chunk_mut`).
    pub chunks: Arc<Vec<Chunk>>,
}

/// One chunk. Its JSON is kept as the file's text while runner has not changed it (most
/// chunks of a long plan, on every load): read, validated and written back without a tree of
/// values (see `canonical`). Its fields are parsed on first use; a change turns it into a map.
#[derive(Debug, Clone)]
pub struct Chunk {
    body: Body,
    pub id: String,
    pub status: Status,
}

#[derive(Debug, Clone)]
enum Body {
    /// The chunk's text exactly as runner writes it at its place in the file, so that it is
    /// written back verbatim; shared by the copies of the plan (a run copies its plan several
    /// times a chunk), so a copy costs a count, not the text.
    Text(Arc<ChunkText>),
    Map(Map<String, Value>),
}

#[derive(Debug)]
struct ChunkText {
    text: Box<RawValue>,
    /// Its fields, parsed on first read, once for every copy.
    fields: OnceLock<Map<String, Value>>,
}

impl PartialEq for Chunk {
    fn eq(&self, other: &Chunk) -> bool {
        if self.id != other.id || self.status != other.status {
            return false;
        }
        match (&self.body, &other.body) {
            (Body::Text(a), Body::Text(b)) if a.text.get() == b.text.get() => true,
            _ => self.raw() == other.raw(),
        }
    }
}

impl Serialize for Chunk {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.body {
            Body::Text(body) => body.text.serialize(s),
            Body::Map(map) => map.serialize(s),
        }
    }
}

const COMMIT_PREFIX: &str = "auto-claude: ";

/// The chunk id in an `auto-claude: <chunk-id> - <description>` commit subject, when the
/// plan is not at hand: up to the first ` - `, which is wrong for an id holding one. With a
/// plan, use `Plan::chunk_of_commit`.
pub fn chunk_id_of_commit(subject: &str) -> Option<&str> {
    let (id, _) = subject.strip_prefix(COMMIT_PREFIX)?.split_once(" - ")?;
    Some(id)
}

/// Which of `chunks` landed in the commit with `message`. A subject `auto-claude: <id> - <desc>`
/// cannot be split by itself when an id or a description holds ` - ` (`x - y - z` is chunk `x`
/// or chunk `x - y`), so the plan's own ids are matched: the chunk whose id the subject starts
/// with, if only one does; else the one of those whose whole commit message is the commit's;
/// else none — never a guess, since the caller marks the chunk completed.
pub fn chunk_of_commit<'a>(
    chunks: impl IntoIterator<Item = &'a Chunk>,
    message: &str,
) -> Option<&'a Chunk> {
    let rest = message.strip_prefix(COMMIT_PREFIX)?;
    let candidates: Vec<&Chunk> = chunks
        .into_iter()
        .filter(|c| {
            rest.strip_prefix(c.id.as_str())
                .is_some_and(|after| after.starts_with(" - "))
        })
        .collect();
    if let [only] = candidates.as_slice() {
        return Some(only);
    }
    let message = message.trim_end();
    let mut exact = candidates
        .into_iter()
        .filter(|c| c.commit_message().trim_end() == message);
    match (exact.next(), exact.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// Where a chunk sits in the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChunkPos {
    pub phase: usize,
    pub chunk: usize,
}

impl Plan {
    pub fn chunk(&self, pos: ChunkPos) -> &Chunk {
        &self.phases[pos.phase].chunks[pos.chunk]
    }

    pub fn chunk_mut(&mut self, pos: ChunkPos) -> &mut Chunk {
        &mut Arc::make_mut(&mut self.phases[pos.phase].chunks)[pos.chunk]
    }

    /// The chunk that landed in the commit with `message` (see `chunk_of_commit`).
    pub fn chunk_of_commit(&self, message: &str) -> Option<ChunkPos> {
        let chunks = self.positions().map(|pos| self.chunk(pos));
        let id = &chunk_of_commit(chunks, message)?.id;
        self.find_chunk(id)
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

    /// About how many bytes `plan_to_bytes` writes (a little more, as a rule): chunks kept as
    /// text count their length, others a guess.
    pub fn size_hint(&self) -> usize {
        let chunks: usize = self
            .chunks()
            .map(|c| match &c.body {
                Body::Text(body) => body.text.get().len() + 16,
                Body::Map(_) => 1024,
            })
            .sum();
        chunks + chunks / 16 + 64 * 1024
    }

    /// Do the two plans say the same thing — `a.to_value() == b.to_value()` (JSON equality, which
    /// ignores key order) — without building the values: chunks still the file's text compare
    /// as text first.
    pub fn same_json(&self, other: &Plan) -> bool {
        let same_phase = |a: &Phase, b: &Phase| {
            a.raw == b.raw
                && a.holds_chunks("subtasks") == b.holds_chunks("subtasks")
                && a.holds_chunks("chunks") == b.holds_chunks("chunks")
                && (Arc::ptr_eq(&a.chunks, &b.chunks)
                    || a.chunks.len() == b.chunks.len()
                        && a.chunks
                            .iter()
                            .zip(b.chunks.iter())
                            .all(|(x, y)| x.same_json(y)))
        };
        self.shape == other.shape
            && self.raw == other.raw
            && self.phases.len() == other.phases.len()
            && self
                .phases
                .iter()
                .zip(&other.phases)
                .all(|(a, b)| same_phase(a, b))
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
    /// A chunk from its fields (already checked).
    pub fn from_map(raw: Map<String, Value>, id: String, status: Status) -> Chunk {
        Chunk {
            body: Body::Map(raw),
            id,
            status,
        }
    }

    /// A chunk from its text in the file, which `canonical::is_canonical` accepted at the
    /// chunk's place and which `parse` checked.
    pub(super) fn from_text(text: Box<RawValue>, id: String, status: Status) -> Chunk {
        Chunk {
            body: Body::Text(Arc::new(ChunkText {
                text,
                fields: OnceLock::new(),
            })),
            id,
            status,
        }
    }

    /// The chunk's JSON object, field order as in the file.
    pub fn raw(&self) -> &Map<String, Value> {
        match &self.body {
            Body::Map(map) => map,
            Body::Text(body) => body.fields.get_or_init(|| fields_of(&body.text)),
        }
    }

    /// The chunk's JSON object, to change: from now on it is written from the fields.
    pub fn raw_mut(&mut self) -> &mut Map<String, Value> {
        if let Body::Text(body) = &mut self.body {
            let map = match Arc::get_mut(body) {
                Some(own) => own.fields.take(),
                None => body.fields.get().cloned(),
            }
            .unwrap_or_else(|| fields_of(&body.text));
            self.body = Body::Map(map);
        }
        match &mut self.body {
            Body::Map(map) => map,
            // Made a map just above.
            Body::Text(..) => unreachable!("the chunk's body was made a map"),
        }
    }

    /// The same JSON (equal as values, key order aside): the same text, else the same fields.
    pub fn same_json(&self, other: &Chunk) -> bool {
        match (&self.body, &other.body) {
            (Body::Text(a), Body::Text(b)) if a.text.get() == b.text.get() => true,
            _ => self.raw() == other.raw(),
        }
    }

    /// Is this the very text of `other` (a copy of the same chunk, unchanged since)? Cheap: a
    /// pointer comparison; `false` for chunks held as fields.
    pub fn shares_text_with(&self, other: &Chunk) -> bool {
        matches!((&self.body, &other.body), (Body::Text(a), Body::Text(b)) if Arc::ptr_eq(a, b))
    }

    /// The chunk's text as written in the file, while it is kept as text.
    pub(super) fn text(&self) -> Option<&str> {
        match &self.body {
            Body::Text(body) => Some(body.text.get()),
            Body::Map(_) => None,
        }
    }

    /// Is the chunk still the file's text (nothing changed, nothing to re-serialise)?
    pub fn is_verbatim(&self) -> bool {
        matches!(self.body, Body::Text(..))
    }

    /// `description`, else `title`, else the id.
    pub fn description(&self) -> &str {
        let text = |key| self.str_field(key).filter(|s| !s.trim().is_empty());
        text("description")
            .or_else(|| text("title"))
            .unwrap_or(&self.id)
    }

    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.raw().get(key).and_then(Value::as_str)
    }

    /// Write the status read (`self.status`) in its canonical spelling, for a file that has a
    /// synonym or null: no change of value, so not a transition.
    pub(super) fn spell_status(&mut self) {
        let status = self.status;
        spell_status(self.raw_mut(), status);
    }

    /// Set the status. `completed_at` belongs to completed chunks only: any other status
    /// clears it, as Auto-Claude's `fail()` and `start()` do.
    pub fn set_status(&mut self, status: Status) {
        self.status = status;
        self.raw_mut()
            .insert("status".into(), Value::String(status.as_str().into()));
        if status != Status::Completed {
            self.remove("completed_at");
        }
    }

    pub fn set_str(&mut self, key: &str, value: &str) {
        self.raw_mut()
            .insert(key.into(), Value::String(value.into()));
    }

    pub fn remove(&mut self, key: &str) {
        // Nothing to change (and no reason to leave the file's text) if the key is absent.
        if self.raw().contains_key(key) {
            // shift_remove keeps the order of the remaining fields.
            self.raw_mut().shift_remove(key);
        }
    }

    /// runner's attempt records. Validation guarantees they parse.
    pub fn attempts(&self) -> Vec<Attempt> {
        self.raw()
            .get("attempts")
            .and_then(Attempt::list_from_value)
            .unwrap_or_default()
    }

    /// Write the attempt records. Each one is written over the record at its place in the file
    /// when that has the same `n`, so that what runner did not change stays as it was.
    pub fn set_attempts(&mut self, attempts: &[Attempt]) {
        let mut old = match self.raw_mut().get_mut("attempts") {
            Some(Value::Array(items)) => std::mem::take(items),
            _ => Vec::new(),
        }
        .into_iter();
        let list = attempts
            .iter()
            .map(|attempt| {
                let base = match old.next() {
                    Some(Value::Object(record))
                        if record.get("n").and_then(Value::as_u64) == Some(attempt.n.into()) =>
                    {
                        record
                    }
                    _ => Map::new(),
                };
                Value::Object(attempt.write_over(base))
            })
            .collect();
        self.raw_mut().insert("attempts".into(), Value::Array(list));
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

    /// Close the chunk's open attempt (if any) with `outcome` and `reason`. An attempt that
    /// already has an outcome keeps it. (The status is `policy::transition`'s to change.)
    pub fn close_open_attempt(&mut self, outcome: &str, reason: &str, now: &str) {
        self.update_last_attempt(|a| {
            if a.outcome.is_none() {
                a.outcome = Some(outcome.to_string());
                a.reason = Some(reason.to_string());
                a.ended_at = Some(now.to_string());
            }
        });
    }

    /// The subject of the commit that lands this chunk: `auto-claude: <id> - <description>`.
    /// Recovery and review read chunk ids back from it (`chunk_id_of_commit`).
    pub fn commit_message(&self) -> String {
        format!("{COMMIT_PREFIX}{} - {}", self.id, self.description())
    }

    /// A list-of-strings field such as `files_to_modify`. Auto-Claude sometimes wrote a single
    /// string instead of a list; both are read.
    pub fn list_field(&self, key: &str) -> Vec<String> {
        match self.raw().get(key) {
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

/// The fields of a chunk's text. The text was parsed as an object when the plan was read, with
/// its nesting under serde_json's limit (`canonical` refuses deeper), so this does not fail.
fn fields_of(text: &RawValue) -> Map<String, Value> {
    serde_json::from_str(text.get()).unwrap_or_default()
}

/// `raw`'s status in canonical spelling (the parser's normalisation of a status it read).
pub(super) fn spell_status(raw: &mut Map<String, Value>, status: Status) {
    raw.insert("status".into(), Value::String(status.as_str().into()));
}
