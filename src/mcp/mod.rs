//! `runner mcp`: runner's operations as a Model Context Protocol server on stdin/stdout, built
//! on the official Rust SDK (`rmcp`). A front end like `cli`: each tool is a thin wrapper that
//! calls one operation of `ops` and hands its data back as structured output (every tool has
//! an input and an output schema, derived from the operation's types).
//!
//! stdout carries the protocol and nothing else (runner's warnings and logs go to stderr); a
//! line that is not JSON-RPC is skipped (the SDK's transport); the server ends when stdin
//! closes. A refusal (an unknown spec, a busy one, arguments that do not fit the input schema)
//! is a tool result with `isError: true`, runner's message as its text, and
//! `{code, kind, message, hints}` as its structured content (`error::ErrorReport`: `code` is
//! the exit code the command line would end with).
//!
//! Schemas keep to the formats JSON Schema defines (`schema::standard`): the integer formats
//! schemars writes for Rust's types (`uint64`, `int32` …) are taken out; a numeric argument is
//! a number or a string of digits (`number`).

mod chunk;
mod lifecycle;
mod number;
mod runs;
mod schema;
mod spec;

use std::path::{Path, PathBuf};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{IntoCallToolResult, ToolCallContext};
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Json, RoleServer, ServerHandler, ServiceExt, tool_handler};

use runner::error::ErrorReport;
use runner::ops::Ctx;

/// The server: the folder it was started in (each call opens the repository from there, so it
/// sees what changed since) and its tools.
#[derive(Debug, Clone)]
pub struct Server {
    cwd: PathBuf,
    tool_router: ToolRouter<Self>,
}

/// The server's instructions list the workflow (what an IDE or an orchestrating agent reads
/// first).
#[tool_handler(
    router = self.tool_router,
    name = "runner",
    instructions = "runner drives coding agents through an Auto-Claude plan, chunk by chunk, in a git worktree, and survives interruptions. The workflow: create_spec (a description; when unfinished specs like it exist it returns them: call again with `choice` to continue one or `new_spec: true`) → start_run (runs in the background and returns its run_id at once; the run goes on after this session ends) → follow it with status, show_run or show_plan until it ends → review_spec (commits, files, progress, whether it merges cleanly) → merge_spec (backed up first) or discard_spec → undo_last reverses the last merge or discard. recover puts interrupted state right without an agent; list_runs lists runs (stale ones were killed); summarize_interrupted_run says where an interrupted run stands and what to do next. chunk_show, chunk_done and chunk_fail are how an agent session reads and reports its own chunk. A spec is named by its folder name, its number (007) or a part of its name (sign_many finds 007-add-a-sign-many-helper; merge_spec, discard_spec and undo_last take no name whose words are in another order). An error's structured content is {code, kind, message, hints}: code 2 bad input, 3 needs a person, 4 busy, 5 budget spent, 6 paused by a usage limit, 7 the git remote unreachable or refusing."
)]
impl ServerHandler for Server {
    /// The router's call, with the SDK's own refusals (arguments that do not fit the input
    /// schema) given runner's structured error, as every other refusal.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = ToolCallContext::new(self, request, context);
        let response = self.tool_router.call(call).await?;
        Ok(match response {
            CallToolResponse::Complete(result)
                if result.is_error == Some(true) && result.structured_content.is_none() =>
            {
                let text: Vec<String> = result
                    .content
                    .iter()
                    .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                    .collect();
                let report = ErrorReport {
                    code: runner::error::exit::BAD_INPUT,
                    kind: "bad_input",
                    message: text.join("\n"),
                    hints: vec![
                        "the tool's input schema (tools/list) says which arguments it takes".into(),
                    ],
                };
                ToolError(report).into_result().into()
            }
            other => other,
        })
    }
}

impl Server {
    pub fn new(cwd: PathBuf) -> Server {
        let mut tool_router =
            Self::chunk_tools() + Self::run_tools() + Self::spec_tools() + Self::lifecycle_tools();
        for route in tool_router.map.values_mut() {
            schema::standard(&mut route.attr);
        }
        Server { cwd, tool_router }
    }
}

/// Serve MCP on stdin/stdout until stdin closes. Returns the exit code.
pub fn serve(cwd: PathBuf) -> anyhow::Result<i32> {
    runner::engine::block_on(async move {
        let service = Server::new(cwd)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| anyhow::anyhow!("starting the MCP server: {e}"))?;
        service
            .waiting()
            .await
            .map_err(|e| anyhow::anyhow!("the MCP server stopped: {e}"))?;
        Ok(0)
    })
}

/// A refusal as a tool result: `isError`, the text runner prints (`runner: <message>` and its
/// hints), and the report as structured content.
#[derive(Debug)]
pub struct ToolError(ErrorReport);

impl ToolError {
    fn of(err: &anyhow::Error) -> ToolError {
        ToolError(ErrorReport::of(err))
    }

    fn into_result(self) -> CallToolResult {
        let text = self.0.to_text().trim_end().to_string();
        let value = serde_json::to_value(&self.0).unwrap_or_default();
        let mut result = CallToolResult::structured_error(value);
        result.content = vec![ContentBlock::text(text)];
        result
    }
}

impl IntoCallToolResult for ToolError {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        Ok(self.into_result().into())
    }
}

/// What every tool returns: the operation's data, or its refusal.
type Answer<T> = Result<Json<T>, ToolError>;

/// A tool's answer. The operation runs off the protocol's thread: runner's operations read
/// files, take locks and may run their own runtime (`engine::block_on`), which must not happen
/// on the runtime that serves the protocol. (Each tool spells its return type out: the SDK
/// finds the output schema in its words.)
async fn answer<T: Send + 'static>(
    op: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> Answer<T> {
    match tokio::task::spawn_blocking(op).await {
        Ok(Ok(value)) => Ok(Json(value)),
        Ok(Err(err)) => Err(ToolError::of(&err)),
        Err(join) => Err(ToolError::of(&anyhow::anyhow!("internal error: {join}"))),
    }
}

/// How a person or a model names one spec to a tool, for an error that lists the candidates.
fn with_spec(tool: &'static str) -> impl Fn(&str) -> String {
    move |spec| format!("{tool} {{\"spec\": {}}}", serde_json::Value::from(spec))
}

/// The context a tool's operation works in: the repository the server was started in, with
/// specs named in messages as the tool is called (`review_spec {"spec": "001-x"}`).
fn ctx(cwd: &Path, tool: &'static str) -> anyhow::Result<Ctx> {
    Ok(Ctx::open(cwd)?.with_spec_command(Box::new(with_spec(tool))))
}
