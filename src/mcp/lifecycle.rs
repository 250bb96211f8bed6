//! The tools that land, throw away or take back a spec's work — `merge_spec`, `discard_spec`,
//! `undo_last` — each under the spec's run lock (the operation's spec guard: busy, code 4, while a
//! run holds it), and `recover` (`runner recover`: interrupted state put right, no agent). There is no
//! question to confirm: calling the tool is the confirmation (the command line's `--yes`).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{Json, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::spec::SpecInput;
use super::{Server, ToolError, answer, ctx};
use runner::ops::Nobody;
use runner::ops::discard::{DiscardOptions, DiscardReport};
use runner::ops::merge::{MergeMode, MergeOptions, MergeReport};
use runner::ops::recover::{RecoverOptions, RecoverReport};
use runner::ops::undo::{UndoOptions, UndoReport};

/// How the work lands.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MergeHow {
    /// A merge commit (the default).
    #[default]
    Merge,
    /// One commit on the base branch listing the chunks.
    Squash,
    /// The merged changes staged on the checked-out base branch, for you to commit.
    NoCommit,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeInput {
    /// The spec: its folder name, its number (007) or a unique part of its name.
    pub spec: Option<String>,
    /// merge (default), squash or no-commit.
    #[serde(default)]
    pub mode: MergeHow,
    /// Keep the spec's branch and worktree after merging.
    #[serde(default)]
    pub keep_worktree: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecoverInput {
    /// Only this spec (default: every spec).
    pub spec: Option<String>,
    /// Say what would be done; change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Also set failed chunks back to pending (their attempts are kept).
    #[serde(default)]
    pub retry_failed: bool,
}

#[tool_router(router = lifecycle_tools, vis = "pub(super)")]
impl Server {
    #[tool(
        description = "Land a spec's work on its base branch (`runner merge --yes`): its branch's tip is backed up first, the merge commit verified before anything is deleted; undo_last takes it back. Refused on a base checkout with uncommitted changes, and while a run holds the spec (code 4).",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn merge_spec(
        &self,
        Parameters(input): Parameters<MergeInput>,
    ) -> Result<Json<MergeReport>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            let mode = match input.mode {
                MergeHow::Merge => MergeMode::Merge,
                MergeHow::Squash => MergeMode::Squash,
                MergeHow::NoCommit => MergeMode::NoCommit,
            };
            let opts = MergeOptions {
                spec: input.spec,
                mode,
                keep_worktree: input.keep_worktree,
            };
            runner::ops::merge::merge(&ctx(&cwd, "merge_spec")?, opts, &Nobody)
        })
        .await
    }

    #[tool(
        description = "Throw a spec's build away and reset its plan to pending (`runner discard --yes`): the branch and any uncommitted work are backed up first; undo_last brings them back.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn discard_spec(
        &self,
        Parameters(input): Parameters<SpecInput>,
    ) -> Result<Json<DiscardReport>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            let opts = DiscardOptions { spec: input.spec };
            runner::ops::discard::discard(&ctx(&cwd, "discard_spec")?, opts, &Nobody)
        })
        .await
    }

    #[tool(
        description = "Reverse the last merge or discard of a spec from its backup (`runner undo`): the base branch back on its pre-merge tip, the spec's branch, worktree and plan restored.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn undo_last(
        &self,
        Parameters(input): Parameters<SpecInput>,
    ) -> Result<Json<UndoReport>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            let opts = UndoOptions { spec: input.spec };
            runner::ops::undo::undo(&ctx(&cwd, "undo_last")?, opts, &Nobody)
        })
        .await
    }

    #[tool(
        description = "Put interrupted state right without running an agent (`runner recover`): orphaned in-progress chunks back to pending (their partial work kept), worktree registrations repaired; the report says what was done per spec. With dry_run, says what it would do.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn recover(
        &self,
        Parameters(input): Parameters<RecoverInput>,
    ) -> Result<Json<RecoverReport>, ToolError> {
        let cwd = self.cwd.clone();
        answer(move || {
            let opts = RecoverOptions {
                spec: input.spec,
                dry_run: input.dry_run,
                retry_failed: input.retry_failed,
            };
            runner::ops::recover::recover(&ctx(&cwd, "recover")?, opts)
        })
        .await
    }
}
