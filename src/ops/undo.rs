//! `runner undo`: reverse the last merge or discard of a spec from its backup refs, and
//! `runner gc`: remove old backups (never automatically).

use anyhow::Context;
use git2::Oid;
use serde::Serialize;
use serde_json::json;

use super::workspace::{SpecPaths, Workspace};
use crate::error::RunnerError;
use crate::git::backup::{self, Backup};
use crate::git::merge::{CheckedOut, where_checked_out};
use crate::git::{Slot, SlotState, dirty_paths};
use crate::plan::parse_plan;
use crate::store::Journal;

#[derive(Debug, Serialize)]
pub struct UndoOutcome {
    pub spec: String,
    pub kind: String,
    pub backup: String,
    pub restored_branch: Option<String>,
    pub restored_worktree: Option<String>,
    pub reset_target: Option<String>,
    pub restored_plan: bool,
    pub notes: Vec<String>,
}

/// Undo the latest backup of the spec. The caller holds the spec's run lock.
pub fn undo(ws: &Workspace, paths: &SpecPaths, journal: &Journal) -> anyhow::Result<UndoOutcome> {
    let repo = &ws.main.repo;
    let Some(b) = backup::list(repo, Some(&paths.name)).pop() else {
        return Err(RunnerError::bad_input(format!(
            "spec {} has no merge or discard to undo (`runner undo --list` shows backups)",
            paths.name
        ))
        .into());
    };
    let mut notes = Vec::new();
    let mut reset_target = None;
    if b.meta.kind == "merge" {
        reset_target = Some(undo_merge_target(ws, &b)?);
    }
    let branch = b.meta.branch.clone();
    let backed_up_tip = backup::ref_target(repo, &b, "branch");
    // The branch (and so the worktree and the plan) is restored only if it is gone or still at
    // the backed-up tip: a build that started again since is newer work, left alone.
    let mut restored_branch = None;
    let branch_matches = match (backed_up_tip, ws.main.branch_tip(&branch)) {
        (Some(tip), None) => {
            ws.main.create_branch(&branch, tip)?;
            restored_branch = Some(branch.clone());
            true
        }
        (Some(tip), Some(now)) if now == tip => true,
        (Some(tip), Some(now)) => {
            notes.push(format!(
                "{branch} was built again since (it is at {now}, the backup has {tip}); the branch, its worktree and the plan were left as they are. The backed-up tip is {}/branch",
                b.refs_prefix.replacen(backup::BACKUP_PREFIX, backup::UNDONE_PREFIX, 1)
            ));
            false
        }
        (None, _) => true,
    };
    let restored_worktree = if branch_matches {
        restore_worktree(ws, &b, &branch, &mut notes)?
    } else {
        None
    };
    let restored_plan = match (&b.plan, branch_matches) {
        (Some(bytes), true) => match parse_plan(paths.plan.path(), bytes) {
            Ok(plan) => {
                // The plan being replaced is kept beside it.
                if let Ok(current) = crate::store::safe::read(paths.plan.path()) {
                    let aside =
                        crate::store::unused_path(&paths.plan.path().with_file_name(format!(
                            "{}.replaced-{}",
                            crate::plan::PLAN_FILE,
                            crate::clock::stamp()
                        )));
                    crate::store::write_atomic(&aside, &current)?;
                }
                paths.plan.replace(&plan)?;
                true
            }
            Err(_) => false,
        },
        _ => false,
    };
    backup::mark_undone(repo, &b)?;
    journal.record(
        "undone",
        None,
        json!({"kind": b.meta.kind, "backup": b.refs_prefix, "restored_branch": restored_branch, "reset_target": reset_target}),
    )?;
    Ok(UndoOutcome {
        spec: paths.name.clone(),
        kind: b.meta.kind.clone(),
        backup: b
            .refs_prefix
            .replacen(backup::BACKUP_PREFIX, backup::UNDONE_PREFIX, 1),
        restored_branch,
        restored_worktree,
        reset_target,
        restored_plan,
        notes,
    })
}

