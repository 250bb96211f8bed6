//! What an agent cannot do to runner's record of the work (issue 8 §1): drop a completed
//! chunk's commit from the spec's branch, mark other chunks done by editing the plan, delete or
//! replace the plan, or break its worktree so that runner looks at the wrong repository.
//!
//! The decisions are plain functions over data (`judge_history`, `settle_plan`,
//! `restore_missing_plan`); the mechanisms (git, the plan file, the journal) follow them.

mod checked;
mod guard;
mod plan;
mod worktree;

pub use checked::HistoryMemo;
pub use guard::*;
pub use plan::*;
pub use worktree::*;

use std::path::Path;

use anyhow::Context;
use serde_json::json;

use crate::git::history::{reachable_among, vanished_changes};
use crate::git::{MainRepo, Oid, Repository, Slot, SlotState, branch_for, history};
use crate::plan::{Chunk, Plan, Status};
use crate::policy::transition::{self, ChunkEvent, StatusChange};
use crate::store::Journal;
use crate::store::SpecPaths;
use crate::store::event::{self as ev, Event};

// ---------------------------------------------------------------------------------------------
// History.

/// What git says about the work runner recorded, for one spec.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryFacts {
    /// The spec's branch exists.
    pub branch_exists: bool,
    /// Every completed chunk's recorded commit: (chunk, commit, the branch tip contains it).
    pub recorded: Vec<(String, String, bool)>,
    /// The attempt in progress: (chunk, start commit, the branch tip contains it).
    pub start: Option<(String, String, bool)>,
    /// Completed chunks whose commit is on the branch but whose changes the tip no longer has,
    /// with no commit since that changed them (hidden by a merge, as `merge -s ours` does):
    /// (chunk, the paths).
    pub hollowed: Vec<(String, Vec<String>)>,
}

/// Work missing from the branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breach {
    /// Completed chunks whose recorded commit is no longer on the branch: (chunk, commit).
    pub missing: Vec<(String, String)>,
    /// The attempt's start commit, if the branch no longer contains it.
    pub start_lost: Option<String>,
    pub branch_gone: bool,
    /// Completed chunks whose changes vanished from the tip without a commit undoing them.
    pub hollowed: Vec<(String, Vec<String>)>,
}

