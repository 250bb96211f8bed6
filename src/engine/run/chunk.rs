//! One chunk: take it, guard the worktree after its session, complete it or fail the attempt.

use super::*;
use crate::agent::output::SessionFacts;
use crate::policy::attempt_count::Counted;
use crate::policy::pause::LimitedAttempt;
use crate::policy::transition::{ChunkEvent, StatusChange, apply};
use crate::store::event::{self as ev, Event};

impl Run {
    /// Under one plan lock: decide what comes next (`prefer`, if it is pending, else the plan's
    /// next chunk) and, if it is a chunk and the session budget allows, mark it `in_progress`
    /// with a new attempt.
    pub(super) fn take_chunk(&self, prefer: Option<&str>) -> anyhow::Result<Take> {
        let start_commit = head_commit(&self.open_worktree()?)?.to_string();
        let budget_left = self.budget_left()?;
        let (take, change) = self
            .paths
            .plan
            .update_if(|plan| self.take_in(plan, prefer, &start_commit, budget_left))?;
        self.taken(take, change)
    }

    /// In `plan` (under the plan lock): what comes next (`prefer`, if it is pending, else the
    /// plan's next chunk) and, if it is a chunk and the session budget allows, mark it
    /// `in_progress` with a new attempt that starts at `start_commit`. Also says whether the
    /// plan changed.
    fn take_in(
        &self,
        plan: &mut Plan,
        prefer: Option<&str>,
        start_commit: &str,
        budget_left: bool,
    ) -> anyhow::Result<((Take, Option<StatusChange>), bool)> {
        let preferred = prefer
            .and_then(|id| plan.find_chunk(id))
            .filter(|&pos| plan.chunk(pos).status == Status::Pending);
        let step = match preferred {
            Some(pos) => NextStep::Chunk(pos),
            None => next_step(plan),
        };
        let pos = match step {
            NextStep::Chunk(pos) if budget_left => pos,
            NextStep::Chunk(_) => return Ok(((Take::BudgetSpent, None), false)),
            NextStep::Complete => return Ok(((Take::Complete(plan.total()), None), false)),
            NextStep::Stuck(reasons) => return Ok(((Take::Stuck(reasons), None), false)),
        };
        let phase_name = plan.phases[pos.phase].name().map(str::to_string);
        let chunk = plan.chunk_mut(pos);
        let mut attempts = chunk.attempts();
        let attempt = attempts.len() as u32 + 1;
        let session_id = crate::store::ids::session_id("coder", Some(&chunk.id), attempt);
        let now = crate::clock::now();
        // Resume or not is decided now and written with the take (`resume`).
        let (session, extra) = self.choose_session(&mut attempts);
        attempts.push(Attempt {
            n: attempt,
            session_id: Some(session_id.clone()),
            run_id: Some(self.run_id.clone()),
            started_at: Some(now.clone()),
            start_commit: Some(start_commit.to_string()),
            extra,
            ..Attempt::default()
        });
        let change = apply(
            chunk,
            &ChunkEvent::Take {
                attempt,
                session_id: session_id.clone(),
                start_commit: start_commit.to_string(),
            },
        )?;
        chunk.set_attempts(&attempts);
        chunk.set_str("started_at", &now);
        chunk.set_str("session_id", &session_id);
        let chunk = chunk.clone();
        let taken = Taken {
            chunk,
            phase_name,
            attempt,
            session_id,
            plan: plan.clone(),
            session,
        };
        Ok(((Take::Chunk(Box::new(taken)), Some(change)), true))
    }

    /// A take written to the plan: journal it.
    fn taken(&self, take: Take, change: Option<StatusChange>) -> anyhow::Result<Take> {
        if let (Take::Chunk(t), Some(change)) = (&take, change) {
            crate::failpoint::hit("after_take");
            self.journal.status(&t.chunk.id, change)?;
            self.keeper.track.chunk(Some(&t.chunk.id));
        }
        Ok(take)
    }

    /// Keep the plan as runner left it when a session starts: if this run dies before the
    /// session end settles the plan, recovery settles it against this copy (advisory, like
    /// the session's files; `runner chunk` never rewrites it, unlike last-good).
    pub(super) fn keep_plan_before_session(&self, plan: &Plan) {
        let before_path = self
            .paths
            .dir
            .join(crate::engine::recovery::PLAN_BEFORE_SESSION);
        // Advisory: a copy that cannot be written (an agent put a link or a hard link at its
        // name, which is never written through) does not stop the run; recovery then has no
        // copy of this session to settle against, and says nothing of it.
        let written = self.paths.plan.with_bytes_of(plan, |bytes| {
            crate::store::safe::overwrite(&before_path, bytes)
        });
        if let Err(e) = written {
            crate::output::warn(&format!(
                "could not keep the plan as the session starts in {}: {e}",
                before_path.display()
            ));
        }
    }

