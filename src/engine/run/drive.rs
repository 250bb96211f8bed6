//! The run loop: chunk after chunk until the plan is done, blocked, out of budget or interrupted.

use super::*;

impl Run {
    pub(super) async fn drive(&mut self, ws: &Workspace) -> anyhow::Result<()> {
        let resume = std::mem::take(&mut self.resume);
        // A spec paused by a usage limit starts no session before its time.
        self.honour_pause().await?;
        self.read_cut_off_reports()?;
        // A run that starts with budget left (it was raised, or removed) clears the mark of an
        // earlier stop, once: the budget cannot change during a run, and looking for the mark
        // at every session would read the whole plan each time.
        if matches!(
            self.money_allowance(),
            crate::policy::budget::Allowance::Go { .. }
        ) {
            self.clear_exhausted_mark()?;
        }
        if self.paths.plan.load()?.is_none() {
            let planner = resume.iter().find(|r| r.role == "planner");
            let prompt = planner.and_then(|r| self.reattach_prompt(r));
            self.plan_feature(prompt).await?;
        } else {
            self.pin_base()?;
        }
        if self.plan_only {
            // A person reads (and may edit) the plan before any code is written.
            return Ok(());
        }
        self.refuse_blocked_chunks()?;
        self.reattach_cut_off_sessions(ws, &resume).await?;
        // A chunk's completion takes the next one in the same plan write (see `complete`).
        let mut next = None;
        loop {
            // A chunk already taken goes on: its session sees the Ctrl-C, does not start, and
            // hands the chunk back (`work_on`).
            if self.interrupt.is_set() && !matches!(next, Some(Take::Chunk(_))) {
                return Err(RunnerError::Interrupted.into());
            }
            let take = match next.take() {
                Some(take) => take,
                None => {
                    if self.limited.is_some() {
                        self.honour_pause().await?;
                    }
                    self.take_chunk(None)?
                }
            };
            let taken = match take {
                Take::Chunk(taken) => taken,
                Take::Complete(total) => return self.all_completed(ws, total),
                Take::Stuck(reasons) => return Err(self.stuck(&reasons)?),
                Take::BudgetSpent => return Err(self.budget_spent().into()),
            };
            next = self.work_on(ws, taken, None, true).await?;
        }
    }

    /// A blocked chunk needs a person; the worktree may hold its unresolved state, which
    /// another chunk must not build on (or commit).
    fn refuse_blocked_chunks(&self) -> anyhow::Result<()> {
        let plan = self.load_plan()?;
        let blocked: Vec<String> = plan
            .chunks()
            .filter(|c| c.status == Status::Blocked)
            .map(|c| {
                format!(
                    "  - {}: {}",
                    c.id,
                    c.str_field("blocked_reason").unwrap_or("blocked")
                )
            })
            .collect();
        if blocked.is_empty() {
            return Ok(());
        }
        Err(RunnerError::NeedsHuman(format!(
            "spec {} has blocked chunks that need a person first:\n{}",
            self.paths.name,
            blocked.join("\n"),
        ))
        .with_hint(format!(
            "look at the worktree {}; when it is sorted out, set the chunk back to \"pending\" in {} and run again",
            self.worktree.display(),
            self.paths.plan.path().display()
        ))
        .into())
    }

    /// Coder sessions the last shutdown cut off go first, with the prompt they were given.
    async fn reattach_cut_off_sessions(
        &mut self,
        ws: &Workspace,
        resume: &[crate::engine::recovery::interrupted::InterruptedSession],
    ) -> anyhow::Result<()> {
        for entry in resume.iter().filter(|r| r.role == "coder") {
            let Some(chunk_id) = entry.chunk_id.as_deref() else {
                continue;
            };
            if self.limited.is_some() {
                self.honour_pause().await?;
            }
            let plan = self.load_plan()?;
            let pending = plan
                .find_chunk(chunk_id)
                .is_some_and(|pos| plan.chunk(pos).status == Status::Pending);
            let Some(prompt) = self.reattach_prompt(entry).filter(|_| pending) else {
                tracing::debug!(
                    chunk = chunk_id,
                    "interrupted session skipped: its chunk is gone or no longer pending"
                );
                continue;
            };
            self.reporter.line(format!(
                "Resuming interrupted work for {} on {}/{}: \"{}…\"",
                entry.role,
                entry.spec,
                chunk_id,
                crate::engine::recovery::interrupted::preview(&entry.prompt_preview, 80)
            ));
            if !self.budget_left()? {
                return Err(self.budget_spent().into());
            }
            if let Take::Chunk(taken) = self.take_chunk(Some(chunk_id))? {
                self.work_on(ws, taken, Some(prompt), false).await?;
            }
        }
        Ok(())
    }

