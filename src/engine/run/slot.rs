//! Preparing the slot (the build worktree) for a spec: create, switch, repair.

use super::*;
use crate::store::FileLock;
use crate::store::event::{self as ev, Event};

/// Make `slot` hold the spec's branch, creating the branch and the worktree as needed: finish
/// what an earlier run left half done in the slot, refuse a branch checked out elsewhere
/// (before anything is written), then create, repair or switch the slot.
pub(super) async fn prepare_slot(
    ws: &Workspace,
    slot: &Slot,
    spec: &str,
    base_tip: crate::git::Oid,
    journal: &Journal,
    reporter: &Reporter,
    agent_flag: Option<&crate::policy::next_command::AgentFlag>,
) -> anyhow::Result<()> {
    let main = &ws.main;
    let branch = branch_for(spec);
    // Before anything looks at the slot's path: a link there is never followed.
    if let Some(link) = crate::engine::recovery::repair::set_aside_link(slot, false)? {
        reporter.notice(format!("Repaired: {}.", link.describe()));
        journal.write(&Event::SlotRepaired(ev::SlotRepaired {
            slot: slot.name.clone(),
            repair: link.describe(),
        }))?;
    }
    finish_earlier_slot_work(ws, slot, journal, reporter)?;
    refuse_branch_held_elsewhere(main, slot, spec, &branch)?;
    if main.branch_tip(&branch).is_none() {
        main.create_branch(&branch, base_tip)?;
        journal.write(&Event::BranchCreated(ev::BranchCreated {
            branch: branch.clone(),
            at: base_tip.to_string(),
        }))?;
    }
    match slot.inspect(main) {
        SlotState::Missing => create_slot(ws, slot, &branch, journal, reporter),
        SlotState::Broken { reason } if !slot.path.exists() => {
            // The folder is gone; the work is safe on the branch. Forget the registration.
            reporter.line(format!(
                "The worktree {} was registered but {reason}; recreating it from branch {branch}.",
                slot.path.display()
            ));
            slot.prune_missing(main)?;
            journal.write(&Event::SlotPruned(ev::SlotPruned {
                slot: slot.name.clone(),
                reason: reason.clone(),
            }))?;
            create_slot(ws, slot, &branch, journal, reporter)
        }
        SlotState::Broken { reason } => {
            // A folder that holds nothing has nothing to lose: made afresh.
            let Some(cleared) =
                crate::engine::recovery::repair::clear_empty_slot(main, slot, false)?
            else {
                return Err(RunnerError::bad_input(format!(
                    "the worktree slot {} is broken ({reason})",
                    slot.path.display()
                ))
                .with_hint("move the folder away, run `git worktree prune`, and run again")
                .into());
            };
            reporter.notice(format!("Repaired: {}.", cleared.describe()));
            journal.write(&Event::SlotRepaired(ev::SlotRepaired {
                slot: slot.name.clone(),
                repair: cleared.describe(),
            }))?;
            create_slot(ws, slot, &branch, journal, reporter)
        }
        SlotState::Unregistered => {
            if let Some(repair) = crate::engine::recovery::repair::repair_slot(main, slot, false)? {
                reporter.notice(format!("Repaired: {}.", repair.describe()));
                journal.write(&Event::SlotRepaired(ev::SlotRepaired {
                    slot: slot.name.clone(),
                    repair: repair.describe(),
                }))?;
            }
            create_slot(ws, slot, &branch, journal, reporter)
        }
        SlotState::Ready { branch: Some(b) } if b == branch => Ok(()),
        SlotState::Ready { branch: held } => {
            let switch = Switch {
                ws,
                slot,
                spec,
                branch: &branch,
                journal,
                reporter,
                agent_flag,
            };
            switch.from(held).await
        }
    }
}

