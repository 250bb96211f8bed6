//! Backups before anything destructive: `refs/auto-claude/backup/<spec>/<stamp>/…`, where
//! `<spec>` is the spec name escaped by `refs::ref_component` (one spec, one folder).
//!
//! A backup is a set of refs: `branch` (the spec branch's tip), `target` (a merge target's tip
//! before the merge), `uncommitted` (a commit of the worktree's uncommitted changes), and `meta`:
//! a parentless commit whose tree holds `backup.json` (what happened) and the plan as it was
//! before, so that undo needs nothing outside git. After an undo the refs move to
//! `refs/auto-claude/undone/…`: nothing is ever deleted except by `runner gc`.

use anyhow::Context;
use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use super::refs::{legacy_ref_component, ref_component};
use super::repo::signature;

pub const BACKUP_PREFIX: &str = "refs/auto-claude/backup";
pub const UNDONE_PREFIX: &str = "refs/auto-claude/undone";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupMeta {
    /// `merge` or `discard`.
    pub kind: String,
    pub spec: String,
    pub time: String,
    pub stamp: String,
    pub branch: String,
    pub branch_tip: Option<String>,
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub target_tip_before: Option<String>,
    #[serde(default)]
    pub target_tip_after: Option<String>,
    /// `merge`, `squash` or `no-commit` for a merge.
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub uncommitted: Option<String>,
}

/// A backup found in the repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Backup {
    /// Flat in JSON: one object per backup (docs/json.md).
    #[serde(flatten)]
    pub meta: BackupMeta,
    pub refs_prefix: String,
    /// The plan as it was before the operation, if there was one.
    #[serde(skip)]
    pub plan: Option<Vec<u8>>,
}

/// The refs prefix of `spec`'s backup with `stamp`.
pub fn prefix(spec: &str, stamp: &str) -> String {
    format!("{BACKUP_PREFIX}/{}/{stamp}", ref_component(spec))
}

/// A stamp no backup of `spec` uses yet (sortable: time, then a counter). Every ref name is
/// checked, not only `meta`: a backup cut off half-written (or rolled back) must not make the
/// next one collide, even within the same second.
pub fn new_stamp(repo: &Repository, spec: &str) -> String {
    let base = crate::clock::stamp();
    let taken = |pre: &str| {
        repo.references_glob(&format!("{pre}/*"))
            .map(|mut refs| refs.next().is_some())
            .unwrap_or(false)
    };
    for n in 0..10_000 {
        let stamp = if n == 0 {
            base.clone()
        } else {
            format!("{base}-{n:02}")
        };
        // Unique among undone backups too: an undo moves a backup's refs there by name.
        let pre = prefix(spec, &stamp);
        let undone = pre.replacen(BACKUP_PREFIX, UNDONE_PREFIX, 1);
        if !taken(&pre) && !taken(&undone) {
            return stamp;
        }
    }
    format!("{base}-{}", std::process::id())
}

/// Write a backup: its refs and its meta commit. Returns the refs prefix.
pub fn write(
    repo: &Repository,
    meta: &BackupMeta,
    refs: &[(&str, Oid)],
    plan: Option<&[u8]>,
) -> anyhow::Result<String> {
    let pre = prefix(&meta.spec, &meta.stamp);
    for (name, oid) in refs {
        repo.reference(&format!("{pre}/{name}"), *oid, false, "runner backup")
            .with_context(|| format!("creating backup ref {pre}/{name}"))?;
    }
    crate::failpoint::hit("backup_refs_written");
    let mut tree = repo.treebuilder(None)?;
    let meta_blob = repo.blob(&serde_json::to_vec_pretty(meta)?)?;
    tree.insert("backup.json", meta_blob, 0o100644)?;
    if let Some(plan) = plan {
        tree.insert("implementation_plan.json", repo.blob(plan)?, 0o100644)?;
    }
    let tree = repo.find_tree(tree.write()?)?;
    let sig = signature(repo)?;
    let message = format!(
        "runner backup: {} of {} at {}",
        meta.kind, meta.spec, meta.time
    );
    let commit = repo.commit(None, &sig, &sig, &message, &tree, &[])?;
    repo.reference(&format!("{pre}/meta"), commit, false, "runner backup")?;
    Ok(pre)
}

/// The backups of `spec` (or of every spec), oldest first. A spec's backups are those whose
/// recorded spec is exactly `spec`: they are looked for under its escaped component and, for
/// backups written before ref names were escaped, under the old (lossy) one, where another
/// spec's backups may also be.
pub fn list(repo: &Repository, spec: Option<&str>) -> Vec<Backup> {
    let globs = match spec {
        Some(s) => {
            let mut globs = vec![format!("{BACKUP_PREFIX}/{}/*/meta", ref_component(s))];
            let legacy = format!("{BACKUP_PREFIX}/{}/*/meta", legacy_ref_component(s));
            if !globs.contains(&legacy) {
                globs.push(legacy);
            }
            globs
        }
        None => vec![format!("{BACKUP_PREFIX}/*/*/meta")],
    };
    let mut out: Vec<Backup> = globs
        .iter()
        .filter_map(|glob| repo.references_glob(glob).ok())
        .flat_map(|refs| {
            refs.flatten()
                .filter_map(|r| read_backup(repo, &r))
                .collect::<Vec<_>>()
        })
        .filter(|b| spec.is_none_or(|s| b.meta.spec == s))
        .collect();
    out.sort_by(|a, b| {
        (stamp_order(&a.meta.stamp), a.refs_prefix.as_str())
            .cmp(&(stamp_order(&b.meta.stamp), b.refs_prefix.as_str()))
    });
    out.dedup_by(|a, b| a.refs_prefix == b.refs_prefix);
    out
}

