//! Preparing the slot (the build worktree) for a spec: create, switch, repair.

use super::*;

/// Make `slot` hold the spec's branch, creating the branch and the worktree as needed.
pub(super) async fn prepare_slot(
    ws: &Workspace,
    slot: &Slot,
    spec: &str,
    base_tip: git2::Oid,
    journal: &Journal,
    reporter: &Reporter,
) -> anyhow::Result<()> {
    let main = &ws.main;
    let branch = branch_for(spec);
    finish_unfinished_creation(ws, slot, journal, reporter)?;
    if matches!(slot.inspect(main), SlotState::Ready { .. })
        && let Some(to) =
            slot.finish_interrupted_switch(main, &ws.slot_switch_marker(&slot.name))?
    {
        reporter.line(format!(
            "Finished switching the slot {} to {to}, which an earlier run was doing when it stopped.",
            slot.path.display()
        ));
        journal.record(
            "slot_switch_finished",
            None,
            json!({"slot": slot.name, "to": to}),
        )?;
    }
    if main.branch_tip(&branch).is_none() {
        main.create_branch(&branch, base_tip)?;
        journal.record(
            "branch_created",
            None,
            json!({"branch": branch, "at": base_tip.to_string()}),
        )?;
    }
    if main.current_branch().as_deref() == Some(branch.as_str()) {
        return Err(RunnerError::bad_input(format!(
            "branch {branch} is checked out in your main worktree; runner builds it in {}. Switch your main worktree to another branch first",
            slot.path.display()
        ))
        .into());
    }
    if let Some(other) = slot_holding(main, &branch)
        && other != *slot
    {
        let suffix = other
            .name
            .strip_prefix("auto-claude-")
            .unwrap_or(&other.name);
        return Err(RunnerError::bad_input(format!(
            "spec {spec} is already in the slot {}: run it there with --slot {suffix}",
            other.path.display()
        ))
        .into());
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
            journal.record("slot_pruned", None, json!({"slot": slot.name, "reason": reason}))?;
            create_slot(ws, slot, &branch, journal, reporter)
        }
        SlotState::Broken { reason } => Err(RunnerError::bad_input(format!(
            "the worktree slot {} is broken ({reason}). Move the folder away, run `git worktree prune`, and run again",
            slot.path.display()
        ))
        .into()),
        SlotState::Unregistered => {
            if let Some(repair) = crate::engine::recovery::repair::repair_slot(main, slot, false)? {
                reporter.line(format!("Repaired: {}.", repair.describe()));
                journal.record("slot_repaired", None, json!({"slot": slot.name, "repair": repair.describe()}))?;
            }
            create_slot(ws, slot, &branch, journal, reporter)
        }
        SlotState::Ready { branch: Some(b) } if b == branch => Ok(()),
        SlotState::Ready { branch: held } => {
            let held_desc = held.clone().unwrap_or_else(|| "a detached HEAD".into());
            // Held while the slot switches: the other spec must not start meanwhile.
            let mut _other_lock = None;
            if let Some(other_spec) = held.as_deref().and_then(crate::git::spec_of_branch) {
                let other = ws.spec(other_spec)?;
                let Some(other_lock) = guard::try_take(&other.run_lock, Patience::Once)? else {
                    return Err(guard::busy(
                        &other.run_lock,
                        &format!(
                            "the slot {} holds spec {other_spec}, which is being run",
                            slot.path.display()
                        ),
                    ));
                };
                // An interrupted chunk of the other spec is recovered while its worktree is
                // still here: its work is committed or saved by the rules, never just swept
                // into a ref behind its plan's back.
                let refuse = |why: String| -> anyhow::Error {
                    RunnerError::NeedsHuman(format!(
                        "the slot {} holds spec {other_spec}, and {why}; runner will not switch it to {spec} and sweep that away. Sort out {other_spec} first, or build {spec} in another slot: runner run --spec {spec} --slot NAME",
                        slot.path.display()
                    ))
                    .into()
                };
                match other.plan.load() {
                    Ok(Some(p)) if p.count(Status::InProgress) > 0 => {
                        let run_id = crate::store::ids::run_id();
                        let other_journal = Journal::new(&other.dir, &run_id);
                        let config = ws.config()?;
                        let opts = recover_options(ws, &config, &[], false, false);
                        let rec = crate::engine::recovery::recover_spec(ws, &other, &other_journal, &opts).await?;
                        for action in &rec.actions {
                            reporter.line(format!("Recovered {other_spec}: {}", action.line()));
                        }
                        if rec.needs_human() {
                            return Err(refuse("its interrupted work needs a person".into()));
                        }
                    }
                    Ok(Some(p)) if p.count(Status::Blocked) > 0 => {
                        return Err(refuse("it has blocked chunks whose state may be in the worktree".into()));
                    }
                    Ok(_) => {}
                    Err(_) => return Err(refuse("its plan is invalid".into())),
                }
                if let Some(op) = crate::engine::recovery::inspect::operation_in_progress(&slot.open(main)?) {
                    return Err(refuse(format!("a {op} is half done in its worktree")));
                }
                _other_lock = Some(other_lock);
            } else if held.is_none() {
                // A detached HEAD may carry commits no branch has: keep them reachable.
                if let Some(kept) = keep_detached_head(ws, slot)? {
                    reporter.line(format!("The slot's detached HEAD had commits on no branch: kept at {kept}."));
                    journal.record("slot_saved", None, json!({"slot": slot.name, "ref": kept}))?;
                }
            }
            let dirty = slot.dirty_paths(main)?;
            if !dirty.is_empty() {
                let other_spec = held.as_deref().and_then(crate::git::spec_of_branch);
                let Some(other_spec) = other_spec else {
                    // Not a runner branch: runner has no spec to keep the changes for.
                    let wt = slot.path.display();
                    return Err(RunnerError::bad_input(format!(
                        "the slot {wt} holds {held_desc} with uncommitted changes:\n{}\nrunner will not switch it to {spec} and risk them. Either\n  keep them:  git -C {wt} add -A && git -C {wt} commit -m \"wip\"\n  drop them:  git -C {wt} reset --hard && git -C {wt} clean -fd\n  or build {spec} in another slot:  runner run --spec {spec} --slot NAME",
                        dirty.iter().take(20).map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n")
                    ))
                    .into());
                };
                let saved = save_and_clean_slot(ws, slot, other_spec)?;
                reporter.line(format!(
                    "The slot held uncommitted changes of spec {other_spec}: saved at {saved} (on top of {held_desc}), then cleaned."
                ));
                journal.record("slot_saved", None, json!({"slot": slot.name, "spec": other_spec, "ref": saved, "paths": dirty}))?;
            }
            slot.switch_to(main, &branch, &ws.slot_switch_marker(&slot.name))?;
            reporter.line(format!(
                "Switched the slot {} from {held_desc} to {branch} (the previous work is safe on its branch).",
                slot.path.display()
            ));
            journal.record("slot_switched", None, json!({"slot": slot.name, "from": held, "to": branch}))?;
            Ok(())
        }
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
    for r in repo.references()?.flatten() {
        let Some(name) = r.name() else { continue };
        if !(name.starts_with("refs/heads/") || name.starts_with("refs/auto-claude/")) {
            continue;
        }
        if let Some(tip) = r.target()
            && (tip == head || repo.graph_descendant_of(tip, head).unwrap_or(false))
        {
            return Ok(None);
        }
    }
    let refname = crate::git::refs::next_detached_ref(repo, &slot.name)?;
    repo.reference(
        &refname,
        head,
        false,
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
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.force().remove_untracked(true);
    wt.checkout_head(Some(&mut checkout))
        .context("cleaning the slot after saving its changes")?;
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
        journal.record(
            "slot_creation_finished",
            None,
            json!({"slot": slot.name, "what": what}),
        )?;
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
    journal.record(
        "slot_created",
        None,
        json!({"slot": slot.name, "branch": branch}),
    )?;
    Ok(())
}
