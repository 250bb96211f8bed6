//! Committing a worktree's changes as `git add -A && git commit` would, without reading more of
//! the repository than the change touched.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use git2::{Oid, Repository};

use super::repo::{finish_incomplete_checkout, signature};
use crate::error::RunnerError;

/// Commit everything uncommitted in `repo`'s working tree; `None` if there was nothing.
/// A checkout that never completed is finished first (see `finish_incomplete_checkout`): the
/// commit must not delete files no one deleted.
///
/// What is staged is what `git add -A` stages (see `stage_all`), in one pass over the working
/// tree that trusts the index's stat data; the tree is written from the index's tree cache, so
/// only the folders that changed are hashed again. The tree is written without libgit2's check
/// of every entry of every folder it writes (see `LaxObjects`); `check_staged_tree` checks,
/// instead, each entry that differs from HEAD's tree, so no commit ever names a missing object.
pub fn commit_all(repo: &Repository, message: &str) -> anyhow::Result<Option<Oid>> {
    finish_incomplete_checkout(repo)?;
    let mut index = repo.index().context("opening the index")?;
    commit_index(repo, &mut index, message, None)
}

/// Stage into `index` (the repository's own) what changed, and commit it onto HEAD: every
/// change of the working tree with `paths` `None` (see `stage_all`), else only those under
/// `paths` (see `stage_paths`; the caller vouches that nothing else changed since `index` was
/// last staged and written).
pub(super) fn commit_index(
    repo: &Repository,
    index: &mut git2::Index,
    message: &str,
    paths: Option<&[PathBuf]>,
) -> anyhow::Result<Option<Oid>> {
    if stage_paths(repo, index, paths, true)? {
        // A file staged has other names: a write through one changed them all, and no event
        // named the others. Only the full pass sees them.
        stage_paths(repo, index, None, true)?;
    }
    let parent = repo.head()?.peel_to_commit()?;
    let parent_tree = parent.tree()?;
    let mut tree_id = write_tree_lax(index)?;
    if tree_id != parent_tree.id() && check_staged_tree(repo, index, &parent_tree, tree_id)? {
        // Taking entries out adds none: what was checked still covers the tree.
        tree_id = write_tree_lax(index)?;
    }
    index.write().context("writing the index")?;
    if parent_tree.id() == tree_id {
        return Ok(None);
    }
    let tree = repo.find_tree(tree_id)?;
    let sig = signature(repo)?;
    let oid = repo
        .commit(Some("HEAD"), &sig, &sig, message, &tree, &[&parent])
        .context("committing")?;
    Ok(Some(oid))
}

/// How many threads are writing a tree with strict object creation off (see `LaxObjects`).
static LAX_WRITERS: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

/// libgit2's strict object creation off while it lives. With it on (the default), writing a
/// tree reads the header of the object of EVERY entry of every folder written (open, read and
/// inflate a loose object), so a commit costs as many object reads as the rewritten folders
/// have entries (800 at the root of a worktree of 800 files); git itself only checks that they
/// exist. The option is process-wide, so it is counted: the first guard turns it off and the
/// last one dropped turns it back on (runner never turns it off otherwise, so on is the value
/// to restore). Another thread creating an object meanwhile would only skip that check (never
/// write other bytes); in a run, objects are written by the one task that commits, in turn.
struct LaxObjects;

impl LaxObjects {
    fn new() -> LaxObjects {
        let mut writers = LAX_WRITERS.lock().unwrap_or_else(|e| e.into_inner());
        if *writers == 0 {
            git2::opts::strict_object_creation(false);
        }
        *writers += 1;
        LaxObjects
    }
}

impl Drop for LaxObjects {
    fn drop(&mut self) {
        let mut writers = LAX_WRITERS.lock().unwrap_or_else(|e| e.into_inner());
        *writers -= 1;
        if *writers == 0 {
            git2::opts::strict_object_creation(true);
        }
    }
}

/// Write `index`'s tree without libgit2's check of every entry (see `LaxObjects`); the caller
/// checks the entries that changed (`check_staged_tree`) before committing it.
pub(super) fn write_tree_lax(index: &mut git2::Index) -> anyhow::Result<Oid> {
    let _lax = LaxObjects::new();
    index.write_tree().context("writing the tree")
}

/// Stage into `index` (the repository's own) every change of the working tree, as
/// `git add -A` does: new files (untracked folders descended into, ignored files left out),
/// changes, type changes and deletions. One diff of the index against the working tree finds
/// them; a file whose stat data matches its entry is not read, and one whose stat data changed
/// but not its content gets fresh stat data in the index (as git's index refresh does), so the
/// next commit does not read it again. Each change is then applied exactly as libgit2's
/// `add_all` applies it (`add_path` if the file exists, else `remove_path`).
pub fn stage_all(repo: &Repository, index: &mut git2::Index) -> anyhow::Result<()> {
    stage_paths(repo, index, None, true).map(drop)
}