impl Breach {
    /// One sentence for a person.
    pub fn describe(&self, branch: &str) -> String {
        let mut parts = Vec::new();
        if self.branch_gone {
            parts.push(format!("branch {branch} is gone"));
        }
        if !self.missing.is_empty() {
            parts.push(format!(
                "branch {branch} no longer contains the commit of completed {} {}",
                crate::text::noun(self.missing.len(), "chunk"),
                self.missing
                    .iter()
                    .map(|(c, oid)| format!("{c} ({})", short(oid)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !self.hollowed.is_empty() {
            parts.push(format!(
                "its tip no longer has the changes of completed {} {} though no commit since undid them (hidden by a merge)",
                crate::text::noun(self.hollowed.len(), "chunk"),
                self.hollowed
                    .iter()
                    .map(|(c, paths)| format!("{c} ({})", paths.join(", ")))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if let Some(start) = &self.start_lost {
            parts.push(format!(
                "it no longer contains the commit the attempt started from ({})",
                short(start)
            ));
        }
        format!("the branch's history was rewritten: {}", parts.join("; "))
    }

    /// The completed chunks whose work is lost, by id; `None` if none is.
    fn lost_chunks(&self) -> Option<String> {
        let ids: Vec<&str> = self
            .missing
            .iter()
            .map(|(c, _)| c.as_str())
            .chain(self.hollowed.iter().map(|(c, _)| c.as_str()))
            .collect();
        (!ids.is_empty()).then(|| ids.join(", "))
    }
}

/// A word for a command a person copies into a shell: quoted if it needs to be.
fn quote(word: &str) -> std::borrow::Cow<'_, str> {
    shell_words::quote(word)
}

fn short(oid: &str) -> &str {
    crate::git::short_id(oid)
}

/// Is completed work missing from the branch? A recorded commit counts as present only if the
/// branch tip is it or descends from it: an amended or rebased copy has another id.
pub fn judge_history(f: &HistoryFacts) -> Option<Breach> {
    if !f.branch_exists {
        // Without recorded work there is nothing to lose (a fresh spec, a merged one).
        if f.recorded.is_empty() && f.start.is_none() {
            return None;
        }
        return Some(Breach {
            missing: f
                .recorded
                .iter()
                .map(|(c, o, _)| (c.clone(), o.clone()))
                .collect(),
            start_lost: f.start.as_ref().map(|(_, s, _)| s.clone()),
            branch_gone: true,
            hollowed: Vec::new(),
        });
    }
    let missing: Vec<(String, String)> = f
        .recorded
        .iter()
        .filter(|(_, _, present)| !present)
        .map(|(c, o, _)| (c.clone(), o.clone()))
        .collect();
    let start_lost = f
        .start
        .as_ref()
        .filter(|(_, _, present)| !present)
        .map(|(_, s, _)| s.clone());
    (!missing.is_empty() || start_lost.is_some() || !f.hollowed.is_empty()).then(|| Breach {
        missing,
        start_lost,
        branch_gone: false,
        hollowed: f.hollowed.clone(),
    })
}

/// The commit a completed chunk's attempts recorded as its own, if any.
pub fn recorded_commit(chunk: &Chunk) -> Option<String> {
    // Read from the records in place, not through `Chunk::attempts` (a copy of every record):
    // the history check asks this of every completed chunk after every session. The same
    // answer: a plan that parsed has only records `Attempt::from_value` reads, and a record's
    // `outcome` and `commit` are text or null.
    let Some(serde_json::Value::Array(records)) = chunk.raw().get("attempts") else {
        return None;
    };
    if !records.iter().all(crate::plan::Attempt::reads) {
        return None;
    }
    records
        .iter()
        .rev()
        .find(|r| r.get("outcome").and_then(|o| o.as_str()) == Some("completed"))
        .and_then(|r| r.get("commit")?.as_str().map(str::to_string))
}

/// Gather the facts from git. `current` is the chunk whose attempt is in progress, if any.
pub fn history_facts(
    main: &MainRepo,
    spec: &str,
    plan: &Plan,
    current: Option<&Chunk>,
) -> HistoryFacts {
    history_facts_at(main, main.branch_tip(&branch_for(spec)), plan, current)
}

/// `history_facts` with the branch tip already read (`None`: the branch is gone).
fn history_facts_at(
    main: &MainRepo,
    tip: Option<Oid>,
    plan: &Plan,
    current: Option<&Chunk>,
) -> HistoryFacts {
    // A merged spec's work lives on in its base branch; its own branch may be gone.
    let merged = plan.raw.contains_key("merged");
    let recorded: Vec<(String, String)> = plan
        .chunks()
        .filter(|c| c.status == Status::Completed && !merged)
        .filter_map(|c| Some((c.id.clone(), recorded_commit(c)?)))
        // A commit git does not have at all (a plan imported from elsewhere) proves nothing.
        .filter(|(_, oid)| {
            crate::git::commit_id(oid).is_some_and(|o| history::commit_exists(&main.repo, o))
        })
        .collect();
    let start = current.and_then(|c| Some((c.id.clone(), c.last_attempt()?.start_commit?)));
    let wanted: Vec<Oid> = recorded
        .iter()
        .map(|(_, o)| o.as_str())
        .chain(start.iter().map(|(_, s)| s.as_str()))
        .filter_map(crate::git::commit_id)
        .collect();
    let present = tip
        .map(|tip| reachable_among(&main.repo, tip, &wanted))
        .unwrap_or_default();
    let contains =
        |commit: &str| crate::git::commit_id(commit).is_some_and(|o| present.contains(&o));
    let recorded: Vec<(String, String, bool)> = recorded
        .into_iter()
        .map(|(c, oid)| {
            let present = contains(&oid);
            (c, oid, present)
        })
        .collect();
    let start = start.map(|(c, s)| {
        let present = contains(&s);
        (c, s, present)
    });
    let hollowed = match tip {
        Some(tip) => recorded
            .iter()
            .filter(|(_, _, present)| *present)
            .filter_map(|(c, oid, _)| {
                let paths = vanished_changes(&main.repo, tip, crate::git::commit_id(oid)?);
                (!paths.is_empty()).then(|| (c.clone(), paths))
            })
            .collect(),
        None => Vec::new(),
    };
    HistoryFacts {
        branch_exists: tip.is_some(),
        recorded,
        start,
        hollowed,
    }
}

/// Completed work the spec's branch no longer holds, when the branch exists: every completed
/// chunk's recorded commit must be the tip or one of its ancestors. `None` when all is there
/// (or the branch is gone: the caller decides what that means).
pub fn missing_work(main: &MainRepo, spec: &str, plan: &Plan) -> Option<Breach> {
    main.branch_tip(&branch_for(spec))?;
    judge_history(&history_facts(main, spec, plan, None))
}

/// Recovery's record of a human-review decision it did not reach through `decide` (a rewritten
/// history, an unopenable worktree): on the attempt (`recovery`) and in the journal
/// (`recovery_decision`), like every other recovery decision.
pub fn note_recovery_decision(
    paths: &SpecPaths,
    journal: &Journal,
    id: &str,
    reason: &str,
    saved_ref: Option<&str>,
) -> anyhow::Result<()> {
    let record = json!({
        "decision": "human_review", "reason": reason, "source": "rules", "saved_ref": saved_ref,
    });
    paths.plan.update(|plan| {
        if let Some(pos) = plan.find_chunk(id) {
            plan.chunk_mut(pos).update_last_attempt(|a| {
                a.extra.insert("recovery".into(), record.clone());
            });
        }
        Ok(())
    })?;
    journal.write(&Event::RecoveryDecision(ev::RecoveryDecision {
        chunk: id.to_string(),
        decision: "human_review".into(),
        reason: reason.to_string(),
        source: "rules".into(),
        saved_ref: saved_ref.map(str::to_string),
        commit: None,
        why: "interrupted".into(),
    }))?;
    Ok(())
}

/// Block a chunk for a person (through `policy::transition`; `why` goes to the journal),
/// closing its open attempt with the reason. The change, for the caller to journal; `None` if
/// the chunk is not in the plan.
pub fn block_chunk(
    paths: &SpecPaths,
    id: &str,
    reason: &str,
    why: &str,
) -> anyhow::Result<Option<StatusChange>> {
    let event = ChunkEvent::Block { why: why.into() };
    paths.plan.update(|plan| {
        let Some(pos) = plan.find_chunk(id) else {
            return Ok(None);
        };
        let chunk = plan.chunk_mut(pos);
        let change = transition::apply(chunk, &event)?;
        chunk.update_last_attempt(|a| {
            if a.outcome.is_none() {
                a.outcome = Some("blocked".into());
                a.reason = Some(reason.to_string());
                a.ended_at = Some(crate::clock::now());
            }
        });
        chunk.set_str("blocked_reason", reason);
        Ok(Some(change))
    })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod checked_tests;
