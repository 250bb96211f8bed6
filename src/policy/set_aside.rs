//! Why `runner resume` set a checkpoint aside, in the words it warns with: "corrupted" only for
//! a checkpoint that cannot be read; a checkpoint merely older than the plan (the normal case
//! right after planning, or after a person edited the plan) says so.

/// Why the checkpoint was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetAside {
    /// It does not read (not JSON, not a checkpoint, a status runner does not know).
    Unreadable,
    /// Its chunks are not the plan's, and it was written before the plan changed.
    OlderThanPlan,
    /// Its chunks are not the plan's, and nothing says the plan changed after it.
    NotThePlans,
    /// Its recorded tip is no longer on the branch.
    HistoryRewritten,
    /// It names another spec or branch, a commit the branch does not have, or a worktree that
    /// now holds a branch no spec owns.
    NotTheRepository,
}

/// What is known about a checkpoint whose chunks are not the plan's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanChange {
    /// It has no chunks at all (written when a run started, before there was a plan).
    pub checkpoint_empty: bool,
    /// The journal has a new plan started (`plan_reset`) at or after its time.
    pub plan_reset_since: bool,
    /// The plan file was written after it.
    pub plan_written_since: bool,
}

/// A checkpoint whose chunks are not the plan's: older than the plan when anything says the
/// plan came after it.
pub fn plan_change(f: PlanChange) -> SetAside {
    if f.checkpoint_empty || f.plan_reset_since || f.plan_written_since {
        SetAside::OlderThanPlan
    } else {
        SetAside::NotThePlans
    }
}

/// The warning: what happened to the checkpoint, and what the state was rebuilt from
/// (`rebuilt_from`: "events", "the branch's commits").
pub fn words(why: SetAside, rebuilt_from: &str) -> String {
    match why {
        SetAside::Unreadable => format!("Checkpoint corrupted, falling back to {rebuilt_from}"),
        SetAside::OlderThanPlan => {
            format!("Checkpoint older than the plan, rebuilt from {rebuilt_from}")
        }
        SetAside::NotThePlans => {
            format!("Checkpoint does not match the plan, set aside; rebuilt from {rebuilt_from}")
        }
        SetAside::HistoryRewritten => format!(
            "Checkpoint from before the branch's history was rewritten, set aside; rebuilt from \
             {rebuilt_from}"
        ),
        SetAside::NotTheRepository => format!(
            "Checkpoint does not match the repository, set aside; rebuilt from {rebuilt_from}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupted_is_said_only_of_a_checkpoint_that_cannot_be_read() {
        assert_eq!(
            words(SetAside::Unreadable, "events"),
            "Checkpoint corrupted, falling back to events"
        );
        assert_eq!(
            words(SetAside::OlderThanPlan, "events"),
            "Checkpoint older than the plan, rebuilt from events"
        );
        for why in [
            SetAside::OlderThanPlan,
            SetAside::NotThePlans,
            SetAside::HistoryRewritten,
            SetAside::NotTheRepository,
        ] {
            assert!(!words(why, "events").contains("corrupt"), "{why:?}");
        }
    }

    #[test]
    fn a_checkpoint_is_older_than_the_plan_when_anything_says_the_plan_came_after() {
        let f = |empty, reset, written| PlanChange {
            checkpoint_empty: empty,
            plan_reset_since: reset,
            plan_written_since: written,
        };
        assert_eq!(plan_change(f(true, false, false)), SetAside::OlderThanPlan);
        assert_eq!(plan_change(f(false, true, false)), SetAside::OlderThanPlan);
        assert_eq!(plan_change(f(false, false, true)), SetAside::OlderThanPlan);
        // Newer than the plan and of other chunks: forged, or another plan's.
        assert_eq!(plan_change(f(false, false, false)), SetAside::NotThePlans);
    }
}
