//! Reading a plan: JSON syntax first (with line and column), then the shape of every variant
//! Auto-Claude wrote, then the rules that make a plan runnable (see `validate`).

use std::fmt;
use std::path::Path;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::checks::{Whole, check_id, kind, short, whole_number};
use super::fields::{self, Level};
use super::model::{Chunk, Phase, PhaseKey, PhaseRef, Plan, PlanShape};
use super::parse_chunk::{read_chunk, same_json};
use super::validate;

pub use crate::error::PlanError;

/// Parse and validate plan bytes read from `path` (the path is only used in messages).
///
/// The levels above the chunks are read into values; each chunk stays the file's text when
/// that text is what runner would write for it (`canonical`), so that reading and writing a
/// long plan costs little more than copying it. Other chunks are read into values, as before.
pub fn parse_plan(path: &Path, bytes: &[u8]) -> Result<Plan, PlanError> {
    // Editors on Windows may save with a byte-order mark; JSON parsers reject it.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let syntax = |e: serde_json::Error| PlanError {
        path: path.to_path_buf(),
        line: Some(e.line()),
        column: Some(e.column()),
        problems: vec![format!("not valid JSON: {e}")],
    };
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let starts_object = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    // Only a parse of the whole file into values says exactly what the old reader said about
    // bad JSON (its position, and what the quick passes let through: a lone surrogate escape,
    // read only when its level is): asked whenever the quick reading is not clean.
    let exact =
        |e: serde_json::Error| syntax(serde_json::from_slice::<Value>(bytes).err().unwrap_or(e));
    let plan = if starts_object {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let top = fields::level(&mut de, &TOP_LISTS)
            .and_then(|top| de.end().map(|()| top))
            .map_err(exact)?;
        read_plan(top, &mut problems, &mut warnings)
    } else {
        let value: Value = serde_json::from_slice(bytes).map_err(syntax)?;
        problems.push(format!(
            "the plan must be a JSON object with a \"phases\" list, found {}",
            kind(&value)
        ));
        None
    };
    // Validation speaks of phases by position, so it runs only when every phase was read.
    if let Some((plan, true)) = &plan {
        validate::check(plan, &mut problems);
    }
    let plan = plan.map(|(plan, _)| plan);
    let clean = plan.as_ref().is_some_and(|p| !nested_past_limit(p))
        && problems.is_empty()
        && warnings.is_empty();
    if !clean && let Err(e) = serde_json::from_slice::<Value>(bytes) {
        return Err(syntax(e));
    }
    match plan {
        Some(plan) if problems.is_empty() => Ok(Plan { warnings, ..plan }),
        _ => Err(PlanError {
            path: path.to_path_buf(),
            line: None,
            column: None,
            problems,
        }),
    }
}

/// serde_json refuses JSON nested deeper than this (containers, counted from the top).
const JSON_DEPTH_LIMIT: usize = 127;

