//! The tools over runs: `resume_run` (the summary `runner resume --no-run --json` prints, or the
//! list to choose from; it never starts an agent), `get_run_details` (`runner show --json`) and
//! `list_stale_runs` (`runner runs --stale --json`). Their answers are the commands' JSON, built
//! by the same code; their output schemas are written here (the operations' types belong to
//! other layers' owners), and the end-to-end test checks every answer against them.

use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::{Json, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Server, answer};
use crate::cli::runs::{details_json, run_json};
use runner::ops::resume::{ResumeOptions, ResumeOutcome, summarize};
use runner::policy::runs::RunState;
use runner::store::Workspace;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeInput {
    /// What to resume: a run id or a prefix of 4 characters or more, a spec name or number, a
    /// chunk id, or part of a spec name. Default: the most recent resumable run.
    pub hint: Option<String>,
    /// When the hint matched several: the number of the one meant (1-based, from `matches`).
    pub choice: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunInput {
    /// The run: its id, or a prefix of 4 characters or more.
    pub run_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

#[tool_router(router = run_tools, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "Where an interrupted run stands and what to do next: the resume summary (current chunk, progress, last verification, git status, checkpoint, recent actions, next steps with commands, confidence and its source), or, when the hint matches several runs, the list to choose from (call again with `choice`). Starts nothing: `runner resume` continues the run.",
        output_schema = resume_schema()
    )]
    async fn resume_run(
        &self,
        Parameters(input): Parameters<ResumeInput>,
    ) -> Result<Json<Value>, String> {
        let cwd = self.cwd.clone();
        answer(move || {
            let ws = Workspace::open(&cwd)?;
            let req = ResumeOptions {
                hint: input.hint,
                choice: input.choice,
                ..ResumeOptions::default()
            };
            Ok(match summarize(&ws, &req, chrono::Utc::now())? {
                ResumeOutcome::Summary(summary) => serde_json::to_value(&summary)?,
                ResumeOutcome::Ambiguous { matches, user_hint } => {
                    json!({"success": false, "matches": matches, "user_hint": user_hint})
                }
            })
        })
        .await
    }

    #[tool(
        description = "One run in detail: its record (spec, kind, state, heartbeat and its age, chunk, outcome, host, pid), its branch, the spec's checkpoint when this run or a later one wrote it, and its last journal lines. What `runner show RUN --json` prints.",
        output_schema = details_schema()
    )]
    async fn get_run_details(
        &self,
        Parameters(input): Parameters<RunInput>,
    ) -> Result<Json<Value>, String> {
        let cwd = self.cwd.clone();
        answer(move || {
            let ws = Workspace::open(&cwd)?;
            let details = runner::ops::runs::details(&ws, &input.run_id, chrono::Utc::now())?;
            Ok(details_json(&details))
        })
        .await
    }

    #[tool(
        description = "The stale runs, newest first: not ended, and nobody runs them (killed, or their machine went away); each can be resumed. What `runner runs --stale --json` prints.",
        output_schema = stale_schema()
    )]
    async fn list_stale_runs(
        &self,
        Parameters(_): Parameters<NoInput>,
    ) -> Result<Json<Value>, String> {
        let cwd = self.cwd.clone();
        answer(move || {
            let ws = Workspace::open(&cwd)?;
            let stale_after = ws.config()?.resume.stale_after();
            let runs: Vec<Value> =
                runner::ops::runs::list(&ws, None, chrono::Utc::now(), stale_after)?
                    .iter()
                    .filter(|r| r.state == RunState::Stale)
                    .map(run_json)
                    .collect();
            Ok(json!({ "runs": runs }))
        })
        .await
    }
}

