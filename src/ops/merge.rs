//! `runner merge`: land a spec's work on its base branch. The operation takes the spec guard;
//! its machinery is `engine::lifecycle::merge`. A front end that confirms first asks before
//! it calls this (`base_of` names the branch for the question).

pub use crate::engine::lifecycle::merge::{MergeMode, MergeReport};

use super::context::Ctx;
use super::person::Person;

#[derive(Debug, Clone, Default)]
pub struct MergeOptions {
    /// The spec (fuzzy, as everywhere); none: the slot's, or the only one.
    pub spec: Option<String>,
    pub mode: MergeMode,
    /// Keep the spec's branch and worktree after merging.
    pub keep_worktree: bool,
}

pub fn merge(ctx: &Ctx, opts: MergeOptions, person: &dyn Person) -> anyhow::Result<MergeReport> {
    let held = ctx.spec_guard(opts.spec.as_deref(), person, "merge")?;
    crate::engine::lifecycle::merge::merge(
        &ctx.ws,
        &held.paths,
        opts.mode,
        opts.keep_worktree,
        &held.journal,
    )
}

/// The branch spec `name`'s work would land on (for a front end's question).
pub fn base_of(ctx: &Ctx, name: &str) -> anyhow::Result<String> {
    let paths = ctx.ws.spec(name)?;
    let plan = paths.plan.load().ok().flatten();
    crate::engine::lifecycle::base_branch(&ctx.ws, plan.as_ref())
}
