//! The plan of a spec as a reader wants it: its phases in order, each with its chunks and their
//! statuses, attempts and verifications, and the progress. Reads only. (`runner plan`, `runner
//! run --plan-only` and the MCP server's `show_plan`.)

use schemars::JsonSchema;
use serde::Serialize;

use crate::error::RunnerError;
use crate::plan::verification::{self, Brief};
use crate::plan::{Chunk, PhaseRef, Status, next_chunk_id};
use crate::policy::attempt_count::Counted;
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
    /// `run.max_attempts`: the failed attempts a chunk may have before it is `failed`.
    pub max_attempts: u32,
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
    /// Chunks completed in this phase, and in all.
    pub completed: usize,
    pub total: usize,
    pub chunks: Vec<ChunkLine>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ChunkLine {
    pub id: String,
    pub description: String,
    /// pending, in_progress, completed, failed or blocked.
    pub status: String,
    /// How many attempts it has had (every try, interrupted ones too).
    pub attempts: usize,
    /// The attempts that failed: they count toward `max_attempts`.
    pub failed_attempts: u32,
    /// The attempts in words, as a run numbers them ("attempt 2 of 3", "attempt 3 of 3
    /// failed", "done on attempt 2 of 3", "1 interrupted, not counted"); null when its status
    /// says all (pending and never tried, completed at the first try).
    pub attempt: Option<String>,
    /// Why the chunk failed or is blocked, as runner (or a person) recorded it.
    pub reason: Option<String>,
    /// Its verification in brief; null when it has none.
    pub verification: Option<Brief>,
}

/// The plan of the spec `opts` names: bad input (exit 2) when it has none yet.
pub fn plan(ctx: &Ctx, opts: PlanOptions, person: &dyn Person) -> anyhow::Result<PlanReport> {
    let name = ctx.spec_name(opts.spec.as_deref(), person)?;
    plan_of(&ctx.ws.spec(&name)?, ctx.ws.config()?.run.max_attempts)
}

/// The plan of `paths`, its attempts counted against `max_attempts`.
pub fn plan_of(paths: &SpecPaths, max_attempts: u32) -> anyhow::Result<PlanReport> {
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
            completed: phase
                .chunks
                .iter()
                .filter(|c| c.status == Status::Completed)
                .count(),
            total: phase.chunks.len(),
            chunks: phase
                .chunks
                .iter()
                .map(|c| chunk_line(c, max_attempts))
                .collect(),
        })
        .collect();
    Ok(PlanReport {
        spec: paths.name.clone(),
        plan: paths.plan.path().display().to_string(),
        completed: plan.count(Status::Completed),
        total: plan.total(),
        max_attempts,
        current_chunk: plan
            .chunks()
            .find(|c| c.status == Status::InProgress)
            .map(|c| c.id.clone()),
        next_chunk: next_chunk_id(&plan).map(str::to_string),
        phases,
        warnings: plan.warnings.clone(),
    })
}

/// One chunk's line: its attempts counted as a run counts them (`policy::attempt_count`).
pub(crate) fn chunk_line(c: &Chunk, max_attempts: u32) -> ChunkLine {
    let attempts = c.attempts();
    let counted = Counted::of(attempts.iter().map(|a| a.outcome.as_deref()));
    let status = c.status.as_str();
    let reason = match c.status {
        Status::Failed => c
            .str_field("failure_reason")
            .map(str::to_string)
            .or_else(|| attempts.last().and_then(|a| a.reason.clone())),
        Status::Blocked => c.str_field("blocked_reason").map(str::to_string),
        _ => None,
    };
    ChunkLine {
        id: c.id.clone(),
        description: c.description().to_string(),
        status: status.to_string(),
        attempts: attempts.len(),
        failed_attempts: counted.failed,
        attempt: counted.for_status(status, max_attempts),
        reason,
        verification: verification::brief(c),
    }
}