/// `stage_all` limited to `paths` (relative to the worktree; `None`: everything): what
/// `git add -A -- <paths>` stages. A path stands for itself and everything under it, taken
/// literally (no glob), on both sides: a folder that replaced a file, or a file that replaced
/// a folder, is staged whole. The diff reads only the folders on the way to each path, and
/// stats only the entries the paths name. No path at all stages nothing. With `refresh` off,
/// the index's stat data is left as it was (and the index file is not written).
///
/// Returns, with `paths`, whether a file among them or staged under them has more than one
/// name (a hard link): the other names changed with it though `paths` may not name them (one
/// that the ignore rules hide stages nothing of its own). Then nothing is staged when one of
/// `paths` is such a file: the caller must stage everything.
pub(super) fn stage_paths(
    repo: &Repository,
    index: &mut git2::Index,
    paths: Option<&[PathBuf]>,
    refresh: bool,
) -> anyhow::Result<bool> {
    let mut opts = git2::DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_typechange(true)
        .update_index(refresh);
    if let Some(paths) = paths {
        if paths.is_empty() {
            return Ok(false);
        }
        if paths.iter().any(|p| has_other_names(repo, p)) {
            return Ok(true);
        }
        opts.disable_pathspec_match(true);
        for path in paths {
            opts.pathspec(path.as_os_str().as_bytes());
        }
    }
    let diff = repo
        .diff_index_to_workdir(Some(index), Some(&mut opts))
        .context("comparing the index with the working tree")?;
    let mut linked = false;
    for delta in diff.deltas() {
        let (file, exists) = if delta.new_file().exists() {
            (delta.new_file(), true)
        } else {
            (delta.old_file(), false)
        };
        let Some(bytes) = file.path_bytes() else {
            continue;
        };
        let path = Path::new(std::ffi::OsStr::from_bytes(bytes));
        if exists {
            linked |= paths.is_some() && has_other_names(repo, path);
            index.add_path(path)
        } else {
            index.remove_path(path)
        }
        .with_context(|| format!("staging {}", path.display()))?;
    }
    Ok(linked)
}

/// Whether the file at `path` (relative to the worktree) has other names (hard links).
fn has_other_names(repo: &Repository, path: &Path) -> bool {
    repo.workdir().is_some_and(|w| {
        std::fs::symlink_metadata(w.join(path)).is_ok_and(|m| !m.is_dir() && m.nlink() > 1)
    })
}

/// Check the tree `staged` (written without libgit2's strict check, see `LaxObjects`) against
/// HEAD's (`head_tree`), then take out of the index the files the user's ignore rules hide that
/// HEAD does not track. One diff of the two trees (it skips every folder whose id did not
/// change) gives both:
/// - every entry `staged` adds or changes must name an object of its type in the repository,
///   as libgit2's strict check demands (an agent can stage any id with `git update-index
///   --cacheinfo`); a gitlink (a submodule's commit) is not looked for, as neither git nor
///   libgit2 does. Entries equal to HEAD's are HEAD's own: the check does not read them again;
/// - an agent may have staged ignored files with `git add -f`, but runner commits what
///   `git add -A` would (the files stay in the worktree). Each is named in a warning.
///
/// Returns whether any file was taken out of the index.
pub(super) fn check_staged_tree(
    repo: &Repository,
    index: &mut git2::Index,
    head_tree: &git2::Tree,
    staged: Oid,
) -> anyhow::Result<bool> {
    let staged = repo
        .find_tree(staged)
        .map_err(|e| missing_in_tree("", staged, &e))?;
    let diff = repo
        .diff_tree_to_tree(Some(head_tree), Some(&staged), None)
        .map_err(|e| anyhow!("{}; nothing was committed", e.message()))
        .context("comparing the staged tree with HEAD's (the index names a folder that is not in the repository)")?;
    let odb = repo.odb().context("opening the object database")?;
    let mut forced = Vec::new();
    for delta in diff.deltas() {
        let new = delta.new_file();
        let Some(bytes) = new.path_bytes() else {
            continue;
        };
        let path = Path::new(std::ffi::OsStr::from_bytes(bytes));
        if !new.exists() || new.mode() == git2::FileMode::Commit {
            continue;
        }
        let kind = if new.mode() == git2::FileMode::Tree {
            git2::ObjectType::Tree
        } else {
            git2::ObjectType::Blob
        };
        match odb.read_header(new.id()) {
            Ok((_, found)) if found == kind => {}
            Ok((_, found)) => {
                return Err(staged_object_error(
                    path,
                    new.id(),
                    &format!("a {found}, not a {kind}"),
                ));
            }
            Err(e) => return Err(missing_in_tree(&path.display().to_string(), new.id(), &e)),
        }
        if delta.status() == git2::Delta::Added
            && head_tree.get_path(path).is_err()
            && repo.is_path_ignored(path).unwrap_or(false)
        {
            forced.push(path.to_path_buf());
        }
    }
    for path in &forced {
        tracing::warn!(
            "left {} out of the chunk's commit: your ignore rules hide it (it was force-added)",
            path.display()
        );
        index
            .remove_path(path)
            .with_context(|| format!("unstaging {}", path.display()))?;
    }
    Ok(!forced.is_empty())
}

