//! The planner session: write a plan where there is none, retry an invalid one.

use super::*;
use crate::store::event::{self as ev, Event};

pub(super) fn plan_error_lines(e: &PlanError) -> Vec<String> {
    let at = match (e.line, e.column) {
        (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
        _ => String::new(),
    };
    e.problems.iter().map(|p| format!("{p}{at}")).collect()
}

impl Run {
    pub(super) async fn plan_feature(
        &mut self,
        mut resumed_prompt: Option<String>,
    ) -> anyhow::Result<()> {
        let spec_text = crate::store::spec::read_text(&self.paths.spec_md)?;
        // A new plan starts: the copies of an old one (last-good, journal snapshots) must never
        // be "restored" over it. The old copy is kept aside; the journal gets a barrier.
        let last_good = self.paths.plan.last_good_path().to_path_buf();
        if last_good.exists() {
            let aside = crate::store::unused_path(&last_good.with_file_name(format!(
                "{}.replaced-{}",
                crate::plan::LAST_GOOD_FILE,
                crate::clock::stamp()
            )));
            crate::store::safe::rename(&last_good, &aside)
                .with_context(|| format!("moving {} aside", last_good.display()))?;
        }
        self.journal.write(&Event::PlanReset(ev::Empty {}))?;
        let mut errors: Vec<String> = Vec::new();
        let max = self.config.run.max_attempts;
        let mut attempt = 0;
        while attempt < max {
            attempt += 1;
            if !self.budget_left()? {
                return Err(self.budget_spent().into());
            }
            self.reporter.line(format!(
                "Planning {} (attempt {attempt} of {max})…",
                self.paths.name
            ));
            let prompt = match resumed_prompt.take() {
                Some(p) => {
                    self.reporter.line(format!(
                        "Resuming interrupted work for planner on {}: \"{}…\"",
                        self.paths.name,
                        crate::engine::recovery::interrupted::preview(&p, 80)
                    ));
                    p
                }
                None => self.prompts.render(
                    crate::agent::prompt::PLANNER,
                    json!({
                        "spec_name": self.paths.name,
                        "spec_text": spec_text,
                        "plan_file": self.paths.plan.path(),
                        "attempt": attempt,
                        "errors": errors,
                    }),
                )?,
            };
            let session_id = crate::store::ids::session_id("planner", None, attempt);
            // The planner's report is journaled with its session end (no attempt record).
            let (end, report) = self
                .session("planner", None, attempt, &session_id, &prompt, None)
                .await?;
            if let Ended::Interrupted { drained } = end.ended {
                self.set_aside_partial_plan()?;
                return self
                    .interrupted(None, "planner", None, &session_id, &prompt, drained)
                    .await;
            }
            if report.usage_limit.is_some() {
                self.limit_hit(&report, &session_id)?;
            }
            errors = match self.paths.plan.load() {
                Ok(Some(plan)) => check_planner_output(&plan),
                Ok(None) => vec![format!(
                    "the planner did not write {}",
                    self.paths.plan.path().display()
                )],
                Err(e) => match e.downcast::<PlanError>() {
                    Ok(pe) => plan_error_lines(&pe),
                    Err(other) => return Err(other),
                },
            };
            if errors.is_empty() {
                return self.accept_plan(&session_id);
            }
            if self.limited.is_some() {
                // Cut short by the usage limit: not an attempt of its own. The next one
                // starts after the pause (or the run stops, exit 6).
                self.reporter.line(format!(
                    "The planner stopped: {}",
                    report.failure().unwrap_or_default()
                ));
                attempt -= 1;
                self.honour_pause().await?;
                continue;
            }
            self.journal.write(&Event::PlanRejected(ev::PlanRejected {
                session_id: session_id.clone(),
                attempt,
                errors: errors.clone(),
            }))?;
            self.reporter.line(format!(
                "The planner's output was not a valid plan:\n{}",
                errors
                    .iter()
                    .map(|e| format!("  - {e}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
        }
        Err(RunnerError::NeedsHuman(format!(
            "the planner did not produce a valid plan in {max} attempts. Last problems:\n{}\nThe planner's last output is at {} (left as it is); logs are in {}",
            errors.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n"),
            self.paths.plan.path().display(),
            self.paths.sessions_dir.display()
        ))
        .with_hint("fix the plan by hand, or delete it to plan again")
        .into())
    }

    /// The planner wrote a valid plan: pin the base in it and journal it.
    fn accept_plan(&self, session_id: &str) -> anyhow::Result<()> {
        let base = self.base.clone();
        let plan = self.paths.plan.update(|plan| {
            if plan.str_field("base_branch").is_none() {
                plan.set_field("base_branch", Value::String(base));
            }
            Ok(plan.clone())
        })?;
        crate::failpoint::hit("after_plan_accepted");
        self.journal.write(&Event::PlanAccepted(ev::PlanAccepted {
            session_id: session_id.to_string(),
            phases: plan.phases.len(),
            chunks: plan.total(),
        }))?;
        self.journal.write(&Event::PlanSnapshot(ev::PlanSnapshot {
            plan: plan.to_value(),
        }))?;
        self.reporter.line(format!(
            "Plan ready: {} phases, {} chunks.",
            plan.phases.len(),
            plan.total()
        ));
        Ok(())
    }

    /// A planner cut off mid-write may leave half a plan. Keep it (renamed, never overwritten)
    /// so that the next run plans again instead of stopping on an invalid file.
    pub(super) fn set_aside_partial_plan(&self) -> anyhow::Result<()> {
        let path = self.paths.plan.path();
        if !path.exists() || self.paths.plan.load().is_ok() {
            return Ok(());
        }
        let aside = crate::store::unused_path(&path.with_file_name(format!(
            "{}.interrupted-{}",
            crate::plan::PLAN_FILE,
            crate::clock::stamp()
        )));
        crate::store::safe::rename(path, &aside)
            .with_context(|| format!("moving {} aside", path.display()))?;
        self.reporter.line(format!(
            "The interrupted planner left an incomplete plan; it is kept as {}.",
            aside.display()
        ));
        self.journal.write(&Event::PlanSetAside(ev::PlanSetAside {
            path: aside,
            why: "planner interrupted".into(),
        }))?;
        Ok(())
    }
}
