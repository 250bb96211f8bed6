//! A run's notifications (`[notify]`, docs/configuration.md): `resuming` once, when a run
//! goes ahead on work that the run before it left interrupted, and one event at the run's
//! end, whatever it is — from here, where every front end's run passes (the CLI's, `run
//! --jobs`'s children, the MCP server's `start_run`). `run --jobs` itself runs no spec, so it
//! notifies nothing: each spec's own run does, once.

use super::*;
use crate::error::ErrorReport;
use crate::policy::notify as note;
use crate::policy::outcome::RunOutcome;

/// What the run needs to notify, set up once it holds its locks.
pub(super) struct Notifier {
    config: crate::config::NotifyConfig,
    root: PathBuf,
    paths: SpecPaths,
    run_id: String,
    agent_flag: Option<crate::policy::next_command::AgentFlag>,
    reporter: Reporter,
    interrupt: Interrupt,
    /// The work an interrupted run left: its chunk (`Some(None)`: it was planning). Read
    /// before this run's own record exists (its record, not ended, would read as interrupted).
    resumes: Option<Option<String>>,
}

impl Notifier {
    pub(super) fn new(
        config: &Config,
        root: &Path,
        paths: &SpecPaths,
        run_id: &str,
        opts: &RunOptions,
        (reporter, interrupt): (&Reporter, &Interrupt),
    ) -> Notifier {
        let resumes = crate::store::runs::interrupted_run(&paths.dir).map(|r| {
            r.chunk.or_else(|| {
                // A run killed between two chunks: the chunk it left in progress, if any.
                let plan = paths.plan.load().ok()??;
                let chunk = plan.chunks().find(|c| c.status == Status::InProgress)?;
                Some(chunk.id.clone())
            })
        });
        Notifier {
            config: config.notify.clone(),
            root: root.to_path_buf(),
            paths: paths.clone(),
            run_id: run_id.to_string(),
            agent_flag: opts.agent_flag(),
            reporter: reporter.clone(),
            interrupt: interrupt.clone(),
            resumes,
        }
    }

    /// The person chose to throw the existing work away and start afresh: nothing resumes.
    pub(super) fn forget_interrupted(&mut self) {
        self.resumes = None;
    }

    /// The run goes ahead: `resuming`, if it takes up interrupted work.
    pub(super) async fn resuming(&self) {
        let Some(chunk) = &self.resumes else {
            return;
        };
        let plan = self.paths.plan.load().ok().flatten();
        let payload = note::resuming_payload(&self.facts(plan.as_ref()), chunk.as_deref());
        self.send(&payload).await;
    }

    /// The run ended with `result` (`ok`: its outcome if it succeeded): its event. A run that
    /// a cancelled question stopped did nothing, and says nothing.
    pub(super) async fn ended<T>(&self, result: &anyhow::Result<T>, ok: RunOutcome) {
        let (outcome, exit_code, reason) = match result {
            Ok(_) => (ok, crate::error::exit::OK, None),
            Err(e) if crate::engine::track::error_word(e) == "cancelled" => return,
            Err(e) => (
                outcome_of_error(e),
                crate::error::exit_code_of(e),
                Some(ErrorReport::of(e).message),
            ),
        };
        self.ended_as(outcome, exit_code, reason.as_deref()).await;
    }

    /// The run ended as `outcome` (a merge chosen instead of running, say).
    pub(super) async fn ended_as(&self, outcome: RunOutcome, exit_code: i32, reason: Option<&str>) {
        let plan = self.paths.plan.load().ok().flatten();
        let end = note::RunEnd {
            outcome,
            exit_code,
            failed_chunks: plan.as_ref().map_or(0, |p| p.count(Status::Failed)),
            reason,
        };
        let payload = note::end_payload(&self.facts(plan.as_ref()), &end);
        self.send(&payload).await;
    }

    fn facts<'a>(&'a self, plan: Option<&Plan>) -> note::SpecFacts<'a> {
        let spent = crate::store::ledger::total(&super::budget::ledger_now(&self.paths));
        note::SpecFacts {
            spec: &self.paths.name,
            run_id: &self.run_id,
            done: plan.map_or(0, |p| p.count(Status::Completed)),
            total: plan.map_or(0, Plan::total),
            usd: spent.usd,
            continue_command: crate::policy::next_command::continue_command(
                &self.paths.name,
                self.agent_flag.as_ref(),
            ),
            time: chrono::Utc::now(),
        }
    }

    async fn send(&self, payload: &note::Payload) {
        if self.config.bell && self.config.wants(payload.event) {
            self.reporter.bell();
        }
        crate::notify::send(
            &self.config,
            payload,
            &self.root,
            &self.paths.dir,
            &self.interrupt,
        )
        .await;
    }
}

/// How a run that failed with `e` ended.
pub(super) fn outcome_of_error(e: &anyhow::Error) -> RunOutcome {
    match e.downcast_ref::<RunnerError>().map(RunnerError::fact) {
        Some(RunnerError::Interrupted) => RunOutcome::Interrupted,
        Some(RunnerError::NeedsHuman(_)) => RunOutcome::NeedsHuman,
        Some(RunnerError::BudgetSpent(_)) => RunOutcome::BudgetSpent,
        Some(RunnerError::UsageLimited(_)) => RunOutcome::UsageLimited,
        _ => RunOutcome::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_is_the_outcome_the_run_reports() {
        let of = |e: RunnerError| outcome_of_error(&anyhow::Error::from(e));
        assert_eq!(of(RunnerError::Interrupted), RunOutcome::Interrupted);
        assert_eq!(
            of(RunnerError::NeedsHuman("x".into())),
            RunOutcome::NeedsHuman
        );
        assert_eq!(
            of(RunnerError::BudgetSpent("x".into())),
            RunOutcome::BudgetSpent
        );
        assert_eq!(
            of(RunnerError::UsageLimited("x".into())),
            RunOutcome::UsageLimited
        );
        assert_eq!(of(RunnerError::bad_input("x")), RunOutcome::Error);
    }
}
