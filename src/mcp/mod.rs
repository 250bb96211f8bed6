//! `runner mcp`: runner's operations as a Model Context Protocol server on stdin/stdout, built
//! on the official Rust SDK (`rmcp`). A front end like `cli`: each tool calls an operation and
//! hands its data back as structured output (every tool has an input and an output schema).
//!
//! stdout carries the protocol and nothing else (runner's warnings and logs go to stderr); a
//! line that is not JSON-RPC is skipped (the SDK's transport); the server ends when stdin
//! closes. An operation's refusal (`chunk_done` on another session's chunk, an unknown spec) is
//! a tool result with `isError: true` and runner's message, which the model sees; so are
//! arguments that do not fit the input schema (the SDK's "failed to deserialize parameters").

mod chunk;
mod runs;

use std::path::PathBuf;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::{Json, ServerHandler, ServiceExt, tool_handler};

use runner::error::ErrorReport;

/// The server: the folder it was started in (each call opens the repository from there, so it
/// sees what changed since) and its tools.
#[derive(Debug, Clone)]
pub struct Server {
    cwd: PathBuf,
    tool_router: ToolRouter<Self>,
}

#[tool_handler(
    router = self.tool_router,
    name = "runner",
    instructions = "runner drives coding agents through an Auto-Claude plan, chunk by chunk. status shows every spec; list_stale_runs, get_run_details and resume_run tell where an interrupted run stands and what to do next; chunk_show, chunk_done and chunk_fail are how an agent session reads and reports its chunk (a session may report only its own chunk)."
)]
impl ServerHandler for Server {}

impl Server {
    pub fn new(cwd: PathBuf) -> Server {
        Server {
            cwd,
            tool_router: Self::chunk_tools() + Self::run_tools(),
        }
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

/// A tool's answer: the operation's data as structured output, or its error as runner prints
/// it (`runner: <message>` and its hints) in a tool result marked `isError`. The operation runs
/// off the protocol's thread: runner's operations read files, take locks and may run their own
/// runtime (`engine::block_on`), which must not happen on the runtime that serves the protocol.
/// (Each tool spells its return type out: the SDK finds the output schema in its words.)
async fn answer<T: Send + 'static>(
    op: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> Result<Json<T>, String> {
    match tokio::task::spawn_blocking(op).await {
        Ok(Ok(value)) => Ok(Json(value)),
        Ok(Err(err)) => Err(ErrorReport::of(&err).to_text().trim_end().to_string()),
        Err(join) => Err(format!("runner: internal error: {join}")),
    }
}

/// How a person or a model names one spec to a tool, for an error that lists the candidates.
fn with_spec(tool: &'static str) -> impl Fn(&str) -> String {
    move |spec| format!("{tool} {{\"spec\": {}}}", serde_json::Value::from(spec))
}
