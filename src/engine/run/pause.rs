//! Usage limits pause the spec; they do not fail it (`policy::pause`). After a session whose
//! agent hit its usage limit, the spec is paused until the reset (`store::pause`); before the
//! next session the run either stops (exit 6) or, with `--wait` / `run.wait_for_limits`,
//! sleeps until then, holding its locks (a second `runner run` of the spec meanwhile is
//! busy, exit 4), interruptible by Ctrl-C (exit 130; nothing is lost: the chunk is pending).

use super::*;
use crate::agent::output::SessionFacts;
use crate::policy::pause::{Basis, OnPause};
use crate::policy::transition::{ChunkEvent, apply};
use crate::store::pause::{self as store_pause, Found, Pause};

/// How often the wait looks at the clock, the signals and the countdown.
const TICK: Duration = Duration::from_millis(250);

impl Run {
    /// The session `session_id` hit the agent's usage limit: pause the spec until the reset
    /// (stored before anything else, so that a crash never loses it).
    pub(super) fn limit_hit(
        &mut self,
        report: &SessionFacts,
        session_id: &str,
    ) -> anyhow::Result<()> {
        let now = chrono::Utc::now();
        let said = report.usage_limit.and_then(|l| l.resets_at);
        let (until, basis) =
            crate::policy::pause::pause_until(said, now, self.config.run.limit_wait_default());
        let preset = self.agent.choice.preset.name().to_string();
        let why = match (basis, said) {
            (Basis::Reported, _) => "it said when the limit resets".to_string(),
            (Basis::PastRetry, Some(at)) => format!(
                "it said the limit reset at {}, already past: trying again in a minute",
                at.to_rfc3339()
            ),
            (Basis::Default, Some(at)) => format!(
                "it said the limit resets at {}, too far ahead to believe: run.limit_wait_default applies",
                at.to_rfc3339()
            ),
            (_, None) => "it said no reset time: run.limit_wait_default applies".to_string(),
        };
        let pause = Pause {
            until,
            reason: format!("{preset} hit its usage limit ({why})"),
            preset,
            session_id: Some(session_id.to_string()),
            set_at: now,
        };
        if let Err(e) = store_pause::write(&self.state_dir, &self.paths.name, &pause) {
            // This run still honours it (`self.limited`); a later one tries the agent again.
            self.reporter.notice(format!(
                "runner: the pause of {} could not be stored ({e}); a later run will try the agent again",
                self.paths.name
            ));
        }
        self.limited = Some(pause);
        crate::failpoint::hit("after_limit_paused");
        Ok(())
    }

    /// The attempt ended by the usage limit, its chunk not reported done: recorded as
    /// `usage_limited` (not counted toward `run.max_attempts`), the chunk back to `pending`.
    pub(super) fn attempt_limited(
        &self,
        taken: &Taken,
        agent_report: &SessionFacts,
    ) -> anyhow::Result<()> {
        let id = &taken.chunk.id;
        let reason = match &agent_report.error {
            Some(said) => format!("the agent hit its usage limit: {said}"),
            None => agent_report
                .failure()
                .unwrap_or_else(|| "the agent hit its usage limit".into()),
        };
        let attempt = taken.attempt;
        let change = self.paths.plan.update(|plan| {
            let chunk =
                super::chunk::end_last_attempt(plan, id, "usage_limited", &reason, agent_report)?;
            Ok(apply(chunk, &ChunkEvent::UsageLimited { attempt })?)
        })?;
        self.journal.status(id, change)?;
        self.reporter.line(format!(
            "  ⏸ {id} stopped (not counted toward run.max_attempts): {reason}"
        ));
        Ok(())
    }

