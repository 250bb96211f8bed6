//! Everything recovery does for one spec, step by step: stop leftover agents, remove temp files
//! of unfinished writes, restore a broken or vanished plan, settle a dead session's plan edits,
//! remove stale git locks, guard what an unwatched agent may have broken, then recover the
//! chunks left in progress (and, if asked, retry the failed ones).

use super::settle::settle_interrupted_session;
use super::*;
use crate::policy::transition::{self, ChunkEvent};
use crate::store::event::{self as ev, Event};
use crate::store::read_typed;

/// One spec's recovery under way: what it works on and what it did so far.
struct Steps<'a> {
    ws: &'a Workspace,
    paths: &'a SpecPaths,
    journal: &'a Journal,
    opts: &'a RecoverySettings,
    actions: Vec<Action>,
    plan_source: Option<String>,
}

/// Everything recovery does for one spec. The run lock must be held by the caller.
pub async fn recover_spec(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
    opts: &RecoverySettings,
) -> anyhow::Result<SpecRecovery> {
    let mut s = Steps {
        ws,
        paths,
        journal,
        opts,
        actions: Vec::new(),
        plan_source: None,
    };
    // 1. Nothing may go on editing the worktree while recovery looks at it.
    s.stop_leftover_agents()?;
    // 2. Temp files of writes that never finished.
    s.remove_stale_temp_files();
    // 3. A plan that does not parse, or vanished while a run was running: restore it.
    let mut plan = s.load_or_restore_plan()?;
    // 3b. A run that died during (or right after) a session never settled the plan.
    if let Some(found) = &plan
        && let Some(settled) = s.settle_dead_session(found)?
    {
        plan = Some(settled);
    }
    // 4. Stale git lock files in the spec's worktree and refs.
    let slot = slot_holding(&ws.main, &branch_for(&paths.name));
    let wt = slot.as_ref().and_then(|s| s.open(&ws.main).ok());
    s.remove_stale_git_locks(wt.as_ref());
    // 5. What an agent left unwatched (its run died).
    let mut needs_human = false;
    let handled = s.guard_unwatched(plan.as_ref(), slot.as_ref(), wt.as_ref(), &mut needs_human)?;
    if let Some(plan) = &plan {
        // 6. Chunks left in progress; failed ones, if asked.
        for chunk in plan
            .chunks()
            .filter(|c| c.status == Status::InProgress && !handled.contains(&c.id))
        {
            let action =
                recover_chunk(ws, paths, journal, chunk, wt.as_ref(), opts, "interrupted").await?;
            needs_human |= action.decision == Some(Decision::HumanReview);
            s.actions.push(action);
        }
        if opts.retry_failed && plan.count(Status::Failed) > 0 {
            s.retry_failed(plan)?;
        }
    }
    s.finish(needs_human)
}