/// An unfinished creation of the slot, or a switch between specs an earlier run was doing
/// when it stopped: finish it.
fn finish_earlier_slot_work(
    ws: &Workspace,
    slot: &Slot,
    journal: &Journal,
    reporter: &Reporter,
) -> anyhow::Result<()> {
    let main = &ws.main;
    finish_unfinished_creation(ws, slot, journal, reporter)?;
    if matches!(slot.inspect(main), SlotState::Ready { .. })
        && let Some(to) =
            slot.finish_interrupted_switch(main, &ws.slot_switch_marker(&slot.name))?
    {
        reporter.line(format!(
            "Finished switching the slot {} to {to}, which an earlier run was doing when it stopped.",
            slot.path.display()
        ));
        journal.write(&Event::SlotSwitchFinished(ev::SlotSwitchFinished {
            slot: slot.name.clone(),
            to,
        }))?;
    }
    Ok(())
}

/// The spec's branch is built in `slot` only: not while the main worktree or another slot has
/// it checked out.
fn refuse_branch_held_elsewhere(
    main: &crate::git::MainRepo,
    slot: &Slot,
    spec: &str,
    branch: &str,
) -> anyhow::Result<()> {
    if main.current_branch().as_deref() == Some(branch) {
        return Err(RunnerError::bad_input(format!(
            "branch {branch} is checked out in your main worktree; runner builds it in {}. Switch your main worktree to another branch first",
            slot.path.display()
        ))
        .into());
    }
    if let Some(other) = slot_holding(main, branch)
        && other != *slot
    {
        let suffix = other
            .name
            .strip_prefix("auto-claude-")
            .unwrap_or(&other.name);
        return Err(RunnerError::bad_input(format!(
            "spec {spec} is already in the slot {}",
            other.path.display()
        ))
        .with_hint(format!("run it there with --slot {}", crate::sh(suffix)))
        .into());
    }
    Ok(())
}

/// Switching a ready slot that holds something else to the spec's branch.
struct Switch<'a> {
    ws: &'a Workspace,
    slot: &'a Slot,
    spec: &'a str,
    branch: &'a str,
    journal: &'a Journal,
    reporter: &'a Reporter,
    /// The run's agent flag, for the commands its refusals print.
    agent_flag: Option<&'a crate::policy::next_command::AgentFlag>,
}

impl Switch<'_> {
    /// The command that builds the spec in another slot, as this run was started.
    fn elsewhere(&self) -> String {
        format!(
            "{} --slot NAME",
            crate::policy::next_command::continue_command(self.spec, self.agent_flag)
        )
    }
}

