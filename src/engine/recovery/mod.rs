//! Recovery: put interrupted state right without running a coder. Used by `runner recover` and,
//! for its own spec, by `runner run` before it starts. The caller holds the spec's run lock.

mod chunk;

pub mod evaluator;
pub mod inspect;
pub mod interrupted;
use crate::engine::integrity;
pub mod lifecycle;
pub mod procs;
pub mod quiet;
pub mod repair;
pub mod restore;
mod settle;
mod spec;

use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use serde_json::{Value, json};

pub use crate::policy::recovery as decide;
pub use chunk::{partial_work_note, predict_chunk, recover_chunk};
pub use decide::{ChunkFacts, Decision};
pub use settle::{PLAN_BEFORE_SESSION, PlanToPublish, plan_after_recovery, plan_to_publish};
pub use spec::recover_spec;

use crate::error::RunnerError;
use crate::git::{branch_for, commit_all, slot_holding};
use crate::plan::{Chunk, Plan, PlanError, Status, verification};
use crate::store::Journal;
use crate::store::{SpecPaths, Workspace};

/// How long a leftover agent group gets between SIGTERM and SIGKILL.
const LEFTOVER_GRACE: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, Default)]
pub struct RecoverySettings {
    pub dry_run: bool,
    pub retry_failed: bool,
    pub verification_timeout: Duration,
    /// `agent.max_log_bytes`: a check's log keeps at most this much (0: the default).
    pub max_log_bytes: u64,
    /// Set when `[recovery] evaluator = "agent"`.
    pub evaluator: Option<evaluator::AgentEvaluator>,
    /// The run's Ctrl-C/SIGTERM: checks and the evaluator stop with it.
    pub interrupt: crate::agent::Interrupt,
    /// Recovery during a shutdown (`run` after its first Ctrl-C): the check's timeout is the
    /// drain's budget, so a check that runs out of it decides nothing (it did not fail).
    pub shutdown: bool,
}

/// One thing recovery found and did (or, in a dry run, would do).
#[derive(Debug, Clone, Serialize, PartialEq, Default, schemars::JsonSchema)]
pub struct Action {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<String>,
    /// For a chunk: the decision. `None` in a dry run where it depends on a verification the
    /// dry run did not run; `if_verification` then names both outcomes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub if_verification: Option<IfVerification>,
    pub detail: String,
}

/// What recovery will decide for a chunk whose verification a dry run did not run (a check may
/// change files, and a dry run changes nothing).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct IfVerification {
    pub passes: Decision,
    pub fails: Decision,
}

impl Action {
    fn new(kind: &str, chunk: Option<&str>, detail: impl Into<String>) -> Action {
        Action {
            kind: kind.into(),
            chunk: chunk.map(str::to_string),
            detail: detail.into(),
            ..Action::default()
        }
    }

    /// One line for a person.
    pub fn line(&self) -> String {
        match (&self.chunk, self.decision) {
            (Some(c), Some(d)) => format!("chunk {c}: {} — {}", d.as_str(), self.detail),
            (Some(c), None) if let Some(v) = self.if_verification => format!(
                "chunk {c}: {} if its verification passes, {} if it fails — {}",
                v.passes.as_str(),
                v.fails.as_str(),
                self.detail
            ),
            (Some(c), None) => format!("chunk {c}: {}", self.detail),
            _ => self.detail.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Default, schemars::JsonSchema)]
pub struct SpecRecovery {
    pub spec: String,
    pub outcome: crate::policy::outcome::RecoveryOutcome,
    pub actions: Vec<Action>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_source: Option<String>,
}

impl SpecRecovery {
    pub fn needs_human(&self) -> bool {
        self.outcome == crate::policy::outcome::RecoveryOutcome::NeedsHuman
    }
}

/// What an action's text says it did: in a dry run, what it would do (it did nothing).
fn said<'a>(dry_run: bool, done: &'a str, would: &'a str) -> &'a str {
    if dry_run { would } else { done }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reported_with_check() -> ChunkFacts {
        ChunkFacts {
            branch_exists: true,
            head_descends_from_start: true,
            on_branch: true,
            reported_done: true,
            has_check: true,
            dirty: true,
            ..ChunkFacts::default()
        }
    }

    #[test]
    fn a_prediction_names_both_outcomes_only_where_the_check_decides() {
        let a = predict_chunk(&reported_with_check(), true, false, "c");
        assert_eq!(a.decision, None);
        assert_eq!(
            a.if_verification,
            Some(IfVerification {
                passes: Decision::Next,
                fails: Decision::Continue
            })
        );
        assert!(
            a.line()
                .contains("next if its verification passes, continue if it fails")
        );
        // Without a worktree the real recovery runs no check either: one decision.
        let a = predict_chunk(&reported_with_check(), false, false, "c");
        assert_eq!(a.decision, Some(Decision::Continue));
        assert_eq!(a.if_verification, None);
        // Unreported uncommitted work stays partial whatever the check says.
        let facts = ChunkFacts {
            reported_done: false,
            ..reported_with_check()
        };
        let a = predict_chunk(&facts, true, true, "c");
        assert_eq!(a.decision, Some(Decision::Continue));
        assert!(a.detail.contains("evaluator"), "{}", a.detail);
    }
}
