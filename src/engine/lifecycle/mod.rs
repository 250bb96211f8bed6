//! Merge, discard and undo: the machinery that lands, throws away or puts back a spec's work,
//! each all-or-nothing through an intent record (`engine::recovery::lifecycle`), which recovery
//! finishes or rolls back after a crash. The operations in `ops/` call these.

pub mod discard;
pub mod intent;
pub mod merge;
pub mod undo;

use serde::Serialize;

use crate::error::RunnerError;
use crate::git::{Oid, Repository, log_between};
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
            if unborn {
                RunnerError::bad_input("no base branch is pinned for this spec and this repository has no commits yet: nothing has been built to merge")
                    .with_hint("make a first commit, then `runner run`")
            } else {
                RunnerError::bad_input("no base branch is pinned for this spec and HEAD is detached")
                    .with_hint("check out the branch to merge into (git switch NAME), or set [git] base_branch")
            }
            .into()
        })
}

/// A commit as every command lists it (`review`, `merge`): its id, subject, and the chunk it
/// belongs to, if any.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CommitLine {
    pub commit: String,
    pub summary: String,
    pub chunk: Option<String>,
}

/// One line for a person: the short id and the subject.
impl std::fmt::Display for CommitLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = self.commit.get(..10).unwrap_or(&self.commit);
        write!(f, "{short} {}", self.summary)
    }
}

/// The commits on `tip` that `fork` does not have, newest first, each with its chunk.
pub fn commit_lines(
    repo: &Repository,
    plan: Option<&Plan>,
    fork: Oid,
    tip: Oid,
) -> anyhow::Result<Vec<CommitLine>> {
    Ok(log_between(repo, fork, tip)?
        .into_iter()
        .map(|(oid, summary)| CommitLine {
            commit: oid.to_string(),
            chunk: chunk_of(repo, plan, oid, &summary),
            summary,
        })
        .collect())
}

/// The chunk a commit landed: matched against the plan's ids when there is a plan (an id may
/// hold ` - `), else read from the subject.
fn chunk_of(repo: &Repository, plan: Option<&Plan>, oid: Oid, summary: &str) -> Option<String> {
    let Some(plan) = plan else {
        return crate::plan::chunk_id_of_commit(summary).map(str::to_string);
    };
    // runner's own record first: an attempt names the commit it made (or the agent made during
    // it). A subject can be forged (`auto-claude: <other chunk> - …`), so it only speaks for a
    // commit no attempt recorded, and only for a chunk that has no recorded commit of its own.
    let recorded = |c: &crate::plan::Chunk| -> Vec<String> {
        c.attempts().into_iter().filter_map(|a| a.commit).collect()
    };
    let id = oid.to_string();
    if let Some(chunk) = plan.chunks().find(|c| recorded(c).contains(&id)) {
        return Some(chunk.id.clone());
    }
    let message = crate::git::history::message_of(repo, oid)?;
    let pos = plan.chunk_of_commit(&message)?;
    let chunk = plan.chunk(pos);
    recorded(chunk).is_empty().then(|| chunk.id.clone())
}

/// What a rollback says about the files it saved before putting them back.
pub fn saved_note(saved: Option<&str>) -> String {
    saved
        .map(|r| {
            format!(
                " (files found changed were saved first to {r}; `git show --stat {r}` lists them)"
            )
        })
        .unwrap_or_default()
}