/// Is a value of the plan nested deeper than serde_json reads in one parse of the file? The
/// levels are read by parses of their own text, each counting from its own start; chunks kept
/// as text are at most 100 deep (`canonical`).
fn nested_past_limit(plan: &Plan) -> bool {
    fn depth(v: &Value) -> usize {
        match v {
            Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
            Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    // Containers around a value of the top level, of a phase, around a chunk.
    let (top, phase, chunk) = match plan.shape {
        PlanShape::Phases => (1, 3, CHUNK_LEVEL + 1),
        PlanShape::TopLevelChunks => (1, 1, TOP_LEVEL_CHUNK_LEVEL + 1),
    };
    let deep = |within: usize, map: &Map<String, Value>| {
        map.values().any(|v| within + depth(v) > JSON_DEPTH_LIMIT)
    };
    deep(top, &plan.raw)
        || plan.phases.iter().any(|p| {
            deep(phase, &p.raw)
                || p.chunks
                    .iter()
                    .any(|c| !c.is_verbatim() && deep(chunk, c.raw()))
        })
}

/// The canonical bytes runner writes: two-space pretty JSON, original field order, final newline.
pub fn plan_to_bytes(plan: &Plan) -> Vec<u8> {
    // Sized up front: growing a buffer of a long plan by doubling holds it twice at once.
    let mut out = Vec::with_capacity(plan.size_hint());
    if serde_json::to_writer_pretty(&mut out, plan).is_err() {
        out.clear();
    }
    out.push(b'\n');
    out
}

/// The top-level keys whose lists are read level by level: phases, or a plan without phases.
const TOP_LISTS: [&str; 3] = ["phases", "subtasks", "chunks"];

/// How deep a chunk sits in the file, in levels of indentation: `{ "phases": [ { "subtasks":
/// [ {chunk} ] } ] }`, or `{ "subtasks": [ {chunk} ] }`.
const CHUNK_LEVEL: usize = 4;
const TOP_LEVEL_CHUNK_LEVEL: usize = 2;

/// How deep the chunks of a plan of this shape sit in the file.
pub(super) fn chunk_level(shape: PlanShape) -> usize {
    match shape {
        PlanShape::Phases => CHUNK_LEVEL,
        PlanShape::TopLevelChunks => TOP_LEVEL_CHUNK_LEVEL,
    }
}

/// The plan, and whether every phase in the file could be read.
fn read_plan(
    mut top: Level<'_>,
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Option<(Plan, bool)> {
    if !top.raw.contains_key("phases")
        && CHUNK_KEYS
            .iter()
            .any(|k| top.raw.get(*k).is_some_and(Value::is_array))
    {
        // Auto-Claude's QA fixes write a bare top-level list; it reads as one phase.
        let lists = read_chunk_lists("", &mut top, TOP_LEVEL_CHUNK_LEVEL, problems, warnings);
        let phase = Phase {
            raw: Map::new(),
            key: PhaseKey::default(),
            depends_on: Vec::new(),
            chunks_key: lists.key,
            mirror_key: lists.mirror,
            chunks: lists.chunks.into(),
        };
        let plan = Plan {
            raw: top.raw,
            phases: vec![phase],
            shape: PlanShape::TopLevelChunks,
            warnings: Vec::new(),
        };
        return Some((plan, true));
    }
    let phases = top.take_list("phases");
    // Chunk lists beside `phases` are not runner's: they stay as they are.
    if let Err(e) = top.restore_lists() {
        problems.push(format!("not valid JSON: {e}"));
        return None;
    }
    let phases = match (phases, top.raw.get_mut("phases")) {
        (Some(list), Some(slot)) => {
            *slot = Value::Null;
            match fields::items(list) {
                Ok(items) => items,
                Err(e) => {
                    problems.push(format!("phases: not valid JSON: {e}"));
                    return None;
                }
            }
        }
        (_, Some(other)) => {
            problems.push(format!("phases: expected a list, found {}", kind(other)));
            return None;
        }
        (_, None) => {
            problems.push(
                "phases: missing (expected a list of phases, or a top-level \"subtasks\" list)"
                    .into(),
            );
            return None;
        }
    };
    let in_file = phases.len();
    let phases: Vec<Phase> = phases
        .into_iter()
        .enumerate()
        .filter_map(|(i, v)| read_phase(i, v, problems, warnings))
        .collect();
    let whole = phases.len() == in_file;
    let plan = Plan {
        raw: top.raw,
        phases,
        shape: PlanShape::Phases,
        warnings: Vec::new(),
    };
    Some((plan, whole))
}

fn read_phase(
    index: usize,
    text: &RawValue,
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Option<Phase> {
    let at = format!("phases[{index}]");
    let level = match text.get().starts_with('{') {
        true => fields::level(
            &mut serde_json::Deserializer::from_str(text.get()),
            &CHUNK_KEYS,
        ),
        false => serde_json::from_str::<Value>(text.get()).and_then(|value| {
            problems.push(format!("{at}: expected an object, found {}", kind(&value)));
            Err(serde::de::Error::custom("not an object"))
        }),
    };
    let mut level = match level {
        Ok(level) => level,
        Err(e) => {
            if text.get().starts_with('{') {
                problems.push(format!("{at}: not valid JSON: {e}"));
            }
            return None;
        }
    };
    let raw = &level.raw;
    let id = match raw.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            check_id(&format_args!("{at}.id"), "phase", s, problems);
            Some(s.clone())
        }
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(other) => {
            problems.push(format!("{at}.id: expected a string, found {}", kind(other)));
            None
        }
    };
    let number = match raw.get("phase") {
        None | Some(Value::Null) => None,
        Some(value) => phase_number(&at, value, problems),
    };
    let depends_on = match raw.get("depends_on") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(j, v)| phase_ref(&format_args!("{at}.depends_on[{j}]"), v, problems))
            .collect(),
        Some(one @ (Value::String(_) | Value::Number(_))) => {
            phase_ref(&format_args!("{at}.depends_on"), one, problems)
                .into_iter()
                .collect()
        }
        Some(other) => {
            problems.push(format!(
                "{at}.depends_on: expected a list of phase ids, found {}",
                kind(other)
            ));
            Vec::new()
        }
    };
    let lists = read_chunk_lists(
        &format!("{at}."),
        &mut level,
        CHUNK_LEVEL,
        problems,
        warnings,
    );
    Some(Phase {
        raw: level.raw,
        key: PhaseKey { id, number },
        depends_on,
        chunks_key: lists.key,
        mirror_key: lists.mirror,
        chunks: lists.chunks.into(),
    })
}