/// The backup whose meta ref is `meta_ref`, if it exists and reads as one.
pub fn read_backup_at(repo: &Repository, meta_ref: &str) -> Option<Backup> {
    read_backup(repo, &repo.find_reference(meta_ref).ok()?)
}

pub fn read_backup(repo: &Repository, r: &git2::Reference) -> Option<Backup> {
    let name = r.name()?.to_string();
    let commit = r.peel_to_commit().ok()?;
    let tree = commit.tree().ok()?;
    let meta_blob = tree
        .get_name("backup.json")?
        .to_object(repo)
        .ok()?
        .peel_to_blob()
        .ok()?;
    let meta: BackupMeta = serde_json::from_slice(meta_blob.content()).ok()?;
    let plan = tree
        .get_name("implementation_plan.json")
        .and_then(|e| e.to_object(repo).ok()?.peel_to_blob().ok())
        .map(|b| b.content().to_vec());
    Some(Backup {
        meta,
        refs_prefix: name.trim_end_matches("/meta").to_string(),
        plan,
    })
}

/// The commit a backup ref (`branch`, `target`, `uncommitted`) points at, also once an undo
/// cut off half-way moved it to `undone/` already.
pub fn ref_target(repo: &Repository, backup: &Backup, name: &str) -> Option<Oid> {
    let here = format!("{}/{name}", backup.refs_prefix);
    let moved = here.replacen(BACKUP_PREFIX, UNDONE_PREFIX, 1);
    [here, moved]
        .iter()
        .find_map(|r| repo.find_reference(r).ok()?.target())
}

/// Move a backup's refs from `backup/` to `undone/` (kept, no longer the latest backup).
pub fn mark_undone(repo: &Repository, backup: &Backup) -> anyhow::Result<()> {
    move_to_undone(repo, &backup.refs_prefix)
}

/// The refs a backup may have, `meta` last (it is written last and moved last).
pub const REF_NAMES: [&str; 4] = ["branch", "target", "uncommitted", "meta"];

/// The backup refs that exist under `refs_prefix`, by exact name (never a glob: a prefix read
/// from a file could hold glob characters), `meta` last.
fn existing_refs(repo: &Repository, refs_prefix: &str) -> Vec<String> {
    REF_NAMES
        .iter()
        .map(|n| format!("{refs_prefix}/{n}"))
        .filter(|name| repo.find_reference(name).is_ok())
        .collect()
}

/// Move every ref of the backup at `refs_prefix` to `undone/`, `meta` last: while `meta` is
/// still in `backup/` the backup is listed, so a move cut off is finished by running it again.
pub fn move_to_undone(repo: &Repository, refs_prefix: &str) -> anyhow::Result<()> {
    for name in existing_refs(repo, refs_prefix) {
        let new_name = name.replacen(BACKUP_PREFIX, UNDONE_PREFIX, 1);
        let mut r = repo.find_reference(&name)?;
        // force: a ref moved by an undo cut off before it could remove the old name.
        r.rename(&new_name, true, "runner undo")?;
        crate::failpoint::hit("undo_ref_moved");
    }
    Ok(())
}

/// Delete a backup's refs (`runner gc`, a rolled-back operation), by exact name.
pub fn delete(repo: &Repository, refs_prefix: &str) -> anyhow::Result<usize> {
    let names = existing_refs(repo, refs_prefix);
    for name in &names {
        repo.find_reference(name)?.delete()?;
    }
    Ok(names.len())
}

/// Whether `stamp` is one `new_stamp` makes: `YYYYMMDDTHHMMSSZ`, optionally `-<digits>`.
pub fn is_stamp(stamp: &str) -> bool {
    let (base, counter) = match stamp.split_once('-') {
        Some((b, c)) => (b, Some(c)),
        None => (stamp, None),
    };
    let b = base.as_bytes();
    b.len() == 16
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'Z'
        && counter
            .is_none_or(|c| !c.is_empty() && c.len() <= 10 && c.bytes().all(|d| d.is_ascii_digit()))
}

/// How stamps order: by time, then by counter as a number (`-100` after `-99`).
pub fn stamp_order(stamp: &str) -> (&str, u64) {
    match stamp.split_once('-') {
        Some((base, n)) => (base, n.parse().unwrap_or(u64::MAX)),
        None => (stamp, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_recognised_strictly_and_ordered_by_counter_as_a_number() {
        for good in [
            "20261123T040000Z",
            "20261123T040000Z-01",
            "20261123T040000Z-100",
        ] {
            assert!(is_stamp(good), "{good}");
        }
        for bad in [
            "",
            "*",
            "20261123T040000Z-*",
            "20261123T040000Z/x",
            "2026112XT040000Z",
            "20261123T040000Z-",
        ] {
            assert!(!is_stamp(bad), "{bad}");
        }
        assert!(stamp_order("20261123T040000Z-99") < stamp_order("20261123T040000Z-100"));
        assert!(stamp_order("20261123T040000Z") < stamp_order("20261123T040000Z-01"));
        assert!(stamp_order("20261123T040000Z-99") < stamp_order("20261123T040001Z"));
    }
}