impl Switch<'_> {
    /// From `held` (a branch, or a detached HEAD): the other spec's interrupted work settled
    /// and its lock held, a detached HEAD's commits kept, uncommitted changes saved, then the
    /// switch.
    async fn from(&self, held: Option<String>) -> anyhow::Result<()> {
        let (ws, slot) = (self.ws, self.slot);
        let held_desc = held.clone().unwrap_or_else(|| "a detached HEAD".into());
        let other_spec = held.as_deref().and_then(crate::git::spec_of_branch);
        // Held while the slot switches: the other spec must not start meanwhile.
        let _other_lock = match other_spec {
            Some(other_spec) => Some(self.settle_other_spec(other_spec).await?),
            None => None,
        };
        if held.is_none() {
            // A detached HEAD may carry commits no branch has: keep them reachable.
            if let Some(kept) = keep_detached_head(ws, slot)? {
                self.reporter.notice(format!(
                    "The slot's detached HEAD had commits on no branch: kept at {kept}."
                ));
                self.journal.write(&Event::SlotSaved(ev::SlotSaved {
                    slot: slot.name.clone(),
                    spec: None,
                    saved_ref: kept,
                    paths: None,
                }))?;
            }
        }
        self.save_uncommitted(other_spec, &held_desc)?;
        slot.switch_to(&ws.main, self.branch, &ws.slot_switch_marker(&slot.name))?;
        self.reporter.line(format!(
            "Switched the slot {} from {held_desc} to {} (the previous work is safe on its branch).",
            slot.path.display(),
            self.branch
        ));
        self.journal.write(&Event::SlotSwitched(ev::SlotSwitched {
            slot: slot.name.clone(),
            from: held,
            to: self.branch.to_string(),
        }))?;
        Ok(())
    }

    /// Take the run lock of the spec the slot holds, and recover an interrupted chunk of it
    /// while its worktree is still here: its work is committed or saved by the rules, never
    /// just swept into a ref behind its plan's back. Blocked chunks, an invalid plan or a git
    /// operation half done there are for a person.
    async fn settle_other_spec(&self, other_spec: &str) -> anyhow::Result<FileLock> {
        let (ws, slot, spec) = (self.ws, self.slot, self.spec);
        let other = ws.spec(other_spec)?;
        // A moment: a `status` probe of that spec holds its lock for an instant.
        let Some(other_lock) = guard::try_take(&other.run_lock, Patience::Moment)? else {
            return Err(guard::busy(
                &other.run_lock,
                &format!(
                    "the slot {} holds spec {other_spec}, which is being run",
                    slot.path.display()
                ),
            ));
        };
        let refuse = |why: String| -> anyhow::Error {
            RunnerError::NeedsHuman(format!(
                "the slot {} holds spec {other_spec}, and {why}; runner will not switch it to {spec} and sweep that away",
                slot.path.display()
            ))
            .with_hint(format!(
                "sort out {other_spec} first, or build {spec} in another slot: {}",
                self.elsewhere()
            ))
            .into()
        };
        match other.plan.load() {
            Ok(Some(p)) if p.count(Status::InProgress) > 0 => {
                let other_journal = Journal::new(&other.dir, &crate::store::ids::run_id());
                let config = ws.config()?;
                let opts = recover_options(ws, &config, None, false, false);
                let rec = crate::engine::recovery::recover_spec(ws, &other, &other_journal, &opts)
                    .await?;
                for action in &rec.actions {
                    self.reporter
                        .notice(format!("Recovered {other_spec}: {}", action.line()));
                }
                if rec.needs_human() {
                    return Err(refuse("its interrupted work needs a person".into()));
                }
            }
            Ok(Some(p)) if p.count(Status::Blocked) > 0 => {
                return Err(refuse(
                    "it has blocked chunks whose state may be in the worktree".into(),
                ));
            }
            Ok(_) => {}
            Err(_) => return Err(refuse("its plan is invalid".into())),
        }
        if let Some(op) =
            crate::engine::recovery::inspect::operation_in_progress(&slot.open(&ws.main)?)
        {
            return Err(refuse(format!("a {op} is half done in its worktree")));
        }
        Ok(other_lock)
    }

    /// Uncommitted changes in the slot: saved for the spec they belong to, then cleaned; on a
    /// branch that is not runner's, refused with what to do.
    fn save_uncommitted(&self, other_spec: Option<&str>, held_desc: &str) -> anyhow::Result<()> {
        let (ws, slot, spec) = (self.ws, self.slot, self.spec);
        let dirty = slot.dirty_paths(&ws.main)?;
        if dirty.is_empty() {
            return Ok(());
        }
        let Some(other_spec) = other_spec else {
            // Not a runner branch: runner has no spec to keep the changes for.
            // Quoted: the hints are commands to paste, and the path may hold a space.
            let wt = crate::sh(slot.path.display().to_string());
            return Err(RunnerError::bad_input(format!(
                "the slot {} holds {held_desc} with uncommitted changes:\n{}\nrunner will not switch it to {spec} and risk them",
                slot.path.display(),
                dirty.iter().take(20).map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n")
            ))
            .with_hint(format!(
                "keep them: git -C {wt} add -A && git -C {wt} commit -m wip"
            ))
            .with_hint(format!(
                "drop them: git -C {wt} reset --hard && git -C {wt} clean -fd"
            ))
            .with_hint(format!(
                "or build {spec} in another slot: {}",
                self.elsewhere()
            ))
            .into());
        };
        let saved = save_and_clean_slot(ws, slot, other_spec)?;
        self.reporter.notice(format!(
            "The slot held uncommitted changes of spec {other_spec}: saved at {saved} (on top of {held_desc}), then cleaned."
        ));
        self.journal.write(&Event::SlotSaved(ev::SlotSaved {
            slot: slot.name.clone(),
            spec: Some(other_spec.to_string()),
            saved_ref: saved,
            paths: Some(dirty),
        }))?;
        Ok(())
    }
}

