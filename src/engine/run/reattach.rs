//! Continuing an interrupted attempt's own agent session (`agent.resume_sessions`): the choice,
//! made as the chunk is taken and written with the take; the short prompt; and the fallback to
//! a fresh session when the resume fails at once (`policy::reattach`).
//!
//! The attempt record says what was chosen, in the plan write that takes the chunk (so even a
//! runner killed a moment later leaves it): `agent_preset` and `agent_spec` (what the next
//! take compares), `agent_session_id` (claude's: runner chooses it; codex's and gemini's are
//! read from the session's `output.log` at the next take), `resumed_from` for a resume,
//! `resume_failed` after a fallback.

use super::*;
use crate::agent::output::{SessionFacts, Tokens};
use crate::policy::invocation::SessionMode;
use crate::policy::reattach::{self as rules, LastAttempt};
use crate::store::event::{self as ev, Event};

/// How a coder session starts.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct NextSession {
    pub mode: SessionMode,
    /// codex: the thread's running token total when its previous session ended (a resume).
    pub thread_total: Option<Tokens>,
}

impl NextSession {
    pub fn reattaches(&self) -> Option<&str> {
        match &self.mode {
            SessionMode::Reattach { agent_session_id } => Some(agent_session_id),
            SessionMode::Fresh { .. } => None,
        }
    }
}

/// The last of `attempts` whose session ran (one that never started says nothing).
fn last_ran(attempts: &[Attempt]) -> Option<usize> {
    attempts
        .iter()
        .rposition(|a| a.outcome.as_deref() != Some("not_started"))
}

