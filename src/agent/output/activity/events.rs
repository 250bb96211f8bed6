//! The stream-json events of claude (`-p --output-format stream-json --verbose`), codex (`exec
//! --json`) and gemini (`--output-format stream-json`) as activities. Where each shape comes
//! from, and what the real CLIs printed, is in `fixtures/agent-output/README.md`; the event types
//! of the three do not clash but for `result` (claude's has `subtype`/`is_error`, gemini's
//! `status`) and `error` (codex's and gemini's both carry `message`).

use std::collections::HashSet;

use serde_json::Value;

use super::{Activity, MAX_DETAIL, MAX_TEXT, capped};

/// How many codex item ids are remembered as started (a session has a few hundred).
const MAX_STARTED: usize = 10_000;

/// The piece of assistant text a gemini `message` delta carries, if `event` is one.
pub(super) fn gemini_delta(event: &Value) -> Option<&str> {
    (event["type"] == "message" && event["role"] == "assistant" && event["delta"] == true)
        .then(|| event["content"].as_str())
        .flatten()
}

/// What one event says; nothing for an event a person does not need (a stream delta, an
/// allowed rate limit, a turn's start) or one of a type not known here.
pub(super) fn of_event(event: &Value, started: &mut HashSet<String>) -> Vec<Activity> {
    let text = |key: &str| event[key].as_str().unwrap_or_default();
    match text("type") {
        // claude
        "system" => system(event),
        "assistant" => assistant(&event["message"]),
        "user" => tool_results(&event["message"]),
        "result" if event.get("status").is_some() => gemini_result(event),
        "result" => claude_result(event),
        "rate_limit_event" if event["rate_limit_info"]["status"] == "rejected" => {
            vec![note("usage limit reached")]
        }
        // codex
        "thread.started" => vec![note("session started")],
        "turn.failed" => vec![note(&format!(
            "turn failed: {}",
            event["error"]["message"]
                .as_str()
                .unwrap_or("no reason given")
        ))],
        "item.started" => item_started(&event["item"], started),
        "item.completed" => item_completed(&event["item"], started),
        // codex and gemini
        "error" => {
            let warning = event["severity"] == "warning";
            let message = event["message"]
                .as_str()
                .or(event["error"]["message"].as_str())
                .unwrap_or("an error");
            vec![note(&format!(
                "{}{message}",
                if warning { "warning: " } else { "error: " }
            ))]
        }
        // gemini
        "init" => vec![started_with_model(event)],
        "message" if event["role"] == "assistant" => said(text("content")),
        "tool_use" => vec![tool(text("tool_name"), &event["parameters"])],
        "tool_result" => {
            let ok = event["status"] == "success";
            let brief = event["output"]
                .as_str()
                .or(event["error"]["message"].as_str())
                .unwrap_or_default();
            vec![result(ok, brief)]
        }
        _ => Vec::new(),
    }
}

fn note(text: &str) -> Activity {
    Activity::Note(capped(text.trim(), MAX_TEXT))
}

fn said(text: &str) -> Vec<Activity> {
    let text = text.trim();
    if text.is_empty() {
        return Vec::new();
    }
    vec![Activity::Said(capped(text, MAX_TEXT))]
}

/// `session started (model X)`: claude's `init` and gemini's both name the model.
fn started_with_model(event: &Value) -> Activity {
    match event["model"].as_str() {
        Some(model) => note(&format!(
            "session started (model {})",
            capped(model, MAX_DETAIL)
        )),
        None => note("session started"),
    }
}

fn system(event: &Value) -> Vec<Activity> {
    match event["subtype"].as_str() {
        Some("init") => vec![started_with_model(event)],
        Some("api_retry") => {
            let status = event["error_status"]
                .as_u64()
                .map(|s| format!(" {s}"))
                .unwrap_or_default();
            vec![note(&format!(
                "API error{status}, retry {} of {}",
                event["attempt"].as_u64().unwrap_or(0),
                event["max_retries"].as_u64().unwrap_or(0)
            ))]
        }
        _ => Vec::new(),
    }
}

