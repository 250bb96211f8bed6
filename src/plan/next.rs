//! Which chunk comes next: a plain function over the plan, the heart of resuming.

use super::Status;
use super::model::{ChunkPos, Plan};
use super::validate::resolve_dependencies;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextStep {
    /// Work on this chunk.
    Chunk(ChunkPos),
    /// Every chunk is completed.
    Complete,
    /// Nothing can run: chunks are failed, blocked or in progress, or phases wait on them.
    Stuck(Vec<String>),
}

/// The first `pending` chunk, in file order, of the first phase (in file order) whose
/// `depends_on` phases are all complete. A phase with no chunks is complete.
pub fn next_step(plan: &Plan) -> NextStep {
    let edges = resolve_dependencies(plan, &mut Vec::new())
        .unwrap_or_else(|| vec![Vec::new(); plan.phases.len()]);
    // Once per phase, not once per reference to it: linear in the size of the plan.
    let complete: Vec<bool> = plan.phases.iter().map(|p| p.is_complete()).collect();
    for (p, phase) in plan.phases.iter().enumerate() {
        let ready = edges[p].iter().all(|&d| complete[d]);
        if !ready {
            continue;
        }
        if let Some(c) = phase
            .chunks
            .iter()
            .position(|c| c.status == Status::Pending)
        {
            return NextStep::Chunk(ChunkPos { phase: p, chunk: c });
        }
    }
    if plan.chunks().all(|c| c.status == Status::Completed) {
        return NextStep::Complete;
    }
    let mut reasons = Vec::new();
    for chunk in plan.chunks() {
        match chunk.status {
            Status::Failed | Status::Blocked | Status::InProgress => {
                reasons.push(format!("chunk {} is {}", chunk.id, chunk.status))
            }
            _ => {}
        }
    }
    for (p, phase) in plan.phases.iter().enumerate() {
        let waiting: Vec<String> = edges[p]
            .iter()
            .filter(|&&d| !complete[d])
            .map(|&d| plan.phases[d].label(d))
            .collect();
        if !complete[p] && !waiting.is_empty() {
            reasons.push(format!(
                "{} waits for {}",
                phase.label(p),
                waiting.join(", ")
            ));
        }
    }
    NextStep::Stuck(reasons)
}

/// The id of the chunk a run would take next, if any.
pub fn next_chunk_id(plan: &Plan) -> Option<&str> {
    match next_step(plan) {
        NextStep::Chunk(pos) => Some(plan.chunk(pos).id.as_str()),
        _ => None,
    }
}