/// Put a merge's target back on its pre-merge tip, only if nothing was committed on top.
fn undo_merge_target(ws: &Workspace, b: &Backup) -> anyhow::Result<String> {
    let repo = &ws.main.repo;
    let target = b
        .meta
        .target
        .clone()
        .context("merge backup without a target")?;
    let before =
        backup::ref_target(repo, b, "target").context("merge backup without target tip")?;
    let now = ws.main.branch_tip(&target).ok_or_else(|| {
        RunnerError::NeedsHuman(format!("the merge target {target} no longer exists"))
    })?;
    let after = b
        .meta
        .target_tip_after
        .as_deref()
        .and_then(|s| Oid::from_str(s).ok());
    let target_ref = format!("refs/heads/{target}");
    let checked_out = where_checked_out(&ws.main, &target);
    match after {
        Some(after) if now == after => {
            if let CheckedOut::Linked(p) = &checked_out {
                return Err(RunnerError::NeedsHuman(format!(
                    "{target} is checked out in {}; runner will not change files there",
                    p.display()
                ))
                .into());
            }
            if checked_out == CheckedOut::Main {
                let dirty = dirty_paths(repo)?;
                if !dirty.is_empty() {
                    return Err(RunnerError::NeedsHuman(format!(
                        "{target} is checked out with uncommitted changes ({}); commit or stash them first",
                        dirty.join(", ")
                    ))
                    .into());
                }
                let tree = repo.find_commit(before)?.into_object();
                let mut checkout = git2::build::CheckoutBuilder::new();
                checkout.safe();
                repo.checkout_tree(&tree, Some(&mut checkout))?;
            }
            repo.reference_matching(&target_ref, before, true, after, "runner undo merge")?;
        }
        // The ref never moved: a --no-commit merge, or a merge stopped before its ref moved.
        // Only the checked-out target's index and files may have changed; they are put back
        // only if they are still exactly what the merge staged.
        _ if now == before => {
            if checked_out == CheckedOut::Main {
                let branch_tip =
                    backup::ref_target(repo, b, "branch").context("backup without branch tip")?;
                let staged = crate::git::merge::preview(repo, before, branch_tip)?.tree;
                let index_tree = repo.index()?.write_tree()?;
                let mut opts = git2::StatusOptions::new();
                opts.include_untracked(true).include_ignored(false);
                let unstaged = repo.statuses(Some(&mut opts))?.iter().any(|e| {
                    let s = e.status();
                    s.is_wt_new()
                        || s.is_wt_modified()
                        || s.is_wt_deleted()
                        || s.is_wt_renamed()
                        || s.is_wt_typechange()
                });
                let head_tree = repo.find_commit(now)?.tree_id();
                if index_tree == head_tree && !unstaged {
                    // Nothing of the merge reached the files: nothing to put back.
                } else if staged == Some(index_tree) && !unstaged {
                    let head = repo.find_object(now, None)?;
                    repo.reset(&head, git2::ResetType::Hard, None)?;
                } else {
                    return Err(RunnerError::NeedsHuman(format!(
                        "the merge's staged changes on {target} were changed since; runner will not reset them. To drop them by hand: git reset --hard (after saving what you want to keep)"
                    ))
                    .into());
                }
            }
        }
        Some(after) => {
            return Err(RunnerError::NeedsHuman(format!(
                "{target} moved since the merge (it is at {now}, the merge left it at {after}); resetting it would drop those commits. Revert the merge instead: git revert -m 1 {after}"
            ))
            .into());
        }
        None => {
            return Err(RunnerError::NeedsHuman(format!(
                "{target} moved since the --no-commit merge was staged (it is at {now}); runner will not reset it"
            ))
            .into());
        }
    }
    Ok(target)
}

