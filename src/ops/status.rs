//! `runner status`: every spec, its progress, its branch and worktree, who is running it.

use serde::Serialize;

use crate::git::{Slot, SlotState, branch_for, slot_holding};
use crate::plan::{Plan, Status, next_chunk_id};
use crate::store::workspace::Workspace;
use crate::store::{LockState, lock};

#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub specs: Vec<SpecStatus>,
    pub slots: Vec<SlotStatus>,
}

#[derive(Debug, Serialize)]
pub struct SpecStatus {
    pub spec: String,
    /// not_planned, planning, invalid_plan, planned, running, in_progress, interrupted, failed,
    /// blocked, complete, merged, refused (its folder links outside the repository),
    /// missing_work (the branch lost a completed chunk's commit)
    pub status: String,
    pub branch: Option<String>,
    pub worktree: Option<String>,
    pub chunks: Counts,
    /// The chunk being worked on (`status` running) or left interrupted: the first one in
    /// progress.
    pub current_chunk: Option<String>,
    /// The first pending chunk a run would take after it.
    pub next_chunk: Option<String>,
    pub running: Option<Running>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What runner read in the plan but Auto-Claude would not have written so (see
    /// `Plan::warnings`); empty for most plans.
    pub warnings: Vec<String>,
    /// What is wrong with the branch: completed work it no longer holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

#[derive(Debug, Default, Serialize)]
pub struct Counts {
    pub total: usize,
    pub completed: usize,
    pub pending: usize,
    pub in_progress: usize,
    pub failed: usize,
    pub blocked: usize,
}

#[derive(Debug, Serialize)]
pub struct Running {
    pub pid: Option<u32>,
    pub run_id: Option<String>,
    pub since: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct SlotStatus {
    pub name: String,
    pub path: String,
    /// missing, ready, broken, unregistered
    pub state: String,
    pub branch: Option<String>,
    pub spec: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Every spec's state (or only the spec `only`), and every slot's.
pub fn status(ws: &Workspace, only: Option<&str>) -> anyhow::Result<StatusReport> {
    let mut specs = Vec::new();
    let names = crate::store::spec::list(&ws.specs_dir)
        .into_iter()
        .filter(|name| only.is_none_or(|o| o == name));
    for name in names {
        let paths = match ws.spec(&name) {
            Ok(paths) => paths,
            // A spec folder linked outside the repository: listed, never opened.
            Err(e) => {
                specs.push(SpecStatus {
                    status: "refused".into(),
                    branch: None,
                    worktree: None,
                    chunks: Counts::default(),
                    next_chunk: None,
                    current_chunk: None,
                    running: None,
                    error: Some(crate::error::ErrorReport::inline(&e.into())),
                    warnings: Vec::new(),
                    problem: None,
                    spec: name,
                });
                continue;
            }
        };
        let running = match lock::probe(&paths.run_lock)? {
            LockState::Free => None,
            LockState::Held(holder) => Some(Running {
                pid: holder.as_ref().map(|h| h.pid),
                run_id: holder.as_ref().map(|h| h.run_id.clone()),
                since: holder.map(|h| h.since),
            }),
        };
        let branch = branch_for(&name);
        let has_branch = ws.main.branch_tip(&branch).is_some();
        let worktree = slot_holding(&ws.main, &branch).map(|s| s.path.display().to_string());
        let (plan, error) = match paths.plan.load() {
            Ok(plan) => (plan, None),
            Err(e) => (None, Some(crate::error::ErrorReport::inline(&e))),
        };
        // One walk of the branch's history, only when it exists.
        let problem = plan
            .as_ref()
            .filter(|_| has_branch)
            .and_then(|p| crate::engine::recovery::integrity::missing_work(&ws.main, &name, p))
            .map(|b| b.describe(&branch));
        let mut state = spec_state(plan.as_ref(), error.is_some(), running.is_some());
        if problem.is_some() && running.is_none() {
            state = "missing_work";
        }
        specs.push(SpecStatus {
            problem,
            status: state.into(),
            chunks: plan.as_ref().map(counts).unwrap_or_default(),
            current_chunk: plan.as_ref().and_then(current_chunk),
            next_chunk: plan
                .as_ref()
                .and_then(|p| next_chunk_id(p).map(str::to_string)),
            branch: has_branch.then_some(branch),
            worktree,
            running,
            error,
            warnings: plan
                .as_ref()
                .map(|p| p.warnings.clone())
                .unwrap_or_default(),
            spec: name,
        });
    }
    let slots = Slot::all(&ws.main)
        .into_iter()
        .map(|slot| {
            let state = slot.inspect(&ws.main);
            let (branch, problem) = match &state {
                SlotState::Ready { branch } => (branch.clone(), None),
                SlotState::Broken { reason } => (
                    None,
                    Some(
                        crate::engine::recovery::integrity::unreadable_folder(&slot.path)
                            .unwrap_or_else(|| reason.clone()),
                    ),
                ),
                SlotState::Unregistered => (
                    None,
                    Some("the folder exists but git does not know it as a worktree".into()),
                ),
                SlotState::Missing => (None, None),
            };
            SlotStatus {
                spec: branch
                    .as_deref()
                    .and_then(crate::git::spec_of_branch)
                    .map(str::to_string),
                state: state.label().into(),
                name: slot.name,
                path: slot.path.display().to_string(),
                branch,
                problem,
            }
        })
        .collect();
    Ok(StatusReport { specs, slots })
}

/// The first chunk in progress, in file order.
fn current_chunk(plan: &Plan) -> Option<String> {
    plan.chunks()
        .find(|c| c.status == Status::InProgress)
        .map(|c| c.id.clone())
}

fn counts(plan: &Plan) -> Counts {
    Counts {
        total: plan.total(),
        completed: plan.count(Status::Completed),
        pending: plan.count(Status::Pending),
        in_progress: plan.count(Status::InProgress),
        failed: plan.count(Status::Failed),
        blocked: plan.count(Status::Blocked),
    }
}

/// One word for a spec's state: a plain function over what was read.
pub fn spec_state(plan: Option<&Plan>, invalid: bool, running: bool) -> &'static str {
    if invalid {
        return "invalid_plan";
    }
    let Some(plan) = plan else {
        return if running { "planning" } else { "not_planned" };
    };
    let c = counts(plan);
    if plan.raw.contains_key("merged") {
        "merged"
    } else if c.total > 0 && c.completed == c.total {
        "complete"
    } else if running {
        "running"
    } else if c.in_progress > 0 {
        // Nobody holds the lock, yet a chunk is in progress: its run died.
        "interrupted"
    } else if c.failed > 0 {
        "failed"
    } else if c.blocked > 0 {
        "blocked"
    } else if c.completed > 0 {
        "in_progress"
    } else {
        "planned"
    }
}
