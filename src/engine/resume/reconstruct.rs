//! The order of the sources (see the module's doc in `mod.rs`), and the confidence of the one
//! used.

use chrono::{DateTime, DurationRound, Utc};

use super::events::Replay;
use super::{CheckpointInfo, Reconstruction, Source, commits, events, validate};
use crate::plan::{Plan, Status};
use crate::policy::confidence::{self, CheckpointFacts, Confidence};
use crate::store::checkpoint::{self, Checkpoint, ChunkState};
use crate::store::{SpecPaths, Workspace};

/// Said when the checkpoint cannot be used.
pub const CHECKPOINT_CORRUPTED: &str = "Checkpoint corrupted, falling back to events";

/// The spec's state rebuilt from the best source there is, or `None` when there is nothing to
/// rebuild from (no usable checkpoint, no chunk status change in the journal, no branch; or no
/// plan and no checkpoint).
pub fn reconstruct(
    ws: &Workspace,
    spec: &SpecPaths,
    now: DateTime<Utc>,
) -> anyhow::Result<Option<Reconstruction>> {
    let mut warnings = Vec::new();
    let found = checkpoint::read(&spec.dir);
    let cp = match found {
        checkpoint::Found::Checkpoint(cp) => Some(cp),
        checkpoint::Found::Nothing => None,
        checkpoint::Found::Corrupt(why) => {
            warnings.push(CHECKPOINT_CORRUPTED.to_string());
            warnings.push(format!("The checkpoint is not usable: {why}"));
            None
        }
    };
    let info = cp.as_ref().map(|cp| CheckpointInfo {
        id: cp.id.clone(),
        time: cp.time,
        trigger: cp.trigger,
        age_secs: (now - cp.time).num_seconds(),
    });
    // Journal times have whole seconds: an event of the checkpoint's own second may come after
    // it, so that second's events are replayed on top too (those before it agree with it).
    let after = cp.as_ref().map(|cp| {
        cp.time
            .duration_trunc(chrono::Duration::seconds(1))
            .unwrap_or(cp.time)
    });
    let replay = events::replay(
        &spec.dir,
        after.map(|t| t - chrono::Duration::nanoseconds(1)),
    );
    let plan = load_plan(ws, spec, &mut warnings);
    let Some(plan) = plan.or_else(|| cp.as_deref().and_then(plan_of_checkpoint)) else {
        return Ok(None);
    };
    let base = plan
        .str_field("base_branch")
        .map(str::to_string)
        .or_else(|| cp.as_ref().and_then(|cp| cp.base.clone()));
    let branch_name = crate::git::branch_for(&spec.name);
    let branch = commits::read_branch(&ws.main, &plan, &branch_name, base.as_deref());
    let mut rebuilt = None;
    if let Some(cp) = &cp {
        match validate::check(&ws.main, &ws.root, &spec.name, cp, Some(&plan)) {
            Ok(checked) => rebuilt = Some(from_checkpoint(cp, checked, &replay, now)),
            Err(why) => {
                warnings.push(CHECKPOINT_CORRUPTED.to_string());
                warnings.push(format!(
                    "The checkpoint does not match the repository: {why}"
                ));
            }
        }
    }
    let rebuilt = match rebuilt {
        Some(r) => r,
        None if replay.status_events > 0 => from_events(&plan, &branch, &replay, now),
        None if branch.tip.is_some() => from_commits(&plan, &branch),
        None => return Ok(None),
    };
    let mut r = rebuilt;
    warnings.append(&mut r.warnings);
    r.warnings = dedup(warnings);
    r.checkpoint = info;
    if r.current_chunk.is_none() {
        r.current_chunk = current_chunk(&r.chunks, &replay);
    }
    Ok(Some(r))
}

/// The plan, or (when it is missing or does not read) what plan restoration would rebuild it
/// from (`engine::recovery::restore`: the last good copy, the journal's snapshot).
fn load_plan(ws: &Workspace, spec: &SpecPaths, warnings: &mut Vec<String>) -> Option<Plan> {
    match spec.plan.load() {
        Ok(Some(plan)) => return Some(plan),
        Ok(None) => warnings.push(format!(
            "The plan {} is missing",
            spec.plan.path().display()
        )),
        Err(e) => warnings.push(format!("The plan does not read: {e:#}")),
    }
    let events = crate::store::journal::read_typed(&spec.dir);
    let (plan, source) =
        crate::engine::recovery::restore::rebuild(&spec.dir, &spec.name, &events, Some(&ws.main))?;
    warnings.push(format!("Chunks taken from {}", source.describe()));
    Some(plan)
}

/// A plan with the checkpoint's chunks (ids and order), when there is no plan at all.
fn plan_of_checkpoint(cp: &Checkpoint) -> Option<Plan> {
    let chunks: Vec<serde_json::Value> = cp
        .chunks
        .iter()
        .map(|c| serde_json::json!({"id": c.id, "description": c.id, "status": c.status}))
        .collect();
    let bytes =
        serde_json::to_vec(&serde_json::json!({"phases": [{"id": "1", "chunks": chunks}]})).ok()?;
    crate::plan::parse_plan(std::path::Path::new("checkpoint"), &bytes).ok()
}

