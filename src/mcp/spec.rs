//! The tools that make and build a spec: `create_spec` (`runner new`, detection of similar work
//! included: the candidates come back and the caller chooses, no question is asked),
//! `start_run` (`runner run --spec S --auto-continue` in the background: the run id at once,
//! the run going on after the session ends), `show_plan` (phases, chunks, statuses) and
//! `review_spec` (`runner review --json`).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Json, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Server, ToolError, answer, ctx, number};
use runner::ops::Nobody;
use runner::ops::new::{NewOptions, NewReport};
use runner::ops::plan::{PlanOptions, PlanReport};
use runner::ops::review::{ReviewOptions, ReviewReport};
use runner::ops::start::{StartOptions, StartReport};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSpecInput {
    /// What to build, in a sentence or more: the spec's task description (and its spec.md,
    /// unless spec_text is given).
    pub description: String,
    /// The slug of the spec's folder (NNN-SLUG) instead of one made from the description:
    /// lowercase ASCII letters, digits and single dashes, at most 50 characters.
    pub name: Option<String>,
    /// Create a new spec without looking for unfinished work like it.
    #[serde(default)]
    pub new_spec: bool,
    /// Continue the Nth unfinished spec found (1-based, from `candidates`) instead of creating.
    #[serde(default, deserialize_with = "number::whole_usize")]
    #[schemars(schema_with = "number::whole_schema")]
    pub choice: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRunInput {
    /// The spec: its folder name, its number (007) or a unique part of its name. Default: the
    /// only spec.
    pub spec: Option<String>,
    /// The agent command for this run, e.g. "claude -p" (the `command` preset; remembered for
    /// the spec).
    pub agent_command: Option<String>,
    /// The agent preset: claude, codex, gemini, aider or command (remembered for the spec).
    pub agent: Option<String>,
    /// Build in .worktrees/auto-claude-NAME instead of .worktrees/auto-claude.
    pub slot: Option<String>,
    /// The branch to start from (pinned for the spec after its first run).
    pub base_branch: Option<String>,
    /// Seconds the agent may take to finish when the run is stopped.
    #[serde(default, deserialize_with = "number::whole")]
    #[schemars(schema_with = "number::whole_schema")]
    pub drain_timeout: Option<u64>,
    /// Dollars the spec may spend over all its runs.
    #[serde(default, deserialize_with = "number::amount")]
    #[schemars(schema_with = "number::amount_schema")]
    pub max_usd: Option<f64>,
    /// Plan the spec if it has no plan yet and stop before any chunk (`runner run
    /// --plan-only`): read it with show_plan, edit it, then start_run again to build it.
    #[serde(default)]
    pub plan_only: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewInput {
    /// The spec: its folder name, its number (007) or a unique part of its name. Default: the
    /// only spec, or the one of the worktree the server runs in.
    pub spec: Option<String>,
    /// Add the whole patch from the merge base to the branch's tip (`diff`).
    #[serde(default)]
    pub diff: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpecInput {
    /// The spec: its folder name, its number (007) or a unique part of its name. Default: the
    /// only spec, or the one of the worktree the server runs in.
    pub spec: Option<String>,
}

#[tool_router(router = spec_tools, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "Create a spec from a description (`runner new`). First looks for unfinished specs like it: when it finds some, it creates nothing and returns them (`created` and `resumed` null, `error` saying a choice is needed); call again with `choice` (1-based) to continue one, or with `new_spec: true` to create anyway. An unfinished spec with the very same description is continued. Starts no run: start_run does.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn create_spec(
        &self,
        Parameters(input): Parameters<CreateSpecInput>,
    ) -> Result<Json<NewReport>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            let opts = NewOptions {
                description: input.description,
                name: input.name,
                new_spec: input.new_spec,
                choice: input.choice,
                ..NewOptions::default()
            };
            let mut report = runner::ops::new::new(&ctx(&cwd, "create_spec")?, opts, &Nobody)?;
            // Candidates and no choice: not a failure here — they are the answer, the caller
            // chooses; anything else that stopped it (a spec with this description being run)
            // is the tool's error.
            if let Some(stopped) = report.stopped.take() {
                let choice_needed = report.created.is_none()
                    && report.resumed.is_none()
                    && !report.candidates.is_empty()
                    && runner::error::exit_code_of(&stopped) == runner::error::exit::BAD_INPUT;
                if !choice_needed {
                    return Err(stopped);
                }
                report.error = Some(runner::error::ErrorReport::of(&stopped));
            }
            Ok(report)
        })
        .await
    }

    #[tool(
        description = "Start or continue a spec's run in the background (`runner run --spec S --auto-continue`: plans it if needed, then builds it chunk by chunk with the agent). Returns the new run's id at once; the run goes on after this session ends. Follow it with show_run, status or show_plan. A spec that is being run is refused (code 4, busy).",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn start_run(
        &self,
        Parameters(input): Parameters<StartRunInput>,
    ) -> Result<Json<StartReport>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            let program = std::env::current_exe()
                .map_err(|e| anyhow::anyhow!("cannot find runner's own program to start: {e}"))?;
            let opts = StartOptions {
                spec: input.spec,
                program,
                agent_command: input.agent_command,
                agent: input.agent,
                slot: input.slot,
                base_branch: input.base_branch,
                drain_timeout: input.drain_timeout,
                max_usd: input.max_usd,
                plan_only: input.plan_only,
            };
            runner::ops::start::start(&ctx(&cwd, "start_run")?, opts, &Nobody)
        })
        .await
    }

    #[tool(
        description = "A spec's plan (`runner plan --json`): its phases in order (and what each waits for), each chunk with its status (pending, in_progress, completed, failed, blocked), its attempts (in words as a run numbers them), its verification in brief and why it failed, the progress, the chunk in progress and the next one.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn show_plan(
        &self,
        Parameters(input): Parameters<SpecInput>,
    ) -> Result<Json<PlanReport>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            let opts = PlanOptions { spec: input.spec };
            runner::ops::plan::plan(&ctx(&cwd, "show_plan")?, opts, &Nobody)
        })
        .await
    }

    #[tool(
        description = "Look at a spec's work before merging it: its commits, the files they change, the plan's progress by phase, the last verifications, what it cost, uncommitted files, and whether it merges cleanly into its base branch. What `runner review --json` prints.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn review_spec(
        &self,
        Parameters(input): Parameters<ReviewInput>,
    ) -> Result<Json<ReviewReport>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            let opts = ReviewOptions {
                spec: input.spec,
                diff: input.diff,
            };
            runner::ops::review::review(&ctx(&cwd, "review_spec")?, opts, &Nobody)
        })
        .await
    }
}
