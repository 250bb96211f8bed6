//! `runner discard`: throw a spec's build away — recoverably. Its branch tip and any uncommitted
//! changes are backed up first; the plan and spec stay, reset to pending, to start fresh.

use crate::engine::track::RunTrack;
use crate::store::runs::RunKind;
use serde::Serialize;

use super::intent::{self, Intent, Op};
use crate::error::RunnerError;
use crate::git::backup::{self, BackupMeta};
use crate::git::{branch_for, dirty_paths, slot_holding};
use crate::plan::Plan;
use crate::policy::transition::{self, ChunkEvent, IllegalTransition, StatusChange};
use crate::store::Journal;
use crate::store::workspace::{SpecPaths, Workspace};

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct DiscardReport {
    pub spec: String,
    pub backup: String,
    pub branch_tip: Option<String>,
    pub uncommitted: Option<String>,
    pub removed_worktree: Option<String>,
    /// The recovery ref holding changes made in the worktree after its backup was written.
    pub late_changes: Option<String>,
}

/// Discard the spec's build. The caller holds the spec's run lock.
///
/// All or nothing: refusals come first; then the intent is recorded, the backup written, and
/// `finish` removes the worktree, the branch and the plan's progress. A crash anywhere is
/// finished or rolled back by `runner recover` (see `recovery::lifecycle`). A discard leaves a
/// run record (`Discard`).
pub fn discard(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
) -> anyhow::Result<DiscardReport> {
    let op = || discard_unrecorded(ws, paths, journal);
    let (dir, id) = (&paths.dir, journal.run_id());
    RunTrack::around(dir, id, &paths.name, RunKind::Discard, op, |_| {
        Some("discarded")
    })
}

fn discard_unrecorded(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
) -> anyhow::Result<DiscardReport> {
    intent::finish_interrupted(ws, paths, journal, false)?;
    let repo = &ws.main.repo;
    // An invalid plan stops the discard before anything is touched (it is reset at the end).
    paths.plan.load()?;
    let branch = branch_for(&paths.name);
    let tip = ws.main.branch_tip(&branch);
    let slot = slot_holding(&ws.main, &branch);
    if tip.is_none() && slot.is_none() {
        return Err(RunnerError::bad_input(format!(
            "spec {} has no branch and no worktree: nothing to discard",
            paths.name
        ))
        .into());
    }
    if let Some(slot) = &slot {
        refuse_if_index_locked(&crate::git::slot::admin_dir(&ws.main, slot))?;
    }
    let stamp = backup::new_stamp(repo, &paths.name);
    let mut uncommitted = None;
    if let Some(slot) = &slot {
        let wt = slot.open(&ws.main)?;
        if !dirty_paths(&wt)?.is_empty() {
            // A commit of the uncommitted state (untracked files included), referenced below.
            let tmp_ref = format!(
                "refs/auto-claude/tmp/{}",
                crate::git::refs::ref_component(&paths.name)
            );
            let message = format!(
                "auto-claude: uncommitted changes of {} at discard",
                paths.name
            );
            uncommitted = crate::git::refs::snapshot_worktree(&wt, &tmp_ref, &message)?;
            if uncommitted.is_some() {
                let _ = crate::git::refs::delete_if_present(&wt, &tmp_ref);
            }
        }
    }
    let meta = BackupMeta {
        kind: "discard".into(),
        spec: paths.name.clone(),
        time: crate::clock::now(),
        stamp,
        branch: branch.clone(),
        branch_tip: tip.map(|t| t.to_string()),
        target: None,
        target_tip_before: None,
        target_tip_after: None,
        mode: None,
        uncommitted: uncommitted.map(|u| u.to_string()),
    };
    let mut refs = Vec::new();
    if let Some(t) = tip {
        refs.push(("branch", t));
    }
    if let Some(u) = uncommitted {
        refs.push(("uncommitted", u));
    }
    let intent = Intent {
        branch_tip: meta.branch_tip.clone(),
        slot: slot.as_ref().map(|s| s.name.clone()),
        ..Intent::new(
            Op::Discard,
            &paths.name,
            backup::prefix(&paths.name, &meta.stamp),
            branch.clone(),
        )
    };
    intent::record(paths, &intent)?;
    crate::failpoint::hit("discard_intent_recorded");
    let plan_bytes = crate::store::safe::read(paths.plan.path()).ok();
    let prefix = match backup::write(repo, &meta, &refs, plan_bytes.as_deref()) {
        Ok(prefix) => prefix,
        Err(e) => {
            // Nothing removed yet: forget the partial backup (recover would too).
            let _ = backup::delete(repo, &intent.backup).and_then(|_| intent::clear(paths));
            return Err(e.context("writing the backup; nothing was changed"));
        }
    };
    crate::failpoint::hit("discard_after_backup");
    let late_changes = finish(ws, paths, &intent, journal)?;
    intent::clear(paths)?;
    Ok(DiscardReport {
        late_changes,
        spec: paths.name.clone(),
        backup: prefix,
        branch_tip: meta.branch_tip,
        uncommitted: meta.uncommitted,
        removed_worktree: slot.map(|s| s.path.display().to_string()),
    })
}

