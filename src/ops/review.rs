//! `runner review`: everything about a spec's work, read-only: nothing on disk changes.

use serde::Serialize;
use serde_json::Value;

use crate::engine::lifecycle::{CommitLine, base_branch, commit_lines};
use crate::error::RunnerError;
use crate::git::merge::{FileChange, file_changes, preview};
use crate::git::{Oid, branch_for, dirty_paths, log_between, slot_holding};
use crate::plan::Status;
use crate::store::workspace::{SpecPaths, Workspace};

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ReviewReport {
    pub spec: String,
    pub branch: String,
    pub base_branch: String,
    /// Commits on the base branch since the spec's branch forked from it.
    pub base_moved: usize,
    pub commits: Vec<CommitLine>,
    pub files: Vec<FileChange>,
    pub progress: Vec<PhaseProgress>,
    pub verifications: Vec<Value>,
    pub merge: MergeCheck,
    pub uncommitted: Vec<String>,
    pub worktree: Option<String>,
    pub last_activity: Option<String>,
    /// The cost ledger: the planner's sessions, then each chunk's (`store::ledger`).
    pub cost: Cost,
    /// With `diff`: the whole patch from the merge base to the branch's tip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    #[serde(skip)]
    pub merge_base: Option<Oid>,
    #[serde(skip)]
    pub tip: Oid,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PhaseProgress {
    pub phase: String,
    pub name: Option<String>,
    pub completed: usize,
    pub total: usize,
}

/// What the spec's sessions cost: dollars as the agents reported them (notional for a
/// subscription login) or runner computed, tokens, sessions.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Cost {
    pub total: CostLine,
    /// The planner first (`chunk` null), then each chunk with attempt records, in plan order.
    pub items: Vec<CostLine>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct CostLine {
    pub chunk: Option<String>,
    pub usd: f64,
    pub tokens: u64,
    pub sessions: u64,
}

impl CostLine {
    fn of(chunk: Option<String>, s: &crate::policy::budget::Spent) -> CostLine {
        CostLine {
            chunk,
            usd: s.usd,
            tokens: s.tokens,
            sessions: s.sessions,
        }
    }
}

fn cost(paths: &SpecPaths, plan: Option<&crate::plan::Plan>) -> Cost {
    let items = crate::store::ledger::items(plan, crate::store::ledger::planner(&paths.dir));
    Cost {
        total: CostLine::of(None, &crate::store::ledger::total(&items)),
        items: items
            .into_iter()
            .map(|i| CostLine::of(i.chunk, &i.spent))
            .collect(),
    }
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct MergeCheck {
    pub clean: bool,
    pub conflicts: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct ReviewOptions {
    pub spec: Option<String>,
    /// Add the whole patch (`diff`).
    pub diff: bool,
}

/// `runner review`: the spec's work, read-only.
pub fn review(
    ctx: &super::Ctx,
    opts: ReviewOptions,
    person: &dyn super::Person,
) -> anyhow::Result<ReviewReport> {
    let name = ctx.spec_name(opts.spec.as_deref(), person)?;
    let paths = ctx.ws.spec(&name)?;
    let mut report = review_of(&ctx.ws, &paths)?;
    if opts.diff {
        let from = report.merge_base.unwrap_or(report.tip);
        report.diff = Some(crate::git::merge::patch_text(
            &ctx.ws.main.repo,
            from,
            report.tip,
        )?);
    }
    Ok(report)
}

/// The review of the spec at `paths` (for a run's question about existing work, the demo).
pub fn review_of(ws: &Workspace, paths: &SpecPaths) -> anyhow::Result<ReviewReport> {
    let plan = paths.plan.load()?;
    let branch = branch_for(&paths.name);
    let tip = ws.main.branch_tip(&branch).ok_or_else(|| {
        RunnerError::bad_input(format!(
            "spec {} has no branch {branch}: nothing has been built yet",
            paths.name,
        ))
        .with_hint(format!(
            "build it with `runner run --spec {}`",
            crate::sh(&paths.name)
        ))
    })?;
    let base = base_branch(ws, plan.as_ref())?;
    let base_tip = ws.main.branch_tip(&base).ok_or_else(|| {
        RunnerError::bad_input(format!("the base branch {base:?} does not exist"))
    })?;
    let repo = &ws.main.repo;
    let merge_base = crate::git::history::merge_base(repo, base_tip, tip);
    let fork = merge_base.unwrap_or(base_tip);
    let commits = commit_lines(repo, plan.as_ref(), fork, tip)?;
    let base_moved = merge_base
        .map(|mb| {
            log_between(repo, mb, base_tip)
                .map(|l| l.len())
                .unwrap_or(0)
        })
        .unwrap_or(0);
    let files = file_changes(repo, fork, tip)?;
    let check = preview(repo, base_tip, tip)?;
    let slot = slot_holding(&ws.main, &branch);
    let uncommitted = match &slot {
        Some(s) => dirty_paths(&s.open(&ws.main)?)?,
        None => Vec::new(),
    };
    let progress = plan
        .as_ref()
        .map(|p| {
            p.phases
                .iter()
                .enumerate()
                .map(|(i, ph)| PhaseProgress {
                    phase: ph.label(i),
                    name: ph.name().map(str::to_string),
                    completed: ph
                        .chunks
                        .iter()
                        .filter(|c| c.status == Status::Completed)
                        .count(),
                    total: ph.chunks.len(),
                })
                .collect()
        })
        .unwrap_or_default();
    let verifications = verifications_of(paths);
    let last_activity = last_activity(paths);
    let cost = cost(paths, plan.as_ref());
    Ok(ReviewReport {
        cost,
        spec: paths.name.clone(),
        branch,
        base_branch: base,
        base_moved,
        commits,
        files,
        progress,
        verifications,
        merge: MergeCheck {
            clean: check.conflicts.is_empty(),
            conflicts: check.conflicts,
        },
        uncommitted,
        worktree: slot.map(|s| s.path.display().to_string()),
        last_activity,
        diff: None,
        merge_base,
        tip,
    })
}

/// The last verification of each chunk in the journal, in the order they were last run:
/// `{chunk, command, passed, time}`.
fn verifications_of(paths: &SpecPaths) -> Vec<Value> {
    let mut verifications: Vec<Value> = Vec::new();
    for entry in crate::store::journal::read_entries_containing(&paths.dir, "\"verification\"") {
        let crate::store::Event::Verification(v) = entry.event else {
            continue;
        };
        verifications.retain(|known| known["chunk"] != v.chunk.as_str());
        verifications.push(serde_json::json!({
            "chunk": v.chunk, "command": v.command, "passed": v.passed, "time": entry.time,
        }));
    }
    verifications
}

/// Whether each chunk's last verification passed, by chunk id (`runner pr`'s body).
pub fn last_verifications(paths: &SpecPaths) -> std::collections::HashMap<String, bool> {
    verifications_of(paths)
        .into_iter()
        .filter_map(|v| Some((v["chunk"].as_str()?.to_string(), v["passed"].as_bool()?)))
        .collect()
}

/// The time of the journal's last event.
pub fn last_activity(paths: &SpecPaths) -> Option<String> {
    crate::store::journal::last_time(&paths.dir)
}
