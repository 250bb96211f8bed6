//! Merging a spec's branch into its base, computed in memory first: nothing on disk moves until
//! runner knows the result is clean.

use std::path::PathBuf;

use anyhow::Context;
use git2::{Delta, DiffOptions, Oid, Repository};
use serde::Serialize;

use super::repo::{MainRepo, head_branch};

/// The outcome of merging `branch_tip` into `target_tip`, computed without touching anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergePreview {
    pub target_tip: Oid,
    pub branch_tip: Oid,
    pub merge_base: Option<Oid>,
    /// The merged tree, if there were no conflicts.
    pub tree: Option<Oid>,
    pub conflicts: Vec<String>,
}

pub fn preview(
    repo: &Repository,
    target_tip: Oid,
    branch_tip: Oid,
) -> anyhow::Result<MergePreview> {
    let ours = repo.find_commit(target_tip)?;
    let theirs = repo.find_commit(branch_tip)?;
    let mut index = repo
        .merge_commits(&ours, &theirs, None)
        .context("merging in memory")?;
    let mut conflicts = Vec::new();
    if index.has_conflicts() {
        for c in index.conflicts()?.flatten() {
            if let Some(e) = c.our.or(c.their).or(c.ancestor) {
                conflicts.push(String::from_utf8_lossy(&e.path).into_owned());
            }
        }
        conflicts.sort();
        conflicts.dedup();
    }
    let tree = if conflicts.is_empty() {
        Some(index.write_tree_to(repo)?)
    } else {
        None
    };
    Ok(MergePreview {
        target_tip,
        branch_tip,
        merge_base: repo.merge_base(target_tip, branch_tip).ok(),
        tree,
        conflicts,
    })
}

/// Put the files (and index entries) of the paths that differ between `before` and `merged`
/// back to `before` in the main worktree at `root`, removing files `before` lacks. Refused
/// (nothing touched) if any of those files is neither its `before` nor its `merged` version:
/// someone wrote it since, and it is theirs.
pub fn restore_paths(
    repo: &Repository,
    root: &std::path::Path,
    before: &git2::Tree,
    merged: &git2::Tree,
) -> anyhow::Result<()> {
    let diff = repo.diff_tree_to_tree(Some(before), Some(merged), None)?;
    let mut paths: Vec<std::path::PathBuf> = Vec::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(p) = file.path()
                && !paths.iter().any(|q| q == p)
            {
                paths.push(p.to_path_buf());
            }
        }
    }
    if paths.is_empty() {
        return Ok(());
    }
    let blob_at = |tree: &git2::Tree, p: &std::path::Path| tree.get_path(p).ok().map(|e| e.id());
    for p in &paths {
        let full = root.join(p);
        let now = match full.symlink_metadata() {
            Ok(m) if m.is_file() => Some(Oid::hash_file(git2::ObjectType::Blob, &full)?),
            Ok(_) => {
                return Err(crate::error::RunnerError::NeedsHuman(format!(
                    "{} is not a plain file any more; runner will not put the merge's files back. Restore them by hand: git checkout HEAD -- .",
                    full.display()
                ))
                .into());
            }
            Err(_) => None,
        };
        if now != blob_at(before, p) && now != blob_at(merged, p) {
            return Err(crate::error::RunnerError::NeedsHuman(format!(
                "{} was changed since the interrupted merge; runner will not overwrite it. Keep what you want, then `git checkout HEAD -- {}`",
                full.display(),
                p.display()
            ))
            .into());
        }
    }
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout
        .force()
        .remove_untracked(true)
        .disable_pathspec_match(true);
    for p in &paths {
        checkout.path(p);
    }
    repo.checkout_tree(before.as_object(), Some(&mut checkout))
        .context("putting the files back as they were before the merge")?;
    Ok(())
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    /// added, modified, deleted, renamed, …
    pub change: String,
    pub additions: usize,
    pub deletions: usize,
}

/// What changed from `from` to `to`, file by file, with line counts.
pub fn file_changes(repo: &Repository, from: Oid, to: Oid) -> anyhow::Result<Vec<FileChange>> {
    let old = repo.find_commit(from)?.tree()?;
    let new = repo.find_commit(to)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut DiffOptions::new()))?;
    let mut out = Vec::new();
    for (i, delta) in diff.deltas().enumerate() {
        let path = delta
            .new_file()
            .path()
            .or_else(|| delta.old_file().path())
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let change = match delta.status() {
            Delta::Added => "added",
            Delta::Deleted => "deleted",
            Delta::Modified => "modified",
            Delta::Renamed => "renamed",
            Delta::Copied => "copied",
            Delta::Typechange => "typechange",
            _ => "changed",
        };
        let (additions, deletions) = match git2::Patch::from_diff(&diff, i)? {
            Some(patch) => {
                let (_, a, d) = patch.line_stats()?;
                (a, d)
            }
            None => (0, 0),
        };
        out.push(FileChange {
            path,
            change: change.into(),
            additions,
            deletions,
        });
    }
    Ok(out)
}

/// The full patch from `from` to `to`, as `git diff` prints it.
pub fn patch_text(repo: &Repository, from: Oid, to: Oid) -> anyhow::Result<String> {
    let old = repo.find_commit(from)?.tree()?;
    let new = repo.find_commit(to)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), None)?;
    let mut text = String::new();
    diff.print(git2::DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            text.push(line.origin());
        }
        text.push_str(&String::from_utf8_lossy(line.content()));
        true
    })?;
    Ok(text)
}

/// Where `branch` is checked out: the main worktree, a linked worktree, or nowhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckedOut {
    Main,
    Linked(PathBuf),
    Nowhere,
}

pub fn where_checked_out(main: &MainRepo, branch: &str) -> CheckedOut {
    if head_branch(&main.repo).as_deref() == Some(branch) {
        return CheckedOut::Main;
    }
    if let Ok(names) = main.repo.worktrees() {
        for name in names.iter().flatten() {
            let Ok(wt) = main.repo.find_worktree(name) else {
                continue;
            };
            if wt.validate().is_err() {
                continue;
            }
            if let Ok(repo) = Repository::open_from_worktree(&wt)
                && head_branch(&repo).as_deref() == Some(branch)
            {
                return CheckedOut::Linked(wt.path().to_path_buf());
            }
        }
    }
    CheckedOut::Nowhere
}