    /// Put the plan right after `taken`'s session (the agent may have edited, replaced or
    /// deleted it): only its own report stands on what runner wrote at the take.
    pub(super) fn settle_plan_after_session(&self, taken: &Taken) -> anyhow::Result<()> {
        use crate::engine::integrity;
        let by_person = match &self.person {
            Some(listener) => listener.take_changes(),
            None => integrity::changed_by_person(
                &crate::store::read_typed(&self.paths.dir),
                &taken.session_id,
            ),
        };
        for line in integrity::settle_after_session(
            &self.paths,
            &self.journal,
            &taken.plan,
            &taken.chunk.id,
            &taken.session_id,
            &by_person,
        )? {
            self.reporter.notice(line);
        }
        Ok(())
    }

    pub(super) fn open_worktree(&self) -> anyhow::Result<crate::git::Repository> {
        crate::git::repo::open_worktree_exactly(&self.worktree, &self.common_dir)
            .map_err(anyhow::Error::msg)
    }

    /// After a session, before anything is judged or committed: put the plan right (the agent
    /// may have edited, replaced or deleted it), then check that the worktree still opens as
    /// itself and that the branch still holds every commit runner recorded and the attempt's
    /// start. Otherwise the chunk is blocked for a person (exit 3), its state saved. Returns the
    /// plan it checked, for judging the session (one read, not two), and the worktree it opened,
    /// for committing the chunk if no command runs in it before (see `complete`).
    pub(super) fn guard_after_session(
        &self,
        ws: &Workspace,
        taken: &Taken,
    ) -> anyhow::Result<(Plan, crate::git::Repository)> {
        use crate::engine::integrity;
        let id = taken.chunk.id.as_str();
        self.settle_plan_after_session(taken)?;
        let wt = match self.open_worktree() {
            Ok(wt) => wt,
            Err(why) => {
                let message = integrity::unopenable_worktree(
                    &ws.main,
                    &self.paths,
                    &self.journal,
                    &self.worktree,
                    &format!("{why:#}"),
                    Some(id),
                    false,
                )?;
                return Err(RunnerError::NeedsHuman(message).into());
            }
        };
        let plan = self.load_plan()?;
        let current = plan.find_chunk(id).map(|pos| plan.chunk(pos).clone());
        if let Some(guarded) = integrity::guard_history(
            &ws.main,
            &self.paths,
            &self.journal,
            &plan,
            current.as_ref(),
            Some(&wt),
            Some(&self.worktree),
            false,
            Some(&self.history),
        )? {
            return Err(RunnerError::NeedsHuman(guarded.message).into());
        }
        Ok((plan, wt))
    }