/// Put the spec's worktree back if its slot is free; a discard's uncommitted changes go back
/// into it.
fn restore_worktree(
    ws: &Workspace,
    b: &Backup,
    branch: &str,
    notes: &mut Vec<String>,
) -> anyhow::Result<Option<String>> {
    if ws.main.branch_tip(branch).is_none() {
        return Ok(None);
    }
    let slot = Slot::new(&ws.root, None);
    let uncommitted = backup::ref_target(&ws.main.repo, b, "uncommitted");
    // The slot must not be taken by a run while it is restored.
    let Some(_slot_lock) = crate::store::FileLock::try_acquire(&ws.slot_lock(&slot.name))? else {
        notes.push(format!(
            "the slot {} is in use by a run, so the worktree was not restored{}",
            slot.path.display(),
            uncommitted
                .map(|u| format!("; the uncommitted changes are at {u}: `git checkout {u} -- .` in a worktree of {branch} brings them back"))
                .unwrap_or_default()
        ));
        return Ok(None);
    };
    let backed_up_tip = backup::ref_target(&ws.main.repo, b, "branch");
    match slot.inspect(&ws.main) {
        SlotState::Missing => {}
        // Only a worktree still exactly as the backup left it (same tip, nothing uncommitted)
        // gets the changes put back into it; anything else there is newer work.
        SlotState::Ready { branch: Some(held) }
            if held == branch
                && slot.dirty_paths(&ws.main)?.is_empty()
                && slot
                    .open(&ws.main)
                    .ok()
                    .and_then(|r| crate::git::head_commit(&r).ok())
                    == backed_up_tip => {}
        _ => {
            if let Some(u) = uncommitted {
                notes.push(format!(
                    "the slot {} holds other work, so the worktree was not restored; the uncommitted changes are at {}/uncommitted ({u}): `git checkout {u} -- .` in a worktree of {branch} brings them back",
                    slot.path.display(),
                    b.refs_prefix.replacen(backup::BACKUP_PREFIX, backup::UNDONE_PREFIX, 1)
                ));
            }
            return Ok(None);
        }
    }
    if !slot.path.exists() {
        slot.create(&ws.main, branch)?;
    }
    if let Some(u) = uncommitted {
        let wt = slot.open(&ws.main)?;
        let tree = wt.find_commit(u)?.tree()?;
        let mut checkout = git2::build::CheckoutBuilder::new();
        checkout.force();
        wt.checkout_tree(tree.as_object(), Some(&mut checkout))?;
        // The files are back; leave them uncommitted, as they were.
        let head_tree = wt.head()?.peel_to_tree()?;
        let mut index = wt.index()?;
        index.read_tree(&head_tree)?;
        index.write()?;
    }
    Ok(Some(slot.path.display().to_string()))
}

#[derive(Debug, Serialize)]
pub struct GcOutcome {
    pub removed: Vec<String>,
    pub kept: usize,
}

/// Remove backups (and undone backups) older than `days`.
pub fn gc(ws: &Workspace, days: u64, dry_run: bool) -> anyhow::Result<GcOutcome> {
    let repo = &ws.main.repo;
    // Days beyond what a date can hold mean "nothing is that old".
    let Some(cutoff) = i64::try_from(days)
        .ok()
        .and_then(chrono::TimeDelta::try_days)
        .and_then(|d| chrono::Utc::now().checked_sub_signed(d))
    else {
        return Ok(GcOutcome {
            removed: Vec::new(),
            kept: backup::list(repo, None).len(),
        });
    };
    let mut removed = Vec::new();
    let mut kept = 0;
    for prefix in [backup::BACKUP_PREFIX, backup::UNDONE_PREFIX] {
        let metas: Vec<(String, Option<String>)> = repo
            .references_glob(&format!("{prefix}/*/*/meta"))?
            .flatten()
            .filter_map(|r| {
                let name = r.name()?.to_string();
                let commit = r.peel_to_commit().ok()?;
                let when = chrono::DateTime::from_timestamp(commit.time().seconds(), 0)
                    .map(|t| t.to_rfc3339());
                Some((name, when))
            })
            .collect();
        for (name, when) in metas {
            let old = when
                .as_deref()
                .and_then(|w| chrono::DateTime::parse_from_rfc3339(w).ok())
                .is_some_and(|w| w < cutoff);
            let refs_prefix = name.trim_end_matches("/meta").to_string();
            if old {
                if !dry_run {
                    backup::delete(repo, &refs_prefix)?;
                }
                removed.push(refs_prefix);
            } else {
                kept += 1;
            }
        }
    }
    Ok(GcOutcome { removed, kept })
}
