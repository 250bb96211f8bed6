//! runner's own refs under `refs/auto-claude/`: snapshots of uncommitted work that recovery
//! saves before it changes anything, so that nothing is ever lost.

use anyhow::Context;
use git2::{Oid, Repository};

use super::repo::signature;

pub const RECOVERY_PREFIX: &str = "refs/auto-claude/recovery";

/// A ref name component from free text (spec names, chunk ids), escaped so that distinct texts
/// never share a component (`001-a.b` and `001-a_b` stay apart) and the text can be read back
/// (`unescape_component`).
///
/// The rule: ASCII letters, digits, `-` and `_` are kept, except a leading `_` (so that no
/// escaped text can equal runner's own fixed components such as `_detached`); every other byte
/// is written `%XX` (two uppercase hex digits). An escaped text longer than
/// `MAX_COMPONENT` bytes is cut and ends in `%%` and 16 hex digits of the SHA-1 of the whole
/// text (a `%` is otherwise always followed by two hex digits, so that suffix is unambiguous).
pub fn ref_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, byte) in text.bytes().enumerate() {
        let kept = byte.is_ascii_alphanumeric() || byte == b'-' || (byte == b'_' && i > 0);
        if kept {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    if out.is_empty() {
        // Only an empty text: `%` alone is no escape of anything.
        out.push('%');
    }
    if out.len() > MAX_COMPONENT {
        let hash = Oid::hash_object(git2::ObjectType::Blob, text.as_bytes())
            .map(|o| o.to_string())
            .unwrap_or_default();
        let mut cut = MAX_COMPONENT - 18;
        // Never cut inside an escape.
        while out.as_bytes()[..cut]
            .iter()
            .rev()
            .take(2)
            .any(|b| *b == b'%')
        {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("%%");
        out.push_str(&hash[..16]);
    }
    out
}

/// Longest escaped component (file systems allow 255 bytes per name, `.lock` included).
pub const MAX_COMPONENT: usize = 200;

/// The text an escaped component stands for; `None` if it is not one `ref_component` makes
/// in full (a shortened one has lost its tail).
pub fn unescape_component(component: &str) -> Option<String> {
    if component == "%" {
        return Some(String::new());
    }
    let bytes = component.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = component.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The component runner's versions before 0.2 wrote for a text: every byte other than ASCII
/// letters, digits, `-` and `_` became `_`, cut at 80 characters. Not injective (`001-a.b` and
/// `001-a_b` shared one), so it is only read, for backups that record their spec.
pub fn legacy_ref_component(text: &str) -> String {
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
    next_numbered_ref(
        repo,
        &format!(
            "{RECOVERY_PREFIX}/{}/{}",
            ref_component(spec),
            ref_component(chunk)
        ),
    )
}

/// `refs/auto-claude/recovery/_detached/<slot>/<n>`: commits of a slot's detached HEAD. No
/// spec's component can be `_detached` (`ref_component` escapes a leading `_`).
pub fn next_detached_ref(repo: &Repository, slot: &str) -> anyhow::Result<String> {
    next_numbered_ref(
        repo,
        &format!("{RECOVERY_PREFIX}/_detached/{}", ref_component(slot)),
    )
}

fn next_numbered_ref(repo: &Repository, base: &str) -> anyhow::Result<String> {
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
    // A checkout that never completed has no index: staging its folder as it is would record
    // the files not yet written as deleted. Start from HEAD's tree then, and take no deletion.
    let unfinished = crate::git::repo::unfinished_checkout(wt);
    let mut index = wt.index().context("opening the index")?;
    // Stage everything in memory only: the index file is never written, and it is re-read
    // from disk afterwards so that this handle forgets the in-memory staging too.
    let staged = (|| -> Result<Oid, git2::Error> {
        if let Some(tree) = &unfinished {
            index.read_tree(tree)?;
        }
        index.add_all(["*"], git2::IndexAddOption::DEFAULT, None)?;
        if unfinished.is_none() {
            index.update_all(["*"], None)?;
        }
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

/// A ref name git accepts (`refs/...`, no `..`, no control characters, ...).
pub fn is_valid_name(name: &str) -> bool {
    git2::Reference::is_valid_name(name)
}

/// Point the new ref `name` at `commit`; an error if it exists already.
pub fn create(repo: &Repository, name: &str, commit: Oid, message: &str) -> anyhow::Result<()> {
    repo.reference(name, commit, false, message)
        .with_context(|| format!("creating {name}"))?;
    Ok(())
}

/// Point `name` at `commit`, whether or not it exists or points elsewhere.
pub fn set(repo: &Repository, name: &str, commit: Oid, message: &str) -> anyhow::Result<()> {
    repo.reference(name, commit, true, message)
        .with_context(|| format!("setting {name}"))?;
    Ok(())
}

/// Move `name` from `expected` to `commit`; an error (nothing moved) if it is not at `expected`
/// any more: someone moved it meanwhile.
pub fn move_if_at(
    repo: &Repository,
    name: &str,
    commit: Oid,
    expected: Oid,
    message: &str,
) -> anyhow::Result<()> {
    repo.reference_matching(name, commit, true, expected, message)
        .with_context(|| format!("moving {name}"))?;
    Ok(())
}

/// A ref of this name exists.
pub fn exists(repo: &Repository, name: &str) -> bool {
    repo.find_reference(name).is_ok()
}

/// The commit a ref points at, if the ref exists (a symbolic ref is not followed).
pub fn target(repo: &Repository, name: &str) -> Option<Oid> {
    repo.find_reference(name).ok()?.target()
}

/// Delete the ref `name`; an error if it does not exist or cannot be deleted.
pub fn delete(repo: &Repository, name: &str) -> anyhow::Result<()> {
    repo.find_reference(name)?
        .delete()
        .with_context(|| format!("deleting {name}"))?;
    Ok(())
}

/// Delete the ref `name` if it exists; whether there was one.
pub fn delete_if_present(repo: &Repository, name: &str) -> anyhow::Result<bool> {
    match repo.find_reference(name) {
        Ok(mut r) => {
            r.delete().with_context(|| format!("deleting {name}"))?;
            Ok(true)
        }
        Err(_) => Ok(false),
    }
}

/// Delete the local branch `branch`.
pub fn delete_branch(repo: &Repository, branch: &str) -> anyhow::Result<()> {
    repo.find_branch(branch, git2::BranchType::Local)?
        .delete()
        .with_context(|| format!("deleting branch {branch}"))?;
    Ok(())
}

/// Some branch, or one of runner's refs, has `commit` in its history.
pub fn kept_by_a_branch_or_runner_ref(repo: &Repository, commit: Oid) -> anyhow::Result<bool> {
    for r in repo.references()?.flatten() {
        let Some(name) = r.name() else { continue };
        if !(name.starts_with("refs/heads/") || name.starts_with("refs/auto-claude/")) {
            continue;
        }
        if let Some(tip) = r.target()
            && super::history::contains_or_false(repo, tip, commit)
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The refs matching `glob`, each with the time (seconds since the epoch) of the commit it
/// points at; refs that do not point at a commit are left out.
pub fn commit_times(repo: &Repository, glob: &str) -> anyhow::Result<Vec<(String, i64)>> {
    Ok(repo
        .references_glob(glob)?
        .flatten()
        .filter_map(|r| {
            let name = r.name()?.to_string();
            let commit = r.peel_to_commit().ok()?;
            Some((name, commit.time().seconds()))
        })
        .collect())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_texts_get_distinct_valid_components_that_read_back() {
        let texts = [
            "001-a.b",
            "001-a_b",
            "001-a b",
            "001-a%2Eb",
            "001-a%b",
            "_detached",
            "%5Fdetached",
            "x",
            "",
            "é",
            "%",
            "%%",
            "a/b",
            "a_2Fb",
            "001-feature",
        ];
        let mut seen = std::collections::HashSet::new();
        for t in texts {
            let c = ref_component(t);
            assert!(seen.insert(c.clone()), "{t:?} shares {c}");
            assert!(
                git2::Reference::is_valid_name(&format!("refs/auto-claude/backup/{c}/x")),
                "{t:?} -> {c}"
            );
            assert_eq!(unescape_component(&c).as_deref(), Some(t), "{c}");
        }
        assert_eq!(ref_component("001-feature"), "001-feature");
        assert_eq!(ref_component("001-a_b"), "001-a_b");
        assert_eq!(ref_component("001-a.b"), "001-a%2Eb");
        assert_ne!(ref_component("_detached"), "_detached");
    }

    #[test]
    fn long_texts_are_shortened_injectively() {
        let a = "a".repeat(300);
        let b = format!("{}b", "a".repeat(299));
        let dots = ".".repeat(300);
        for t in [&a, &b, &dots] {
            let c = ref_component(t);
            assert!(c.len() <= MAX_COMPONENT, "{}", c.len());
            assert!(git2::Reference::is_valid_name(&format!("refs/x/{c}/y")));
            assert_eq!(unescape_component(&c), None);
        }
        assert_ne!(ref_component(&a), ref_component(&b));
    }

    #[test]
    fn the_legacy_mapping_is_kept_for_reading_old_refs() {
        assert_eq!(legacy_ref_component("001-a.b"), "001-a_b");
        assert_eq!(legacy_ref_component("001-a_b"), "001-a_b");
    }
}
