//! Questions about commits and their ancestry, answered with plain ids and strings, and the
//! commits runner writes that are not a chunk's (merge and squash commits).

use anyhow::Context;
use git2::{Delta, DiffOptions, Oid, Repository};

/// `tip` is `commit` or has it in its history.
pub fn contains(repo: &Repository, tip: Oid, commit: Oid) -> anyhow::Result<bool> {
    Ok(tip == commit || repo.graph_descendant_of(tip, commit)?)
}

/// `contains`, with an unreadable history answering "no".
pub fn contains_or_false(repo: &Repository, tip: Oid, commit: Oid) -> bool {
    contains(repo, tip, commit).unwrap_or(false)
}

/// `descendant` has `ancestor` in its history and is not it; an unreadable history says no.
pub fn strictly_descends(repo: &Repository, descendant: Oid, ancestor: Oid) -> bool {
    repo.graph_descendant_of(descendant, ancestor)
        .unwrap_or(false)
}

/// The best common ancestor of two commits, if they have one.
pub fn merge_base(repo: &Repository, a: Oid, b: Oid) -> Option<Oid> {
    repo.merge_base(a, b).ok()
}

/// The id of the tree a commit records, if the commit exists.
pub fn tree_of(repo: &Repository, commit: Oid) -> Option<Oid> {
    repo.find_commit(commit).ok().map(|c| c.tree_id())
}

/// The commit exists in the repository's object database.
pub fn commit_exists(repo: &Repository, commit: Oid) -> bool {
    repo.find_commit(commit).is_ok()
}

/// A commit's full message, if the commit exists and its message is UTF-8.
pub fn message_of(repo: &Repository, commit: Oid) -> Option<String> {
    repo.find_commit(commit).ok()?.message().map(str::to_string)
}

/// A commit's tree and parents, if the commit exists.
pub fn tree_and_parents(repo: &Repository, commit: Oid) -> Option<(Oid, Vec<Oid>)> {
    repo.find_commit(commit)
        .ok()
        .map(|c| (c.tree_id(), c.parent_ids().collect()))
}

/// The regular files of `commit`'s tree in its folder `dir` (`""`: the top), not below it,
/// each as (name, bytes); a file larger than `cap` bytes, a link or a folder is left out, as is
/// everything when the commit or the folder is missing. For reading a spec folder published
/// as a commit (`fleet`) without writing it anywhere.
pub fn files_at(repo: &Repository, commit: Oid, dir: &str, cap: usize) -> Vec<(String, Vec<u8>)> {
    let Ok(tree) = repo.find_commit(commit).and_then(|c| c.tree()) else {
        return Vec::new();
    };
    let tree = match dir {
        "" => tree,
        dir => match tree
            .get_path(std::path::Path::new(dir))
            .and_then(|e| e.to_object(repo))
            .and_then(|o| o.peel_to_tree())
        {
            Ok(sub) => sub,
            Err(_) => return Vec::new(),
        },
    };
    tree.iter()
        .filter(|e| e.filemode() == i32::from(git2::FileMode::Blob))
        .filter_map(|e| {
            let name = e.name()?.to_string();
            let blob = repo.find_blob(e.id()).ok()?;
            (blob.size() <= cap).then(|| (name, blob.content().to_vec()))
        })
        .collect()
}

/// The commit a branch points at (an error when the branch does not exist).
pub fn branch_commit(repo: &Repository, branch: &str) -> anyhow::Result<Oid> {
    repo.refname_to_id(&format!("refs/heads/{branch}"))
        .with_context(|| format!("reading branch {branch}"))
}

/// Write a commit of the tree `tree` with `parents` (no ref moves) and return its id.
pub fn write_commit(
    repo: &Repository,
    tree: Oid,
    parents: &[Oid],
    message: &str,
) -> anyhow::Result<Oid> {
    let tree = repo.find_tree(tree)?;
    let parents = parents
        .iter()
        .map(|p| repo.find_commit(*p))
        .collect::<Result<Vec<_>, _>>()?;
    let parents: Vec<&git2::Commit> = parents.iter().collect();
    let sig = super::signature(repo)?;
    Ok(repo.commit(None, &sig, &sig, message, &tree, &parents)?)
}

