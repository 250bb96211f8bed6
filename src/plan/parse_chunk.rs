//! Reading one chunk: kept as the file's text when that is what runner writes (the fast way),
//! else read into values; the same rules either way.

use std::fmt;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::Attempt;
use super::checks::{check_id, kind, short};
use super::model::{Chunk, spell_status};
use super::{Status, canonical, fields, verification};

/// A chunk's id: `id`, else Auto-Claude's alias `subtask_id`, trimmed, when `id` is missing,
/// null or blank (as its `normalize_subtask_aliases` does). The file keeps whichever key it had.
fn read_chunk_id(
    at: &dyn fmt::Display,
    raw: &Map<String, Value>,
    problems: &mut Vec<String>,
) -> Option<String> {
    let blank = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.trim().is_empty(),
        Some(_) => false,
    };
    let key = if blank(raw.get("id")) && !blank(raw.get("subtask_id")) {
        "subtask_id"
    } else {
        "id"
    };
    let id = match raw.get(key) {
        // Auto-Claude strips `subtask_id` when it copies it into `id`; `id` it takes as is.
        Some(Value::String(s)) if key == "subtask_id" => s.trim().to_string(),
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        None => {
            problems.push(format!(
                "{at}.id: missing (every chunk needs an id); Auto-Claude's \"subtask_id\" is read too"
            ));
            return None;
        }
        Some(other) => {
            problems.push(format!(
                "{at}.{key}: expected a non-empty string, found {}",
                kind(other)
            ));
            return None;
        }
    };
    let mut own = Vec::new();
    check_id(&format_args!("{at}.{key}"), "chunk", &id, &mut own);
    if !own.is_empty() {
        problems.append(&mut own);
        return None;
    }
    Some(id)
}

/// A chunk as problems name it, `<path> (<id>)`; formatted only when there is a problem (a plan
/// has tens of thousands of chunks, and no problem, most of the time).
struct ChunkAt<'a> {
    path: &'a dyn fmt::Display,
    id: &'a str,
}

impl fmt::Display for ChunkAt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.path, short(self.id, 60))
    }
}

/// Two lists of JSON texts with the same meaning: the same text (the usual case, each list as
/// Auto-Claude or runner wrote it), else the same values.
pub(super) fn same_json(a: &[&RawValue], b: &[&RawValue]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.iter().zip(b).all(|(x, y)| x.get() == y.get()) {
        return true;
    }
    let values = |list: &[&RawValue]| -> Option<Vec<Value>> {
        list.iter()
            .map(|t| serde_json::from_str(t.get()).ok())
            .collect()
    };
    matches!((values(a), values(b)), (Some(x), Some(y)) if x == y)
}

/// One chunk, `depth` levels down in the file. Text that is exactly what runner writes is kept
/// as text, with the fields runner checks read from it; anything else is read into values.
/// Both ways check the same rules and say the same problems.
pub(super) fn read_chunk(
    at: &dyn fmt::Display,
    text: &RawValue,
    depth: usize,
    problems: &mut Vec<String>,
) -> Option<Chunk> {
    if canonical::is_canonical(text.get(), depth)
        && let Some(fields) = fields::chunk_probe(text)
    {
        let (id, status) = check_chunk(at, &fields, true, problems)?;
        let mut chunk = Chunk::from_text(text.to_owned(), id, status);
        // Write the canonical spelling back so that a save normalises synonyms.
        if fields
            .get("status")
            .is_some_and(|s| s.as_str() != Some(status.as_str()))
        {
            chunk.spell_status();
        }
        return Some(chunk);
    }
    let value = match serde_json::from_str(text.get()) {
        Ok(value) => value,
        Err(e) => {
            problems.push(format!("{at}: not valid JSON: {e}"));
            return None;
        }
    };
    let Value::Object(mut raw) = value else {
        problems.push(format!("{at}: expected an object, found {}", kind(&value)));
        return None;
    };
    let attempts_read = raw
        .get("attempts")
        .is_none_or(|a| Attempt::list_from_value(a).is_some());
    let (id, status) = check_chunk(at, &raw, attempts_read, problems)?;
    // Write the canonical spelling back so that a save normalises synonyms.
    if raw.contains_key("status") {
        spell_status(&mut raw, status);
    }
    Some(Chunk::from_map(raw, id, status))
}

/// The rules of one chunk, on its fields (all of them, or those `fields::chunk_probe` reads):
/// its id and status, or `None` when they do not read.
fn check_chunk(
    at: &dyn fmt::Display,
    raw: &Map<String, Value>,
    attempts_read: bool,
    problems: &mut Vec<String>,
) -> Option<(String, Status)> {
    let id = read_chunk_id(at, raw, problems)?;
    let at = ChunkAt { path: at, id: &id };
    let has_text = |k: &str| matches!(raw.get(k), Some(Value::String(s)) if !s.trim().is_empty());
    if !has_text("description") && !has_text("title") {
        problems.push(format!(
            "{at}: missing \"description\" (or \"title\"): say what the chunk builds"
        ));
    }
    let status = match raw.get("status") {
        None | Some(Value::Null) => Status::Pending,
        Some(Value::String(s)) => match Status::parse(s) {
            Some(status) => status,
            None => {
                problems.push(format!(
                    "{at}.status: unknown status {s:?} (expected one of pending, in_progress, completed, failed, blocked, or a synonym such as not_started, todo, done)"
                ));
                return None;
            }
        },
        Some(other) => {
            problems.push(format!(
                "{at}.status: expected a string, found {}",
                kind(other)
            ));
            return None;
        }
    };
    if !attempts_read {
        problems.push(format!(
            "{at}.attempts: runner keeps its attempt records here; expected a list of objects with a number \"n\""
        ));
    }
    if let Some(v) = raw.get("verification") {
        verification::check(&format_args!("{at}.verification"), v, problems);
    }
    Some((id, status))
}
