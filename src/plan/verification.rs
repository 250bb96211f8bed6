//! A chunk's `verification`, in both Auto-Claude styles, reduced to what runner can check.
//!
//! Only command verifications are run. `expected` in the subtasks era is prose ("No errors"),
//! so it is shown to the agent but not compared; the exit status decides (`expect_status`,
//! default 0). `expect_output` / `expect_stdout`, if present, must appear in the output.
//! Browser, e2e, manual, api, component and none verifications are instructions for the agent,
//! not checks. The type is read trimmed and in any case; the command is the first non-empty of
//! `command` and `run`. A command verification without a command, and an unknown type with a
//! command, are plan errors: a check is never silently skipped.
//!
//! A field runner reads that has the wrong JSON type is a plan error (`check`), never a check
//! quietly skipped or run with a default in its place.

use serde_json::{Map, Value};

use super::checks::kind;
use super::model::Chunk;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandCheck {
    pub command: String,
    pub expect_status: i32,
    pub expect_output: Option<String>,
}

/// The spellings of each field runner reads, the first present (non-null) one wins.
const TYPE: &[&str] = &["type"];
const COMMAND: &[&str] = &["command", "run"];
const EXPECT_STATUS: &[&str] = &["expect_status", "expected_status", "expected_exit_code"];
const EXPECT_OUTPUT: &[&str] = &["expect_output", "expect_stdout"];

/// The value of the first of `keys` that is present and not null.
fn field<'a>(v: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|k| v.get(*k).filter(|x| !x.is_null()))
}

/// Auto-Claude's verification types that are instructions for the agent, not commands.
const NOT_RUN: &[&str] = &["api", "browser", "component", "e2e", "manual", "none"];

/// The type as written, trimmed and lower-cased (`"Command "` is `command`); `command` when
/// there is none.
fn type_of(v: &Map<String, Value>) -> String {
    field(v, TYPE)
        .and_then(Value::as_str)
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "command".into())
}

/// The first of `command` / `run` that holds a command (an empty `command` must not hide `run`).
fn command_of(v: &Map<String, Value>) -> Option<&str> {
    COMMAND
        .iter()
        .filter_map(|k| v.get(*k).and_then(Value::as_str))
        .find(|c| !c.trim().is_empty())
}

/// Appends a problem for each field runner reads that has the wrong type. `at` is the JSON
/// path of the verification. A text verification is prose for the agent; null is none.
pub(super) fn check(at: &dyn std::fmt::Display, verification: &Value, problems: &mut Vec<String>) {
    let v = match verification {
        Value::Null | Value::String(_) => return,
        Value::Object(v) => v,
        other => {
            problems.push(format!(
                "{at}: expected an object (such as {{\"type\": \"command\", \"command\": \"make test\"}}) or a text, found {}",
                kind(other)
            ));
            return;
        }
    };
    let problems_before = problems.len();
    let strings = [
        (TYPE, "a string such as \"command\""),
        (COMMAND, "the command as one string (run with sh -c)"),
        (EXPECT_OUTPUT, "a string the output must contain"),
    ];
    for (keys, wanted) in strings {
        for key in keys {
            match v.get(*key) {
                None | Some(Value::Null | Value::String(_)) => {}
                Some(other) => problems.push(format!(
                    "{at}.{key}: expected {wanted}, found {}",
                    kind(other)
                )),
            }
        }
    }
    if problems_before == problems.len() {
        let kind = type_of(v);
        let command = command_of(v);
        if kind == "command" && command.is_none() {
            problems.push(format!(
                "{at}: a command verification without a command: put it in \"command\" (or \"run\"), or remove the verification"
            ));
        } else if kind != "command" && !NOT_RUN.contains(&kind.as_str()) && command.is_some() {
            problems.push(format!(
                "{at}.type: unknown verification type {:?} with a command: runner runs the command of type \"command\" only; write that type to have it checked, or remove the command",
                kind
            ));
        }
    }
    for key in EXPECT_STATUS {
        match v.get(*key) {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) if n.as_i64().is_some_and(|n| i32::try_from(n).is_ok()) => {}
            Some(other) => problems.push(format!(
                "{at}.{key}: expected the exit status as a whole number, found {}",
                match other {
                    Value::Number(n) => format!("{n}"),
                    other => kind(other).to_string(),
                }
            )),
        }
    }
}