/// The repository has no commit at all: HEAD is unborn and no branch exists. (git2's
/// `is_empty` only knows an unborn HEAD; another branch may already hold commits.)
pub fn has_no_commits(repo: &Repository) -> bool {
    head_is_unborn(repo)
        && repo
            .branches(Some(git2::BranchType::Local))
            .map(|mut b| b.next().is_none())
            .unwrap_or(false)
}

/// HEAD names a branch that has no commit yet (a fresh `git init`).
pub fn head_is_unborn(repo: &Repository) -> bool {
    matches!(repo.head(), Err(e) if e.code() == git2::ErrorCode::UnbornBranch)
}

/// The diff of `commit` with its first parent's tree (with nothing, for a root commit), that
/// tree, and the commit's own tree.
type WithParent<'r> = (Option<git2::Tree<'r>>, git2::Tree<'r>, git2::Diff<'r>);

fn diff_with_parent(repo: &Repository, commit: Oid) -> Result<WithParent<'_>, git2::Error> {
    let c = repo.find_commit(commit)?;
    let parent_tree = match c.parent(0) {
        Ok(p) => Some(p.tree()?),
        Err(_) => None,
    };
    let tree = c.tree()?;
    let diff = repo.diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), None)?;
    Ok((parent_tree, tree, diff))
}

/// The files `commit` added or changed that `tip` (which descends from it) has deleted or put
/// back as they were before `commit`, while no ordinary (one-parent) commit since changed them:
/// the change was dropped by a merge (`git merge -s ours`), not undone by visible work. Cheap:
/// one diff of `commit` with its parent, lookups in the tip's tree, and a walk since `commit`
/// only when something is missing.
pub fn vanished_changes(repo: &Repository, tip: Oid, commit: Oid) -> Vec<String> {
    let found = (|| -> Result<Vec<String>, git2::Error> {
        let (parent_tree, tree, diff) = diff_with_parent(repo, commit)?;
        // The tip is most often `commit` itself (or has its tree): that tree is not read again
        // (a root folder of 800 entries is read, inflated and hashed at every read).
        let tip_id = repo.find_commit(tip)?.tree_id();
        let tip_tree = if tip_id == tree.id() {
            tree
        } else {
            repo.find_tree(tip_id)?
        };
        // Paths as git has them (bytes): a name that is not UTF-8, made UTF-8, would match no
        // path in the walk below, and a file deleted by visible work would count as hidden.
        let mut lost: Vec<std::path::PathBuf> = Vec::new();
        for delta in diff.deltas() {
            if !matches!(delta.status(), Delta::Added | Delta::Modified) {
                continue;
            }
            let Some(path) = delta.new_file().path() else {
                continue;
            };
            // Content and mode: a change of the executable bit alone is a change too. Both
            // modes are read from tree entries, normalised as git reads them (a base may store
            // `100664` or `100775`; `DiffFile::mode` panics on the latter).
            let entry = |tree: &git2::Tree| {
                let e = tree.get_path(path).ok()?;
                Some((e.id(), e.filemode()))
            };
            let at_tip = entry(&tip_tree);
            let before = match (delta.status(), &parent_tree) {
                (Delta::Modified, Some(parent)) => entry(parent),
                _ => None,
            };
            if at_tip.is_none() || at_tip == before {
                lost.push(path.to_path_buf());
            }
        }
        if lost.is_empty() {
            return Ok(Vec::new());
        }
        let mut walk = repo.revwalk()?;
        walk.push(tip)?;
        walk.hide(commit)?;
        for oid in walk {
            let later = repo.find_commit(oid?)?;
            if later.parent_count() != 1 {
                continue;
            }
            let mut opts = DiffOptions::new();
            for p in &lost {
                opts.pathspec(p);
            }
            opts.disable_pathspec_match(true);
            let d = repo.diff_tree_to_tree(
                Some(&later.parent(0)?.tree()?),
                Some(&later.tree()?),
                Some(&mut opts),
            )?;
            let touched: Vec<&std::path::Path> = d
                .deltas()
                .flat_map(|x| [x.old_file().path(), x.new_file().path()])
                .flatten()
                .collect();
            lost.retain(|p| !touched.contains(&p.as_path()));
            if lost.is_empty() {
                break;
            }
        }
        Ok(lost
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect())
    })();
    found.unwrap_or_default()
}