    /// Work on a taken chunk: its session, then its judgement. With `take_next`, a completion
    /// also takes the next chunk in the same write of the plan (one durable plan write per
    /// chunk), and that take is returned for the loop to go on with.
    pub(super) async fn work_on(
        &mut self,
        ws: &Workspace,
        mut taken: Box<Taken>,
        prompt_override: Option<String>,
        take_next: bool,
    ) -> anyhow::Result<Option<Take>> {
        let plan = &taken.plan;
        let done = plan.count(Status::Completed);
        let id = taken.chunk.id.clone();
        self.reporter.progress(done, plan.total(), &id);
        // Numbered as `run.max_attempts` counts: the failed ones, and this one next.
        let counted = Counted::of(taken.chunk.attempts().iter().map(|a| a.outcome.as_deref()));
        self.reporter.line(format!(
            "[{}/{}] {id}: {} ({})",
            done + 1,
            plan.total(),
            taken.chunk.description(),
            counted.starting(self.config.run.max_attempts)
        ));
        let prompt = match self.first_prompt(&taken, prompt_override) {
            Ok(prompt) => prompt,
            Err(e) => {
                // No prompt (say, spec.md was deleted meanwhile): the agent never ran.
                self.release_chunk(&id, "not_started", &format!("{e:#}"))?;
                return Err(e);
            }
        };
        self.keep_plan_before_session(&taken.plan);
        let (end, agent_report, prompt) = match self.coder_session(&mut taken, prompt).await {
            Ok(end) => end,
            Err(e) => {
                // The agent never ran (say, its command does not exist): not a failed attempt.
                self.release_chunk(&id, "not_started", &format!("{e:#}"))?;
                return Err(e);
            }
        };
        crate::failpoint::hit("after_coder_session");
        let (after, wt) = self.guard_after_session(ws, &taken)?;
        if let Ended::Interrupted { drained } = end.ended {
            self.record_session_cost(&taken, &agent_report)?;
            return self
                .interrupted(
                    Some(ws),
                    "coder",
                    Some(&taken),
                    &taken.session_id,
                    &prompt,
                    drained,
                )
                .await
                .map(|()| None);
        }

        let pos = after.find_chunk(&id).ok_or_else(|| {
            RunnerError::NeedsHuman(format!(
                "chunk {id} vanished from the plan during its session"
            ))
        })?;
        let chunk = after.chunk(pos);
        let report = self.report_of(chunk, &wt, &end.ended, &agent_report)?;
        // claude stopped at the budget runner gave it: the spec's budget is spent, the chunk
        // goes back to pending (not a failed attempt).
        if agent_report.budget_reached && report != Report::Done {
            drop(wt);
            self.release_for_budget(&id, &agent_report)?;
            let why = match self.money_allowance() {
                crate::policy::budget::Allowance::Spent(why) => why,
                crate::policy::budget::Allowance::Go { .. } => {
                    "the agent stopped at the budget runner gave it (--max-budget-usd)".into()
                }
            };
            return Err(self.budget_exhausted(&why).into());
        }
        let mut agent_failure = agent_report.failure();
        if agent_report.usage_limit.is_some() {
            self.limit_hit(&agent_report, &taken.session_id)?;
            match crate::policy::pause::limited_attempt(report == Report::Done) {
                LimitedAttempt::Unjudged => {
                    return self.attempt_limited(&taken, &agent_report).map(|()| None);
                }
                // The work is judged as any other; the pause comes before the next session.
                LimitedAttempt::Judged => agent_failure = None,
            }
        }
        // Whatever the CLI said last is the reason of an attempt that did not succeed.
        if report != Report::Done && agent_failure.is_none() {
            agent_failure = agent_report.last_words.clone();
        }
        // A verification command runs in the worktree: after one, `complete` opens it again.
        let (check, wt) = if policy::needs_check(&report, agent_failure.as_deref()) {
            drop(wt);
            (self.verify(chunk, &taken.session_id).await?, None)
        } else {
            (None, Some(wt))
        };
        match policy::judge(
            &report,
            &end.ended,
            check.as_ref(),
            agent_failure.as_deref(),
        ) {
            Verdict::Completed => {
                // A pause stops the next take (it waits for `honour_pause`).
                let take_next = take_next && self.limited.is_none();
                self.complete(&taken, check.as_ref(), wt, take_next, &agent_report)
            }
            Verdict::Failed(reason) => self
                .fail_attempt(&taken, &reason, &agent_report, check.as_ref())
                .map(|()| None),
        }
    }

    /// What the agent reported of `chunk` after its session: what it wrote in the plan, or, for
    /// an agent that cannot report (`Preset::can_report`), how its session ended
    /// (`policy::report_by_exit`).
    fn report_of(
        &self,
        chunk: &Chunk,
        wt: &crate::git::Repository,
        ended: &Ended,
        agent_report: &SessionFacts,
    ) -> anyhow::Result<Report> {
        let can_report = self.agent.choice.preset.can_report();
        // An agent that cannot report is judged by its exit only where there is something to
        // judge: work it left (commits or changes since the attempt started) or a check.
        let judgeable = can_report
            || verification::command_check(chunk).is_some()
            || changed_since(wt, chunk.last_attempt().and_then(|a| a.start_commit))?;
        Ok(policy::report_by_exit(
            read_report(chunk),
            can_report,
            ended,
            agent_report.failed(),
            judgeable,
        ))
    }

