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

/// Files from which a checkout into a new worktree is split over threads: below, one thread
/// is as fast.
const PARALLEL_FROM: usize = 200;

/// Write HEAD's files into the new, empty working tree of `repo`, then its index with every
/// file's stat data, as `git worktree add` leaves them (`git status` finds nothing to refresh).
/// `each_file` is called as files are written, from any thread.
///
/// Creating files is most of the time (the kernel's inode allocation), so with more than one
/// core and a large tree the paths are split into contiguous parts, each checked out by its own
/// thread and repository handle (`disable_pathspec_match`: each iterates only its own paths),
/// and the index is written once, last, from the tree and the files' `lstat`. A tree holding a
/// `.gitattributes` is checked out by one thread, as before: its files' filters may depend on
/// an attributes file another thread has not written yet.
pub fn checkout_new_worktree(
    repo: &Repository,
    each_file: &(dyn Fn() + Sync),
) -> anyhow::Result<()> {
    let tree = repo.head()?.peel_to_tree()?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let folder = repo
        .workdir()
        .ok_or_else(|| anyhow::anyhow!("the worktree has no working directory"))?
        .to_path_buf();
    let paths = match splittable_paths(repo, &tree)? {
        Some(paths) if threads > 1 && paths.len() >= PARALLEL_FROM => paths,
        _ => {
            let mut checkout = git2::build::CheckoutBuilder::new();
            checkout.force().progress(|_, _, _| each_file());
            repo.checkout_head(Some(&mut checkout))?;
            return Ok(());
        }
    };
    let tree_id = tree.id();
    let part = paths.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let parts: Vec<_> = paths
            .chunks(part)
            .map(|paths| scope.spawn(|| checkout_paths(&folder, tree_id, paths, each_file)))
            .collect();
        parts.into_iter().try_for_each(|part| {
            part.join()
                .map_err(|_| anyhow::anyhow!("a checkout thread panicked"))?
        })
    })?;
    index_from_files(repo, &tree, &folder)
}

/// Every path of a file (blob, link or gitlink) in `tree`, in tree order, as bytes (names need
/// not be UTF-8); `None` if the tree holds a `.gitattributes` anywhere.
fn splittable_paths(repo: &Repository, tree: &git2::Tree) -> anyhow::Result<Option<Vec<Vec<u8>>>> {
    fn walk(
        repo: &Repository,
        tree: &git2::Tree,
        prefix: &[u8],
        out: &mut Vec<Vec<u8>>,
    ) -> anyhow::Result<bool> {
        for entry in tree.iter() {
            if entry.name_bytes() == b".gitattributes" {
                return Ok(false);
            }
            let mut path = prefix.to_vec();
            path.extend_from_slice(entry.name_bytes());
            if entry.kind() == Some(git2::ObjectType::Tree) {
                path.push(b'/');
                if !walk(repo, &repo.find_tree(entry.id())?, &path, out)? {
                    return Ok(false);
                }
            } else {
                out.push(path);
            }
        }
        Ok(true)
    }
    let mut paths = Vec::new();
    Ok(walk(repo, tree, b"", &mut paths)?.then_some(paths))
}

/// Write the files `paths` of the tree `tree` into the working tree at `folder` (its own
/// repository handle; the index is left alone).
fn checkout_paths(
    folder: &Path,
    tree: Oid,
    paths: &[Vec<u8>],
    each_file: &(dyn Fn() + Sync),
) -> anyhow::Result<()> {
    let repo = Repository::open_ext(
        folder,
        git2::RepositoryOpenFlags::NO_SEARCH,
        std::iter::empty::<&std::ffi::OsStr>(),
    )?;
    let tree = repo.find_tree(tree)?;
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout
        .force()
        .update_index(false)
        .disable_pathspec_match(true)
        .progress(|_, _, _| each_file());
    for path in paths {
        checkout.path(path.as_slice());
    }
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))
        .with_context(|| format!("checking out into {}", folder.display()))?;
    Ok(())
}

/// Set `repo`'s index to `tree` with each file's stat data read from the working tree at
/// `folder` (what a checkout's index update records) and its tree cache filled, and write it.
fn index_from_files(repo: &Repository, tree: &git2::Tree, folder: &Path) -> anyhow::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let mut index = repo.index()?;
    index.read_tree(tree)?;
    let entries: Vec<git2::IndexEntry> = index.iter().collect();
    for mut entry in entries {
        if entry.mode == 0o160000 {
            continue;
        }
        let path = folder.join(std::ffi::OsStr::from_bytes(&entry.path));
        let meta = std::fs::symlink_metadata(&path)
            .with_context(|| format!("reading {} after its checkout", path.display()))?;
        entry.ctime = git2::IndexTime::new(meta.ctime() as i32, meta.ctime_nsec() as u32);
        entry.mtime = git2::IndexTime::new(meta.mtime() as i32, meta.mtime_nsec() as u32);
        entry.dev = meta.dev() as u32;
        entry.ino = meta.ino() as u32;
        entry.uid = meta.uid();
        entry.gid = meta.gid();
        entry.file_size = meta.size() as u32;
        index.add(&entry)?;
    }
    // Each `add` invalidated the index's tree cache; writing the tree fills it again (every
    // tree is in the object database already, so nothing is written there), as the cache
    // `git worktree add` leaves: the first commit then hashes only the folders it changed.
    index
        .write_tree()
        .context("filling the index's tree cache")?;
    index.write().context("writing the index")?;
    Ok(())
}