/// An assistant message's blocks: its words and its tool calls (its thinking is left out).
fn assistant(message: &Value) -> Vec<Activity> {
    let Some(blocks) = message["content"].as_array() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for block in blocks {
        match block["type"].as_str() {
            Some("text") => out.extend(said(block["text"].as_str().unwrap_or_default())),
            Some("tool_use") => out.push(tool(
                block["name"].as_str().unwrap_or("tool"),
                &block["input"],
            )),
            _ => {}
        }
    }
    out
}

/// A user message's tool results (its other content is the prompt: left out).
fn tool_results(message: &Value) -> Vec<Activity> {
    let Some(blocks) = message["content"].as_array() else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let content = match &b["content"] {
                Value::String(s) => s.as_str(),
                // A list of blocks: its first text.
                Value::Array(parts) => parts
                    .iter()
                    .find_map(|p| p["text"].as_str())
                    .unwrap_or_default(),
                _ => "",
            };
            result(b["is_error"] != true, content)
        })
        .collect()
}

fn claude_result(event: &Value) -> Vec<Activity> {
    let cost = event["total_cost_usd"]
        .as_f64()
        .filter(|usd| *usd > 0.0)
        .map(|usd| format!("${}", crate::policy::budget::dollars(usd)));
    if event["is_error"] == true {
        let why = event["result"]
            .as_str()
            .filter(|r| !r.trim().is_empty())
            .map(str::to_string)
            .or_else(|| {
                let errors = event["errors"].as_array()?;
                let texts: Vec<&str> = errors.iter().filter_map(Value::as_str).collect();
                (!texts.is_empty()).then(|| texts.join("; "))
            })
            .unwrap_or_else(|| event["subtype"].as_str().unwrap_or("error").to_string());
        let cost = cost.map(|c| format!(" — {c} spent")).unwrap_or_default();
        return vec![note(&format!(
            "ended with an error: {}{cost}",
            capped(first_line(&why), MAX_DETAIL)
        ))];
    }
    let turns = event["num_turns"]
        .as_u64()
        .map(|n| crate::text::count(n, "turn"));
    vec![finished(turns.into_iter().chain(cost).collect())]
}

fn gemini_result(event: &Value) -> Vec<Activity> {
    if event["status"] == "success" {
        let count = |key: &str, noun: &str| {
            event["stats"][key]
                .as_u64()
                .map(|n| crate::text::count(n, noun))
        };
        let facts = count("total_tokens", "token")
            .into_iter()
            .chain(count("tool_calls", "tool call"))
            .collect();
        return vec![finished(facts)];
    }
    let why = event["error"]["message"]
        .as_str()
        .unwrap_or("no reason given");
    vec![note(&format!(
        "ended with an error: {}",
        capped(first_line(why), MAX_DETAIL)
    ))]
}

/// `finished (3 turns, $0.02)`, with what is known.
fn finished(facts: Vec<String>) -> Activity {
    if facts.is_empty() {
        note("finished")
    } else {
        note(&format!("finished ({})", facts.join(", ")))
    }
}

/// A codex item's start: a command, a file change, a tool call (said once, when it starts).
fn item_started(item: &Value, started: &mut HashSet<String>) -> Vec<Activity> {
    let Some(call) = item_call(item) else {
        return Vec::new();
    };
    if let Some(id) = item["id"].as_str()
        && started.len() < MAX_STARTED
    {
        started.insert(id.to_string());
    }
    vec![call]
}

/// A codex item's end: the agent's words, a command's result; the call too when its start was
/// not seen (a log cut, a CLI that skips it).
fn item_completed(item: &Value, started: &mut HashSet<String>) -> Vec<Activity> {
    let kind = item["type"].as_str().unwrap_or_default();
    if kind == "agent_message" {
        return said(item["text"].as_str().unwrap_or_default());
    }
    if kind == "error" {
        return vec![note(&format!(
            "error: {}",
            item["message"].as_str().unwrap_or_default()
        ))];
    }
    let mut out = Vec::new();
    let seen = item["id"].as_str().is_some_and(|id| started.remove(id));
    if !seen && let Some(call) = item_call(item) {
        out.push(call);
    }
    let failed = item["status"] == "failed";
    match kind {
        "command_execution" => {
            let code = item["exit_code"].as_i64();
            let output = item["aggregated_output"].as_str().unwrap_or_default();
            let ok = code == Some(0) && !failed;
            let brief = match (first_line(output), code) {
                ("", Some(code)) if code != 0 => format!("exit {code}"),
                (line, _) => line.to_string(),
            };
            out.push(result(ok, &brief));
        }
        "file_change" if failed => out.push(result(false, "the change was not applied")),
        "mcp_tool_call" => {
            let error = item["error"]["message"].as_str();
            let said = item["result"]["content"]
                .as_array()
                .and_then(|parts| parts.iter().find_map(|p| p["text"].as_str()));
            out.push(result(
                error.is_none() && !failed,
                error.or(said).unwrap_or(""),
            ));
        }
        _ => {}
    }
    out
}