fn missing_in_tree(path: &str, id: Oid, e: &git2::Error) -> anyhow::Error {
    staged_object_error(
        Path::new(path),
        id,
        &format!("not in the repository ({})", e.message()),
    )
}

/// The index names, for `path`, an object the commit cannot refer to.
fn staged_object_error(path: &Path, id: Oid, what: &str) -> anyhow::Error {
    RunnerError::NeedsHuman(format!(
        "the index names object {id} for {}, which is {what}; nothing was committed",
        path.display()
    ))
    .with_hint("an agent may have staged it with `git update-index`: look at `git ls-files -s` in the worktree, fix or remove the entry (`git rm --cached`) and run again")
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn repo_with_files(n: usize) -> (tempfile::TempDir, Repository) {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "main"]);
        for i in 0..n {
            std::fs::write(dir.path().join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
        }
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.txt"), "a\n").unwrap();
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-qm", "base"]);
        let repo = Repository::open(dir.path()).unwrap();
        (dir, repo)
    }

    const GHOST: &str = "0123456789abcdef0123456789abcdef01234567";

    /// An entry naming a missing blob, kept by the index as it is (the file exists and the
    /// entry is marked unchanged, so staging trusts it): the commit fails, naming the path, and
    /// HEAD does not move.
    #[test]
    fn an_entry_naming_a_missing_object_fails_the_commit() {
        for (mode, path) in [("100644", "ghost.txt"), ("100755", "sub/deep/ghost.sh")] {
            let (dir, repo) = repo_with_files(3);
            let head = repo.head().unwrap().target().unwrap();
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(&full, "there\n").unwrap();
            git(
                dir.path(),
                &[
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    &format!("{mode},{GHOST},{path}"),
                ],
            );
            git(dir.path(), &["update-index", "--assume-unchanged", path]);
            let err = commit_all(&repo, "m").unwrap_err();
            assert!(format!("{err:#}").contains(path), "{err:#}");
            assert_eq!(repo.head().unwrap().target(), Some(head));
        }
    }

    /// A blob entry naming a tree fails too; a gitlink naming a commit this repository does
    /// not have is committed, as git commits it.
    #[test]
    fn a_mistyped_entry_fails_and_a_gitlink_is_not_looked_for() {
        let (dir, repo) = repo_with_files(3);
        let tree = git(dir.path(), &["rev-parse", "HEAD^{tree}"]);
        std::fs::write(dir.path().join("t.txt"), "t\n").unwrap();
        git(
            dir.path(),
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("100644,{},t.txt", tree.trim()),
            ],
        );
        git(dir.path(), &["update-index", "--assume-unchanged", "t.txt"]);
        let err = commit_all(&repo, "m").unwrap_err();
        assert!(format!("{err:#}").contains("t.txt"), "{err:#}");
        git(dir.path(), &["rm", "-q", "--cached", "t.txt"]);
        std::fs::remove_file(dir.path().join("t.txt")).unwrap();
        // The failed commit left its staging in this handle's index: open the repository again.
        let repo = Repository::open(dir.path()).unwrap();

        // A submodule never initialised: an empty folder.
        std::fs::create_dir(dir.path().join("sub/module")).unwrap();
        git(
            dir.path(),
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("160000,{GHOST},sub/module"),
            ],
        );
        std::fs::write(dir.path().join("f1.txt"), "changed\n").unwrap();
        let oid = commit_all(&repo, "m").unwrap().expect("a commit");
        let entry = git(dir.path(), &["ls-tree", &oid.to_string(), "sub/module"]);
        assert_eq!(entry, format!("160000 commit {GHOST}\tsub/module\n"));
        assert_eq!(git(dir.path(), &["status", "--porcelain"]), "");
    }
}