fn object(schema: Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn nullable(kind: &str, description: &str) -> Value {
    json!({"type": [kind, "null"], "description": description})
}

/// One run as `runner runs --json` lists it.
fn run_properties() -> Value {
    json!({
        "run_id": {"type": "string"},
        "shown": {"type": "string", "description": "The shortest prefix that names the run (8 or more characters)."},
        "spec": {"type": "string"},
        "kind": {"type": "string", "description": "run, recover, merge, discard or undo."},
        "state": {"type": "string", "enum": ["active", "stale", "ended"]},
        "started": {"type": "string", "format": "date-time"},
        "ended": nullable("string", "When it ended (RFC 3339); null while it has not."),
        "outcome": nullable("string", "How it ended; null while it has not."),
        "heartbeat": {"type": "string", "format": "date-time"},
        "heartbeat_age_secs": {"type": "integer"},
        "chunk": nullable("string", "The chunk it was working on."),
        "agent": nullable("string", "The agent preset or command."),
        "resumed_from": nullable("string", "The run it resumed."),
        "host": {"type": "string"},
        "pid": {"type": "integer", "minimum": 0},
        "slot": nullable("string", "The worktree slot it ran in (null: the default one)."),
    })
}

const RUN_REQUIRED: [&str; 10] = [
    "run_id",
    "shown",
    "spec",
    "kind",
    "state",
    "started",
    "heartbeat",
    "heartbeat_age_secs",
    "host",
    "pid",
];

fn details_schema() -> Arc<JsonObject> {
    let mut properties = run_properties();
    properties["branch"] = json!({"type": "string"});
    properties["checkpoint"] = json!({
        "description": "The spec's checkpoint when this run or a later one wrote it.",
        "anyOf": [{"type": "null"}, {"type": "object", "properties": {
            "id": {"type": "string"}, "time": {"type": "string", "format": "date-time"},
            "trigger": {"type": "string"}, "run_id": {"type": "string"},
            "by_this_run": {"type": "boolean"}}}],
    });
    properties["events"] = json!({
        "type": "array", "items": {"type": "object"},
        "description": "The run's last journal lines, newest first.",
    });
    let mut required: Vec<&str> = RUN_REQUIRED.to_vec();
    required.extend(["branch", "events"]);
    object(json!({"type": "object", "properties": properties, "required": required}))
}

fn stale_schema() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "properties": {"runs": {"type": "array", "items": {
            "type": "object", "properties": run_properties(), "required": RUN_REQUIRED}}},
        "required": ["runs"],
    }))
}

fn resume_schema() -> Arc<JsonObject> {
    object(json!({
        "type": "object",
        "description": "success true: the summary of one run (the fields of `runner resume --no-run --json`); success false: the hint matched several, listed in `matches`.",
        "properties": {
            "success": {"type": "boolean"},
            "run_id": nullable("string", "The run resumed (null: a spec with no run record)."),
            "spec": {"type": "string"},
            "summary": {"type": "object", "description": "current_chunk, progress, verification, git_status, checkpoint, recent_actions, next_steps.", "properties": {
                "current_chunk": {"type": ["object", "null"]},
                "progress": {"type": "object"},
                "verification": {"type": ["object", "null"]},
                "git_status": {"type": "object"},
                "checkpoint": {"type": "object"},
                "recent_actions": {"type": "array", "items": {"type": "string"}},
                "next_steps": {"type": "array", "items": {"type": "object"}},
            }},
            "confidence_score": {"type": "integer", "minimum": 0, "maximum": 100},
            "confidence_reason": {"type": "string"},
            "source": {"type": "string", "enum": ["checkpoint", "events", "commits"]},
            "warnings": {"type": "array", "items": {"type": "string"}},
            "handoff_document": nullable("string", "Always null here: the tool writes nothing."),
            "matches": {"type": "array", "items": {"type": "object", "properties": {
                "choice": {"type": "integer"}, "run_id": {"type": ["string", "null"]},
                "shown": {"type": ["string", "null"]}, "spec": {"type": "string"},
                "chunk": {"type": ["string", "null"]},
                "last_activity": {"type": ["string", "null"]}, "command": {"type": "string"}},
                "required": ["choice", "spec", "command"]}},
            "user_hint": nullable("string", "The hint that matched several."),
        },
        "required": ["success"],
    }))
}
