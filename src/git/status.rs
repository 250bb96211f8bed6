//! What git says about a spec's work, for a summary (`runner resume`): whether its branch
//! exists, how many commits it is ahead of its base, and the staged and changed files of the
//! slot that holds it. Read-only.

use serde::Serialize;

use super::{MainRepo, branch_for, slot_holding};

/// The files and commits of a spec's work.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct WorkStatus {
    pub branch: String,
    pub branch_exists: bool,
    /// The base branch it is compared with (pinned in the plan), if known.
    pub base: Option<String>,
    /// Commits on the branch that the base does not have (null: no branch or no base).
    pub commits_ahead: Option<usize>,
    /// The slot (worktree folder) with the branch checked out.
    pub worktree: Option<String>,
    /// Files staged in that worktree's index.
    pub staged: Vec<String>,
    /// Files changed in that worktree but not staged, new files included.
    pub changed: Vec<String>,
}

/// The most files of each list kept (a summary, not a listing).
const MAX_FILES: usize = 50;

/// The work of `spec` compared with `base`.
pub fn work_status(main: &MainRepo, spec: &str, base: Option<&str>) -> WorkStatus {
    let branch = branch_for(spec);
    let tip = main.branch_tip(&branch);
    let base_tip = base.and_then(|b| main.branch_tip(b));
    let commits_ahead = match (tip, base_tip) {
        (Some(tip), Some(base)) => Some(super::history::count_between(&main.repo, base, tip)),
        _ => None,
    };
    let mut status = WorkStatus {
        branch_exists: tip.is_some(),
        base: base.map(str::to_string),
        commits_ahead,
        ..WorkStatus::default()
    };
    if let Some(slot) = slot_holding(main, &branch) {
        status.worktree = Some(slot.path.display().to_string());
        if let Ok(wt) = slot.open(main) {
            (status.staged, status.changed) = staged_and_changed(&wt);
        }
    }
    status.branch = branch;
    status
}

fn staged_and_changed(wt: &git2::Repository) -> (Vec<String>, Vec<String>) {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(false)
        .include_ignored(false)
        .exclude_submodules(true);
    let (mut staged, mut changed) = (Vec::new(), Vec::new());
    let Ok(statuses) = wt.statuses(Some(&mut opts)) else {
        return (staged, changed);
    };
    let index = git2::Status::INDEX_NEW
        | git2::Status::INDEX_MODIFIED
        | git2::Status::INDEX_DELETED
        | git2::Status::INDEX_RENAMED
        | git2::Status::INDEX_TYPECHANGE;
    let work = git2::Status::WT_NEW
        | git2::Status::WT_MODIFIED
        | git2::Status::WT_DELETED
        | git2::Status::WT_RENAMED
        | git2::Status::WT_TYPECHANGE;
    for entry in statuses.iter() {
        let Some(path) = entry.path() else { continue };
        let s = entry.status();
        if s.intersects(index) && staged.len() < MAX_FILES {
            staged.push(path.to_string());
        }
        if s.intersects(work) && changed.len() < MAX_FILES {
            changed.push(path.to_string());
        }
    }
    (staged, changed)
}
