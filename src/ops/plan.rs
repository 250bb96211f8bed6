//! The plan of a spec as a reader wants it: its phases in order, each with its chunks and their
//! statuses, and the progress. Reads only. (The MCP server's `show_plan`.)

use schemars::JsonSchema;
use serde::Serialize;

use crate::error::RunnerError;
use crate::plan::{PhaseRef, Status, next_chunk_id};
use crate::store::workspace::SpecPaths;

use super::{Ctx, Person};

#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// The spec (fuzzy, as everywhere); none: the slot's, or the only one.
    pub spec: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PlanReport {
    pub spec: String,
    /// The plan file.
    pub plan: String,
    /// Chunks completed, and in all.
    pub completed: usize,
    pub total: usize,
    /// The first chunk in progress (left by an interrupted run, or being worked on).
    pub current_chunk: Option<String>,
    /// The chunk a run would take next.
    pub next_chunk: Option<String>,
    pub phases: Vec<PhaseView>,
    /// What runner read in the plan but Auto-Claude would not have written so.
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PhaseView {
    /// The phase's id, else `phase N`.
    pub phase: String,
    pub name: Option<String>,
    /// The phases this one waits for (ids, names or numbers as the plan has them).
    pub depends_on: Vec<String>,
    pub chunks: Vec<ChunkLine>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ChunkLine {
    pub id: String,
    pub description: String,
    /// pending, in_progress, completed, failed or blocked.
    pub status: String,
    /// How many attempts it has had.
    pub attempts: usize,
}

/// The plan of the spec `opts` names: bad input (exit 2) when it has none yet.
pub fn plan(ctx: &Ctx, opts: PlanOptions, person: &dyn Person) -> anyhow::Result<PlanReport> {
    let name = ctx.spec_name(opts.spec.as_deref(), person)?;
    plan_of(&ctx.ws.spec(&name)?)
}

/// The plan of `paths`.
pub fn plan_of(paths: &SpecPaths) -> anyhow::Result<PlanReport> {
    let plan = paths.plan.load()?.ok_or_else(|| {
        RunnerError::bad_input(format!("spec {} has no plan yet", paths.name))
            .with_hint("a run plans it first: start_run (or `runner run --spec NAME`)")
    })?;
    let phases = plan
        .phases
        .iter()
        .enumerate()
        .map(|(i, phase)| PhaseView {
            phase: phase.label(i),
            name: phase.name().map(str::to_string),
            depends_on: phase
                .depends_on
                .iter()
                .map(|r| match r {
                    PhaseRef::Name(name) => name.clone(),
                    PhaseRef::Number(n) => n.to_string(),
                })
                .collect(),
            chunks: phase
                .chunks
                .iter()
                .map(|c| ChunkLine {
                    id: c.id.clone(),
                    description: c.description().to_string(),
                    status: c.status.as_str().to_string(),
                    attempts: c.attempts().len(),
                })
                .collect(),
        })
        .collect();
    Ok(PlanReport {
        spec: paths.name.clone(),
        plan: paths.plan.path().display().to_string(),
        completed: plan.count(Status::Completed),
        total: plan.total(),
        current_chunk: plan
            .chunks()
            .find(|c| c.status == Status::InProgress)
            .map(|c| c.id.clone()),
        next_chunk: next_chunk_id(&plan).map(str::to_string),
        phases,
        warnings: plan.warnings.clone(),
    })
}
