//! How a run ends: its journal line, its last checkpoint and record, its socket and locks let
//! go, its notification (`notify`), and the report.

use crate::policy::outcome::RunOutcome;

use super::*;
use crate::store::FileLock;
use crate::store::event::{self as ev, Event};

impl Run {
    /// Journal how the run ended, let go of its socket and then its locks, notify (once
    /// nothing of the spec is held: a notify command may start the next run), and sum it up.
    pub(super) async fn end(
        mut self,
        result: anyhow::Result<()>,
        locks: Arc<Vec<FileLock>>,
        notifier: notify::Notifier,
    ) -> anyhow::Result<RunReport> {
        self.reporter.finish();
        let outcome = match &result {
            Ok(()) if self.plan_only => RunOutcome::Planned,
            Ok(()) => RunOutcome::Complete,
            Err(e) => notify::outcome_of_error(e),
        };
        let _ = self.journal.write(&Event::RunEnd(ev::RunEnd {
            outcome: outcome.as_str().into(),
            sessions: self.sessions,
        }));
        // The checkpoint and the record say how it ended (the plan read once, for both the
        // checkpoint and the summary).
        // A plan that cannot be read now leaves the last checkpoint as it is: one with no
        // chunks would say less than the truth.
        let plan = self.paths.plan.load();
        if let Ok(Some(plan)) = &plan {
            let facts = keep::PlanFacts::of(plan);
            self.checkpoint(crate::store::checkpoint::Trigger::RunEnd, Some(facts), None);
        }
        self.keeper.track.end(&crate::engine::track::outcome_word(
            &result,
            outcome.as_str(),
        ));
        // The socket goes before the locks: it must never outlive them into another run's time.
        self.person.take();
        drop(locks);
        notifier.ended(&result, outcome).await;
        result?;
        let plan = plan?.unwrap_or_else(empty_plan);
        Ok(RunReport {
            spec: self.paths.name.clone(),
            outcome,
            branch: branch_for(&self.paths.name),
            worktree: self.worktree.clone(),
            base_branch: self.base.clone(),
            completed: plan.count(Status::Completed),
            total: plan.total(),
            sessions: self.sessions,
            run_id: self.run_id.clone(),
        })
    }
}
