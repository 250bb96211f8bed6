//! `runner undo`: reverse the last merge or discard of a spec from its backup refs, and
//! `runner gc`: remove old backups (never automatically).

use crate::engine::track::RunTrack;
use crate::store::runs::RunKind;
use anyhow::Context;
use serde::Serialize;

use super::intent::{self, Intent, Op};
use crate::error::RunnerError;
use crate::git::backup::{self, Backup};
use crate::git::merge::{CheckedOut, where_checked_out};
use crate::git::{Oid, Slot, SlotState, dirty_paths, history, tree};
use crate::plan::parse_plan;
use crate::store::Journal;
use crate::store::workspace::{SpecPaths, Workspace};

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct UndoReport {
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
///
/// Refusals come first; then the intent is recorded and the steps run, each skipped if already
/// done, so that `runner recover` (see `recovery::lifecycle`) finishes an undo cut off anywhere.
/// The backup stays in `backup/` until the last step moves it to `undone/`. An undo leaves a
/// run record (`Undo`).
pub fn undo(ws: &Workspace, paths: &SpecPaths, journal: &Journal) -> anyhow::Result<UndoReport> {
    let op = || undo_unrecorded(ws, paths, journal);
    let (dir, id) = (&paths.dir, journal.run_id());
    RunTrack::around(dir, id, &paths.name, RunKind::Undo, op, |_| Some("undone"))
}

fn undo_unrecorded(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
) -> anyhow::Result<UndoReport> {
    // A merge or discard cut off before its point of no return is rolled back: that is its
    // undo, and nothing older is undone with it.
    // An undo cut off is finished: that is what was asked again.
    let _main_lock = intent::lock_main_worktree(ws, &paths.name)?;
    if let Some(done) = intent::finish_interrupted_holding_main(ws, paths, journal)?
        && (done.op == Op::Undo || done.rolled_back)
    {
        return Ok(UndoReport {
            spec: paths.name.clone(),
            kind: match done.op {
                Op::Merge => "merge",
                Op::Discard => "discard",
                Op::Undo => "undo",
            }
            .into(),
            backup: done.intent.backup.clone(),
            restored_branch: None,
            restored_worktree: None,
            reset_target: None,
            restored_plan: false,
            notes: vec![if done.rolled_back {
                format!("{done}: nothing of it remains, and nothing else was undone")
            } else {
                format!("{done}; nothing else was undone")
            }],
        });
    }
    let repo = &ws.main.repo;
    let Some(b) = backup::list(repo, Some(&paths.name)).pop() else {
        return Err(RunnerError::bad_input(format!(
            "spec {} has no merge or discard to undo",
            paths.name
        ))
        .with_hint("`runner undo --list` shows the backups")
        .into());
    };
    // Refusals before anything changes.
    if b.meta.kind == "merge" {
        target_undo(ws, &b, false)?;
    }
    let mut intent = Intent {
        branch_tip: b.meta.branch_tip.clone(),
        slot: Some(crate::git::slot::DEFAULT_SLOT.to_string()),
        ..Intent::new(
            Op::Undo,
            &paths.name,
            b.refs_prefix.clone(),
            b.meta.branch.clone(),
        )
    };
    intent::record(paths, &intent)?;
    crate::failpoint::hit("undo_intent_recorded");
    let outcome = undo_backup(ws, paths, journal, &b, &mut intent)?;
    intent::clear(paths)?;
    Ok(outcome)
}

/// Finish an interrupted undo (see `recovery::lifecycle`).
pub fn finish(
    ws: &Workspace,
    paths: &SpecPaths,
    intent: &Intent,
    journal: &Journal,
) -> anyhow::Result<()> {
    let repo = &ws.main.repo;
    match backup::list(repo, Some(&paths.name))
        .into_iter()
        .find(|b| b.refs_prefix == intent.backup)
    {
        Some(b) => {
            undo_backup(ws, paths, journal, &b, &mut intent.clone())?;
        }
        // Its meta ref moved to `undone/` (moved last): only the other refs may be left, if
        // that backup is this spec's own (an old-style name may be shared by two specs).
        None => {
            let undone_meta = format!(
                "{}/meta",
                intent
                    .backup
                    .replacen(backup::BACKUP_PREFIX, backup::UNDONE_PREFIX, 1)
            );
            let own = backup::read_backup_at(repo, &undone_meta)
                .is_some_and(|b| b.meta.spec == paths.name);
            if !own {
                return Err(RunnerError::NeedsHuman(format!(
                    "the interrupted undo of {} names the backup {}, which is not one of this spec's; nothing was changed",
                    paths.name,
                    intent.backup,
                ))
                .with_hint(format!(
                    "check `runner undo --list`, then delete {}",
                    crate::sh(intent::intent_path(paths).display().to_string())
                ))
                .into());
            }
            backup::move_to_undone(repo, &intent.backup)?
        }
    }
    Ok(())
}

fn undo_backup(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
    b: &Backup,
    intent: &mut Intent,
) -> anyhow::Result<UndoReport> {
    let repo = &ws.main.repo;
    let mut notes = Vec::new();
    let mut reset_target = None;
    if b.meta.kind == "merge" {
        let action = target_undo(ws, b, intent.resetting_target)?;
        if matches!(action, TargetUndo::CheckoutThenRef { .. }) && !intent.resetting_target {
            // From here on a cut-off undo resumes the checkout, whatever it left.
            intent.resetting_target = true;
            intent::record(paths, intent)?;
        }
        let (target, saved) = apply_target_undo(ws, b, action)?;
        if let Some(r) = saved {
            notes.push(format!(
                "files of {target} found changed on the merge's paths were saved to {r} before being put back (`git show --stat {r}` lists them)"
            ));
        }
        reset_target = Some(target);
    }
    crate::failpoint::hit("undo_target_reset");
    let branch = b.meta.branch.clone();
    let backed_up_tip = backup::ref_target(repo, b, "branch");
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
    crate::failpoint::hit("undo_branch_restored");
    let restored_worktree = if branch_matches {
        restore_worktree(ws, paths, b, &branch, intent, &mut notes)?
    } else {
        None
    };
    crate::failpoint::hit("undo_worktree_restored");
    let restored_plan = match (&b.plan, branch_matches) {
        (Some(bytes), true) => match parse_plan(paths.plan.path(), bytes) {
            Ok(plan) => {
                // The plan being replaced is kept beside it (unless it is already the backup's:
                // an undo finished after a crash).
                if let Ok(current) = crate::store::safe::read(paths.plan.path())
                    && parse_plan(paths.plan.path(), &current).ok() != Some(plan.clone())
                {
                    let aside =
                        crate::store::unused_path(&paths.plan.path().with_file_name(format!(
                            "{}.replaced-{}",
                            crate::plan::PLAN_FILE,
                            crate::clock::stamp()
                        )));
                    crate::store::write_atomic(&aside, &current)?;
                }
                paths.plan.replace(&plan)?;
                // The restored plan is the journal's new starting point: the status changes
                // journaled since the backup (a discard's resets) no longer hold, and a plan
                // rebuilt from the journal must not bring them back.
                journal.write(&crate::store::Event::PlanSnapshot(
                    crate::store::event::PlanSnapshot {
                        plan: plan.to_value(),
                    },
                ))?;
                true
            }
            Err(_) => false,
        },
        _ => false,
    };
    crate::failpoint::hit("undo_plan_restored");
    backup::mark_undone(repo, b)?;
    journal.write(&crate::store::Event::Undone(crate::store::event::Undone {
        kind: b.meta.kind.clone(),
        backup: b.refs_prefix.clone(),
        restored_branch: restored_branch.clone(),
        reset_target: reset_target.clone(),
    }))?;
    Ok(UndoReport {
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

/// What undoing a merge does to its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TargetUndo {
    /// Check the old tree out in the main worktree, then move the ref back.
    CheckoutThenRef {
        before: Oid,
        after: Oid,
    },
    /// Move the ref back only (not checked out, or the files were already put back).
    RefOnly {
        before: Oid,
        after: Oid,
    },
    /// Drop the staged merge (`--no-commit`) from the main worktree.
    DropStaged {
        head: Oid,
    },
    Nothing,
}

/// The branch a merge backup's merge landed on.
fn merge_target(b: &Backup) -> anyhow::Result<String> {
    b.meta
        .target
        .clone()
        .context("merge backup without a target")
}

/// Decide how to put a merge's target back, or refuse: only if nothing was committed on top,
/// and never over changes someone made since. `resuming`: this undo already started putting
/// the files back (its intent says so), so the main worktree's changes on the merge's paths
/// are its own half-done checkout (anything else found there is saved before it is replaced).
fn target_undo(ws: &Workspace, b: &Backup, resuming: bool) -> anyhow::Result<TargetUndo> {
    let repo = &ws.main.repo;
    let target = merge_target(b)?;
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
            if checked_out != CheckedOut::Main {
                return Ok(TargetUndo::RefOnly { before, after });
            }
            let dirty = dirty_paths(repo)?;
            if dirty.is_empty() || resuming {
                super::discard::refuse_if_index_locked(ws.main.git_dir())?;
                return Ok(TargetUndo::CheckoutThenRef { before, after });
            }
            // An undo cut off between the files and the ref: the files are already back.
            let before_tree = history::tree_of(repo, before);
            if Some(tree::index_tree(repo)?) == before_tree && !tree::has_unstaged(repo)? {
                return Ok(TargetUndo::RefOnly { before, after });
            }
            Err(RunnerError::NeedsHuman(format!(
                "{target} is checked out with uncommitted changes ({}); commit or stash them first",
                crate::text::capped_list(&dirty)
            ))
            .into())
        }
        // The ref never moved: a --no-commit merge, or a merge stopped before its ref moved.
        // Only the checked-out target's index and files may have changed; they are put back
        // only if they are still exactly what the merge staged.
        _ if now == before => {
            if checked_out != CheckedOut::Main {
                return Ok(TargetUndo::Nothing);
            }
            let branch_tip =
                backup::ref_target(repo, b, "branch").context("backup without branch tip")?;
            let staged = crate::git::merge::preview(repo, before, branch_tip)?.tree;
            let index_tree = tree::index_tree(repo)?;
            let unstaged = tree::has_unstaged(repo)?;
            let head_tree = history::tree_of(repo, now).context("the target's commit is missing")?;
            if index_tree == head_tree && !unstaged {
                // Nothing of the merge reached the files: nothing to put back.
                Ok(TargetUndo::Nothing)
            } else if staged == Some(index_tree) && !unstaged {
                super::discard::refuse_if_index_locked(ws.main.git_dir())?;
                Ok(TargetUndo::DropStaged { head: now })
            } else {
                Err(RunnerError::NeedsHuman(format!(
                    "the merge's staged changes on {target} were changed since; runner will not reset them"
                ))
                .with_hint("to drop them by hand: git reset --hard (after saving what you want to keep)")
                .into())
            }
        }
        Some(after) => Err(RunnerError::NeedsHuman(format!(
            "{target} moved since the merge (it is at {now}, the merge left it at {after}); resetting it would drop those commits"
        ))
        .with_hint(format!("revert the merge instead: git revert -m 1 {after}"))
        .into()),
        None => Err(RunnerError::NeedsHuman(format!(
            "{target} moved since the --no-commit merge was staged (it is at {now}); runner will not reset it"
        ))
        .into()),
    }
}

/// Put the target back; returns its name and the recovery ref of any files saved first.
fn apply_target_undo(
    ws: &Workspace,
    b: &Backup,
    action: TargetUndo,
) -> anyhow::Result<(String, Option<String>)> {
    let repo = &ws.main.repo;
    let target = merge_target(b)?;
    let target_ref = format!("refs/heads/{target}");
    let mut saved = None;
    match action {
        TargetUndo::CheckoutThenRef { before, after } => {
            // Only the merge's paths change; a file there that is neither the merged nor the
            // old version (this undo cut off mid-write, or edited since) is saved first.
            let after_tree =
                history::tree_of(repo, after).context("the merge commit is missing")?;
            saved = crate::git::merge::restore_paths(
                repo,
                &ws.root,
                before,
                after_tree,
                &b.meta.spec,
                "undo",
            )?;
            crate::failpoint::hit("undo_target_files_reset");
            crate::git::refs::move_if_at(repo, &target_ref, before, after, "runner undo merge")?;
        }
        TargetUndo::RefOnly { before, after } => {
            crate::git::refs::move_if_at(repo, &target_ref, before, after, "runner undo merge")?;
        }
        TargetUndo::DropStaged { head } => tree::reset_hard(repo, head)?,
        TargetUndo::Nothing => {}
    }
    Ok((target, saved))
}

/// Put the spec's worktree back if its slot is free; a discard's uncommitted changes go back
/// into it.
fn restore_worktree(
    ws: &Workspace,
    paths: &SpecPaths,
    b: &Backup,
    branch: &str,
    intent: &mut Intent,
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
    // A creation cut off (this undo's or a run's) left a half-made slot no one worked in:
    // removed here, it is made afresh below, never taken for a slot to fill.
    slot.finish_interrupted_create(&ws.main, &ws.slot_create_marker(&slot.name))?;
    let backed_up_tip = backup::ref_target(&ws.main.repo, b, "branch");
    // An undo cut off while it filled the slot: what is there is its own half-done work.
    let resuming = intent.creating_slot;
    match slot.inspect(&ws.main) {
        SlotState::Missing => {}
        // Only a worktree still exactly as the backup left it (same tip, nothing uncommitted)
        // gets the changes put back into it; anything else there is newer work.
        SlotState::Ready { branch: Some(held) }
            if held == branch
                && (resuming || slot.dirty_paths(&ws.main)?.is_empty())
                && slot
                    .open(&ws.main)
                    .ok()
                    .and_then(|r| crate::git::head_commit(&r).ok())
                    == backed_up_tip => {}
        SlotState::Broken { .. } | SlotState::Unregistered if resuming => {
            crate::git::slot::remove_worktree(&ws.main, &slot)?;
        }
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
    if !resuming {
        intent.creating_slot = true;
        intent::record(paths, intent)?;
    }
    if !matches!(slot.inspect(&ws.main), SlotState::Ready { .. }) {
        crate::git::slot::remove_worktree(&ws.main, &slot)?;
        slot.create(&ws.main, branch, &ws.slot_create_marker(&slot.name))?;
    }
    crate::failpoint::hit("undo_slot_created");
    let wt = slot.open(&ws.main)?;
    if let Some(u) = uncommitted {
        // The files are back; left uncommitted, as they were.
        tree::restore_uncommitted(&wt, u)?;
    } else if resuming {
        // A creation cut off mid-checkout: complete it.
        tree::force_checkout_head(&wt)?;
    }
    Ok(Some(slot.path.display().to_string()))
}

#[derive(Debug, Serialize)]
pub struct GcReport {
    pub removed: Vec<String>,
    pub kept: usize,
    /// The age limit applied, in days (the text says it; the JSON never had it).
    #[serde(skip)]
    pub days: u64,
}

/// Remove backups (and undone backups) older than `days`.
pub fn gc(ws: &Workspace, days: u64, dry_run: bool) -> anyhow::Result<GcReport> {
    let repo = &ws.main.repo;
    // Days beyond what a date can hold mean "nothing is that old".
    let Some(cutoff) = i64::try_from(days)
        .ok()
        .and_then(chrono::TimeDelta::try_days)
        .and_then(|d| chrono::Utc::now().checked_sub_signed(d))
    else {
        return Ok(GcReport {
            removed: Vec::new(),
            kept: backup::list(repo, None).len(),
            days,
        });
    };
    let pending = pending_backups(ws);
    let mut removed = Vec::new();
    let mut kept = 0;
    for prefix in [backup::BACKUP_PREFIX, backup::UNDONE_PREFIX] {
        let metas: Vec<(String, Option<String>)> =
            crate::git::refs::commit_times(repo, &format!("{prefix}/*/*/meta"))?
                .into_iter()
                .map(|(name, seconds)| {
                    let when = chrono::DateTime::from_timestamp(seconds, 0).map(|t| t.to_rfc3339());
                    (name, when)
                })
                .collect();
        for (name, when) in metas {
            let old = when
                .as_deref()
                .and_then(|w| chrono::DateTime::parse_from_rfc3339(w).ok())
                .is_some_and(|w| w < cutoff);
            let refs_prefix = name.trim_end_matches("/meta").to_string();
            let in_use = pending.contains(&refs_prefix.replacen(
                backup::UNDONE_PREFIX,
                backup::BACKUP_PREFIX,
                1,
            ));
            if old && !in_use {
                if !dry_run {
                    backup::delete(repo, &refs_prefix)?;
                }
                removed.push(refs_prefix);
            } else {
                kept += 1;
            }
        }
    }
    Ok(GcReport {
        removed,
        kept,
        days,
    })
}

/// The backups named by an interrupted merge, discard or undo still pending (any spec's
/// `lifecycle.json`, read leniently: even a record recover refuses keeps its backup from gc).
fn pending_backups(ws: &Workspace) -> std::collections::BTreeSet<String> {
    crate::store::spec::list(&ws.specs_dir)
        .iter()
        .filter_map(|name| ws.spec(name).ok())
        .filter_map(|paths| crate::store::safe::read(intent::intent_path(&paths)).ok())
        .filter_map(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .filter_map(|v| v.get("backup")?.as_str().map(str::to_string))
        .collect()
}