/// How a phase number is named when it is out of range.
const PHASE_NUMBER: &str = "a phase number";

/// A phase's `phase`: a whole number, or a string holding one (trimmed).
fn phase_number(at: &str, value: &Value, problems: &mut Vec<String>) -> Option<i64> {
    let read = match value {
        Value::Number(n) => whole_number(&n.to_string(), PHASE_NUMBER),
        Value::String(s) => whole_number(s.trim(), PHASE_NUMBER),
        _ => Whole::Not,
    };
    match read {
        Whole::Fits(n) => return Some(n),
        Whole::OutOfRange(why) => problems.push(format!("{at}.phase: {why}")),
        Whole::Not => problems.push(format!(
            "{at}.phase: expected a whole number, found {}",
            found(value)
        )),
    }
    None
}

/// One `depends_on` entry: a phase's id (a string) or its number.
fn phase_ref(at: &dyn fmt::Display, value: &Value, problems: &mut Vec<String>) -> Option<PhaseRef> {
    let number = match value {
        Value::String(s) => return Some(PhaseRef::Name(s.clone())),
        Value::Number(n) => whole_number(&n.to_string(), PHASE_NUMBER),
        _ => Whole::Not,
    };
    match number {
        Whole::Fits(n) => return Some(PhaseRef::Number(n)),
        Whole::OutOfRange(why) => problems.push(format!("{at}: {why}")),
        Whole::Not => problems.push(format!(
            "{at}: expected a phase id or number, found {}",
            found(value)
        )),
    }
    None
}

/// A value as a problem names what was found: a number as written (cut short), else its kind.
fn found(value: &Value) -> String {
    match value {
        Value::Number(n) => short(&n.to_string(), 40),
        other => kind(other).to_string(),
    }
}

/// The two keys a level may keep its chunks under: the subtasks era's first, as Auto-Claude
/// reads it.
const CHUNK_KEYS: [&str; 2] = ["subtasks", "chunks"];

/// The chunks of one level (a phase, or a plan without phases) and where they were written.
struct ChunkLists {
    key: Option<&'static str>,
    mirror: Option<&'static str>,
    chunks: Vec<Chunk>,
}

