//! Interruption: what a Ctrl-C, SIGTERM or SIGHUP does to the chunk being worked on.

use super::*;

impl Run {
    /// After a shutdown signal: the session's chunk goes through recovery's rules; a session
    /// still busy when the drain ran out is listed in `interrupted-sessions.json` so the next
    /// start runs it again (and a stale entry is removed if it finished). Always ends the run.
    pub(super) async fn interrupted(
        &mut self,
        ws: Option<&Workspace>,
        role: &str,
        taken: Option<&Taken>,
        session_id: &str,
        prompt: &str,
        drained: bool,
    ) -> anyhow::Result<()> {
        // Recovery completed the session's chunk from the work it reported: nothing to re-run.
        let mut completed = false;
        if let (Some(ws), Some(taken)) = (ws, taken) {
            let plan = self.load_plan()?;
            let chunk = plan
                .find_chunk(&taken.chunk.id)
                .map(|pos| plan.chunk(pos).clone())
                .filter(|c| c.status == Status::InProgress);
            if let Some(chunk) = chunk {
                let wt = self.open_worktree()?;
                let opts = crate::engine::recovery::RecoverySettings {
                    // The user asked to stop: the check gets no longer than the drain, and
                    // a second Ctrl-C stops it at once. Cut short, it decides nothing.
                    verification_timeout: self.drain.min(self.config.run.verification_timeout()),
                    max_log_bytes: self.config.agent.max_log_bytes,
                    interrupt: self.interrupt.next_signal(),
                    shutdown: true,
                    ..Default::default()
                };
                let decided = crate::engine::recovery::recover_chunk(
                    ws,
                    &self.paths,
                    &self.journal,
                    &chunk,
                    Some(&wt),
                    &opts,
                    "interrupted",
                )
                .await;
                match decided {
                    Ok(action) => {
                        completed = action.decision == Some(crate::engine::recovery::Decision::Next);
                        self.reporter
                            .notice(format!("Interrupted: {}", action.line()));
                    }
                    Err(e) if crate::error::is_interrupted(&e) => self.reporter.notice(format!(
                        "Interrupted: chunk {}: left in progress — its verification was cut short, so nothing was decided; the next `runner recover` or `runner run` checks it again",
                        chunk.id
                    )),
                    Err(e) => return Err(e),
                }
            }
        }
        let entries = if drained {
            Vec::new()
        } else if completed {
            self.reporter.notice(format!(
                "The {role} session {session_id} was stopped; its chunk is completed from the work it reported, so it is not run again."
            ));
            Vec::new()
        } else {
            let why = if self.interrupt.by_parent() {
                "when the runner that started this run stopped it".to_string()
            } else if self.interrupt.forced() {
                "when you stopped it with a second Ctrl-C".to_string()
            } else {
                format!(
                    "when the drain timeout ran out ({} s)",
                    self.drain.as_secs()
                )
            };
            self.reporter.notice(format!(
                "The {role} session {session_id} was still working {why}; the next start runs it again."
            ));
            vec![crate::engine::recovery::interrupted::InterruptedSession {
                session_id: session_id.to_string(),
                spec: self.paths.name.clone(),
                role: role.to_string(),
                chunk_id: taken.map(|t| t.chunk.id.clone()),
                prompt_path: self.paths.sessions_dir.join(session_id).join("prompt.md"),
                prompt_preview: crate::engine::recovery::interrupted::preview(prompt, 200),
                time: crate::clock::now(),
            }]
        };
        crate::engine::recovery::interrupted::record(&self.state_dir, &self.paths.name, entries)?;
        Err(RunnerError::Interrupted.into())
    }

    /// Put a chunk that did not finish back to `pending`, recording why.
    pub(super) fn release_chunk(
        &self,
        id: &str,
        outcome: &str,
        reason: &str,
    ) -> anyhow::Result<()> {
        self.release_chunk_with(id, outcome, reason, None)
    }

    /// `release_chunk`, keeping the session's report (its cost) on the closed attempt.
    pub(super) fn release_chunk_with(
        &self,
        id: &str,
        outcome: &str,
        reason: &str,
        report: Option<&crate::agent::output::SessionFacts>,
    ) -> anyhow::Result<()> {
        let event = crate::policy::transition::ChunkEvent::Release {
            why: outcome.to_string(),
            reason: Some(reason.to_string()),
        };
        let change = self.paths.plan.update(|plan| {
            let Some(pos) = plan.find_chunk(id) else {
                return Ok(None);
            };
            let chunk = plan.chunk_mut(pos);
            let change = crate::policy::transition::apply(chunk, &event)?;
            chunk.close_open_attempt(outcome, reason, &crate::clock::now());
            if let Some(report) = report {
                chunk.update_last_attempt(|a| a.record_report(report));
            }
            Ok(Some(change))
        })?;
        if let Some(change) = change {
            self.journal.status(id, change)?;
        }
        Ok(())
    }
}