fn text(record: &Attempt, key: &str) -> Option<String> {
    record
        .extra
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// A runner session id as a folder name under `sessions/` (the plan is editable: never `..`).
fn session_folder_name(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// codex's running total of thread `id` before `attempts[before]`: the latest recorded by an
/// earlier attempt of the same thread.
fn thread_total_before(attempts: &[Attempt], before: usize, id: &str) -> Option<Tokens> {
    attempts[..before]
        .iter()
        .rev()
        .filter(|a| a.agent_session_id() == Some(id))
        .find_map(Attempt::thread_total)
}

impl Run {
    /// Under the plan lock, as a chunk is taken: how its next session starts, and the keys the
    /// new attempt record gets. `attempts` are the chunk's records before the new one; the
    /// last that ran, if it was interrupted, gains its session's report (cost, tokens, and for
    /// codex and gemini the agent session id, which they say only in their output).
    pub(super) fn choose_session(
        &self,
        attempts: &mut [Attempt],
    ) -> (NextSession, serde_json::Map<String, Value>) {
        let preset = self.agent.choice.preset;
        let mut record = serde_json::Map::new();
        if !rules::can_reattach(preset) {
            let mode = self.agent.fresh_mode();
            return (
                NextSession {
                    mode,
                    thread_total: None,
                },
                record,
            );
        }
        let last = last_ran(attempts);
        if let Some(i) = last {
            self.read_interrupted_report(attempts, i);
        }
        let last = last.map(|i| &attempts[i]);
        let (outcome, last_preset, spec, id) = match last {
            Some(a) => (
                a.outcome.clone(),
                text(a, "agent_preset"),
                text(a, "agent_spec"),
                a.agent_session_id().map(str::to_string),
            ),
            None => (None, None, None, None),
        };
        let facts = last.map(|a| LastAttempt {
            outcome: outcome.as_deref(),
            preset: last_preset.as_deref(),
            spec: spec.as_deref(),
            agent_session_id: id.as_deref(),
            ran: self.session_ran(a),
        });
        let chosen = rules::choose(
            self.config.agent.resume_sessions,
            preset,
            &self.paths.name,
            facts,
        );
        record.insert("agent_preset".into(), preset.name().into());
        record.insert("agent_spec".into(), self.paths.name.clone().into());
        let session = match chosen {
            Ok(id) => {
                let total = thread_total_before(attempts, attempts.len(), &id);
                record.insert("agent_session_id".into(), id.clone().into());
                record.insert("resumed_from".into(), id.clone().into());
                NextSession {
                    mode: SessionMode::Reattach {
                        agent_session_id: id,
                    },
                    thread_total: total,
                }
            }
            Err(why) => {
                if outcome
                    .as_deref()
                    .is_some_and(|o| rules::RESUMABLE_OUTCOMES.contains(&o))
                {
                    record.insert("not_resumed".into(), why.into());
                }
                let mode = self.agent.fresh_mode();
                if let SessionMode::Fresh {
                    session_id: Some(id),
                } = &mode
                {
                    record.insert("agent_session_id".into(), id.clone().into());
                }
                NextSession {
                    mode,
                    thread_total: None,
                }
            }
        };
        (session, record)
    }

    /// Whether `attempt`'s session was started: its `output.log`, created just before the
    /// agent is spawned, is there.
    fn session_ran(&self, attempt: &Attempt) -> bool {
        attempt
            .session_id
            .as_deref()
            .filter(|s| session_folder_name(s))
            .and_then(|s| {
                std::fs::symlink_metadata(self.paths.sessions_dir.join(s).join("output.log")).ok()
            })
            .is_some_and(|m| m.is_file())
    }

    /// The report of `attempts[i]`'s session, read from its folder and kept on its record, if
    /// it was interrupted under this preset and nothing of its report is recorded yet.
    /// Also an attempt recovery closed otherwise (a killed run's session whose chunk it
    /// completed, say): read under the preset that ran it (see `read_cut_off_reports`).
    fn read_interrupted_report(&self, attempts: &mut [Attempt], i: usize) {
        let a = &attempts[i];
        let preset = self.agent.choice.preset;
        let interrupted = a
            .outcome
            .as_deref()
            .is_some_and(|o| rules::RESUMABLE_OUTCOMES.contains(&o));
        let recovered = a.extra.contains_key("recovery");
        let ran_by = text(a, "agent_preset");
        let preset = match (interrupted, recovered) {
            (true, _) if ran_by.as_deref() == Some(preset.name()) => preset,
            (_, true) => match ran_by
                .as_deref()
                .and_then(crate::policy::invocation::Preset::parse)
            {
                Some(p) => p,
                None => return,
            },
            _ => return,
        };
        let unread = !a.extra.contains_key("tokens") && !a.extra.contains_key("cost_usd");
        let folder = a.session_id.clone().filter(|s| session_folder_name(s));
        let (true, Some(folder)) = (unread, folder) else {
            return;
        };
        let previous = a
            .agent_session_id()
            .and_then(|id| thread_total_before(attempts, i, id));
        let report = crate::agent::output::read::read_session(
            preset,
            &self.paths.sessions_dir.join(folder),
            previous,
            self.config.agent.max_log_bytes.saturating_add(4096),
        );
        // A claude id runner chose stays what it was: the output names the same session.
        let known = attempts[i].agent_session_id().map(str::to_string);
        attempts[i].record_report(&report);
        if let Some(id) = known {
            attempts[i]
                .extra
                .insert("agent_session_id".into(), Value::String(id));
        }
    }

    /// Sessions of a killed run have no report on their attempts (no shutdown recorded it;
    /// recovery closed them): what they cost is read from their folders as a run starts,
    /// before the budget is looked at, so the ledger counts them whatever becomes of their
    /// chunks. One pass over the plan's attempts; a write only when one was read.
    pub(super) fn read_cut_off_reports(&self) -> anyhow::Result<()> {
        let cut_off = |a: &Attempt| {
            a.extra.contains_key("recovery")
                && !a.extra.contains_key("tokens")
                && !a.extra.contains_key("cost_usd")
        };
        let Ok(Some(plan)) = self.paths.plan.load() else {
            return Ok(());
        };
        if !plan.chunks().any(|c| c.attempts().iter().any(cut_off)) {
            return Ok(());
        }
        self.paths.plan.update_if(|plan| {
            let mut changed = false;
            let positions: Vec<_> = plan.positions().collect();
            for pos in positions {
                let mut attempts = plan.chunk(pos).attempts();
                let before = attempts.clone();
                for i in 0..attempts.len() {
                    if cut_off(&attempts[i]) {
                        self.read_interrupted_report(&mut attempts, i);
                    }
                }
                if attempts != before {
                    plan.chunk_mut(pos).set_attempts(&attempts);
                    changed = true;
                }
            }
            Ok(((), changed))
        })
    }

    /// The mode of the session about to start: the one chosen at take time for a coder
    /// session, else a fresh one (planner).
    pub(super) fn session_mode(&mut self) -> NextSession {
        self.next_session.take().unwrap_or_else(|| NextSession {
            mode: self.agent.fresh_mode(),
            thread_total: None,
        })
    }

    /// The prompt of a taken chunk's first session: the short one for a resume; else the
    /// prompt of a cut-off session run again (`prompt_override`) unless that was itself a
    /// short one, else the coder prompt.
    pub(super) fn first_prompt(
        &self,
        taken: &Taken,
        prompt_override: Option<String>,
    ) -> anyhow::Result<String> {
        if taken.session.reattaches().is_some() {
            return self.short_prompt(taken);
        }
        let attempts = taken.chunk.attempts();
        let earlier = attempts.len().saturating_sub(1);
        let was_short = last_ran(&attempts[..earlier])
            .is_some_and(|i| attempts[i].extra.contains_key("resumed_from"));
        match prompt_override.filter(|_| !was_short) {
            Some(prompt) => Ok(prompt),
            None => self.coder_prompt(&taken.plan, taken),
        }
    }

    /// The short prompt of a resumed session (`templates/coder_resume.md`).
    fn short_prompt(&self, taken: &Taken) -> anyhow::Result<String> {
        let chunk = &taken.chunk;
        let attempts = chunk.attempts();
        let earlier = attempts.len().saturating_sub(1);
        let last = last_ran(&attempts[..earlier]).map(|i| &attempts[i]);
        let at = last
            .and_then(|a| a.ended_at.clone().or(a.started_at.clone()))
            .unwrap_or_else(|| "an unknown time".into());
        let what = match last.and_then(|a| a.reason.clone()) {
            Some(reason) => format!("runner stopped before your session ended ({reason})"),
            None => "runner stopped before your session ended".to_string(),
        };
        let context = json!({
            "spec_name": self.paths.name,
            "attempt": taken.attempt,
            "chunk": {"id": chunk.id, "description": chunk.description()},
            "interrupted_at": at,
            "interrupted_attempt": last.map(|a| a.n),
            "what_happened": what,
            "agent_session_id": taken.session.reattaches(),
            "partial": crate::engine::recovery::partial_work_note(chunk),
            "check_command": verification::command_check(chunk).map(|c| c.command),
        });
        self.prompts
            .render(crate::agent::prompt::CODER_RESUME, context)
    }

    /// The taken chunk's session; a resume that fails at once is followed, in the same
    /// attempt, by a fresh session with the full prompt. Returns how the last session ended,
    /// its report and the prompt it was given.
    pub(super) async fn coder_session(
        &mut self,
        taken: &mut Taken,
        prompt: String,
    ) -> anyhow::Result<(crate::agent::ChildEnd, SessionFacts, String)> {
        let start = taken.chunk.last_attempt().and_then(|a| a.start_commit);
        let (end, report) = self.taken_session(taken, &prompt, start.clone()).await?;
        let Some(resumed) = taken.session.reattaches().map(str::to_string) else {
            return Ok((end, report, prompt));
        };
        let Some(reason) = self.reattach_failed(taken, &end, &report) else {
            return Ok((end, report, prompt));
        };
        let full = self.coder_prompt(&taken.plan, taken)?;
        // The failed session's tools may have edited the plan: undone before the fresh
        // session's take of it (its guard compares with what `fall_back` writes).
        self.settle_plan_after_session(taken)?;
        self.fall_back(taken, &resumed, &reason)?;
        let (end, report) = self.taken_session(taken, &full, start).await?;
        Ok((end, report, full))
    }

    /// One session of `taken`, in the mode its take chose.
    async fn taken_session(
        &mut self,
        taken: &Taken,
        prompt: &str,
        start: Option<String>,
    ) -> anyhow::Result<(crate::agent::ChildEnd, SessionFacts)> {
        self.next_session = Some(taken.session.clone());
        let id = taken.chunk.id.clone();
        // Numbered as the run's line numbers it (`policy::attempt_count`): the failed ones,
        // and this one next.
        let counted = crate::policy::attempt_count::Counted::of(
            taken.chunk.attempts().iter().map(|a| a.outcome.as_deref()),
        );
        let who = crate::policy::live::Session::Coder {
            chunk: &id,
            attempt: counted.failed + 1,
            reattached: taken.session.reattaches().is_some(),
        };
        self.session(who, taken.attempt, &taken.session_id, prompt, start)
            .await
    }

    /// Why the resumed session just ended failed at once (`policy::reattach::failed_at_once`).
    fn reattach_failed(
        &self,
        taken: &Taken,
        end: &crate::agent::ChildEnd,
        report: &SessionFacts,
    ) -> Option<String> {
        // A plan the session broke is for the guard after the session to put right: no
        // fallback then.
        let plan = self.load_plan().ok()?;
        let reported = plan.find_chunk(&taken.chunk.id).is_some_and(|pos| {
            let chunk = plan.chunk(pos);
            chunk.status == Status::Completed
                || chunk.last_attempt().is_some_and(|a| a.reported.is_some())
        });
        let dir = self.paths.sessions_dir.join(&taken.session_id);
        let output = crate::agent::output::read::output_tail(&dir, 64 * 1024);
        rules::failed_at_once(&rules::ReattachEnd {
            ended: &end.ended,
            duration: end.duration,
            reported,
            tokens: report.tokens.total(),
            cost_usd: report.cost_usd,
            usage_limit: report.usage_limit.is_some(),
            output: &output,
        })
    }

    /// Record the failed resume on the attempt (a new runner session id, a fresh agent session
    /// id for claude, `resume_failed`), journal it, and make `taken` the fresh session's.
    fn fall_back(&mut self, taken: &mut Taken, resumed: &str, reason: &str) -> anyhow::Result<()> {
        let id = taken.chunk.id.clone();
        let fresh = self.agent.fresh_mode();
        let fresh_sid = crate::store::ids::session_id("coder", Some(&id), taken.attempt);
        let failed_sid = taken.session_id.clone();
        let note = json!({"agent_session_id": resumed, "session_id": failed_sid, "reason": reason});
        let plan = self.paths.plan.update(|plan| {
            if let Some(pos) = plan.find_chunk(&id) {
                let chunk = plan.chunk_mut(pos);
                chunk.update_last_attempt(|a| {
                    a.session_id = Some(fresh_sid.clone());
                    a.extra.shift_remove("resumed_from");
                    a.extra.shift_remove("agent_session_id");
                    if let SessionMode::Fresh {
                        session_id: Some(u),
                    } = &fresh
                    {
                        a.extra
                            .insert("agent_session_id".into(), Value::String(u.clone()));
                    }
                    a.extra.insert("resume_failed".into(), note.clone());
                });
                chunk.set_str("session_id", &fresh_sid);
            }
            Ok(plan.clone())
        })?;
        self.journal.write(&Event::ResumeFailed(ev::ResumeFailed {
            chunk: id.clone(),
            attempt: taken.attempt,
            session_id: failed_sid,
            agent_session_id: resumed.to_string(),
            reason: reason.to_string(),
            fresh_session_id: fresh_sid.clone(),
        }))?;
        self.reporter.line(format!(
            "  ↻ {id}: the agent session {resumed} could not be resumed ({reason}); a fresh session starts with the full prompt"
        ));
        if let Some(pos) = plan.find_chunk(&id) {
            taken.chunk = plan.chunk(pos).clone();
        }
        taken.session_id = fresh_sid;
        taken.session = NextSession {
            mode: fresh,
            thread_total: None,
        };
        taken.plan = plan;
        self.keep_plan_before_session(&taken.plan);
        Ok(())
    }
}
