//! The spec's base branch: pin it, re-pin it when it was deleted, undo a re-pin.

use super::*;
use crate::store::event::{self as ev, Event};

/// The spec's pinned base branch is gone and `--base-branch` names another: may it be pinned
/// to that one (asked through `asker`, or `--yes`)? Its work will then merge there. Nothing is
/// written yet: the pin changes only once the run goes ahead ([`write_repin`]), so a question
/// cut off by a signal (which ends runner at once) leaves the old pin in place.
pub(super) fn confirm_repin(
    ws: &Workspace,
    paths: &SpecPaths,
    from: &str,
    to: &str,
    yes: bool,
    asker: &dyn Asker,
) -> anyhow::Result<()> {
    if ws.main.branch_tip(to).is_none() {
        return Err(
            RunnerError::bad_input(format!("base branch {to:?} does not exist"))
                .with_hint("create it, or pass --base-branch with an existing branch")
                .into(),
        );
    }
    let question = RepinQuestion {
        spec: &paths.name,
        from,
        to,
    };
    if !yes && !asker.confirm_repin(&question)? {
        return Err(RunnerError::Cancelled.into());
    }
    Ok(())
}

/// Pin the confirmed new base in the plan, journaled.
pub(super) fn write_repin(
    paths: &SpecPaths,
    journal: &Journal,
    from: &str,
    to: &str,
) -> anyhow::Result<()> {
    paths.plan.update(|plan| {
        plan.set_field("base_branch", Value::String(to.to_string()));
        Ok(())
    })?;
    crate::failpoint::hit("after_base_repin");
    journal.write(&Event::BaseRepinned(ev::BaseRepinned {
        from: from.to_string(),
        to: to.to_string(),
        why: None,
    }))?;
    Ok(())
}

/// Put back the pin a re-pin replaced: the run it was confirmed for did not go ahead.
pub(super) fn undo_repin(
    paths: &SpecPaths,
    journal: &Journal,
    from: &str,
    to: &str,
) -> anyhow::Result<()> {
    paths.plan.update(|plan| {
        plan.set_field("base_branch", Value::String(from.to_string()));
        Ok(())
    })?;
    journal.write(&Event::BaseRepinned(ev::BaseRepinned {
        from: to.to_string(),
        to: from.to_string(),
        why: Some("the run did not go ahead: the re-pin is undone".into()),
    }))?;
    Ok(())
}