/// The call a codex item makes, if it makes one.
fn item_call(item: &Value) -> Option<Activity> {
    let detail = |text: &str| capped(text, MAX_DETAIL);
    match item["type"].as_str()? {
        "command_execution" => Some(Activity::Tool {
            name: "shell".into(),
            detail: detail(&unwrap_shell(item["command"].as_str().unwrap_or_default())),
        }),
        "file_change" => {
            let paths: Vec<String> = item["changes"]
                .as_array()?
                .iter()
                .filter_map(|c| c["path"].as_str())
                .map(short_path)
                .collect();
            Some(Activity::Tool {
                name: "edit".into(),
                detail: detail(&paths.join(", ")),
            })
        }
        "mcp_tool_call" => Some(Activity::Tool {
            name: format!(
                "{}.{}",
                item["server"].as_str().unwrap_or("mcp"),
                item["tool"].as_str().unwrap_or("tool")
            ),
            detail: detail(&compact(&item["arguments"])),
        }),
        "web_search" => Some(Activity::Tool {
            name: "web_search".into(),
            detail: detail(item["query"].as_str().unwrap_or_default()),
        }),
        _ => None,
    }
}

/// A tool call of claude or gemini: its name and what it works on — a command, a file, a
/// pattern, an address — in that order of preference; else its input in brief.
fn tool(name: &str, input: &Value) -> Activity {
    let pick = |keys: &[&str]| keys.iter().find_map(|k| input[*k].as_str());
    let detail = if let Some(command) = pick(&["command"]) {
        one_line_command(command)
    } else if let Some(file) = pick(&["file_path", "absolute_path", "notebook_path"]) {
        short_path(file)
    } else if let Some(other) =
        pick(&["pattern", "path", "dir_path", "url", "query", "description"])
    {
        other.to_string()
    } else {
        compact(input)
    };
    Activity::Tool {
        name: capped(name, MAX_DETAIL),
        detail: capped(detail.trim(), MAX_DETAIL),
    }
}

fn result(ok: bool, text: &str) -> Activity {
    let line = first_line(text);
    let brief = if line.is_empty() {
        if ok { "ok" } else { "failed" }
    } else {
        line
    };
    Activity::Result {
        ok,
        brief: capped(brief, MAX_DETAIL),
    }
}

/// The first line of `text` that says something.
fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
}

/// A command on one line: its first line, `…` when there are more.
fn one_line_command(command: &str) -> String {
    let command = command.trim();
    match command.split_once('\n') {
        Some((first, _)) => format!("{} …", first.trim_end()),
        None => command.to_string(),
    }
}

/// codex runs each command through a login shell (`/bin/bash -lc '<command>'`): the command.
fn unwrap_shell(command: &str) -> String {
    if let Ok(words) = shell_words::split(command)
        && let [shell, flag, inner] = words.as_slice()
        && ["bash", "sh", "zsh"]
            .iter()
            .any(|s| shell == s || shell.ends_with(&format!("/{s}")))
        && (flag == "-lc" || flag == "-c")
    {
        return one_line_command(inner);
    }
    one_line_command(command)
}

/// A file's path as a person reads it: relative to the worktree the agent ran in
/// (`…/.worktrees/auto-claude/src/lib.rs` → `src/lib.rs`), else as written.
fn short_path(path: &str) -> String {
    if let Some((_, after)) = path.split_once("/.worktrees/")
        && let Some((_, inside)) = after.split_once('/')
        && !inside.is_empty()
    {
        return inside.to_string();
    }
    path.to_string()
}

/// A JSON value in brief, on one line (a tool input with none of the usual keys).
fn compact(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Object(map) if map.is_empty() => String::new(),
        other => capped(&other.to_string(), MAX_DETAIL),
    }
}
