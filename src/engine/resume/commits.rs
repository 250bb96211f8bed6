//! The third source: the spec's branch and its chunk commits (`auto-claude: <chunk-id> - …`,
//! as `engine::run` commits a chunk's work once it is judged done), with the plan for the
//! chunks' ids, order and every other status.

use std::collections::HashMap;

use crate::git::{MainRepo, Oid};
use crate::plan::{Plan, Status};
use crate::store::checkpoint::ChunkState;

/// How far back a branch is read for chunk commits (the same bound as plan restoration's).
const WALK_LIMIT: usize = 100_000;

/// What the spec's branch says.
#[derive(Debug, Clone, Default)]
pub struct Branch {
    /// The branch's tip, `None` when the branch is gone.
    pub tip: Option<Oid>,
    /// Each chunk with a chunk commit on the branch since its base, and its newest such commit.
    pub chunk_commits: HashMap<String, Oid>,
}

/// Read the branch `branch` back to `base` (a branch name; the whole history when it is unknown
/// or gone) for `plan`'s chunk commits. A subject is matched against the plan's own ids
/// (`Plan::chunk_of_commit`), never split by guess.
pub fn read_branch(main: &MainRepo, plan: &Plan, branch: &str, base: Option<&str>) -> Branch {
    let Some(tip) = main.branch_tip(branch) else {
        return Branch::default();
    };
    let base = base.and_then(|b| main.branch_tip(b));
    let mut chunk_commits = HashMap::new();
    let commits =
        crate::git::history::commits_since(&main.repo, tip, base, WALK_LIMIT).unwrap_or_default();
    for (oid, message) in commits {
        if let Some(pos) = plan.chunk_of_commit(&message) {
            // Newest first: the first one seen is the newest.
            chunk_commits
                .entry(plan.chunk(pos).id.clone())
                .or_insert(oid);
        }
    }
    Branch {
        tip: Some(tip),
        chunk_commits,
    }
}

/// Every chunk of `plan`, in plan order: completed (with its commit) when it has a chunk commit
/// on the branch, else the status the plan gives it.
pub fn rebuild(plan: &Plan, branch: &Branch) -> Vec<ChunkState> {
    plan.chunks()
        .map(|chunk| match branch.chunk_commits.get(&chunk.id) {
            Some(oid) => ChunkState {
                id: chunk.id.clone(),
                status: Status::Completed.as_str().to_string(),
                commit: Some(oid.to_string()),
            },
            None => ChunkState {
                id: chunk.id.clone(),
                status: chunk.status.as_str().to_string(),
                commit: None,
            },
        })
        .collect()
}