    /// Every chunk is completed: "completed" only with every chunk's commit still on the branch.
    fn all_completed(&self, ws: &Workspace, total: usize) -> anyhow::Result<()> {
        let plan = self.paths.plan.load()?.unwrap_or_else(empty_plan);
        if let Some(guarded) = crate::engine::integrity::guard_history(
            &ws.main,
            &self.paths,
            &self.journal,
            &plan,
            None,
            self.open_worktree().ok().as_ref(),
            Some(&self.worktree),
            false,
            Some(&self.history),
        )? {
            return Err(RunnerError::NeedsHuman(guarded.message).into());
        }
        self.reporter.progress(total, total, "done");
        let all = match total {
            1 => "The only chunk".to_string(),
            n => format!("All {n} chunks"),
        };
        self.reporter.line(format!(
            "{all} of {} {} completed on branch {}.",
            self.paths.name,
            if total == 1 { "is" } else { "are" },
            branch_for(&self.paths.name)
        ));
        Ok(())
    }

    /// No chunk can be worked on: why, and what to do. Failed chunks have a command; anything
    /// else (a chunk another process holds in progress, phases waiting on them) follows from it.
    fn stuck(&self, reasons: &[String]) -> anyhow::Result<anyhow::Error> {
        let plan = self.load_plan()?;
        let what_to_do = if plan.count(Status::Failed) > 0 {
            format!(
                "for failed chunks: {}",
                retry_failed_hint(&self.paths.name, self.agent_flag.as_ref())
            )
        } else {
            format!(
                "after fixing, set the chunk back to pending in {} and run again",
                self.paths.plan.path().display()
            )
        };
        Ok(RunnerError::NeedsHuman(format!(
            "spec {} cannot go on:\n{}",
            self.paths.name,
            reasons
                .iter()
                .map(|r| format!("  - {r}"))
                .collect::<Vec<_>>()
                .join("\n"),
        ))
        .with_hint(format!(
            "look at the journal {} and the session logs in {}",
            self.journal.path().display(),
            self.paths.sessions_dir.display(),
        ))
        .with_hint(what_to_do)
        .into())
    }

    /// The original prompt of an interrupted session, with a note on what happened since.
    pub(super) fn reattach_prompt(
        &self,
        entry: &crate::engine::recovery::interrupted::InterruptedSession,
    ) -> Option<String> {
        let original = crate::store::safe::read_to_string(&entry.prompt_path).ok()?;
        let mut note = format!(
            "\n\n## Note: this session was interrupted\n\nThis is the prompt of session {}, which was cut off at {} when runner was stopped. Work it did may already be in the worktree",
            entry.session_id, entry.time
        );
        if let Some(chunk) = entry.chunk_id.as_deref()
            && let Ok(plan) = self.load_plan()
            && let Some(pos) = plan.find_chunk(chunk)
            && let Some(partial) = crate::engine::recovery::partial_work_note(plan.chunk(pos))
        {
            note.push_str(&format!(
                ": {} since {}{}",
                crate::text::count(partial["new_commits"].as_u64().unwrap_or(0), "commit"),
                partial["start_commit"].as_str().unwrap_or("the start"),
                partial["saved_ref"]
                    .as_str()
                    .map(|r| format!(", and its uncommitted changes (saved at {r})"))
                    .unwrap_or_default()
            ));
        }
        note.push_str(". Check what is there before you continue.\n");
        Some(original + &note)
    }

    pub(super) fn load_plan(&self) -> anyhow::Result<Plan> {
        match self.paths.plan.load() {
            Ok(Some(plan)) => Ok(plan),
            Ok(None) => Err(RunnerError::NeedsHuman(format!(
                "the plan {} disappeared during the run",
                self.paths.plan.path().display()
            ))
            .into()),
            Err(e) => match e.downcast::<PlanError>() {
                Ok(plan_err) => Err(RunnerError::NeedsHuman(format!(
                    "{plan_err}\n(the plan was valid when the run started: an agent or a person broke it)"
                ))
                .into()),
                Err(other) => Err(other),
            },
        }
    }

    /// May another session start: the run's session budget, then the spec's money and token
    /// budget (an earlier run's `budget_exhausted` mark is cleared once, as the run starts).
    pub(super) fn budget_left(&self) -> anyhow::Result<bool> {
        if self.sessions >= self.config.run.max_sessions {
            return Ok(false);
        }
        Ok(matches!(
            self.money_allowance(),
            crate::policy::budget::Allowance::Go { .. }
        ))
    }

    pub(super) fn budget_spent(&self) -> RunnerError {
        if self.sessions < self.config.run.max_sessions
            && let crate::policy::budget::Allowance::Spent(why) = self.money_allowance()
        {
            return self.budget_exhausted(&why);
        }
        RunnerError::BudgetSpent(format!(
            "this run started its {} (run.max_sessions); the spec is not finished",
            crate::text::count(self.sessions, "session"),
        ))
        .with_hint(format!(
            "run `{}` again to go on",
            crate::policy::next_command::continue_command(
                &self.paths.name,
                self.agent_flag.as_ref()
            )
        ))
    }

    /// Pin the base branch in the plan the first time the spec has one.
    pub(super) fn pin_base(&self) -> anyhow::Result<()> {
        let plan = self.load_plan()?;
        if plan.str_field("base_branch").is_none() {
            let base = self.base.clone();
            self.paths.plan.update(|plan| {
                plan.set_field("base_branch", Value::String(base));
                Ok(())
            })?;
        }
        Ok(())
    }
}
