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

/// The base the run builds on (`policy::choose_base`), a re-pin confirmed (not yet written);
/// with the pin it replaces.
pub(super) fn choose_base(
    ws: &Workspace,
    config: &Config,
    paths: &SpecPaths,
    existing: &Option<Plan>,
    opts: &RunOptions,
    asker: &dyn Asker,
) -> anyhow::Result<(String, Option<String>)> {
    let pinned = existing.as_ref().and_then(|p| p.str_field("base_branch"));
    let checked_out = ws.main.current_branch();
    let choice = policy::choose_base(policy::BaseFacts {
        pinned,
        pinned_exists: pinned.is_some_and(|p| ws.main.branch_tip(p).is_some()),
        flag: opts.base_branch.as_deref(),
        config: config.git.base_branch.as_deref(),
        checked_out: checked_out.as_deref(),
        no_commits: crate::git::history::has_no_commits(&ws.main.repo),
    })
    .map_err(|r| RunnerError::bad_input(r.fact).with_hint(r.advice))?;
    Ok(match choice {
        policy::BaseChoice::Use(base) => (base, None),
        policy::BaseChoice::Repin { from, to } => {
            confirm_repin(ws, paths, &from, &to, opts.yes, asker)?;
            (to, Some(from))
        }
    })
}

/// The base's tip, or what to do about a base that does not exist.
pub(super) fn base_tip(
    ws: &Workspace,
    paths: &SpecPaths,
    existing: &Option<Plan>,
    base: &str,
) -> anyhow::Result<crate::git::Oid> {
    let pinned = existing.as_ref().and_then(|p| p.str_field("base_branch"));
    ws.main.branch_tip(base).ok_or_else(|| {
        let error = if pinned == Some(base) {
            RunnerError::bad_input(format!(
                "the pinned base branch {base:?} of spec {} no longer exists",
                paths.name
            ))
            .with_hint(format!("recreate it: git branch {} <commit>", crate::sh(base)))
            .with_hint(format!(
                "or re-pin the spec to another branch: runner run --spec {} --base-branch NAME (it asks to confirm; --yes without a terminal)",
                crate::sh(&paths.name)
            ))
        } else {
            RunnerError::bad_input(format!("base branch {base:?} does not exist"))
                .with_hint("create it, or pass --base-branch with an existing branch")
        };
        error.into()
    })
}
