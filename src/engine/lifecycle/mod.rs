//! Merge, discard and undo: the machinery that lands, throws away or puts back a spec's work,
//! each all-or-nothing through an intent record (`engine::recovery::lifecycle`), which recovery
//! finishes or rolls back after a crash. The operations in `ops/` call these.

pub mod discard;
pub mod merge;
pub mod undo;

use crate::error::RunnerError;
use crate::plan::Plan;
use crate::store::Workspace;

/// The base branch a spec merges into: pinned in its plan, else the config, else the branch
/// checked out now.
pub fn base_branch(ws: &Workspace, plan: Option<&Plan>) -> anyhow::Result<String> {
    if let Some(b) = plan.and_then(|p| p.str_field("base_branch")) {
        return Ok(b.to_string());
    }
    let config = ws.config()?;
    config
        .git
        .base_branch
        .or_else(|| ws.main.current_branch())
        .ok_or_else(|| {
            // HEAD on a branch with no commit yet is unborn, not detached.
            let unborn = crate::git::history::head_is_unborn(&ws.main.repo);
            RunnerError::bad_input(if unborn {
                "no base branch is pinned for this spec and this repository has no commits yet: nothing has been built to merge (make a first commit, then `runner run`)"
            } else {
                "no base branch is pinned for this spec and HEAD is detached: check out the branch to merge into (git switch NAME), or set [git] base_branch"
            })
            .into()
        })
}
