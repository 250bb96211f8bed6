//! How a run and a spec's recovery ended, as words with one spelling each. They are written
//! as these snake_case words (`runner run --json`'s `outcome`, the journal's `run_end`,
//! `runner recover --json`'s per-spec `outcome`), exactly as the strings they replace were.

use serde::{Deserialize, Serialize};

/// How `runner run` ended for one spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// Every chunk done.
    Complete,
    /// `--plan-only`: the spec has a plan, and the run stopped before any chunk.
    Planned,
    /// The person chose to merge the existing work instead of running.
    Merged,
    /// Ctrl-C, SIGTERM or SIGHUP: it stopped between two steps and resumes.
    Interrupted,
    /// A chunk failed its attempts, or something needs a person's look.
    NeedsHuman,
    /// The budget (sessions, dollars or tokens) is spent.
    BudgetSpent,
    /// The agent's usage limit: paused until it resets.
    UsageLimited,
    /// Anything else (the error says what).
    Error,
}

impl RunOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Complete => "complete",
            RunOutcome::Planned => "planned",
            RunOutcome::Merged => "merged",
            RunOutcome::Interrupted => "interrupted",
            RunOutcome::NeedsHuman => "needs_human",
            RunOutcome::BudgetSpent => "budget_spent",
            RunOutcome::UsageLimited => "usage_limited",
            RunOutcome::Error => "error",
        }
    }
}

impl std::fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How `runner recover` left one spec.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryOutcome {
    /// Nothing was interrupted.
    #[default]
    Clean,
    /// Interrupted state was put right.
    Recovered,
    /// Something only a person can decide (the actions say what).
    NeedsHuman,
    /// A runner holds it: skipped.
    Busy,
    /// Its plan cannot be read or validated: left as it is.
    InvalidPlan,
    /// Its folder cannot be worked with safely (a link out of the repository): left as it is.
    Refused,
}

impl RecoveryOutcome {
    /// A spec whose plan or folder runner could not work with, left as it is (exit 2).
    pub fn left_unusable(self) -> bool {
        matches!(
            self,
            RecoveryOutcome::InvalidPlan | RecoveryOutcome::Refused
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RecoveryOutcome::Clean => "clean",
            RecoveryOutcome::Recovered => "recovered",
            RecoveryOutcome::NeedsHuman => "needs_human",
            RecoveryOutcome::Busy => "busy",
            RecoveryOutcome::InvalidPlan => "invalid_plan",
            RecoveryOutcome::Refused => "refused",
        }
    }
}

impl std::fmt::Display for RecoveryOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_written_as_the_words_they_replace() {
        for o in [
            RunOutcome::Complete,
            RunOutcome::Merged,
            RunOutcome::Interrupted,
            RunOutcome::NeedsHuman,
            RunOutcome::BudgetSpent,
            RunOutcome::UsageLimited,
            RunOutcome::Error,
        ] {
            let json = serde_json::to_value(o).unwrap();
            assert_eq!(json, o.as_str());
            assert_eq!(serde_json::from_value::<RunOutcome>(json).unwrap(), o);
        }
        for o in [
            RecoveryOutcome::Clean,
            RecoveryOutcome::Recovered,
            RecoveryOutcome::NeedsHuman,
            RecoveryOutcome::Busy,
            RecoveryOutcome::InvalidPlan,
            RecoveryOutcome::Refused,
        ] {
            let json = serde_json::to_value(o).unwrap();
            assert_eq!(json, o.as_str());
            assert_eq!(serde_json::from_value::<RecoveryOutcome>(json).unwrap(), o);
        }
    }
}
