//! The tools over a spec's state and an agent's chunk: `status`, `chunk_show`, `chunk_done`,
//! `chunk_fail` — the operations of `runner status` and `runner chunk`, with their rules (a
//! session may report only its own chunk: the server is started by the agent's CLI and inherits
//! the session's `RUNNER_*` variables and place in the process tree).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Json, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Server, ToolError, answer, with_spec};
use runner::engine::mark::Mark;
use runner::ops::chunk::{ChunkShowOptions, ChunkView, MarkOptions, mark_chunk, show_chunk};
use runner::ops::status::{StatusOptions, StatusReport, status};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusInput {
    /// Only this spec (a name, or a prefix such as its number). Default: the spec of the
    /// worktree the server runs in, else every spec but the merged and discarded ones.
    pub spec: Option<String>,
    /// Merged and discarded specs too (`runner status --all`).
    #[serde(default)]
    pub all: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkShowInput {
    /// The chunk's id. Default: the session's chunk (RUNNER_CHUNK_ID), else the one in
    /// progress, else the next.
    pub chunk: Option<String>,
    /// The spec. Default: the session's (RUNNER_SPEC_DIR), else the worktree's, else the only one.
    pub spec: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkDoneInput {
    /// The chunk's id (an agent session may report only its own chunk).
    pub chunk: String,
    /// What was done, for the record.
    pub notes: Option<String>,
    /// The spec. Default: the session's (RUNNER_SPEC_DIR), else the worktree's, else the only one.
    pub spec: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkFailInput {
    /// The chunk's id (an agent session may report only its own chunk).
    pub chunk: String,
    /// Why the chunk could not be done.
    pub reason: String,
    /// The spec. Default: the session's (RUNNER_SPEC_DIR), else the worktree's, else the only one.
    pub spec: Option<String>,
}

/// A report runner accepted (what `runner chunk done|fail --json` prints).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ChunkReport {
    pub spec: String,
    pub chunk: String,
    /// What runner did with the report.
    pub message: String,
}

#[tool_router(router = chunk_tools, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "Every spec (or one): its status, progress, branch, worktree, current and next chunk, who runs it, what it cost, the command that continues it; and the worktree slots (merged and discarded specs only with `all`). What `runner status --json` prints.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn status(
        &self,
        Parameters(input): Parameters<StatusInput>,
    ) -> Result<Json<StatusReport>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            let ctx =
                runner::ops::Ctx::open(&cwd)?.with_spec_command(Box::new(with_spec("status")));
            let opts = StatusOptions {
                spec: input.spec,
                all: input.all,
            };
            status(&ctx, opts)
        })
        .await
    }

    #[tool(
        description = "One chunk of the plan (default: this session's, else the one in progress, else the next) with the plan's progress. What `runner chunk show --json` prints.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn chunk_show(
        &self,
        Parameters(input): Parameters<ChunkShowInput>,
    ) -> Result<Json<ChunkView>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            let ctx = super::ctx(&cwd, "chunk_show")?;
            let opts = ChunkShowOptions {
                spec: input.spec,
                id: input.chunk,
            };
            show_chunk(&ctx, opts)
        })
        .await
    }

    #[tool(
        description = "Report your chunk done: runner verifies and commits it when the session ends. The same rules as `runner chunk done`: a session may report only its own chunk.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn chunk_done(
        &self,
        Parameters(input): Parameters<ChunkDoneInput>,
    ) -> Result<Json<ChunkReport>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            report(
                &cwd,
                input.spec.as_deref(),
                input.chunk,
                Mark::Done,
                input.notes.as_deref(),
            )
        })
        .await
    }

    #[tool(
        description = "Report that your chunk could not be done, and why. The same rules as `runner chunk fail`: a session may report only its own chunk.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn chunk_fail(
        &self,
        Parameters(input): Parameters<ChunkFailInput>,
    ) -> Result<Json<ChunkReport>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            report(
                &cwd,
                input.spec.as_deref(),
                input.chunk,
                Mark::Fail,
                Some(&input.reason),
            )
        })
        .await
    }
}

/// `chunk_done` and `chunk_fail`: `runner chunk done|fail` through the same operation.
fn report(
    cwd: &std::path::Path,
    spec: Option<&str>,
    chunk: String,
    how: Mark,
    text: Option<&str>,
) -> anyhow::Result<ChunkReport> {
    let tool = match how {
        Mark::Done => "chunk_done",
        Mark::Fail => "chunk_fail",
    };
    let ctx = super::ctx(cwd, tool)?;
    let opts = MarkOptions {
        spec: spec.map(str::to_string),
        id: chunk,
        mark: how,
        text: text.map(str::to_string),
    };
    let done = mark_chunk(&ctx, opts)?;
    Ok(ChunkReport {
        spec: done.spec,
        chunk: done.chunk,
        message: done.message,
    })
}