/// The command runner should run after the chunk, or `None` if there is nothing to run.
/// The plan was validated (`check`), so every field read here has its type.
pub fn command_check(chunk: &Chunk) -> Option<CommandCheck> {
    let Value::Object(v) = chunk.raw().get("verification")? else {
        return None;
    };
    if type_of(v) != "command" {
        return None;
    }
    let command = command_of(v)?;
    let expect_status = field(v, EXPECT_STATUS)
        .and_then(Value::as_i64)
        .and_then(|n| i32::try_from(n).ok())
        .unwrap_or(0);
    let expect_output = field(v, EXPECT_OUTPUT)
        .and_then(Value::as_str)
        .map(str::to_string);
    Some(CommandCheck {
        command: command.to_string(),
        expect_status,
        expect_output,
    })
}

/// The verification as the agent should read it (pretty JSON), if the chunk has one.
pub fn describe(chunk: &Chunk) -> Option<String> {
    let v = chunk.raw().get("verification")?;
    match v {
        Value::String(s) => Some(s.clone()),
        other => serde_json::to_string_pretty(other).ok(),
    }
}

/// A chunk's verification in brief, for a person reading the plan: of what kind, the command
/// runner runs (only for `command`), what it expects, and the instructions of a check runner
/// does not run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Brief {
    /// `command`, `manual`, `browser`, `e2e`, … as the plan says (lower case), or `text` for a
    /// verification written as prose.
    pub kind: String,
    /// Whether runner runs it after the chunk (a command verification): it must pass.
    pub runs: bool,
    /// The command (`command` or `run`).
    pub command: Option<String>,
    /// What the command must give: its exit status when not 0, the text its output must hold.
    pub expect: Option<String>,
    /// What is expected or to be done, in the plan's words (`expected`, `instructions`,
    /// `scenario`, a `url`, else the first of its `steps` or `checks`; the whole text of a prose
    /// verification): shown, never checked.
    pub note: Option<String>,
}

/// The fields whose text says what a check expects or asks, the first present one shown.
const NOTE: &[&str] = &["expected", "instructions", "scenario", "description", "url"];

/// The verification of `chunk` in brief, if it has one.
pub fn brief(chunk: &Chunk) -> Option<Brief> {
    let v = match chunk.raw().get("verification")? {
        Value::String(s) if !s.trim().is_empty() => {
            return Some(Brief {
                kind: "text".into(),
                runs: false,
                command: None,
                expect: None,
                note: Some(s.clone()),
            });
        }
        Value::Object(v) => v,
        _ => return None,
    };
    let check = command_check(chunk);
    let expect = check.as_ref().and_then(|c| {
        let mut parts = Vec::new();
        if c.expect_status != 0 {
            parts.push(format!("exit status {}", c.expect_status));
        }
        if let Some(out) = &c.expect_output {
            parts.push(format!("output holds {out:?}"));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    });
    let text = |v: &Value| {
        v.as_str()
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
    };
    // Else the first of its `steps` or `checks` (e2e, browser), and how many more there are.
    let first_step = || {
        ["steps", "checks"].iter().find_map(|k| {
            let items = v.get(*k)?.as_array()?;
            let first = text(items.first()?)?;
            Some(match items.len() - 1 {
                0 => first,
                more => format!("{first} (and {more} more)"),
            })
        })
    };
    let note = NOTE
        .iter()
        .find_map(|k| v.get(*k).and_then(text))
        .or_else(first_step);
    Some(Brief {
        kind: type_of(v),
        runs: check.is_some(),
        command: command_of(v).map(str::to_string),
        expect,
        note,
    })
}
