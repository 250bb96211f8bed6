//! The spec's base branch: pin it, re-pin it when it was deleted, undo a re-pin.

use super::*;

/// A fresh `git init`: HEAD is unborn and no branch exists. (git2's `is_empty` only knows an
/// unborn `master`.)
pub(super) fn has_no_commits(repo: &git2::Repository) -> bool {
    let unborn = matches!(repo.head(), Err(e) if e.code() == git2::ErrorCode::UnbornBranch);
    unborn
        && repo
            .branches(Some(git2::BranchType::Local))
            .map(|mut b| b.next().is_none())
            .unwrap_or(false)
}

/// The spec's pinned base branch is gone and `--base-branch` names another: pin that one, once
/// the user confirmed (through `asker`, or `--yes`). Its work will merge there.
pub(super) fn repin_base(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
    from: &str,
    to: &str,
    yes: bool,
    asker: &dyn Asker,
) -> anyhow::Result<()> {
    if ws.main.branch_tip(to).is_none() {
        return Err(RunnerError::bad_input(format!(
            "base branch {to:?} does not exist. Create it, or pass --base-branch with an existing branch"
        ))
        .into());
    }
    let question = RepinQuestion {
        spec: &paths.name,
        from,
        to,
    };
    if !yes && !asker.confirm_repin(&question)? {
        return Err(RunnerError::Cancelled.into());
    }
    paths.plan.update(|plan| {
        plan.set_field("base_branch", Value::String(to.to_string()));
        Ok(())
    })?;
    crate::failpoint::hit("after_base_repin");
    journal.record("base_repinned", None, json!({"from": from, "to": to}))?;
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
    journal.record(
        "base_repinned",
        None,
        json!({"from": to, "to": from, "why": "the run did not go ahead: the re-pin is undone"}),
    )?;
    Ok(())
}