/// If the slot's HEAD is detached on a commit no branch or runner ref contains, point
/// `refs/auto-claude/recovery/_detached/<slot>/<n>` at it.
pub(super) fn keep_detached_head(ws: &Workspace, slot: &Slot) -> anyhow::Result<Option<String>> {
    let wt = slot.open(&ws.main)?;
    let Ok(head) = head_commit(&wt) else {
        return Ok(None);
    };
    let repo = &ws.main.repo;
    if crate::git::refs::kept_by_a_branch_or_runner_ref(repo, head)? {
        return Ok(None);
    }
    let refname = crate::git::refs::next_detached_ref(repo, &slot.name)?;
    crate::git::refs::create(
        repo,
        &refname,
        head,
        "runner: keep a detached HEAD's commits",
    )?;
    Ok(Some(refname))
}

/// Save a slot's uncommitted changes to `spec`'s recovery ref (named after its chunk in
/// progress, if any), then clean the slot: nothing is lost, and the slot can switch.
pub(super) fn save_and_clean_slot(
    ws: &Workspace,
    slot: &Slot,
    spec: &str,
) -> anyhow::Result<String> {
    let wt = slot.open(&ws.main)?;
    let chunk = ws
        .spec(spec)?
        .plan
        .load()
        .ok()
        .flatten()
        .and_then(|p| {
            p.chunks()
                .find(|c| c.status == Status::InProgress)
                .map(|c| c.id.clone())
        })
        .unwrap_or_else(|| "worktree".to_string());
    let refname = crate::git::refs::next_recovery_ref(&wt, spec, &chunk)?;
    let message =
        format!("auto-claude: uncommitted changes of {spec} saved before switching the slot");
    crate::git::refs::snapshot_worktree(&wt, &refname, &message)?;
    crate::failpoint::hit("after_slot_snapshot");
    crate::git::tree::clean_to_head(&wt).context("cleaning the slot after saving its changes")?;
    Ok(refname)
}

/// See `repair::unfinished_creation`: before anything else looks at the slot.
pub(super) fn finish_unfinished_creation(
    ws: &Workspace,
    slot: &Slot,
    journal: &Journal,
    reporter: &Reporter,
) -> anyhow::Result<()> {
    let marker = ws.slot_create_marker(&slot.name);
    if let Some(what) =
        crate::engine::recovery::repair::unfinished_creation(&ws.main, slot, &marker, false)?
    {
        reporter.line(format!("{what}."));
        journal.write(&Event::SlotCreationFinished(ev::SlotCreationFinished {
            slot: slot.name.clone(),
            what,
        }))?;
    }
    Ok(())
}

pub(super) fn create_slot(
    ws: &Workspace,
    slot: &Slot,
    branch: &str,
    journal: &Journal,
    reporter: &Reporter,
) -> anyhow::Result<()> {
    slot.create(&ws.main, branch, &ws.slot_create_marker(&slot.name))?;
    reporter.line(format!(
        "Created worktree {} on branch {branch}.",
        slot.path.display()
    ));
    journal.write(&Event::SlotCreated(ev::SlotCreated {
        slot: slot.name.clone(),
        branch: branch.to_string(),
    }))?;
    Ok(())
}
