//! What an agent cannot do to runner's record of the work (issue 8 §1): drop a completed
//! chunk's commit from the spec's branch, mark other chunks done by editing the plan, delete or
//! replace the plan, or break its worktree so that runner looks at the wrong repository.
//!
//! The decisions are plain functions over data (`judge_history`, `settle_plan`,
//! `restore_missing_plan`); the mechanisms (git, the plan file, the journal) follow them.

mod plan;
mod worktree;

pub use plan::*;
pub use worktree::*;

use std::path::Path;

use anyhow::Context;
use serde_json::{Value, json};

use crate::git::history::{reachable_among, vanished_changes};
use crate::git::{MainRepo, Oid, Repository, Slot, SlotState, branch_for, history};
use crate::plan::{Chunk, Plan, Status};
use crate::store::Journal;
use crate::store::SpecPaths;

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
                "branch {branch} no longer contains the commit of completed chunk(s) {}",
                self.missing
                    .iter()
                    .map(|(c, oid)| format!("{c} ({})", short(oid)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !self.hollowed.is_empty() {
            parts.push(format!(
                "its tip no longer has the changes of completed chunk(s) {} though no commit since undid them (hidden by a merge)",
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
    chunk
        .attempts()
        .into_iter()
        .rev()
        .find(|a| a.outcome.as_deref() == Some("completed"))
        .and_then(|a| a.commit)
}

/// Gather the facts from git. `current` is the chunk whose attempt is in progress, if any.
pub fn history_facts(
    main: &MainRepo,
    spec: &str,
    plan: &Plan,
    current: Option<&Chunk>,
) -> HistoryFacts {
    let tip = main.branch_tip(&branch_for(spec));
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

/// The last tip runner knew to hold all of the spec's work: the attempt's start commit if it
/// contains every recorded commit, else the recorded commit that contains the most others.
fn last_known_tip(repo: &Repository, facts: &HistoryFacts) -> Option<Oid> {
    let recorded: Vec<Oid> = facts
        .recorded
        .iter()
        .filter_map(|(_, o, _)| crate::git::commit_id(o))
        .collect();
    let holds = |tip: Oid, oid: Oid| history::contains_or_false(repo, tip, oid);
    let score = |tip: Oid| recorded.iter().filter(|&&o| holds(tip, o)).count();
    let start = facts
        .start
        .as_ref()
        .and_then(|(_, s, _)| crate::git::commit_id(s))
        .filter(|o| history::commit_exists(repo, *o));
    if let Some(start) = start
        && score(start) == recorded.len()
    {
        return Some(start);
    }
    recorded.iter().copied().max_by_key(|&o| score(o)).or(start)
}

/// Point a recovery ref of `spec` at `oid`, unless one already does (recovering twice must not
/// pile up refs for the same commit).
fn keep_at_recovery_ref(
    repo: &Repository,
    spec: &str,
    label: &str,
    oid: Oid,
    why: &str,
) -> anyhow::Result<String> {
    if let Some((name, _)) = crate::git::refs::recovery_refs(repo, spec)
        .into_iter()
        .find(|(_, o)| *o == oid)
    {
        return Ok(name);
    }
    let refname = crate::git::refs::next_recovery_ref(repo, spec, label)?;
    crate::git::refs::create(repo, &refname, oid, why)?;
    Ok(refname)
}

/// Another recovery ref of `spec` holding the same tree on the same parent as the snapshot just
/// made at `refname` (which is then removed), if any.
fn same_state_kept(
    repo: &Repository,
    spec: &str,
    refname: &str,
    oid: Oid,
) -> anyhow::Result<Option<String>> {
    let key = |o: Oid| history::tree_and_parents(repo, o);
    let mine = key(oid);
    let Some((name, _)) = crate::git::refs::recovery_refs(repo, spec)
        .into_iter()
        .find(|(n, o)| n != refname && key(*o) == mine)
    else {
        return Ok(None);
    };
    crate::git::refs::delete(repo, refname)?;
    Ok(Some(name))
}

/// A breach found and made safe: the refs saved, the chunk blocked, the message written.
pub struct Guarded {
    pub message: String,
    pub blocked: Option<String>,
    /// The recovery ref holding the last tip runner knew.
    pub saved_ref: Option<String>,
}

/// Check the spec's branch against the work runner recorded. On a breach: keep the last tip
/// runner knew under a recovery ref (and the rewritten state under another), block `current`
/// (the chunk whose attempt is in progress) for a person, journal it, and return a message with
/// the exact command to restore. `wt` is the worktree, when it can be opened. `plan` is the
/// plan as the caller holds it (a dry run's restored plan exists only in memory).
#[allow(clippy::too_many_arguments)]
pub fn guard_history(
    main: &MainRepo,
    paths: &SpecPaths,
    journal: &Journal,
    plan: &crate::plan::Plan,
    current: Option<&Chunk>,
    wt: Option<&Repository>,
    worktree_path: Option<&Path>,
    dry_run: bool,
) -> anyhow::Result<Option<Guarded>> {
    let facts = history_facts(main, &paths.name, plan, current);
    let Some(breach) = judge_history(&facts) else {
        return Ok(None);
    };
    let branch = branch_for(&paths.name);
    let mut message = breach.describe(&branch);
    if dry_run {
        return Ok(Some(Guarded {
            message,
            blocked: None,
            saved_ref: None,
        }));
    }
    let label = current.map(|c| c.id.as_str()).unwrap_or("branch");
    let repo = &main.repo;
    let old_tip = last_known_tip(repo, &facts);
    let old = match old_tip {
        Some(oid) => Some(keep_at_recovery_ref(
            repo,
            &paths.name,
            label,
            oid,
            "runner: the branch's tip before its history was rewritten",
        )?),
        None => None,
    };
    crate::failpoint::hit("after_history_ref");
    // The rewritten state (commits and uncommitted changes) is kept too, so that the restore
    // command loses nothing.
    let mut rewritten = None;
    if let Some(wt) = wt {
        let refname = crate::git::refs::next_recovery_ref(repo, &paths.name, label)?;
        let saved = crate::git::refs::snapshot_worktree(
            wt,
            &refname,
            "auto-claude: the worktree as the agent left it after rewriting history",
        )?;
        rewritten = match saved {
            // The same state kept by an earlier check (recovering twice) is not kept twice.
            Some(oid) => {
                Some(same_state_kept(repo, &paths.name, &refname, oid)?.unwrap_or(refname))
            }
            None => match crate::git::head_commit(wt) {
                Ok(head) => Some(keep_at_recovery_ref(
                    repo,
                    &paths.name,
                    label,
                    head,
                    "runner: the rewritten history",
                )?),
                Err(_) => None,
            },
        };
    }
    if let (Some(old), Some(tip)) = (&old, old_tip) {
        let on_branch =
            wt.is_some_and(|w| crate::git::head_branch(w).as_deref() == Some(branch.as_str()));
        // The command names the commit itself, not the ref: a ref under refs/auto-claude/ is
        // one an agent can delete (or planted, and recovery reused), a commit id stays true.
        let tip = tip.to_string();
        let command = match (worktree_path, on_branch) {
            (Some(p), true) => format!(
                "git -C {} reset --hard {tip}",
                crate::sh(p.to_string_lossy())
            ),
            _ => format!(
                "git -C {} branch -f {} {tip}",
                crate::sh(main.root.to_string_lossy()),
                crate::sh(&branch)
            ),
        };
        message.push_str(&format!(
            ". The last tip runner knew is saved at {old}; restore it with:\n    {command}"
        ));
    }
    if let Some(r) = &rewritten {
        message.push_str(&format!(
            "\nThe rewritten history and any uncommitted changes are kept at {r}."
        ));
    }
    let blocked = current.map(|c| c.id.clone());
    if let Some(id) = &blocked {
        message.push_str(&format!(
            "\nChunk {id} is blocked: after restoring, set it back to \"pending\" in {} and run again. To accept the loss instead, also set {} back to \"pending\".",
            paths.plan.path().display(),
            if breach.missing.is_empty() && breach.hollowed.is_empty() { "nothing".to_string() } else { breach.missing.iter().map(|(c, _)| c.as_str()).chain(breach.hollowed.iter().map(|(c, _)| c.as_str())).collect::<Vec<_>>().join(", ") }
        ));
        block_chunk(paths, id, &breach.describe(&branch))?;
    }
    journal.record(
        "history_rewritten",
        blocked.as_deref(),
        json!({
            "missing": breach.missing.iter().map(|(c, o)| json!({"chunk": c, "commit": o})).collect::<Vec<_>>(),
            "start_lost": breach.start_lost, "branch_gone": breach.branch_gone,
            "saved_ref": old, "rewritten_ref": rewritten,
        }),
    )?;
    if let Some(id) = &blocked {
        journal.record(
            "chunk_status",
            Some(id),
            json!({"from": "in_progress", "to": "blocked", "why": "history rewritten"}),
        )?;
    }
    Ok(Some(Guarded {
        message,
        blocked,
        saved_ref: old,
    }))
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
    journal.record(
        "recovery_decision",
        Some(id),
        json!({"decision": "human_review", "reason": reason, "source": "rules", "saved_ref": saved_ref, "why": "interrupted"}),
    )?;
    Ok(())
}

/// Block a chunk for a person, closing its open attempt with the reason.
pub fn block_chunk(paths: &SpecPaths, id: &str, reason: &str) -> anyhow::Result<()> {
    paths.plan.update(|plan| {
        if let Some(pos) = plan.find_chunk(id) {
            let chunk = plan.chunk_mut(pos);
            chunk.update_last_attempt(|a| {
                if a.outcome.is_none() {
                    a.outcome = Some("blocked".into());
                    a.reason = Some(reason.to_string());
                    a.ended_at = Some(crate::clock::now());
                }
            });
            chunk.set_status(Status::Blocked);
            chunk.set_str("blocked_reason", reason);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests;
