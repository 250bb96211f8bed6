//! The statuses rebuilt from the checkpoint or the journal, checked against the plan and git as
//! `policy::agreement` decides: a completed chunk whose commit is no longer on the branch is not
//! done, a status the plan contradicts is named in a warning, and each costs confidence. The
//! commits source is git and the plan already: only its chunks the plan alone calls completed
//! are checked, by the commit the plan records for them, and one git finds not done is no
//! longer counted unconfirmed in its score.
//!
//! Cost: one walk of the branch from its tip for every recorded commit at once (the walk
//! `validate` makes for a checkpoint, made again here for the commits the journal replayed on
//! top of it), and the branch's chunk commits read once by the caller.

use std::collections::HashSet;

use super::{Reconstruction, Source, commits};
use crate::git::{MainRepo, Oid, commit_id};
use crate::plan::{Plan, Status};
use crate::policy::agreement::{self, GitFacts, Noted, Witnesses};
use crate::policy::confidence::{self, Confidence};
use crate::store::checkpoint::ChunkState;

/// Check `r` (rebuilt for spec `spec`) against `plan` and the spec's branch as `branch` read
/// it, in place: statuses git contradicts changed, the confidence lowered, the warnings added.
pub fn check(
    main: &MainRepo,
    spec: &str,
    plan: &Plan,
    branch: &commits::Branch,
    r: &mut Reconstruction,
) {
    let source_word = match r.source {
        Source::Checkpoint => "checkpoint",
        Source::Events => "journal",
        Source::Commits => "plan",
    };
    let commits_only = r.source == Source::Commits;
    let planned = |id: &str| plan.find_chunk(id).map(|pos| plan.chunk(pos));
    let plan_commit = |id: &str| {
        planned(id)
            .filter(|c| c.status == Status::Completed)
            .and_then(|c| c.last_attempt()?.commit)
            .and_then(|text| commit_id(&text))
    };
    let mut wanted: Vec<Oid> = Vec::new();
    for c in &r.chunks {
        if Status::parse(&c.status) == Some(Status::Completed) {
            wanted.extend(c.commit.as_deref().and_then(commit_id));
        }
        wanted.extend(plan_commit(&c.id));
    }
    let present = present(main, branch, &wanted);
    let on_branch = |oid: Option<Oid>| oid.is_some_and(|o| present.contains(&o));
    let mut noted: Vec<Noted> = Vec::new();
    for c in r.chunks.iter_mut() {
        let Some(source) = Status::parse(&c.status) else {
            continue;
        };
        let plan_status = planned(&c.id).map(|p| p.status);
        // From the commits source, a chunk with a chunk commit is git's word already; one the
        // plan alone calls completed is checked by the commit the plan records.
        let by_plan = source == Status::Completed && c.commit.is_none();
        // ... unless the plan sets it back: the run reads the plan and does it again.
        let set_back =
            plan_status.is_some_and(|p| p != Status::Completed && p != Status::InProgress);
        if commits_only && !by_plan && !set_back {
            continue;
        }
        let plan_recorded = plan_commit(&c.id).map(|o| o.to_string());
        let recorded = match commits_only {
            true => plan_recorded.as_deref(),
            false => c.commit.as_deref().filter(|_| source == Status::Completed),
        };
        let git = GitFacts {
            recorded_on_branch: recorded.map(|text| on_branch(commit_id(text))),
            chunk_commit: branch.chunk_commits.contains_key(&c.id),
            plan_commit_on_branch: on_branch(plan_commit(&c.id)),
        };
        let verdict = agreement::judge(Witnesses {
            source,
            plan: plan_status,
            git,
        });
        let Some(finding) = verdict.finding else {
            continue;
        };
        noted.push(Noted {
            chunk: c.id.clone(),
            finding,
            source,
            plan: plan_status,
        });
        let commit = match verdict.status {
            Status::Completed if verdict.use_chunk_commit => {
                branch.chunk_commits.get(&c.id).map(|o| o.to_string())
            }
            Status::Completed if source != Status::Completed => {
                plan_commit(&c.id).map(|o| o.to_string())
            }
            Status::Completed => c.commit.take(),
            _ => None,
        };
        // A row of the reconstruction, rebuilt (the plan is not touched: nothing here writes).
        *c = ChunkState {
            id: std::mem::take(&mut c.id),
            status: verdict.status.as_str().to_string(),
            commit,
        };
    }
    if noted.is_empty() {
        return;
    }
    r.commit_gone = noted
        .iter()
        .any(|n| n.finding == agreement::Finding::CommitGone);
    let findings: Vec<_> = noted.iter().map(|n| n.finding).collect();
    let c = match r.source {
        // Git's word on the chunks the plan alone called completed: no longer unconfirmed (the
        // source's own score counted them so), and no doubt beyond the source's own.
        Source::Commits => confidence::from_commits(
            r.chunks.len(),
            commits::unconfirmed(plan, branch).saturating_sub(noted.len()),
        ),
        _ => confidence::doubted(
            Confidence {
                score: r.confidence,
                reason: std::mem::take(&mut r.confidence_reason),
            },
            noted.len(),
            agreement::penalty(&findings, r.chunks.len()),
        ),
    };
    r.confidence = c.score;
    r.confidence_reason = c.reason;
    let recover = format!("runner recover --spec {}", crate::sh(spec));
    r.warnings.extend(agreement::warnings(
        &noted,
        source_word,
        &crate::git::branch_for(spec),
        &recover,
    ));
}

/// Which of `wanted` the branch has (from its tip); with the branch gone, which the repository
/// still has.
fn present(main: &MainRepo, branch: &commits::Branch, wanted: &[Oid]) -> HashSet<Oid> {
    match branch.tip {
        Some(tip) => crate::git::history::reachable_among(&main.repo, tip, wanted)
            .into_iter()
            .collect(),
        None => wanted
            .iter()
            .copied()
            .filter(|oid| crate::git::history::commit_exists(&main.repo, *oid))
            .collect(),
    }
}
