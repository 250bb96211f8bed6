//! `recover --all` over many specs: most have nothing to recover. A read-only look decides
//! "certainly nothing to do here" before any lock is taken or written; every doubt sends the
//! spec down the full locked path (`recover_spec`), which looks again under the lock.
//!
//! Each question is the one a step of `recover_spec` asks (see `spec.rs`), in its read-only
//! form: a live agent left by a dead run, temp files of unfinished writes, a plan that does not
//! read or vanished during a run, a chunk in progress (a dead session to settle, an
//! interrupted chunk), a git lock file, a broken worktree, completed work missing from the
//! branch, failed chunks to retry. A spec someone holds (its run lock, its slot's lock) is
//! left to the full path too, which reports it busy.

use super::integrity;
use super::procs;
use super::repair;
use crate::git::{MainRepo, Slot, SlotState, branch_for};
use crate::plan::{Plan, Status};
use crate::store::workspace::{SpecPaths, Workspace};
use crate::store::{LockState, lock};

/// What every spec's look shares: the slots, inspected once.
pub struct QuietLook {
    /// Each slot, with the branch checked out there when it is ready.
    slots: Vec<(Slot, SlotState)>,
    /// The branches registered for the slots that exist but do not open (see
    /// `integrity::unopenable_slot`).
    broken_for: Vec<Option<String>>,
}

impl QuietLook {
    pub fn new(main: &MainRepo) -> QuietLook {
        let slots: Vec<(Slot, SlotState)> = Slot::all(main)
            .into_iter()
            .map(|slot| {
                let state = slot.inspect(main);
                (slot, state)
            })
            .collect();
        let broken_for = slots
            .iter()
            .filter(|(slot, state)| slot.path.exists() && matches!(state, SlotState::Broken { .. }))
            .map(|(slot, _)| slot.registered_branch(main))
            .collect();
        QuietLook { slots, broken_for }
    }

    /// Certainly nothing for recovery to do in this spec: `false` at the least doubt.
    pub fn nothing_to_do(&self, ws: &Workspace, paths: &SpecPaths, retry_failed: bool) -> bool {
        self.nothing_to_do_or_doubt(ws, paths, retry_failed)
            .unwrap_or(false)
    }

    fn nothing_to_do_or_doubt(
        &self,
        ws: &Workspace,
        paths: &SpecPaths,
        retry_failed: bool,
    ) -> Option<bool> {
        let name = &paths.name;
        let branch = branch_for(name);
        // Someone holds the spec (a run, another recovery): the full path reports it busy.
        if !matches!(lock::probe(&paths.run_lock).ok()?, LockState::Free) {
            return Some(false);
        }
        let slot = self.slots.iter().find_map(|(slot, state)| match state {
            SlotState::Ready { branch: Some(b) } if *b == branch => Some(slot),
            _ => None,
        });
        if let Some(slot) = slot
            && !matches!(
                lock::probe(&ws.slot_lock(&slot.name)).ok()?,
                LockState::Free
            )
        {
            return Some(false);
        }
        // A worktree of the spec that does not open as itself.
        if self
            .broken_for
            .iter()
            .any(|b| b.as_deref() == Some(&branch))
        {
            return Some(false);
        }
        if leftover_agent(paths) || !repair::stale_temp_files(&paths.dir, true).is_empty() {
            return Some(false);
        }
        // Any git lock file where recovery looks for stale ones, stale or not.
        let wt = slot.and_then(|s| s.open(&ws.main).ok());
        let git_dir = wt.as_ref().map(crate::git::repo::git_folder);
        if !repair::lock_candidates(ws.main.common_dir(), git_dir, name).is_empty() {
            return Some(false);
        }
        let summary = crate::plan::summary::read_light(&paths.plan);
        let full;
        let plan: Option<&Plan> = match &summary {
            Some(s) => Some(s.plan()),
            None => {
                full = paths.plan.load().ok()?;
                full.as_ref()
            }
        };
        let Some(plan) = plan else {
            // No plan: one that vanished while a run was running is restored.
            let events = crate::store::read_typed(&paths.dir);
            return Some(!integrity::last_run_unfinished(&events));
        };
        if plan.count(Status::InProgress) > 0 || (retry_failed && plan.count(Status::Failed) > 0) {
            return Some(false);
        }
        // Completed work the branch lost (or the branch gone with recorded work).
        let recorded = plan
            .chunks()
            .any(|c| c.status == Status::Completed && c.raw.contains_key("attempts"));
        if recorded
            && integrity::judge_history(&integrity::history_facts(&ws.main, name, plan, None))
                .is_some()
        {
            return Some(false);
        }
        Some(true)
    }
}

/// An agent process a dead run left running (`Steps::stop_leftover_agents`).
fn leftover_agent(paths: &SpecPaths) -> bool {
    let events = crate::store::journal::read_typed_containing(&paths.dir, "\"process_");
    procs::leftovers(&events)
        .iter()
        .any(|l| !procs::members_of_session(l.pgid, &l.session_id).is_empty())
}
