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

/// What is on disk at a path a merge writes, as git would store it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnDisk {
    Absent,
    /// A file or symlink, hashed as the blob git would store (filters applied), with its mode.
    Blob(Oid, u32),
    /// A directory with nothing in it (what a checkout leaves for a submodule).
    EmptyDir,
    /// Anything else: a directory with contents, a fifo, an unreadable file.
    Other,
}

/// Whether `now` is exactly what one of the trees has at the path (`None`: the tree lacks it),
/// so that putting the old version back loses nothing. A submodule (gitlink) is matched by an
/// empty directory or nothing, as a checkout leaves it.
pub fn is_tree_version(now: &OnDisk, versions: &[Option<(Oid, u32)>]) -> bool {
    const GITLINK: u32 = 0o160000;
    const LINK: u32 = 0o120000;
    versions.iter().any(|v| match (now, v) {
        (OnDisk::Absent, None) => true,
        (OnDisk::Absent | OnDisk::EmptyDir, Some((_, GITLINK))) => true,
        (OnDisk::Blob(id, mode), Some((want, want_mode))) => {
            id == want && ((*mode == LINK) == (*want_mode == LINK))
        }
        _ => false,
    })
}

/// What is on disk at `rel` in the worktree of `repo`.
fn on_disk(repo: &Repository, root: &std::path::Path, rel: &std::path::Path) -> OnDisk {
    let full = root.join(rel);
    let Ok(meta) = full.symlink_metadata() else {
        return OnDisk::Absent;
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        use std::os::unix::ffi::OsStrExt;
        return match std::fs::read_link(&full) {
            Ok(target) => Oid::hash_object(git2::ObjectType::Blob, target.as_os_str().as_bytes())
                .map(|id| OnDisk::Blob(id, 0o120000))
                .unwrap_or(OnDisk::Other),
            Err(_) => OnDisk::Other,
        };
    }
    if ft.is_dir() {
        return match std::fs::read_dir(&full).map(|mut d| d.next().is_none()) {
            Ok(true) => OnDisk::EmptyDir,
            _ => OnDisk::Other,
        };
    }
    if !ft.is_file() {
        return OnDisk::Other;
    }
    // The blob git would store: through the repository's filters (autocrlf, eol, filters),
    // as `git add` hashes it. It goes into the object store; an unused one is garbage.
    match repo.blob_path(&full) {
        Ok(id) => {
            use std::os::unix::fs::PermissionsExt;
            let exec = meta.permissions().mode() & 0o111 != 0;
            OnDisk::Blob(id, if exec { 0o100755 } else { 0o100644 })
        }
        Err(_) => OnDisk::Other,
    }
}

/// Put the files (and index entries) of the paths that differ between `before` and `merged`
/// back to `before` in the main worktree at `root`, removing files `before` lacks. A path whose
/// content is neither its `before` nor its `merged` version (a file the merge was cut off while
/// writing, or one someone wrote since) is first saved, with everything under it, in a commit
/// on top of `before`'s commit `before_commit`, at a new recovery ref of `spec` (returned) named
/// after `what` (`merge-rollback`, `undo`): nothing is lost, and the rollback never blocks.
pub fn restore_paths(
    repo: &Repository,
    root: &std::path::Path,
    before_commit: Oid,
    merged: Oid,
    spec: &str,
    what: &str,
) -> anyhow::Result<Option<String>> {
    let before_commit = &repo.find_commit(before_commit)?;
    let merged = &repo.find_tree(merged)?;
    let before = before_commit.tree()?;
    let paths = changed_paths(repo, &before, merged)?;
    if paths.is_empty() {
        return Ok(None);
    }
    let entry_at = |tree: &git2::Tree, p: &std::path::Path| {
        tree.get_path(p).ok().map(|e| (e.id(), e.filemode() as u32))
    };
    let foreign: Vec<&std::path::PathBuf> = paths
        .iter()
        .filter(|p| {
            let now = on_disk(repo, root, p);
            !is_tree_version(&now, &[entry_at(&before, p), entry_at(merged, p)])
        })
        .collect();
    let saved = if foreign.is_empty() {
        None
    } else {
        Some(save_paths(repo, root, &foreign, before_commit, spec, what)?)
    };
    crate::failpoint::hit("merge_rollback_saved");
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
    // A path-limited checkout leaves index entries of files that were already gone from disk:
    // set those paths' entries to the old tree explicitly (`git reset -- <paths>`).
    repo.reset_default(Some(before_commit.as_object()), paths.iter())
        .context("putting the index entries back as they were before the merge")?;
    Ok(saved)
}

/// Every path that differs between two trees, old and new names both.
fn changed_paths(
    repo: &Repository,
    before: &git2::Tree,
    merged: &git2::Tree,
) -> anyhow::Result<Vec<std::path::PathBuf>> {
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
    Ok(paths)
}

/// Commit the files at `paths` (relative to `root`; directories with everything under them,
/// symlinks as links) on top of `parent`, at a new recovery ref of `spec`. Returns the ref.
fn save_paths(
    repo: &Repository,
    root: &std::path::Path,
    paths: &[&std::path::PathBuf],
    parent: &git2::Commit,
    spec: &str,
    what: &str,
) -> anyhow::Result<String> {
    let mut index = git2::Index::new()?;
    let mut stack: Vec<std::path::PathBuf> = paths.iter().map(|p| p.to_path_buf()).collect();
    while let Some(rel) = stack.pop() {
        let full = root.join(&rel);
        let Ok(meta) = full.symlink_metadata() else {
            continue;
        };
        let (data, mode) = if meta.file_type().is_symlink() {
            use std::os::unix::ffi::OsStrExt;
            let target = std::fs::read_link(&full)?;
            (target.as_os_str().as_bytes().to_vec(), 0o120000)
        } else if meta.is_dir() {
            for e in std::fs::read_dir(&full)? {
                stack.push(rel.join(e?.file_name()));
            }
            continue;
        } else if meta.is_file() {
            use std::os::unix::fs::PermissionsExt;
            let exec = meta.permissions().mode() & 0o111 != 0;
            let data =
                std::fs::read(&full).with_context(|| format!("saving {}", full.display()))?;
            (data, if exec { 0o100755 } else { 0o100644 })
        } else {
            continue;
        };
        use std::os::unix::ffi::OsStrExt;
        index.add(&git2::IndexEntry {
            ctime: git2::IndexTime::new(0, 0),
            mtime: git2::IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode,
            uid: 0,
            gid: 0,
            file_size: 0,
            id: repo.blob(&data)?,
            flags: 0,
            flags_extended: 0,
            path: rel.as_os_str().as_bytes().to_vec(),
        })?;
    }
    let tree = repo.find_tree(index.write_tree_to(repo)?)?;
    let sig = super::repo::signature(repo)?;
    let message =
        format!("auto-claude: files found when rolling back the interrupted merge of {spec}");
    let commit = repo.commit(None, &sig, &sig, &message, &tree, &[parent])?;
    let name = super::refs::next_recovery_ref(repo, spec, &format!("at-{what}"))?;
    repo.reference(&name, commit, false, &message)
        .with_context(|| format!("creating {name}"))?;
    Ok(name)
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
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
