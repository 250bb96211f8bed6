//! Review of the layering (issue 9): the places where a rule held in letter only.

use crate::common::*;
use crate::recover::partial_run;
use crate::transitions::{expect_statuses, rebuild_from_the_journal};

/// `undo` of a discard puts the plan back with its completed chunks, after the discard had
/// journaled every chunk's reset to `pending`: the journal must say so too, or a plan rebuilt
/// from it would bring back the discard.
#[test]
fn a_plan_rebuilt_from_the_journal_after_discard_and_undo_keeps_the_restored_progress() {
    let spec = "093-undo";
    let repo = partial_run(spec);
    assert_exit(&repo.runner(&["discard", "--spec", spec, "--yes"]), 0);
    expect_statuses(&repo, spec, ["pending", "pending", "pending"]);
    assert_exit(&repo.runner(&["undo", "--spec", spec]), 0);
    expect_statuses(&repo, spec, ["completed", "completed", "pending"]);

    // From the restored plan's snapshot (with no status change since, the branch's commits
    // are checked against it too).
    let s = rebuild_from_the_journal(&repo, spec);
    assert!(
        s["plan_source"] == "journal" || s["plan_source"] == "commits",
        "{s}"
    );
    expect_statuses(&repo, spec, ["completed", "completed", "pending"]);
}
