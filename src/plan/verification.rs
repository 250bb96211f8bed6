//! A chunk's `verification`, in both Auto-Claude styles, reduced to what runner can check.
//!
//! Only command verifications are run. `expected` in the subtasks era is prose ("No errors"),
//! so it is shown to the agent but not compared; the exit status decides (`expect_status`,
//! default 0). `expect_output` / `expect_stdout`, if present, must appear in the output.
//! Browser, e2e and manual verifications are instructions for the agent, not checks.

use serde_json::Value;

use super::model::Chunk;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandCheck {
    pub command: String,
    pub expect_status: i32,
    pub expect_output: Option<String>,
}

/// The command runner should run after the chunk, or `None` if there is nothing to run.
pub fn command_check(chunk: &Chunk) -> Option<CommandCheck> {
    let Value::Object(v) = chunk.raw.get("verification")? else {
        return None;
    };
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("command");
    if !kind.eq_ignore_ascii_case("command") {
        return None;
    }
    let command = v
        .get("command")
        .or_else(|| v.get("run"))
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())?;
    let expect_status = v
        .get("expect_status")
        .or_else(|| v.get("expected_status"))
        .or_else(|| v.get("expected_exit_code"))
        .and_then(Value::as_i64)
        .and_then(|n| i32::try_from(n).ok())
        .unwrap_or(0);
    let expect_output = v
        .get("expect_output")
        .or_else(|| v.get("expect_stdout"))
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
    let v = chunk.raw.get("verification")?;
    match v {
        Value::String(s) => Some(s.clone()),
        other => serde_json::to_string_pretty(other).ok(),
    }
}
