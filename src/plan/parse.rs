//! Reading a plan: JSON syntax first (with line and column), then the shape of every variant
//! Auto-Claude wrote, then the rules that make a plan runnable (see `validate`).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::model::{Attempt, Chunk, Phase, PhaseKey, PhaseRef, Plan};
use super::{Status, validate};

/// Why a plan cannot be used. Carries everything the user needs to find the problem.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanError {
    pub path: PathBuf,
    /// Set for JSON syntax errors.
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// Each problem, prefixed with its place in the plan (`phases[1].subtasks[0].status: …`).
    pub problems: Vec<String>,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid plan {}", self.path.display())?;
        if let (Some(line), Some(col)) = (self.line, self.column) {
            write!(f, ":{line}:{col}")?;
        }
        for problem in &self.problems {
            write!(f, "\n  - {problem}")?;
        }
        write!(
            f,
            "\nThe file was left untouched. Fix it by hand, or move it away to have the planner write a new one."
        )
    }
}

impl std::error::Error for PlanError {}

/// Parse and validate plan bytes read from `path` (the path is only used in messages).
pub fn parse_plan(path: &Path, bytes: &[u8]) -> Result<Plan, PlanError> {
    // Editors on Windows may save with a byte-order mark; JSON parsers reject it.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let value: Value = serde_json::from_slice(bytes).map_err(|e| PlanError {
        path: path.to_path_buf(),
        line: Some(e.line()),
        column: Some(e.column()),
        problems: vec![format!("not valid JSON: {e}")],
    })?;
    let mut problems = Vec::new();
    let plan = read_plan(value, &mut problems);
    // Validation speaks of phases by position, so it runs only when every phase was read.
    if let Some((plan, true)) = &plan {
        validate::check(plan, &mut problems);
    }
    let plan = plan.map(|(plan, _)| plan);
    match plan {
        Some(plan) if problems.is_empty() => Ok(plan),
        _ => Err(PlanError {
            path: path.to_path_buf(),
            line: None,
            column: None,
            problems,
        }),
    }
}

/// The canonical bytes runner writes: two-space pretty JSON, original field order, final newline.
pub fn plan_to_bytes(plan: &Plan) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(plan).unwrap_or_default();
    out.push(b'\n');
    out
}

/// The plan, and whether every phase in the file could be read.
fn read_plan(value: Value, problems: &mut Vec<String>) -> Option<(Plan, bool)> {
    let Value::Object(mut raw) = value else {
        problems.push(format!(
            "the plan must be a JSON object with a \"phases\" list, found {}",
            kind(&value)
        ));
        return None;
    };
    let phases = match raw.get_mut("phases").map(Value::take) {
        Some(Value::Array(items)) => items,
        Some(other) => {
            problems.push(format!("phases: expected a list, found {}", kind(&other)));
            return None;
        }
        None => {
            problems.push("phases: missing (expected a list of phases)".into());
            return None;
        }
    };
    let in_file = phases.len();
    let phases: Vec<Phase> = phases
        .into_iter()
        .enumerate()
        .filter_map(|(i, v)| read_phase(i, v, problems))
        .collect();
    let whole = phases.len() == in_file;
    Some((Plan { raw, phases }, whole))
}

fn read_phase(index: usize, value: Value, problems: &mut Vec<String>) -> Option<Phase> {
    let at = format!("phases[{index}]");
    let Value::Object(mut raw) = value else {
        problems.push(format!("{at}: expected an object, found {}", kind(&value)));
        return None;
    };
    let id = match raw.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(other) => {
            problems.push(format!("{at}.id: expected a string, found {}", kind(other)));
            None
        }
    };
    let number = match raw.get("phase") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64(),
        Some(Value::String(s)) if s.trim().parse::<i64>().is_ok() => s.trim().parse().ok(),
        Some(other) => {
            problems.push(format!(
                "{at}.phase: expected a whole number, found {}",
                kind(other)
            ));
            None
        }
    };
    let depends_on = match raw.get("depends_on") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(j, v)| match v {
                Value::String(s) => Some(PhaseRef::Name(s.clone())),
                Value::Number(n) if n.as_i64().is_some() => n.as_i64().map(PhaseRef::Number),
                other => {
                    problems.push(format!(
                        "{at}.depends_on[{j}]: expected a phase id or number, found {}",
                        kind(other)
                    ));
                    None
                }
            })
            .collect(),
        Some(Value::String(s)) => vec![PhaseRef::Name(s.clone())],
        Some(Value::Number(n)) if n.as_i64().is_some() => {
            n.as_i64().map(PhaseRef::Number).into_iter().collect()
        }
        Some(other) => {
            problems.push(format!(
                "{at}.depends_on: expected a list of phase ids, found {}",
                kind(other)
            ));
            Vec::new()
        }
    };
    let chunks_key = match (raw.contains_key("chunks"), raw.contains_key("subtasks")) {
        (true, true) => {
            problems.push(format!(
                "{at}: has both \"chunks\" and \"subtasks\"; keep one"
            ));
            return None;
        }
        (true, false) => Some("chunks"),
        (false, true) => Some("subtasks"),
        (false, false) => None,
    };
    let mut chunks_key = chunks_key;
    let chunks = match chunks_key.and_then(|k| raw.get_mut(k)).map(Value::take) {
        None => Vec::new(),
        Some(Value::Null) => {
            // `"chunks": null` stays null on save: nothing to write back into it.
            chunks_key = None;
            Vec::new()
        }
        Some(Value::Array(items)) => {
            let key = chunks_key.unwrap_or("chunks");
            items
                .into_iter()
                .enumerate()
                .filter_map(|(j, v)| read_chunk(&format!("{at}.{key}[{j}]"), v, problems))
                .collect()
        }
        Some(other) => {
            problems.push(format!(
                "{at}.{}: expected a list, found {}",
                chunks_key.unwrap_or("chunks"),
                kind(&other)
            ));
            Vec::new()
        }
    };
    Some(Phase {
        raw,
        key: PhaseKey { id, number },
        depends_on,
        chunks_key,
        chunks,
    })
}

fn read_chunk(at: &str, value: Value, problems: &mut Vec<String>) -> Option<Chunk> {
    let Value::Object(mut raw) = value else {
        problems.push(format!("{at}: expected an object, found {}", kind(&value)));
        return None;
    };
    let id = match raw.get("id") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => {
            problems.push(format!(
                "{at}.id: expected a non-empty string, found {}",
                kind(other)
            ));
            return None;
        }
        None => {
            problems.push(format!("{at}.id: missing (every chunk needs an id)"));
            return None;
        }
    };
    let at = format!("{at} ({id})");
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
    if let Some(attempts) = raw.get("attempts")
        && Vec::<Attempt>::deserialize(attempts).is_err()
    {
        problems.push(format!(
            "{at}.attempts: runner keeps its attempt records here; expected a list of objects with a number \"n\""
        ));
    }
    // Write the canonical spelling back so that a save normalises synonyms.
    if raw.contains_key("status") {
        raw.insert("status".into(), Value::String(status.as_str().into()));
    }
    Some(Chunk { raw, id, status })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