    /// Before a session: if the spec is paused, stop (exit 6) or wait it out (`--wait`); a
    /// pause that is over is cleared. A pause file that is not usable is reported and ignored.
    pub(super) async fn honour_pause(&mut self) -> anyhow::Result<()> {
        loop {
            let now = chrono::Utc::now();
            let pause = match store_pause::read(&self.state_dir, &self.paths.name, now) {
                Found::Paused(p) => p,
                Found::Nothing => match self.limited.clone() {
                    Some(p) => p,
                    None => return Ok(()),
                },
                Found::Unusable(why) => {
                    self.reporter
                        .notice(format!("runner: a pause is ignored: {why}"));
                    match self.limited.clone() {
                        Some(p) => p,
                        None => return self.pause_over(),
                    }
                }
            };
            let max_wait = self.config.run.max_wait();
            let decision =
                crate::policy::pause::on_pause(pause.until, now, self.wait, self.waited, max_wait);
            // A spec with no session ahead (every chunk done, or stuck) ends as it would have.
            if decision != OnPause::Go && !self.session_ahead() {
                return Ok(());
            }
            match decision {
                OnPause::Go => return self.pause_over(),
                OnPause::Stop { too_long } => return Err(self.paused_error(&pause, too_long)),
                OnPause::Wait { for_ } => self.wait_out(&pause, for_).await?,
            }
        }
    }

    /// Would the run start a session next (a plan to write, a chunk to take)? A spec whose
    /// chunks are all done (or stuck) ends as it would have, pause or not.
    fn session_ahead(&self) -> bool {
        match self.paths.plan.load() {
            Ok(Some(plan)) => matches!(next_step(&plan), NextStep::Chunk(_)),
            // No plan: the planner runs. A plan that does not load: its error is said later.
            _ => true,
        }
    }

    /// The pause is over (or not usable): its file goes. One that cannot be removed (a folder
    /// planted in its place) is said and left: it is over or ignored at every read, so it must
    /// not stop this run or any later one.
    fn pause_over(&mut self) -> anyhow::Result<()> {
        self.limited = None;
        if let Err(e) = store_pause::clear(&self.state_dir, &self.paths.name) {
            self.reporter.notice(format!(
                "runner: the pause of {} could not be removed ({e}); it is ignored",
                self.paths.name
            ));
        }
        Ok(())
    }

    /// Exit 6: the pause in the reader's local time with the time left, and in UTC (what
    /// JSON and logs keep).
    fn paused_error(&self, pause: &Pause, too_long: bool) -> anyhow::Error {
        let now = chrono::Utc::now();
        let utc = pause
            .until
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let mut message = format!(
            "spec {} is paused by a usage limit {} ({utc}); run again after it, or pass --wait\n({})",
            self.paths.name,
            crate::clock::until_words(pause.until, now),
            pause.reason
        );
        if too_long {
            message.push_str(&format!(
                "\nwaiting until then would take this run's waiting past run.max_wait ({} s)",
                self.config.run.max_wait
            ));
        }
        RunnerError::UsageLimited(message)
            .with_hint(format!(
                "after {}: {}",
                crate::clock::local_time(pause.until, now),
                crate::policy::next_command::continue_command(
                    &self.paths.name,
                    self.agent_flag.as_ref()
                )
            ))
            .into()
    }

    /// Sleep until the pause's reset plus the margin (`for_`), a tick at a time: the countdown
    /// is shown, a signal stops the wait at once, and the wall clock is looked at each tick (a
    /// clock set forward ends the wait early; one set back makes `honour_pause` wait again,
    /// within `run.max_wait`, which counts the time really slept).
    async fn wait_out(&mut self, pause: &Pause, for_: Duration) -> anyhow::Result<()> {
        let now = chrono::Utc::now();
        let until = crate::clock::local_time(pause.until, now);
        self.reporter.line(format!(
            "Paused by a usage limit {} ({}); waiting (--wait), Ctrl-C to stop",
            crate::clock::until_words(pause.until, now),
            pause.reason
        ));
        // The bar shows the spec's chunks while it waits, not an empty count: a run that
        // starts paused has reported no position yet.
        if let Ok(Some(plan)) = self.paths.plan.load() {
            let done = plan.count(crate::plan::Status::Completed);
            self.reporter.progress(done, plan.total(), "");
        }
        let end = pause.until + crate::policy::pause::MARGIN;
        let started = std::time::Instant::now();
        let result = loop {
            if self.interrupt.is_set() {
                break Err(RunnerError::Interrupted.into());
            }
            let elapsed = started.elapsed();
            let left = (end - chrono::Utc::now()).to_std().unwrap_or_default();
            if elapsed >= for_ || left.is_zero() {
                break Ok(());
            }
            self.reporter.waiting(&until, left.as_secs());
            tokio::time::sleep(TICK.min(left)).await;
        };
        self.waited += started.elapsed();
        self.reporter.waiting_over();
        result
    }
}
