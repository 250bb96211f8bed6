//! Gathering the facts recovery decides on, from git: where the branch is, what changed since
//! the attempt started, whether the worktree is mid-operation or has conflicts.

use std::io::Read;

pub use crate::git::tree::operation_in_progress;

use super::decide::ChunkFacts;
use crate::git::history::count_between;
use crate::git::tree::changed_files;
use crate::git::{MainRepo, Repository, branch_for, dirty_paths, history};
use crate::plan::{Chunk, verification};

/// Files in conflict in the index, and changed files that carry conflict markers.
pub fn conflicts(wt: &Repository, dirty: &[String]) -> Vec<String> {
    let mut out = crate::git::tree::conflicted_paths(wt);
    let Some(root) = crate::git::repo::work_folder(wt) else {
        return out;
    };
    for path in dirty {
        if out.contains(path) {
            continue;
        }
        if has_conflict_markers(&root.join(path)) {
            out.push(path.clone());
        }
    }
    out
}

/// A `<<<<<<< ` line followed later by `=======` and `>>>>>>> ` lines. Files over 2 MB are
/// not read.
fn has_conflict_markers(path: &std::path::Path) -> bool {
    let Ok(file) = crate::store::safe::open_read(path) else {
        return false;
    };
    let mut text = String::new();
    if file.take(2 << 20).read_to_string(&mut text).is_err() {
        return false;
    }
    let mut stage = 0;
    for line in text.lines() {
        stage = match (stage, line) {
            (0, l) if l.starts_with("<<<<<<< ") || l == "<<<<<<<" => 1,
            (1, "=======") => 2,
            (2, l) if l.starts_with(">>>>>>> ") || l == ">>>>>>>" => return true,
            (s, _) => s,
        };
    }
    false
}

/// The facts about one `in_progress` chunk. `wt` is the worktree holding the spec's branch, if
/// any (without one there are no uncommitted changes to look at).
pub fn chunk_facts(
    main: &MainRepo,
    spec: &str,
    chunk: &Chunk,
    wt: Option<&Repository>,
) -> ChunkFacts {
    let attempt = chunk.last_attempt();
    let tip = main.branch_tip(&branch_for(spec));
    let head = wt.and_then(|r| crate::git::head_commit(r).ok()).or(tip);
    let start = attempt
        .as_ref()
        .and_then(|a| a.start_commit.as_deref())
        .and_then(crate::git::commit_id)
        .filter(|oid| history::commit_exists(&main.repo, *oid));
    let (descends, new_commits) = match (start, head) {
        (Some(start), Some(head)) if start == head => (true, 0),
        (Some(start), Some(head)) if history::strictly_descends(&main.repo, head, start) => {
            (true, count_between(&main.repo, start, head))
        }
        (Some(_), Some(_)) => (false, 0),
        // Without a start commit runner cannot tell new commits from old ones.
        _ => (true, 0),
    };
    let dirty = wt.and_then(|r| dirty_paths(r).ok()).unwrap_or_default();
    let changed_files = wt.map(changed_files).unwrap_or_default();
    ChunkFacts {
        // A chunk marked in progress by another tool (an imported Auto-Claude plan) never had
        // a branch here; only a branch an attempt started on can be "gone".
        branch_exists: tip.is_some() || attempt.as_ref().is_none_or(|a| a.start_commit.is_none()),
        head_descends_from_start: descends,
        new_commits,
        dirty: !dirty.is_empty(),
        operation_in_progress: wt.and_then(operation_in_progress),
        on_branch: wt.is_none_or(|r| {
            crate::git::head_branch(r).as_deref() == Some(branch_for(spec).as_str())
        }),
        conflicts: wt.map(|r| conflicts(r, &changed_files)).unwrap_or_default(),
        reported_done: attempt.as_ref().and_then(|a| a.reported.as_deref()) == Some("done"),
        has_check: verification::command_check(chunk).is_some(),
        // Only an attempt runner started (it has a start commit) ran in a worktree here.
        worktree_missing: wt.is_none()
            && tip.is_some()
            && attempt.as_ref().is_some_and(|a| a.start_commit.is_some()),
    }
}
