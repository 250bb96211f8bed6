//! `runner discard`: throw a spec's build away — recoverably. Its branch tip and any uncommitted
//! changes are backed up first; the plan and spec stay, reset to pending, to start fresh.

use serde::Serialize;
use serde_json::json;

use super::workspace::{SpecPaths, Workspace};
use crate::error::RunnerError;
use crate::git::backup::{self, BackupMeta};
use crate::git::{branch_for, dirty_paths, slot_holding};
use crate::plan::{Plan, Status};
use crate::store::Journal;

#[derive(Debug, Serialize)]
pub struct DiscardOutcome {
    pub spec: String,
    pub backup: String,
    pub branch_tip: Option<String>,
    pub uncommitted: Option<String>,
    pub removed_worktree: Option<String>,
}

/// Discard the spec's build. The caller holds the spec's run lock.
pub fn discard(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
) -> anyhow::Result<DiscardOutcome> {
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
                let _ = wt.find_reference(&tmp_ref).and_then(|mut r| r.delete());
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
    let plan_bytes = crate::store::safe::read(paths.plan.path()).ok();
    let prefix = backup::write(repo, &meta, &refs, plan_bytes.as_deref())?;
    crate::failpoint::hit("discard_after_backup");

    let removed_worktree = match &slot {
        Some(slot) => {
            crate::git::slot::remove_worktree(&ws.main, slot)?;
            Some(slot.path.display().to_string())
        }
        None => None,
    };
    if tip.is_some() {
        repo.find_branch(&branch, git2::BranchType::Local)?
            .delete()?;
    }
    if paths.plan.exists() {
        paths.plan.update(|plan| {
            reset_for_fresh_start(plan);
            Ok(())
        })?;
    }
    journal.record(
        "discarded",
        None,
        json!({"backup": prefix, "branch_tip": meta.branch_tip, "uncommitted": meta.uncommitted}),
    )?;
    Ok(DiscardOutcome {
        spec: paths.name.clone(),
        backup: prefix,
        branch_tip: meta.branch_tip,
        uncommitted: meta.uncommitted,
        removed_worktree,
    })
}

/// Every chunk back to `pending`, with runner's progress records removed (they are in the
/// backup): a fresh start from the same plan.
pub fn reset_for_fresh_start(plan: &mut Plan) {
    for pos in plan.positions().collect::<Vec<_>>() {
        let chunk = plan.chunk_mut(pos);
        chunk.set_status(Status::Pending);
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
}