/// The steps after the backup, each one skipped if already done, so that recovery can run them
/// again after a crash: remove the slot (if it still holds the branch or is a broken remnant),
/// delete the branch (if still at the backed-up tip), reset the plan, tell the journal.
pub fn finish(
    ws: &Workspace,
    paths: &SpecPaths,
    intent: &Intent,
    journal: &Journal,
) -> anyhow::Result<Option<String>> {
    let repo = &ws.main.repo;
    let saved = intent::remove_own_slot(ws, intent)?;
    crate::failpoint::hit("discard_worktree_removed");
    let tip = ws.main.branch_tip(&intent.branch);
    let backed_up = intent.branch_tip.as_deref().and_then(crate::git::commit_id);
    if tip.is_some() && tip == backed_up {
        crate::git::refs::delete_branch(repo, &intent.branch)?;
    }
    crate::failpoint::hit("discard_branch_deleted");
    // A build started again since (a branch at another tip) keeps its plan.
    let mut reset = Vec::new();
    if (tip.is_none() || tip == backed_up) && paths.plan.exists() {
        reset = paths.plan.update(|plan| Ok(reset_for_fresh_start(plan)?))?;
    }
    for (id, change) in reset {
        journal.status(&id, change)?;
    }
    crate::failpoint::hit("discard_plan_reset");
    journal.write(&crate::store::Event::Discarded(
        crate::store::event::Discarded {
            backup: intent.backup.clone(),
            branch_tip: intent.branch_tip.clone(),
            late_changes: saved.clone(),
        },
    ))?;
    Ok(saved)
}

/// Refuse (exit 3, nothing touched) while a git process holds the index of the git folder
/// `git_dir`: writing under it would fail half-way.
pub fn refuse_if_index_locked(git_dir: &std::path::Path) -> anyhow::Result<()> {
    let lock = git_dir.join("index.lock");
    if lock.exists() {
        return Err(RunnerError::NeedsHuman(format!(
            "{} exists: a git command is using that index (or one crashed). Nothing was changed",
            lock.display(),
        ))
        .with_hint(format!(
            "wait for it to finish, or if no git command is running, delete {} and try again",
            crate::sh(lock.display().to_string())
        ))
        .into());
    }
    Ok(())
}

/// Every chunk back to `pending`, with runner's progress records removed (they are in the
/// backup): a fresh start from the same plan. Returns the status changes, for the journal.
pub fn reset_for_fresh_start(
    plan: &mut Plan,
) -> Result<Vec<(String, StatusChange)>, IllegalTransition> {
    let mut changes = Vec::new();
    for pos in plan.positions().collect::<Vec<_>>() {
        let chunk = plan.chunk_mut(pos);
        let change = transition::apply(chunk, &ChunkEvent::Reset)?;
        if change.from != change.to {
            changes.push((chunk.id.clone(), change));
        }
        for key in [
            "attempts",
            "failure_reason",
            "blocked_reason",
            "started_at",
            "completed_at",
            "session_id",
        ] {
            chunk.remove(key);
        }
    }
    plan.raw.shift_remove("merged");
    Ok(changes)
}