impl Steps<'_> {
    fn said<'b>(&self, done: &'b str, would: &'b str) -> &'b str {
        said(self.opts.dry_run, done, would)
    }

    fn stop_leftover_agents(&mut self) -> anyhow::Result<()> {
        let events = crate::store::journal::read_typed_containing(&self.paths.dir, "\"process_");
        for leftover in procs::leftovers(&events) {
            let alive = !procs::members_of_session(leftover.pgid, &leftover.session_id).is_empty();
            if !alive {
                continue;
            }
            if !self.opts.dry_run {
                procs::stop_leftover(&leftover, LEFTOVER_GRACE);
                self.journal.write(&Event::ProcessEnded(ev::Process {
                    pgid: Some(leftover.pgid),
                    session_id: leftover.session_id.clone(),
                    role: None,
                    why: Some("stopped by recovery".into()),
                }))?;
            }
            let detail = format!(
                "{} the agent of session {} (process group {}), still running after its runner died",
                self.said("stopped", "would stop"),
                leftover.session_id,
                leftover.pgid
            );
            self.actions
                .push(Action::new("stopped_agent", None, detail));
        }
        Ok(())
    }

    fn remove_stale_temp_files(&mut self) {
        for path in repair::stale_temp_files(&self.paths.dir, self.opts.dry_run) {
            let detail = format!(
                "{} {} left by an interrupted write",
                self.said("removed", "would remove"),
                path.display()
            );
            self.actions
                .push(Action::new("removed_temp_file", None, detail));
        }
    }

    /// The plan as it is, else restored (see `restore`); `None` when there is no plan to work on.
    fn load_or_restore_plan(&mut self) -> anyhow::Result<Option<Plan>> {
        let paths = self.paths;
        match paths.plan.load() {
            Ok(Some(plan)) => Ok(Some(plan)),
            Ok(None) => self.restore_vanished_plan(),
            Err(e) => {
                let plan_err = e.downcast::<PlanError>()?;
                self.restore_broken_plan(plan_err).map(Some)
            }
        }
    }

    /// A plan that does not parse. One that is not even JSON (torn, garbled) is restored. One
    /// that parses but breaks a rule is restored only if that happened while a run was running
    /// (its run never ended); otherwise someone wrote it that way: it is theirs to fix.
    fn restore_broken_plan(&mut self, plan_err: PlanError) -> anyhow::Result<Plan> {
        let paths = self.paths;
        let events = read_typed(&paths.dir);
        let on_disk = if plan_err.line.is_none() {
            integrity::PlanOnDisk::Invalid
        } else {
            integrity::PlanOnDisk::Unparsable
        };
        if !integrity::restore_missing_plan(on_disk, integrity::last_run_unfinished(&events), true)
        {
            return Err(RunnerError::InvalidPlan(plan_err).into());
        }
        let Some((plan, source)) =
            restore::rebuild(&paths.dir, &paths.name, &events, Some(&self.ws.main))
        else {
            return Err(RunnerError::InvalidPlan(plan_err).into());
        };
        let aside = crate::store::unused_path(&paths.plan.path().with_file_name(format!(
            "{}.corrupt-{}",
            crate::plan::PLAN_FILE,
            crate::clock::stamp()
        )));
        if !self.opts.dry_run {
            // Copy, then replace atomically: there is a plan file at every moment.
            crate::store::safe::copy_new(paths.plan.path(), &aside)
                .with_context(|| format!("keeping the broken plan as {}", aside.display()))?;
            paths.plan.replace(&plan)?;
            self.journal.write(&Event::PlanRestored(ev::PlanRestored {
                source: Some(source.as_str().into()),
                broken_copy: Some(aside.clone()),
                problems: Some(plan_err.problems.clone()),
                why: None,
            }))?;
        }
        let detail = format!(
            "the plan did not parse ({}); {} it from {} and {} the broken file as {}",
            plan_err
                .problems
                .first()
                .map(String::as_str)
                .unwrap_or("invalid"),
            self.said("restored", "would restore"),
            source.describe(),
            self.said("kept", "would keep"),
            aside.display()
        );
        self.actions
            .push(Action::new("plan_restored", None, detail));
        self.plan_source = Some(source.as_str().to_string());
        Ok(plan)
    }

    /// A plan that is gone: restored from runner's copies if it vanished while a run was
    /// running (the journal's last run never ended), else `None` (the user removed it: plan
    /// again). See `integrity::restore_missing_plan`.
    fn restore_vanished_plan(&mut self) -> anyhow::Result<Option<Plan>> {
        let paths = self.paths;
        let events = read_typed(&paths.dir);
        let unfinished = integrity::last_run_unfinished(&events);
        if !unfinished {
            return Ok(None);
        }
        let Some((plan, source)) =
            restore::rebuild(&paths.dir, &paths.name, &events, Some(&self.ws.main))
        else {
            return Ok(None);
        };
        if !integrity::restore_missing_plan(integrity::PlanOnDisk::Missing, unfinished, true) {
            return Ok(None);
        }
        if !self.opts.dry_run {
            paths.plan.replace(&plan)?;
            self.journal.write(&Event::PlanRestored(ev::PlanRestored {
                source: Some(source.as_str().into()),
                why: Some("the plan vanished while a run was running".into()),
                ..Default::default()
            }))?;
        }
        let detail = format!(
            "the plan was gone after a run that did not end; {} it from {}",
            self.said("restored", "would restore"),
            source.describe()
        );
        self.actions
            .push(Action::new("plan_restored", None, detail));
        self.plan_source = Some(source.as_str().to_string());
        Ok(Some(plan))
    }

    /// An agent that edited the plan directly and then killed runner would keep its edits: the
    /// plan is settled here against the plan as the session started, by the session end's
    /// rules. The settled plan, if anything was undone.
    fn settle_dead_session(&mut self, found: &Plan) -> anyhow::Result<Option<Plan>> {
        let Some((settled, undone)) = settle_interrupted_session(self.paths, found) else {
            return Ok(None);
        };
        if !self.opts.dry_run {
            self.paths.plan.replace(&settled)?;
            self.journal
                .write(&Event::PlanEditUndone(ev::PlanEditUndone {
                    undone: undone.clone(),
                    why: Some("recovery: the session's run died before it settled the plan".into()),
                    ..Default::default()
                }))?;
        }
        let detail = format!(
            "the plan was edited directly during a session whose run died; {} {}",
            self.said("undone:", "would undo:"),
            if undone.is_empty() {
                "changes to other chunks or to runner's records".to_string()
            } else {
                undone.join(", ")
            }
        );
        self.actions
            .push(Action::new("plan_edit_undone", None, detail));
        Ok(Some(settled))
    }

    fn remove_stale_git_locks(&mut self, wt: Option<&crate::git::Repository>) {
        let candidates = crate::git::locks::lock_candidates(
            self.ws.main.common_dir(),
            wt.map(crate::git::repo::git_folder),
            &self.paths.name,
        );
        for candidate in candidates {
            if let Some(lock) = crate::git::locks::stale_lock(&candidate, self.opts.dry_run) {
                let detail = format!(
                    "{} a stale {} left by a killed git write",
                    self.said("removed", "would remove"),
                    lock.display()
                );
                self.actions
                    .push(Action::new("removed_git_lock", None, detail));
            }
        }
    }

    /// What an agent left unwatched (its run died): a worktree that no longer opens as itself,
    /// or a branch whose history lost recorded work. Both need a person. Returns the chunks
    /// in progress dealt with here.
    fn guard_unwatched(
        &mut self,
        plan: Option<&Plan>,
        slot: Option<&crate::git::Slot>,
        wt: Option<&crate::git::Repository>,
        needs_human: &mut bool,
    ) -> anyhow::Result<Vec<String>> {
        let in_progress: Vec<&Chunk> = plan
            .iter()
            .flat_map(|p| p.chunks())
            .filter(|c| c.status == Status::InProgress)
            .collect();
        // The slot the last run worked in, for a chunk it left in progress (see
        // `unopenable_slot`).
        let last_slot = (!in_progress.is_empty())
            .then(|| {
                read_typed(&self.paths.dir)
                    .into_iter()
                    .rev()
                    .find_map(|e| match e {
                        Event::RunStart(start) => Some(start.slot),
                        _ => None,
                    })
            })
            .flatten();
        if let Some((slot, why)) =
            integrity::unopenable_slot(&self.ws.main, &self.paths.name, last_slot.as_deref())
            && !self.cleared_empty(&slot)?
        {
            *needs_human = true;
            self.unopenable(&slot.path, &why, in_progress.first().map(|c| c.id.as_str()))?;
            return Ok(in_progress.iter().map(|c| c.id.clone()).collect());
        }
        let Some(plan) = plan else {
            return Ok(Vec::new());
        };
        // Every completed chunk's commit is checked even with nothing in progress: a branch
        // reset after the run ended (by a job the agent left, or a person) loses work too.
        let currents: Vec<Option<&Chunk>> = if in_progress.is_empty() {
            vec![None]
        } else {
            in_progress.into_iter().map(Some).collect()
        };
        let mut handled = Vec::new();
        for chunk in currents {
            let Some(guarded) = integrity::guard_history(
                &self.ws.main,
                self.paths,
                self.journal,
                plan,
                chunk,
                wt,
                slot.map(|s| s.path.as_path()),
                self.opts.dry_run,
                None,
            )?
            else {
                continue;
            };
            *needs_human = true;
            if let Some(chunk) = chunk {
                handled.push(chunk.id.clone());
                if !self.opts.dry_run {
                    integrity::note_recovery_decision(
                        self.paths,
                        self.journal,
                        &chunk.id,
                        &guarded.message,
                        guarded.saved_ref.as_deref(),
                    )?;
                }
            }
            self.actions.push(Action {
                kind: "history_rewritten".into(),
                chunk: chunk.map(|c| c.id.clone()),
                decision: Some(Decision::HumanReview),
                detail: guarded.message,
                if_verification: None,
            });
        }
        Ok(handled)
    }

    /// Whether `slot`, which does not open as itself, held nothing and was removed with its
    /// registration (`repair::clear_empty_slot`): then it is as a slot whose folder is gone,
    /// and nothing needs a person for it.
    fn cleared_empty(&mut self, slot: &crate::git::Slot) -> anyhow::Result<bool> {
        let Some(cleared) = repair::clear_empty_slot(&self.ws.main, slot, self.opts.dry_run)?
        else {
            return Ok(false);
        };
        if !self.opts.dry_run {
            self.journal.write(&Event::SlotRepaired(ev::SlotRepaired {
                slot: slot.name.clone(),
                repair: cleared.describe(),
            }))?;
        }
        self.actions
            .push(Action::new("slot_repaired", None, cleared.describe()));
        Ok(true)
    }

    /// A slot that no longer opens as itself: save what it holds, block `chunk` (the one in
    /// progress), report.
    fn unopenable(
        &mut self,
        folder: &std::path::Path,
        why: &str,
        chunk: Option<&str>,
    ) -> anyhow::Result<()> {
        let detail = integrity::unopenable_worktree(
            &self.ws.main,
            self.paths,
            self.journal,
            folder,
            why,
            chunk,
            self.opts.dry_run,
        )?;
        if let (Some(id), false) = (chunk, self.opts.dry_run) {
            integrity::note_recovery_decision(self.paths, self.journal, id, &detail, None)?;
        }
        self.actions.push(Action {
            kind: "worktree_unopenable".into(),
            chunk: chunk.map(str::to_string),
            decision: Some(Decision::HumanReview),
            detail,
            if_verification: None,
        });
        Ok(())
    }

    /// `--retry-failed`: every failed chunk back to `pending` (its attempts are kept).
    fn retry_failed(&mut self, plan: &Plan) -> anyhow::Result<()> {
        let retried: Vec<(String, Option<transition::StatusChange>)> = if self.opts.dry_run {
            plan.chunks()
                .filter(|c| c.status == Status::Failed)
                .map(|c| (c.id.clone(), None))
                .collect()
        } else {
            self.paths.plan.update(|plan| {
                let mut changes = Vec::new();
                for pos in plan.positions().collect::<Vec<_>>() {
                    let chunk = plan.chunk_mut(pos);
                    if chunk.status == Status::Failed {
                        let change = transition::apply(chunk, &ChunkEvent::RetryFailed)?;
                        changes.push((chunk.id.clone(), Some(change)));
                    }
                }
                Ok(changes)
            })?
        };
        for (id, change) in retried {
            if let Some(change) = change {
                self.journal.status(&id, change)?;
            }
            let detail = self.said(
                "failed chunk set back to pending (its attempts are kept)",
                "failed chunk would be set back to pending (its attempts are kept)",
            );
            self.actions
                .push(Action::new("retry_failed", Some(&id), detail));
        }
        Ok(())
    }

    fn finish(self, needs_human: bool) -> anyhow::Result<SpecRecovery> {
        use crate::policy::outcome::RecoveryOutcome;
        let outcome = if needs_human {
            RecoveryOutcome::NeedsHuman
        } else if self.actions.is_empty() {
            RecoveryOutcome::Clean
        } else {
            RecoveryOutcome::Recovered
        };
        if !self.opts.dry_run && !self.actions.is_empty() {
            self.journal.write(&Event::Recovered(ev::Recovered {
                outcome: outcome.as_str().into(),
                actions: serde_json::to_value(&self.actions)?,
            }))?;
        }
        Ok(SpecRecovery {
            spec: self.paths.name.clone(),
            outcome,
            actions: self.actions,
            plan_source: self.plan_source,
        })
    }
}
