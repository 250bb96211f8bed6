//! The tools over runs: `list_runs` (`runner runs --json`), `show_run` (`runner show --json`)
//! and `summarize_interrupted_run` (`runner resume --no-run --json`: where an interrupted run
//! stands and what to do next; it starts nothing — start_run continues a spec). Read-only.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Json, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Server, ToolError, answer, number};
use runner::ops::resume::{ResumeOptions, SummaryReport, summarize};
use runner::ops::runs::{RunDetailsView, RunView, RunsOptions, RunsView, ShowOptions};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummarizeInput {
    /// What to look at: a run id or a prefix of 4 characters or more, a spec name or number, a
    /// chunk id, or part of a spec name. Default: the most recent resumable run.
    pub hint: Option<String>,
    /// When the hint matched several: the number of the one meant (1-based, from `matches`).
    #[serde(default, deserialize_with = "number::whole_usize")]
    #[schemars(schema_with = "number::whole_schema")]
    pub choice: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunInput {
    /// The run: its id, or a prefix of 4 characters or more (list_runs gives them).
    pub run_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRunsInput {
    /// Only the runs of this spec (its name, number or a part of its name).
    pub spec: Option<String>,
    /// Only the stale runs: not ended, and nobody runs them (killed, or their machine went
    /// away); each can be resumed.
    #[serde(default)]
    pub stale: bool,
    /// The records of recovers, merges, discards and undos too (by default only the runs of
    /// an agent).
    #[serde(default)]
    pub all: bool,
    /// At most this many, the newest.
    #[serde(default, deserialize_with = "number::whole_usize")]
    #[schemars(schema_with = "number::whole_schema")]
    pub limit: Option<usize>,
}

#[tool_router(router = run_tools, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "The runs of every spec (or of one), newest first: id, spec, kind, state (active, stale = killed, ended), heartbeat, chunk, outcome. The runs of an agent only, unless `all` (recovers, merges, discards, undos too); at most `limit`. What `runner runs --json` prints.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_runs(
        &self,
        Parameters(input): Parameters<ListRunsInput>,
    ) -> Result<Json<RunsView>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            let ctx = super::ctx(&cwd, "list_runs")?;
            let opts = RunsOptions {
                spec: input.spec,
                stale: input.stale,
                all: input.all,
                limit: input.limit,
            };
            let runs = runner::ops::runs::runs(&ctx, opts)?
                .iter()
                .map(RunView::of)
                .collect();
            Ok(RunsView { runs })
        })
        .await
    }

    #[tool(
        description = "One run in detail: its record (spec, kind, state, heartbeat and its age, chunk, outcome, host, pid), its branch, the spec's checkpoint when this run or a later one wrote it, and its last journal lines. What `runner show RUN --json` prints.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn show_run(
        &self,
        Parameters(input): Parameters<RunInput>,
    ) -> Result<Json<RunDetailsView>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            let ctx = super::ctx(&cwd, "show_run")?;
            let opts = ShowOptions {
                run: Some(input.run_id),
            };
            let details = runner::ops::runs::show(&ctx, opts)?;
            Ok(RunDetailsView::of(&details))
        })
        .await
    }

    #[tool(
        description = "Where an interrupted run stands and what to do next: the summary (current chunk, progress, last verification, git status, checkpoint, recent actions, next steps with commands, confidence and its source), or, when the hint matches several runs, the list to choose from (call again with `choice`). Starts nothing: start_run continues the spec.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn summarize_interrupted_run(
        &self,
        Parameters(input): Parameters<SummarizeInput>,
    ) -> Result<Json<SummaryReport>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            let ctx = super::ctx(&cwd, "summarize_interrupted_run")?;
            let req = ResumeOptions {
                hint: input.hint,
                choice: input.choice,
                ..ResumeOptions::default()
            };
            Ok(summarize(&ctx.ws, &req, ctx.now())?.into())
        })
        .await
    }
}