    /// Commit the chunk's work and mark it completed; with `take_next` (and no Ctrl-C yet),
    /// take what comes next in the same plan write and return it. `opened` is the worktree as
    /// `guard_after_session` opened and checked it, if nothing ran in it since (no agent, no
    /// verification command); else it is opened and checked again here.
    pub(super) fn complete(
        &self,
        taken: &Taken,
        check: Option<&CheckResult>,
        opened: Option<crate::git::Repository>,
        take_next: bool,
        agent_report: &SessionFacts,
    ) -> anyhow::Result<Option<Take>> {
        let id = &taken.chunk.id;
        let message = taken.chunk.commit_message();
        let wt = match opened {
            Some(wt) => wt,
            None => self.open_worktree()?,
        };
        // Commit only onto the spec's branch, in a clean repository state: an agent that
        // switched branches, detached HEAD or left a rebase stopped would otherwise have its
        // work committed where the branch never sees it.
        let on_branch =
            crate::git::head_branch(&wt).as_deref() == Some(branch_for(&self.paths.name).as_str());
        let operation = crate::engine::recovery::inspect::operation_in_progress(&wt);
        if !on_branch || operation.is_some() {
            let reason = match operation {
                Some(op) => format!("a {op} is half done in the worktree"),
                None => format!(
                    "the worktree is not on {} any more (the agent switched branches or detached HEAD)",
                    branch_for(&self.paths.name)
                ),
            };
            if let Some(change) =
                crate::engine::integrity::block_chunk(&self.paths, id, &reason, &reason)?
            {
                self.journal.status(id, change)?;
            }
            return Err(RunnerError::NeedsHuman(format!(
                "chunk {id} was reported done, but {reason}; nothing was committed"
            ))
            .with_hint(format!(
                "look at {} (git status, git log), put the work on {} and set the chunk back to \"pending\" in {}",
                self.worktree.display(),
                branch_for(&self.paths.name),
                self.paths.plan.path().display()
            ))
            .into());
        }
        let commit = self.commit_chunk(taken, &wt, &message, take_next)?;
        crate::failpoint::hit("after_commit");
        if let Some(oid) = commit {
            self.journal.write(&Event::Commit(ev::Commit {
                chunk: id.clone(),
                commit: oid.to_string(),
                message: message.clone(),
            }))?;
        }
        let head = head_commit(&wt)?.to_string();
        // The attempt's own commit: runner's, else the agent's (HEAD moved since the start,
        // which the history guard proved an ancestor); never the start commit, which is an
        // earlier chunk's.
        let start = taken.chunk.last_attempt().and_then(|a| a.start_commit);
        let own_commit = match commit {
            Some(oid) => Some(oid.to_string()),
            None if start.as_deref() != Some(head.as_str()) => Some(head.clone()),
            None => None,
        };
        let event = ChunkEvent::Complete {
            attempt: Some(taken.attempt),
            commit: own_commit.clone(),
            verified: check.map(|c| c.passed),
            why: None,
        };
        let budget_left = self.budget_left()?;
        let (done, total, change, next, facts) = self.paths.plan.update(|plan| {
            let mut change = None;
            if let Some(pos) = plan.find_chunk(id) {
                let chunk = plan.chunk_mut(pos);
                let now = crate::clock::now();
                change = Some(apply(chunk, &event)?);
                chunk.update_last_attempt(|a| {
                    a.outcome = Some("completed".into());
                    a.ended_at = Some(now.clone());
                    a.commit = own_commit.clone();
                    a.record_report(agent_report);
                });
                chunk.set_str("completed_at", &now);
            }
            let (done, total) = (plan.count(Status::Completed), plan.total());
            // The next chunk starts where this one's work ends: HEAD now.
            // A take that fails must not cost the completion its write: the loop then takes
            // the next chunk on its own (and meets the failure there).
            let next = match take_next && !self.interrupt.is_set() {
                true => self
                    .take_in(plan, None, &head, budget_left)
                    .map(|(take, _)| take)
                    .ok(),
                false => None,
            };
            let facts = self.keeper.facts.of(plan);
            Ok((done, total, change, next, facts))
        })?;
        crate::failpoint::hit("after_complete");
        if let Some(change) = change {
            self.journal.status(id, change)?;
        }
        let next_id = match &next {
            Some((Take::Chunk(t), _)) => Some(t.chunk.id.as_str()),
            _ => None,
        };
        self.chunk_done(id, own_commit.as_deref(), facts, next_id, &head);
        self.reporter.progress(done, total, id);
        self.reporter.line(match (commit, &own_commit) {
            (Some(oid), _) => format!("  ✓ {id} completed, committed {}", &oid.to_string()[..10]),
            (None, Some(_)) => format!("  ✓ {id} completed (the agent committed its own work)"),
            (None, None) => format!("  ✓ {id} completed (no changes: the session changed nothing)"),
        });
        next.map(|(take, change)| self.taken(take, change))
            .transpose()
    }

    /// Commit the worktree's changes for `taken`: only what changed since the run's last
    /// commit, except for the run's last commit, which looks at every file (see `git::stage`):
    /// one that ends the plan, or after which the loop stops.
    fn commit_chunk(
        &self,
        taken: &Taken,
        wt: &crate::git::Repository,
        message: &str,
        take_next: bool,
    ) -> anyhow::Result<Option<crate::git::Oid>> {
        let plan = &taken.plan;
        let last = !take_next
            || self.interrupt.is_set()
            || plan.count(Status::Pending) + plan.count(Status::InProgress) <= 1;
        let mut stager = self.stager.lock().unwrap_or_else(|e| e.into_inner());
        stager.commit(wt, message, last)
    }

