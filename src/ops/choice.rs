//! The question `runner run` asks when a spec already has work: continue, review, merge, or
//! discard and start fresh. Asked only on a terminal; otherwise `--auto-continue` continues and
//! anything else is a usage error that names the command for each choice.

use serde::Serialize;

use super::interact::{can_ask, confirm_by_name};
use crate::error::RunnerError;
use crate::git::{branch_for, dirty_paths, log_between, slot_holding};
use crate::plan::Status;
use crate::store::Journal;
use crate::store::workspace::{SpecPaths, Workspace};

/// What is there already, for the one-line summary above the question.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ExistingWork {
    pub completed: usize,
    pub total: usize,
    pub commits_ahead: usize,
    pub uncommitted: usize,
    pub last_activity: Option<String>,
}

impl ExistingWork {
    pub fn summary(&self, spec: &str, base: &str) -> String {
        format!(
            "{spec}: {}/{} chunks done, {} commit(s) ahead of {base}, {}, last activity {}",
            self.completed,
            self.total,
            self.commits_ahead,
            match self.uncommitted {
                0 => "no uncommitted changes".to_string(),
                n => format!("{n} uncommitted change(s)"),
            },
            self.last_activity.as_deref().unwrap_or("unknown")
        )
    }
}

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
    Continue,
    Merged,
    DiscardedStartFresh,
}

const CONTINUE: &str = "Continue";
const REVIEW: &str = "Review";
const MERGE: &str = "Merge";
const DISCARD: &str = "Discard and start fresh";

/// Decide what to do with existing work. `never_ask`: `--auto-continue` or `--yes` was given.
/// The caller holds the spec's run lock (merge and discard need it). `agent_flag`: the run's
/// `--agent-command`, for the commands printed without a terminal.
#[allow(clippy::too_many_arguments)]
pub fn ask(
    ws: &Workspace,
    paths: &SpecPaths,
    base: &str,
    work: &ExistingWork,
    auto_continue: bool,
    never_ask: bool,
    journal: &Journal,
    agent_flag: Option<&str>,
) -> anyhow::Result<Choice> {
    if auto_continue {
        return Ok(Choice::Continue);
    }
    let spec = &paths.name;
    if never_ask || !can_ask() {
        let q = crate::sh(spec);
        let again = |auto| crate::engine::run::run_again_command(spec, agent_flag, auto);
        return Err(RunnerError::bad_input(format!(
            "{}.\nWithout a terminal runner will not guess what to do with it",
            work.summary(spec, base),
        ))
        .with_hint(format!("continue:                {}", again(true)))
        .with_hint(format!("review:                  runner review --spec {q}"))
        .with_hint(format!(
            "merge:                   runner merge --spec {q} --yes"
        ))
        .with_hint(format!(
            "discard and start fresh: runner discard --spec {q} --yes && {}",
            again(false)
        ))
        .into());
    }
    loop {
        eprintln!("{}", work.summary(spec, base));
        let picked = crate::ops::interact::ask(|| {
            inquire::Select::new("What now?", vec![CONTINUE, REVIEW, MERGE, DISCARD])
                .with_starting_cursor(0)
                .prompt()
        })?;
        match picked {
            CONTINUE => return Ok(Choice::Continue),
            REVIEW => {
                let review = super::review::review(ws, paths)?;
                eprintln!(
                    "{}",
                    crate::cli::render_review(&review, crate::cli::style::for_stderr())
                );
            }
            MERGE => {
                let outcome =
                    super::merge::merge(ws, paths, super::merge::MergeMode::Merge, false, journal)?;
                match &outcome.commit {
                    Some(c) => eprintln!(
                        "Merged {spec} into {} ({}); undo with `runner undo --spec {}`.",
                        outcome.target,
                        crate::git::short_id(c),
                        crate::sh(spec)
                    ),
                    None => eprintln!("{spec} is already merged into {}.", outcome.target),
                }
                return Ok(Choice::Merged);
            }
            _ => {
                if confirm_by_name(
                    &format!("Discard the build of {spec}? (it can be undone)"),
                    spec,
                )? {
                    let outcome = super::discard::discard(ws, paths, journal)?;
                    eprintln!(
                        "Discarded; backup {}. Undo with `runner undo --spec {}`. Starting fresh.",
                        outcome.backup,
                        crate::sh(spec)
                    );
                    return Ok(Choice::DiscardedStartFresh);
                }
            }
        }
    }
}