/// Which of `wanted` the history of `tip` contains, found by one walk from `tip` that stops as
/// soon as all are seen (cheap when the work is there: the recorded commits are near the tip).
pub fn reachable_among(repo: &Repository, tip: Oid, wanted: &[Oid]) -> Vec<Oid> {
    let mut left: std::collections::HashSet<Oid> = wanted.iter().copied().collect();
    let mut found = Vec::new();
    let Ok(mut walk) = repo.revwalk() else {
        return found;
    };
    if walk.push(tip).is_err() {
        return found;
    }
    for oid in walk.flatten() {
        if left.is_empty() {
            break;
        }
        if left.remove(&oid) {
            found.push(oid);
        }
    }
    found
}

/// How many commits `tip` has that `base` has not (0 when the history cannot be read).
pub fn count_between(repo: &Repository, base: Oid, tip: Oid) -> usize {
    let Ok(mut walk) = repo.revwalk() else {
        return 0;
    };
    if walk.push(tip).is_err() || walk.hide(base).is_err() {
        return 0;
    }
    walk.count()
}

/// The messages of the commits from `tip` back to (excluding) `base`, newest first, at most
/// `limit` of them (commits whose message is not UTF-8 are left out); `None` when the history
/// cannot be read from `tip`.
pub fn messages_since(
    repo: &Repository,
    tip: Oid,
    base: Option<Oid>,
    limit: usize,
) -> Option<Vec<String>> {
    Some(
        commits_since(repo, tip, base, limit)?
            .into_iter()
            .map(|(_, message)| message)
            .collect(),
    )
}

/// [`messages_since`], each message with its commit's id.
pub fn commits_since(
    repo: &Repository,
    tip: Oid,
    base: Option<Oid>,
    limit: usize,
) -> Option<Vec<(Oid, String)>> {
    let mut walk = repo.revwalk().ok()?;
    walk.push(tip).ok()?;
    if let Some(base) = base {
        let _ = walk.hide(base);
    }
    Some(
        walk.flatten()
            .take(limit)
            .filter_map(|oid| Some((oid, message_of(repo, oid)?)))
            .collect(),
    )
}

/// The files `commit` added or changed (not the ones it deleted), compared with its first
/// parent (with everything, for a root commit); empty when the commit cannot be read.
pub fn added_or_changed_files(repo: &Repository, commit: Oid) -> Vec<String> {
    let found = (|| -> Result<Vec<String>, git2::Error> {
        let (_, _, diff) = diff_with_parent(repo, commit)?;
        Ok(diff
            .deltas()
            .filter(|d| matches!(d.status(), Delta::Added | Delta::Modified))
            .filter_map(|d| d.new_file().path())
            .map(|p| p.to_string_lossy().into_owned())
            .collect())
    })();
    found.unwrap_or_default()
}

/// Which of `paths` the tree of `commit` has (as a file, a folder or anything); none when the
/// commit cannot be read.
pub fn paths_present(repo: &Repository, commit: Oid, paths: &[String]) -> Vec<String> {
    let Ok(tree) = repo.find_commit(commit).and_then(|c| c.tree()) else {
        return Vec::new();
    };
    paths
        .iter()
        .filter(|p| tree.get_path(std::path::Path::new(p.as_str())).is_ok())
        .cloned()
        .collect()
}

/// The commits `tip` has that `base` has not, newest first, when they are a plain line of
/// one-parent commits from `base` (at most `limit` of them): what a run's own commits and an
/// agent's ordinary commits make. `None` for anything else (a merge, a rewritten history, `base`
/// not reached within `limit`, an unreadable commit): the caller then looks at all of history.
pub fn line_since(repo: &Repository, tip: Oid, base: Oid, limit: usize) -> Option<Vec<Oid>> {
    let mut line = Vec::new();
    let mut at = tip;
    while at != base {
        if line.len() == limit {
            return None;
        }
        let commit = repo.find_commit(at).ok()?;
        if commit.parent_count() != 1 {
            return None;
        }
        line.push(at);
        at = commit.parent_id(0).ok()?;
    }
    Some(line)
}