/// Read a level's `subtasks` and/or `chunks`. Current Auto-Claude writes both, equal: then they
/// are one list, written back to both keys. Lists that differ are read as Auto-Claude reads
/// them — `subtasks`, unless it is empty and `chunks` is not (its auto-fix) — because
/// Auto-Claude's own `update_subtask_status` edits `subtasks` alone and leaves `chunks` stale.
/// The difference is reported in `warnings` (both paths, the first difference) and the next
/// write puts the read list under both keys.
/// A `null` list stays null on save and counts as no list.
fn read_chunk_lists(
    prefix: &str,
    level: &mut Level<'_>,
    depth: usize,
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> ChunkLists {
    let mut found: Vec<(&'static str, Vec<&RawValue>)> = Vec::new();
    for key in CHUNK_KEYS {
        match level.raw.get(key) {
            None | Some(Value::Null) => {}
            // A list is set aside as text (its place holds an empty list).
            Some(Value::Array(_)) => match level.take_list(key).map(fields::items) {
                Some(Ok(items)) => found.push((key, items)),
                Some(Err(e)) => problems.push(format!("{prefix}{key}: not valid JSON: {e}")),
                None => found.push((key, Vec::new())),
            },
            Some(other) => problems.push(format!(
                "{prefix}{key}: expected a list, found {}",
                kind(other)
            )),
        }
    }
    let read_list = |key: &str, items: Vec<&RawValue>, problems: &mut Vec<String>| {
        items
            .into_iter()
            .enumerate()
            .filter_map(|(j, v)| {
                read_chunk(&format_args!("{prefix}{key}[{j}]"), v, depth, problems)
            })
            .collect::<Vec<Chunk>>()
    };
    let mut found = found.into_iter();
    let Some((key, items)) = found.next() else {
        return ChunkLists {
            key: None,
            mirror: None,
            chunks: Vec::new(),
        };
    };
    let Some((mirror, other)) = found.next() else {
        let chunks = read_list(key, items, problems);
        return ChunkLists {
            key: Some(key),
            mirror: None,
            chunks,
        };
    };
    if same_json(&items, &other) {
        // The usual case: read once, so each problem is reported once.
        let chunks = read_list(key, items, problems);
        return ChunkLists {
            key: Some(key),
            mirror: Some(mirror),
            chunks,
        };
    }
    // Auto-Claude's choice: the first key (`subtasks`), unless that list is empty.
    let (key, items, mirror, other) = if items.is_empty() {
        (mirror, other, key, items)
    } else {
        (key, items, mirror, other)
    };
    let chunks = read_list(key, items, problems);
    // The other list only serves to name the difference: its own problems are not the plan's.
    let mut ignored = Vec::new();
    let others = read_list(mirror, other, &mut ignored);
    let (a_at, b_at) = (format!("{prefix}{key}"), format!("{prefix}{mirror}"));
    // Equal once read (say `"done"` in one list, `"completed"` in the other) is equal.
    if ignored.is_empty() && chunks == others {
        return ChunkLists {
            key: Some(key),
            mirror: Some(mirror),
            chunks,
        };
    }
    let difference = match ignored.first() {
        Some(problem) => format!("{b_at} does not read as chunks: {problem}"),
        None => first_difference(&a_at, &chunks, &b_at, &others),
    };
    warnings.push(format!(
        "{a_at} and {b_at} differ ({difference}); runner reads {a_at}, as Auto-Claude does, and writes it to both on its next change of the plan"
    ));
    ChunkLists {
        key: Some(key),
        mirror: Some(mirror),
        chunks,
    }
}

/// Where two chunk lists (read, statuses in canonical spelling) first differ, with both paths,
/// for the user to compare.
fn first_difference(a_at: &str, a: &[Chunk], b_at: &str, b: &[Chunk]) -> String {
    let Some(i) = (0..a.len().min(b.len())).find(|&i| a[i] != b[i]) else {
        return format!(
            "{a_at} has {}, {b_at} has {}",
            crate::text::count(a.len(), "chunk"),
            b.len()
        );
    };
    let (x, y) = (a[i].raw(), b[i].raw());
    let Some(field) = x.keys().chain(y.keys()).find(|k| x.get(*k) != y.get(*k)) else {
        return format!("{a_at}[{i}] and {b_at}[{i}] differ");
    };
    let show = |v: Option<&Value>| match v {
        None => "missing".to_string(),
        Some(v) => short(&v.to_string(), 60),
    };
    format!(
        "{a_at}[{i}].{field} is {}, {b_at}[{i}].{field} is {}",
        show(x.get(field)),
        show(y.get(field))
    )
}
