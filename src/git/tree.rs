//! A working tree's files and index: what differs from HEAD, and putting files back.

use std::path::Path;

use anyhow::Context;
use git2::{Oid, Repository};

/// The tree the index holds now (written to the object database).
pub fn index_tree(repo: &Repository) -> anyhow::Result<Oid> {
    Ok(repo.index()?.write_tree()?)
}

/// Unstaged changes (untracked files included) in `repo`'s working tree.
pub fn has_unstaged(repo: &Repository) -> anyhow::Result<bool> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).include_ignored(false);
    Ok(repo.statuses(Some(&mut opts))?.iter().any(|e| {
        let s = e.status();
        s.is_wt_new()
            || s.is_wt_modified()
            || s.is_wt_deleted()
            || s.is_wt_renamed()
            || s.is_wt_typechange()
    }))
}

/// Move HEAD's branch, the index and the files to `commit` (`git reset --hard`). Untracked
/// files stay (libgit2 ignores `remove_untracked` in a reset).
pub fn reset_hard(repo: &Repository, commit: Oid) -> anyhow::Result<()> {
    let target = repo.find_object(commit, None)?;
    repo.reset(&target, git2::ResetType::Hard, None)?;
    Ok(())
}

/// Write HEAD's files over everything in the working tree and remove untracked files (ignored
/// ones stay): the folder is then exactly HEAD.
pub fn clean_to_head(repo: &Repository) -> anyhow::Result<()> {
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.force().remove_untracked(true);
    repo.checkout_head(Some(&mut checkout))?;
    Ok(())
}

/// Write HEAD's files over the working tree's (untracked files stay): completes a checkout that
/// was cut off.
pub fn force_checkout_head(repo: &Repository) -> anyhow::Result<()> {
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.force();
    repo.checkout_head(Some(&mut checkout))?;
    Ok(())
}

/// Write the tree `tree` into the working tree and the index, refusing to overwrite a file with
/// changes of its own (a safe checkout); HEAD does not move.
pub fn checkout_tree_safely(repo: &Repository, tree: Oid) -> anyhow::Result<()> {
    let tree = repo.find_tree(tree)?;
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.safe();
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))?;
    Ok(())
}

/// Put the files of the commit `snapshot` (uncommitted changes saved earlier) into the working
/// tree and leave them uncommitted: the index is set back to HEAD's tree.
pub fn restore_uncommitted(repo: &Repository, snapshot: Oid) -> anyhow::Result<()> {
    let tree = repo.find_commit(snapshot)?.tree()?;
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.force();
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))
        .context("writing the saved files")?;
    let head_tree = repo.head()?.peel_to_tree()?;
    let mut index = repo.index()?;
    index.read_tree(&head_tree)?;
    index.write()?;
    Ok(())
}

/// Everything in the worktree `wt` (untracked files included, ignored ones not, deletions
/// too), as a tree written to `into`'s object database; the worktree's index file is left as
/// it was (the staging happens in memory only).
pub fn stage_all_in_memory(wt: &Repository, into: &Repository) -> anyhow::Result<Oid> {
    let mut index = wt.index()?;
    let staged = (|| -> Result<Oid, git2::Error> {
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None)?;
        index.update_all(["*"], None)?;
        index.write_tree_to(into)
    })();
    let _ = index.read(true);
    Ok(staged?)
}

/// Every file under `dir` (but `.git`) as a tree, when git cannot help.
pub fn tree_of_folder(repo: &Repository, dir: &Path) -> anyhow::Result<Oid> {
    let mut builder = repo.treebuilder(None)?;
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path)?;
        let (oid, mode) = if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path)?;
            (repo.blob(target.as_os_str().as_encoded_bytes())?, 0o120000)
        } else if meta.is_dir() {
            (tree_of_folder(repo, &path)?, 0o040000)
        } else {
            use std::os::unix::fs::PermissionsExt;
            let exec = meta.permissions().mode() & 0o111 != 0;
            (
                repo.blob_path(&path)?,
                if exec { 0o100755 } else { 0o100644 },
            )
        };
        builder.insert(name.as_encoded_bytes(), oid, mode)?;
    }
    Ok(builder.write()?)
}

/// The worktree's operation in progress, if any, in words.
pub fn operation_in_progress(wt: &Repository) -> Option<String> {
    let what = match wt.state() {
        git2::RepositoryState::Clean => return None,
        git2::RepositoryState::Merge => "merge",
        git2::RepositoryState::Revert | git2::RepositoryState::RevertSequence => "revert",
        git2::RepositoryState::CherryPick | git2::RepositoryState::CherryPickSequence => {
            "cherry-pick"
        }
        git2::RepositoryState::Bisect => "bisect",
        git2::RepositoryState::Rebase
        | git2::RepositoryState::RebaseInteractive
        | git2::RepositoryState::RebaseMerge => "rebase",
        git2::RepositoryState::ApplyMailbox | git2::RepositoryState::ApplyMailboxOrRebase => {
            "git am"
        }
    };
    Some(what.to_string())
}

/// The paths in conflict in the index (each once).
pub fn conflicted_paths(wt: &Repository) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(index) = wt.index()
        && index.has_conflicts()
        && let Ok(conflicts) = index.conflicts()
    {
        for c in conflicts.flatten() {
            let entry = c.our.or(c.their).or(c.ancestor);
            if let Some(e) = entry {
                out.push(String::from_utf8_lossy(&e.path).into_owned());
            }
        }
    }
    out
}

/// Every changed or new file, descending into new folders (which `dirty_paths` lists whole).
pub fn changed_files(wt: &Repository) -> Vec<String> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    wt.statuses(Some(&mut opts))
        .map(|st| {
            st.iter()
                .filter(|e| !e.status().is_wt_deleted() && !e.status().is_index_deleted())
                .filter_map(|e| e.path().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
