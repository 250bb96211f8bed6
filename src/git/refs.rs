//! runner's own refs under `refs/auto-claude/`: snapshots of uncommitted work that recovery
//! saves before it changes anything, so that nothing is ever lost.

use anyhow::Context;
use git2::{Oid, Repository};

use super::repo::signature;

pub const RECOVERY_PREFIX: &str = "refs/auto-claude/recovery";

/// A ref name component from free text (chunk ids may hold anything).
pub fn ref_component(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// `refs/auto-claude/recovery/<spec>/<chunk>/<n>` with the next free `n`.
pub fn next_recovery_ref(repo: &Repository, spec: &str, chunk: &str) -> anyhow::Result<String> {
    let base = format!(
        "{RECOVERY_PREFIX}/{}/{}",
        ref_component(spec),
        ref_component(chunk)
    );
    let mut highest = 0u32;
    for reference in repo.references_glob(&format!("{base}/*"))?.flatten() {
        if let Some(n) = reference
            .name()
            .and_then(|n| n.rsplit('/').next())
            .and_then(|n| n.parse::<u32>().ok())
        {
            highest = highest.max(n);
        }
    }
    Ok(format!("{base}/{}", highest + 1))
}

/// Commit the worktree's uncommitted state (untracked files included, ignored files not) on
/// top of HEAD, *without* touching HEAD, the index file or any file, and point `refname` at it.
/// Returns `None` if there was nothing uncommitted.
pub fn snapshot_worktree(
    wt: &Repository,
    refname: &str,
    message: &str,
) -> anyhow::Result<Option<Oid>> {
    let head = wt.head()?.peel_to_commit()?;
    let mut index = wt.index().context("opening the index")?;
    // Stage everything in memory only: the index file is never written, and it is re-read
    // from disk afterwards so that this handle forgets the in-memory staging too.
    let staged = (|| -> Result<Oid, git2::Error> {
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None)?;
        index.update_all(["*"], None)?;
        index.write_tree()
    })();
    let _ = index.read(true);
    let tree_id = staged.context("staging the worktree in memory")?;
    if tree_id == head.tree_id() {
        return Ok(None);
    }
    let tree = wt.find_tree(tree_id)?;
    let sig = signature(wt)?;
    let oid = wt.commit(None, &sig, &sig, message, &tree, &[&head])?;
    // force: a ref left by a crash between its creation and its use (discard's temporary
    // one) must not block the next attempt. Callers pick fresh names otherwise.
    wt.reference(refname, oid, true, message)
        .with_context(|| format!("creating {refname}"))?;
    Ok(Some(oid))
}

/// Every recovery ref of a spec, with the commit it points at.
pub fn recovery_refs(repo: &Repository, spec: &str) -> Vec<(String, Oid)> {
    let glob = format!("{RECOVERY_PREFIX}/{}/*", ref_component(spec));
    let Ok(refs) = repo.references_glob(&glob) else {
        return Vec::new();
    };
    refs.flatten()
        .filter_map(|r| Some((r.name()?.to_string(), r.target()?)))
        .collect()
}
