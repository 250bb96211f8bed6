//! What `runner run` does with a spec that already has work: continue, merge, or discard and
//! start fresh. The question is the front end's ([`Asker::existing_work`]); without a terminal
//! `--auto-continue` continues and anything else is a usage error that names the command for
//! each choice ([`Nobody`]).

use crate::engine::run::ask::{Asker, ExistingWork, Nobody, WorkAnswer, WorkQuestion};
use crate::engine::run::{Prepared, RunOptions};
use crate::git::{branch_for, dirty_paths, log_between, slot_holding};
use crate::plan::Status;
use crate::store::workspace::{SpecPaths, Workspace};

/// The spec's existing work, if its branch has commits beyond the base or its worktree has
/// uncommitted changes. `None`: nothing to ask about.
pub fn existing_work(
    ws: &Workspace,
    paths: &SpecPaths,
    base: &str,
) -> anyhow::Result<Option<ExistingWork>> {
    let branch = branch_for(&paths.name);
    let Some(tip) = ws.main.branch_tip(&branch) else {
        return Ok(None);
    };
    let commits_ahead = match ws.main.branch_tip(base) {
        Some(base_tip) => {
            let fork =
                crate::git::history::merge_base(&ws.main.repo, base_tip, tip).unwrap_or(base_tip);
            log_between(&ws.main.repo, fork, tip)?.len()
        }
        None => 0,
    };
    let uncommitted = match slot_holding(&ws.main, &branch) {
        Some(slot) => dirty_paths(&slot.open(&ws.main)?)?.len(),
        None => 0,
    };
    if commits_ahead == 0 && uncommitted == 0 {
        return Ok(None);
    }
    let plan = paths.plan.load().ok().flatten();
    Ok(Some(ExistingWork {
        completed: plan
            .as_ref()
            .map(|p| p.count(Status::Completed))
            .unwrap_or(0),
        total: plan.as_ref().map(|p| p.total()).unwrap_or(0),
        commits_ahead,
        uncommitted,
        last_activity: super::review::last_activity(paths),
    }))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// No existing work, or it is built on.
    Continue,
    Merged,
    DiscardedStartFresh,
}

/// Settle the existing work of a prepared run (which holds the spec's run lock: merge and
/// discard need it). `--auto-continue` continues; `--yes` never asks, so it refuses.
pub fn settle_existing_work(
    prepared: &Prepared<'_>,
    opts: &RunOptions,
    asker: &dyn Asker,
) -> anyhow::Result<Choice> {
    let (ws, paths, base) = (prepared.workspace(), prepared.paths(), prepared.base());
    let Some(work) = existing_work(ws, paths, base)? else {
        prepared.write_repin()?;
        return Ok(Choice::Continue);
    };
    // Without a terminal, a spec paused by a usage limit goes on to say so (exit 6, no
    // session) instead of refusing the question (exit 2): the pause is what a caller (a
    // script, a scheduler) has to know. A person at a terminal is still asked (they may
    // review, merge or discard while the limit lasts).
    let now = chrono::Utc::now();
    let paused = || {
        matches!(
            crate::store::pause::read(&ws.state_dir, &paths.name, now),
            crate::store::pause::Found::Paused(p) if p.until > now
        )
    };
    let can_ask = !opts.yes && asker.can_ask();
    if opts.auto_continue || (!can_ask && !opts.wait && paused()) {
        prepared.write_repin()?;
        return Ok(Choice::Continue);
    }
    let asker = if opts.yes { &Nobody } else { asker };
    let agent_flag = opts.agent_flag();
    let question = WorkQuestion {
        ws,
        paths,
        base,
        work: &work,
        agent_flag: agent_flag.as_ref(),
    };
    let spec = &paths.name;
    let reporter = prepared.reporter();
    loop {
        match asker.existing_work(&question)? {
            WorkAnswer::Continue => {
                prepared.write_repin()?;
                return Ok(Choice::Continue);
            }
            WorkAnswer::Merge => {
                // The work merges into the confirmed base.
                prepared.write_repin()?;
                let mode = crate::engine::lifecycle::merge::MergeMode::Merge;
                let outcome = crate::engine::lifecycle::merge::merge(
                    ws,
                    paths,
                    mode,
                    false,
                    prepared.journal(),
                )?;
                reporter.line(match &outcome.commit {
                    Some(c) => format!(
                        "Merged {spec} into {} ({}); undo with `runner undo --spec {}`.",
                        outcome.target,
                        crate::git::short_id(c),
                        crate::sh(spec)
                    ),
                    None => format!("{spec} is already merged into {}.", outcome.target),
                });
                return Ok(Choice::Merged);
            }
            WorkAnswer::Discard => {
                if asker.confirm_discard(spec)? {
                    prepared.write_repin()?;
                    let outcome =
                        crate::engine::lifecycle::discard::discard(ws, paths, prepared.journal())?;
                    reporter.line(format!(
                        "Discarded; backup {}. Undo with `runner undo --spec {}`. Starting fresh.",
                        outcome.backup,
                        crate::sh(spec)
                    ));
                    return Ok(Choice::DiscardedStartFresh);
                }
            }
        }
    }
}