fn state(id: &str, status: Status, commit: Option<String>) -> ChunkState {
    ChunkState {
        id: id.to_string(),
        status: status.as_str().to_string(),
        commit,
    }
}

fn age(now: DateTime<Utc>, then: Option<DateTime<Utc>>) -> i64 {
    then.map(|t| (now - t).num_seconds()).unwrap_or(i64::MAX)
}

/// Source 1: the checkpoint's chunks, the journal's newer status changes replayed on top.
fn from_checkpoint(
    cp: &Checkpoint,
    checked: validate::Checked,
    replay: &Replay,
    now: DateTime<Utc>,
) -> Reconstruction {
    let chunks: Vec<ChunkState> = cp
        .chunks
        .iter()
        .map(|c| match replay.newer.get(&c.id) {
            Some((status, commit)) => state(
                &c.id,
                *status,
                commit.clone().or_else(|| {
                    (*status == Status::Completed)
                        .then(|| c.commit.clone())
                        .flatten()
                }),
            ),
            None => c.clone(),
        })
        .collect();
    let replayed =
        (replay.newer_events > 0).then(|| (replay.newer_events, age(now, replay.last_event)));
    let c = confidence::from_checkpoint(CheckpointFacts {
        age_secs: (now - cp.time).num_seconds(),
        missing_files: checked.missing_files.len(),
        branch_gone: checked.branch_gone,
        replayed,
    });
    let mut warnings = checked.warnings;
    if !checked.missing_files.is_empty() {
        warnings.push(format!(
            "Files of completed chunks missing from the worktree: {}",
            checked.missing_files.join(", ")
        ));
    }
    let current_chunk = if replay.newer_events > 0 {
        None
    } else {
        cp.current_chunk.clone()
    };
    Reconstruction {
        verification: cp.verification.clone(),
        seconds_spent: cp.seconds_spent,
        cost_usd: cp.cost_usd,
        tokens: cp.tokens,
        ..built(Source::Checkpoint, chunks, c, warnings, current_chunk)
    }
}

/// Source 2: the plan's chunks with the statuses the journal's status changes last gave them;
/// a chunk no change names (its lines lost with a segment) is completed when it has a chunk
/// commit on the branch, else as the plan says.
fn from_events(
    plan: &Plan,
    branch: &commits::Branch,
    replay: &Replay,
    now: DateTime<Utc>,
) -> Reconstruction {
    let chunks = plan
        .chunks()
        .map(|chunk| match replay.statuses.get(&chunk.id) {
            Some((status, commit)) => {
                let commit = commit.clone().or_else(|| {
                    (*status == Status::Completed)
                        .then(|| branch.chunk_commits.get(&chunk.id).map(|o| o.to_string()))
                        .flatten()
                });
                state(&chunk.id, *status, commit)
            }
            None => match branch.chunk_commits.get(&chunk.id) {
                Some(oid) => state(&chunk.id, Status::Completed, Some(oid.to_string())),
                None => state(&chunk.id, chunk.status, None),
            },
        })
        .collect();
    let c = confidence::from_events(age(now, replay.last_event));
    Reconstruction {
        verification: replay.verification.clone(),
        seconds_spent: replay.seconds_spent,
        cost_usd: replay.cost_usd,
        tokens: replay.tokens,
        ..built(Source::Events, chunks, c, Vec::new(), None)
    }
}

/// Source 3: the branch's chunk commits and the plan.
fn from_commits(plan: &Plan, branch: &commits::Branch) -> Reconstruction {
    let chunks = commits::rebuild(plan, branch);
    built(
        Source::Commits,
        chunks,
        confidence::from_commits(),
        Vec::new(),
        None,
    )
}

fn built(
    source: Source,
    chunks: Vec<ChunkState>,
    c: Confidence,
    warnings: Vec<String>,
    current_chunk: Option<String>,
) -> Reconstruction {
    Reconstruction {
        source,
        chunks,
        current_chunk,
        confidence: c.score,
        confidence_reason: c.reason,
        warnings,
        checkpoint: None,
        verification: None,
        seconds_spent: 0,
        cost_usd: 0.0,
        tokens: 0,
    }
}

/// The chunk in progress; else the chunk of the journal's last status change; else the first
/// chunk not completed.
fn current_chunk(chunks: &[ChunkState], replay: &Replay) -> Option<String> {
    let is = |c: &ChunkState, s: Status| Status::parse(&c.status) == Some(s);
    chunks
        .iter()
        .find(|c| is(c, Status::InProgress))
        .map(|c| c.id.clone())
        .or_else(|| {
            replay
                .last_chunk
                .clone()
                .filter(|id| chunks.iter().any(|c| &c.id == id))
        })
        .or_else(|| {
            chunks
                .iter()
                .find(|c| !is(c, Status::Completed))
                .map(|c| c.id.clone())
        })
}

fn dedup(warnings: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(warnings.len());
    for w in warnings {
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}