    /// `check`: the chunk's verification, when it ran (a failed one is the reason): its log is
    /// kept with the reason, and the end of its output shown once, on the attempt's line when
    /// the chunk is tried again, else in the error that stops the run.
    pub(super) fn fail_attempt(
        &self,
        taken: &Taken,
        reason: &str,
        agent_report: &SessionFacts,
        check: Option<&CheckResult>,
    ) -> anyhow::Result<()> {
        let failed_check = check.filter(|c| !c.passed);
        // The reason kept (attempt, journal, next prompt) names the check's log; the one shown
        // leaves it to the output's heading.
        let kept = match failed_check.and_then(|c| c.log.as_ref()) {
            Some(log) => format!("{reason} (log: {})", log.display()),
            None => reason.to_string(),
        };
        let id = &taken.chunk.id;
        let max = self.config.run.max_attempts;
        let log = self
            .paths
            .sessions_dir
            .join(&taken.session_id)
            .join("output.log");
        let (counted, decision, change, facts) = self.paths.plan.update(|plan| {
            let chunk = end_last_attempt(plan, id, "failed", &kept, agent_report)?;
            let counted = Counted::of(chunk.attempts().iter().map(|a| a.outcome.as_deref()));
            let decision = policy::after_failure(counted.failed, max);
            let attempt = taken.attempt;
            let change = match decision {
                AfterFailure::Retry => apply(chunk, &ChunkEvent::AttemptFailed { attempt })?,
                AfterFailure::GiveUp => {
                    let change = apply(chunk, &ChunkEvent::GiveUp { attempt })?;
                    chunk.set_str("failure_reason", &kept);
                    change
                }
            };
            Ok((counted, decision, change, self.keeper.facts.of(plan)))
        })?;
        let failed_count = counted.failed;
        crate::failpoint::hit("after_fail");
        self.journal
            .write(&Event::AttemptFailed(ev::AttemptFailed {
                chunk: id.clone(),
                attempt: taken.attempt,
                session_id: taken.session_id.clone(),
                reason: kept.clone(),
                log,
                failed_attempts: failed_count,
            }))?;
        self.journal.status(id, change)?;
        self.checkpoint(
            crate::store::checkpoint::Trigger::ChunkFailed,
            Some(facts),
            Some(id),
        );
        let output = |indent: &str| {
            failed_check.and_then(|c| crate::engine::verify::output_block(c, indent))
        };
        let here = match (decision, output("    ")) {
            (AfterFailure::Retry, Some(block)) => format!("\n{block}"),
            _ => String::new(),
        };
        self.reporter
            .line(format!("  ✗ {id} {}: {reason}{here}", counted.failed(max)));
        match decision {
            AfterFailure::Retry => Ok(()),
            AfterFailure::GiveUp => Err(RunnerError::NeedsHuman(format!(
                "chunk {id} failed {failed_count} times (run.max_attempts = {max}); last reason: {reason}\n{}Session logs: {}\nJournal: {}",
                output("").map(|block| format!("{block}\n")).unwrap_or_default(),
                self.paths.sessions_dir.display(),
                self.journal.path().display(),
            ))
            .with_hint(format!(
                "to retry it: {}",
                retry_failed_hint(&self.paths.name, self.agent_flag.as_ref())
            ))
            .into()),
        }
    }
}

/// Chunk `id` of `plan`, its last attempt ended now as `outcome`, with `reason` and what the
/// agent's CLI reported.
pub(super) fn end_last_attempt<'p>(
    plan: &'p mut Plan,
    id: &str,
    outcome: &str,
    reason: &str,
    agent_report: &SessionFacts,
) -> anyhow::Result<&'p mut Chunk> {
    let pos = plan
        .find_chunk(id)
        .ok_or_else(|| RunnerError::NeedsHuman(format!("chunk {id} vanished from the plan")))?;
    let chunk = plan.chunk_mut(pos);
    let now = crate::clock::now();
    chunk.update_last_attempt(|a| {
        a.outcome = Some(outcome.into());
        a.reason = Some(reason.to_string());
        a.ended_at = Some(now);
        a.record_report(agent_report);
    });
    Ok(chunk)
}

/// Whether the worktree moved on from `start` (the attempt's start commit): a commit since,
/// or uncommitted changes. Without a start commit it counts as changed (nothing to compare).
fn changed_since(wt: &crate::git::Repository, start: Option<String>) -> anyhow::Result<bool> {
    let Some(start) = start else {
        return Ok(true);
    };
    Ok(head_commit(wt)?.to_string() != start || !dirty_paths(wt)?.is_empty())
}
