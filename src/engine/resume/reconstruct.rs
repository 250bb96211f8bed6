//! The order of the sources (see the module's doc in `mod.rs`), and the confidence of the one
//! used.

use chrono::{DateTime, DurationRound, Utc};

use super::events::Replay;
use super::{CheckpointInfo, Reconstruction, Source, commits, events, validate, witness};
use crate::plan::{Plan, Status};
use crate::policy::confidence::{self, CheckpointFacts, Confidence};
use crate::policy::set_aside::{self, SetAside};
use crate::store::checkpoint::{self, Checkpoint, ChunkState};
use crate::store::{SpecPaths, Workspace};

/// The spec's state rebuilt from the best source there is, or `None` when there is nothing to
/// rebuild from (no usable checkpoint, no chunk status change in the journal, no branch; or no
/// plan and no checkpoint).
pub fn reconstruct(
    ws: &Workspace,
    spec: &SpecPaths,
    now: DateTime<Utc>,
) -> anyhow::Result<Option<Reconstruction>> {
    let mut warnings = Vec::new();
    // Why the checkpoint was set aside, and the detail (said once the source is known).
    let mut aside: Option<(SetAside, String)> = None;
    let found = checkpoint::read(&spec.dir);
    let cp = match found {
        checkpoint::Found::Checkpoint(cp) => Some(cp),
        checkpoint::Found::Nothing => None,
        checkpoint::Found::Corrupt(why) => {
            aside = Some((
                SetAside::Unreadable,
                format!("The checkpoint is not usable: {why}"),
            ));
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
    // it, so that second's events are candidates too (one from before it does not chain from
    // the checkpoint's status, see `events::Replay::on_top`).
    let base = cp.as_ref().map(|cp| events::Base {
        after: cp
            .time
            .duration_trunc(chrono::Duration::seconds(1))
            .unwrap_or(cp.time),
        statuses: cp
            .chunks
            .iter()
            .filter_map(|c| Some((c.id.clone(), (Status::parse(&c.status)?, c.commit.clone()))))
            .collect(),
    });
    let replay = events::replay(&spec.dir, base.as_ref());
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
            Err(rejected) => {
                let why = match rejected.why {
                    SetAside::NotThePlans => plan_change(spec, cp, &replay),
                    why => why,
                };
                aside = Some((
                    why,
                    format!("The checkpoint was set aside: {}", rejected.detail),
                ));
            }
        }
    }
    let rebuilt = match rebuilt {
        Some(r) => r,
        None => match () {
            _ if replay.status_events > 0 => from_events(&plan, &branch, &replay, now),
            _ if branch.tip.is_some() => from_commits(&plan, &branch),
            _ => return Ok(None),
        },
    };
    let mut r = rebuilt;
    // Judged against the plan the continued run reads: its recovery undoes a person's edit of
    // a session whose run died, and keeps it when the run ended.
    let plan = crate::engine::recovery::plan_after_recovery(spec, plan);
    witness::check(&ws.main, &spec.name, &plan, &branch, &mut r);
    if let Some((why, detail)) = aside {
        let from = match r.source {
            Source::Commits => "the branch's commits",
            _ => "events",
        };
        warnings.splice(0..0, [set_aside::words(why, from), detail]);
    }
    warnings.append(&mut r.warnings);
    // The commits source is always low confidence (its reason says so); at 80 or more its score
    // alone would not say it to a consumer that warns below 80, so its warnings do.
    if r.source == Source::Commits && r.confidence >= confidence::LOW {
        warnings.push(confidence::LOW_NOTE.to_string());
    }
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

/// A checkpoint whose chunks are not the plan's: older than the plan (written before
/// planning, or before the plan was planned again or edited), or not the plan's at all.
fn plan_change(spec: &SpecPaths, cp: &Checkpoint, replay: &Replay) -> SetAside {
    let after = |t: DateTime<Utc>| {
        t >= cp
            .time
            .duration_trunc(chrono::Duration::seconds(1))
            .unwrap_or(cp.time)
    };
    let written = std::fs::metadata(spec.plan.path())
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from);
    set_aside::plan_change(set_aside::PlanChange {
        checkpoint_empty: cp.chunks.is_empty(),
        plan_reset_since: replay.last_plan_reset.is_some_and(after),
        plan_written_since: written.is_some_and(|t| t > cp.time),
    })
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
        .map(|c| match replay.on_top.get(&c.id) {
            Some((status, commit)) if replay.newer_events > 0 => state(
                &c.id,
                *status,
                commit.clone().or_else(|| {
                    (*status == Status::Completed)
                        .then(|| c.commit.clone())
                        .flatten()
                }),
            ),
            _ => c.clone(),
        })
        .collect();
    let replayed =
        (replay.newer_events > 0).then(|| (replay.newer_events, age(now, replay.last_on_top)));
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
        warnings,
        ..built(
            Source::Checkpoint,
            &Plan::default(),
            chunks,
            c,
            current_chunk,
        )
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
        ..built(Source::Events, plan, chunks, c, None)
    }
}

/// Source 3: the branch's chunk commits and the plan.
fn from_commits(plan: &Plan, branch: &commits::Branch) -> Reconstruction {
    let chunks = commits::rebuild(plan, branch);
    let c = confidence::from_commits(chunks.len(), commits::unconfirmed(plan, branch));
    built(Source::Commits, plan, chunks, c, None)
}

/// A reconstruction from `source`; the time, money and tokens spent summed from `plan`'s
/// attempt records (a checkpoint has its own).
fn built(
    source: Source,
    plan: &Plan,
    chunks: Vec<ChunkState>,
    c: Confidence,
    current_chunk: Option<String>,
) -> Reconstruction {
    let (seconds_spent, cost_usd, tokens) = spent(plan);
    Reconstruction {
        source,
        chunks,
        current_chunk,
        confidence: c.score,
        confidence_reason: c.reason,
        warnings: Vec::new(),
        commit_gone: false,
        checkpoint: None,
        verification: None,
        seconds_spent,
        cost_usd,
        tokens,
    }
}

/// Seconds (each attempt's start to its end), dollars and tokens over the plan's attempts.
fn spent(plan: &Plan) -> (u64, f64, u64) {
    let time = |t: &Option<String>| DateTime::parse_from_rfc3339(t.as_deref()?).ok();
    let (mut seconds, mut cost, mut tokens) = (0u64, 0.0f64, 0u64);
    for attempt in plan.chunks().flat_map(|c| c.attempts()) {
        if let (Some(a), Some(b)) = (time(&attempt.started_at), time(&attempt.ended_at)) {
            seconds = seconds.saturating_add((b - a).num_seconds().max(0) as u64);
        }
        if let Some((usd, _)) = attempt.cost_usd()
            && usd.is_finite()
            && usd > 0.0
        {
            cost += usd;
        }
        tokens = tokens.saturating_add(attempt.tokens().total());
    }
    (seconds, cost, tokens)
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
