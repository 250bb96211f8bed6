//! What an agent cannot do to runner's record of the work (issue 8 §1): drop a completed
//! chunk's commit from the spec's branch, mark other chunks done by editing the plan, delete or
//! replace the plan, or break its worktree so that runner looks at the wrong repository.
//!
//! The decisions are plain functions over data (`judge_history`, `settle_plan`,
//! `restore_missing_plan`); the mechanisms (git, the plan file, the journal) follow them.

use std::path::Path;

use anyhow::Context;
use git2::{Oid, Repository};
use serde_json::{Value, json};

use crate::git::{MainRepo, Slot, SlotState, branch_for};
use crate::store::SpecPaths;
use crate::plan::{Chunk, Plan, Status};
use crate::store::Journal;

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
            crate::git::commit_id(oid).is_some_and(|o| main.repo.find_commit(o).is_ok())
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

/// The files `commit` added or changed that `tip` (which descends from it) has deleted or put
/// back as they were before `commit`, while no ordinary (one-parent) commit since changed them:
/// the change was dropped by a merge (`git merge -s ours`), not undone by visible work. Cheap:
/// one diff of `commit` with its parent, lookups in the tip's tree, and a walk since `commit`
/// only when something is missing.
pub fn vanished_changes(repo: &Repository, tip: Oid, commit: Oid) -> Vec<String> {
    let found = (|| -> Result<Vec<String>, git2::Error> {
        let c = repo.find_commit(commit)?;
        let parent_tree = match c.parent(0) {
            Ok(p) => Some(p.tree()?),
            Err(_) => None,
        };
        let diff = repo.diff_tree_to_tree(parent_tree.as_ref(), Some(&c.tree()?), None)?;
        let tip_tree = repo.find_commit(tip)?.tree()?;
        let mut lost: Vec<String> = Vec::new();
        for delta in diff.deltas() {
            if !matches!(delta.status(), git2::Delta::Added | git2::Delta::Modified) {
                continue;
            }
            let Some(path) = delta.new_file().path() else {
                continue;
            };
            let at_tip = tip_tree.get_path(path).ok().map(|e| e.id());
            let before = (delta.status() == git2::Delta::Modified).then(|| delta.old_file().id());
            if at_tip.is_none() || at_tip == before {
                lost.push(path.to_string_lossy().into_owned());
            }
        }
        if lost.is_empty() {
            return Ok(lost);
        }
        let mut walk = repo.revwalk()?;
        walk.push(tip)?;
        walk.hide(commit)?;
        for oid in walk {
            let later = repo.find_commit(oid?)?;
            if later.parent_count() != 1 {
                continue;
            }
            let mut opts = git2::DiffOptions::new();
            for p in &lost {
                opts.pathspec(p);
            }
            opts.disable_pathspec_match(true);
            let d = repo.diff_tree_to_tree(
                Some(&later.parent(0)?.tree()?),
                Some(&later.tree()?),
                Some(&mut opts),
            )?;
            let touched: Vec<String> = d
                .deltas()
                .flat_map(|x| [x.old_file().path(), x.new_file().path()])
                .flatten()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            lost.retain(|p| !touched.contains(p));
            if lost.is_empty() {
                break;
            }
        }
        Ok(lost)
    })();
    found.unwrap_or_default()
}

/// Which of `wanted` the history of `tip` contains, found by one walk from `tip` that stops as
/// soon as all are seen (cheap when the work is there: the recorded commits are near the tip).
fn reachable_among(repo: &Repository, tip: Oid, wanted: &[Oid]) -> Vec<Oid> {
    let mut left: std::collections::HashSet<Oid> = wanted.iter().copied().collect();
    let mut found = Vec::new();
    let Ok(mut walk) = repo.revwalk() else {
        return found;
    };
    if walk.push(tip).is_err() {
        return found;
    }
    for oid in walk.flatten() {
        if left.is_empty() {
            break;
        }
        if left.remove(&oid) {
            found.push(oid);
        }
    }
    found
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
    let holds =
        |tip: Oid, oid: Oid| tip == oid || repo.graph_descendant_of(tip, oid).unwrap_or(false);
    let score = |tip: Oid| recorded.iter().filter(|&&o| holds(tip, o)).count();
    let start = facts
        .start
        .as_ref()
        .and_then(|(_, s, _)| crate::git::commit_id(s))
        .filter(|o| repo.find_commit(*o).is_ok());
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
    repo.reference(&refname, oid, false, why)
        .with_context(|| format!("creating {refname}"))?;
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
    let key = |o: Oid| {
        repo.find_commit(o)
            .ok()
            .map(|c| (c.tree_id(), c.parent_ids().collect::<Vec<_>>()))
    };
    let mine = key(oid);
    let Some((name, _)) = crate::git::refs::recovery_refs(repo, spec)
        .into_iter()
        .find(|(n, o)| n != refname && key(*o) == mine)
    else {
        return Ok(None);
    };
    repo.find_reference(refname)?.delete()?;
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

// ---------------------------------------------------------------------------------------------
// The plan.

/// How the plan file looks when runner needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanOnDisk {
    Missing,
    /// Not JSON at all (torn, garbled).
    Unparsable,
    /// JSON that breaks a rule.
    Invalid,
}

/// Should recovery restore the plan from runner's copy? A plan that is not even JSON always
/// is (no one writes half a file on purpose). A plan that is missing or breaks a rule is
/// restored only if it happened while runner was running — the journal's last run never ended
/// (a run that ends cleanly restores such a plan itself when its session ends); with the last
/// run ended cleanly, the user removed it (plan again) or wrote it (theirs to fix).
pub fn restore_missing_plan(
    on_disk: PlanOnDisk,
    last_run_unfinished: bool,
    have_copy: bool,
) -> bool {
    have_copy
        && match on_disk {
            PlanOnDisk::Unparsable => true,
            PlanOnDisk::Missing | PlanOnDisk::Invalid => last_run_unfinished,
        }
}

/// Did the journal's last run start without ending?
pub fn last_run_unfinished(events: &[Value]) -> bool {
    events
        .iter()
        .rev()
        .find(|e| e["event"] == "run_start" || e["event"] == "run_end")
        .is_some_and(|e| e["event"] == "run_start")
}

/// The plan after a session, put right: `before` is the plan as runner wrote it when the
/// session's chunk was taken, `found` the plan now. Only these changes stand:
/// - on the session's own chunk (`own`, attempt by `session`): its report on its attempt
///   (`reported`, `report_notes`, `notes`, through `runner chunk`), and its status set to
///   `completed` (an agent that marks its own chunk done in the file has reported done);
/// - on chunks a person changed with `runner chunk …` during the session (`by_person`): all.
///
/// Everything else (other chunks' statuses, descriptions and attempt records, chunks added or
/// removed, plan fields) is what `before` says. Returns the plan and one line per status change
/// undone (empty when nothing but allowed changes happened; compare the plans for the rest).
pub fn settle_plan(
    before: &Plan,
    found: &Plan,
    own: &str,
    session: &str,
    by_person: &[String],
) -> (Plan, Vec<String>) {
    let mut settled = before.clone();
    if let (Some(pos), Some(fpos)) = (settled.find_chunk(own), found.find_chunk(own)) {
        let now = found.chunk(fpos);
        let report = now
            .last_attempt()
            .filter(|a| a.session_id.as_deref() == Some(session));
        let chunk = settled.chunk_mut(pos);
        if let Some(report) = report {
            chunk.update_last_attempt(|a| {
                a.reported = report.reported.clone();
                a.report_notes = report.report_notes.clone();
            });
            if let Some(notes) = now.str_field("notes") {
                chunk.set_str("notes", notes);
            }
        }
        if now.status == Status::Completed {
            chunk.set_status(Status::Completed);
        }
    }
    for id in by_person {
        if let (Some(pos), Some(fpos)) = (settled.find_chunk(id), found.find_chunk(id)) {
            *settled.chunk_mut(pos) = found.chunk(fpos).clone();
        }
    }
    let mut undone = Vec::new();
    for chunk in settled.chunks() {
        let was = found.find_chunk(&chunk.id).map(|p| found.chunk(p).status);
        match was {
            Some(s) if s != chunk.status => undone.push(format!(
                "{} {} → {}",
                chunk.id,
                s.as_str(),
                chunk.status.as_str()
            )),
            None => undone.push(format!(
                "{} (removed) → {}",
                chunk.id,
                chunk.status.as_str()
            )),
            _ => {}
        }
    }
    for chunk in found.chunks() {
        if settled.find_chunk(&chunk.id).is_none() {
            undone.push(format!("{} (added) removed", chunk.id));
        }
    }
    (settled, undone)
}

/// After a session: put the plan right if the agent deleted, broke, replaced or edited it
/// (see `settle_plan`). A plan that is gone or broken is rebuilt from runner's last-good copy
/// (which holds the reports made through `runner chunk`), else from the plan as it was before
/// the session; a broken file is kept as `implementation_plan.json.corrupt-<time>`. Returns
/// one line per thing put right, for the person watching.
pub fn settle_after_session(
    paths: &SpecPaths,
    journal: &Journal,
    before: &Plan,
    own: &str,
    session: &str,
    by_person: &[String],
) -> anyhow::Result<Vec<String>> {
    let last_good = || -> Option<Plan> {
        let path = paths.plan.last_good_path();
        let bytes = crate::store::safe::read(path).ok()?;
        crate::plan::parse_plan(path, &bytes).ok()
    };
    let plan_path = paths.plan.path().to_path_buf();
    let (lines, record) = paths.plan.settle(|now| {
        // A plan that is gone or broken: runner's last-good copy, else the plan as it was
        // before the session.
        let copy = || match last_good() {
            Some(plan) => (plan, "last_good"),
            None => (before.clone(), "before_session"),
        };
        let mut source = None;
        let (found, gone) = match now {
            Ok(Some(plan)) => (plan, None),
            Ok(None) => {
                let (plan, from) = copy();
                source = Some(from);
                (plan, Some("deleted"))
            }
            Err(e) => {
                e.downcast::<crate::plan::PlanError>()?;
                let aside = crate::store::unused_path(&plan_path.with_file_name(format!(
                    "{}.corrupt-{}",
                    crate::plan::PLAN_FILE,
                    crate::clock::stamp()
                )));
                // Never through a link, never over an existing file (see `store::safe`).
                crate::store::safe::copy_new(&plan_path, &aside)
                    .with_context(|| format!("keeping the broken plan as {}", aside.display()))?;
                let (plan, from) = copy();
                source = Some(from);
                (plan, Some("broken"))
            }
        };
        let (settled, undone) = settle_plan(before, &found, own, session, by_person);
        let edited = settled.to_value() != found.to_value();
        let mut lines = Vec::new();
        if let Some(how) = gone {
            lines.push(format!(
                "The plan was {how} during the session of {own}; restored from runner's last copy."
            ));
        }
        if edited {
            lines.push(format!(
                "The agent edited the plan directly; undone: {}",
                if undone.is_empty() {
                    "changes to chunks other than its own (or their records)".to_string()
                } else {
                    undone.join(", ")
                }
            ));
        }
        let write = (gone.is_some() || edited).then_some(settled);
        Ok((write, (lines, (gone, source, edited, undone))))
    })?;
    let (gone, source, edited, undone) = record;
    if let Some(how) = gone {
        journal.record(
            "plan_restored",
            None,
            json!({"source": source, "why": format!("the plan was {how} during session {session}")}),
        )?;
    }
    if edited {
        journal.record(
            "plan_edit_undone",
            Some(own),
            json!({"session_id": session, "undone": undone}),
        )?;
    }
    Ok(lines)
}

/// Chunks a person changed with `runner chunk …` (no session) since `session` started, as the
/// journal says. Only where the run cannot hear a person's changes itself (no `/proc`, see
/// `ops::person`): an agent can write this journal line too.
pub fn changed_by_person(events: &[Value], session: &str) -> Vec<String> {
    let start = events
        .iter()
        .rposition(|e| e["event"] == "session_start" && e["session_id"] == session)
        .unwrap_or(0);
    events[start..]
        .iter()
        .filter(|e| e["event"] == "chunk_report" && e["session_id"].is_null())
        .filter_map(|e| e["chunk"].as_str().map(str::to_string))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A worktree runner cannot open.

/// The slot of the spec whose folder is there but cannot be opened as that worktree (its `.git`
/// file deleted or replaced, the folder emptied): the one registered for the spec's branch, or
/// `last_slot` — the slot the spec's last run worked in, when a chunk was left in progress —
/// unless that one is registered for another spec's branch (an agent that checked out another
/// branch and then broke the folder must not make runner skip saving its files).
pub fn unopenable_slot(
    main: &MainRepo,
    spec: &str,
    last_slot: Option<&str>,
) -> Option<(Slot, String)> {
    let branch = branch_for(spec);
    Slot::all(main).into_iter().find_map(|slot| {
        let registered = slot.registered_branch(main);
        let ours = registered.as_deref() == Some(branch.as_str())
            || (last_slot == Some(slot.name.as_str())
                && registered
                    .as_deref()
                    .and_then(crate::git::spec_of_branch)
                    .is_none_or(|other| other == spec));
        if !slot.path.exists() || !ours {
            return None;
        }
        match slot.inspect(main) {
            SlotState::Broken { reason } => {
                let reason = unreadable_folder(&slot.path).unwrap_or(reason);
                Some((slot, reason))
            }
            _ => None,
        }
    })
}

/// `folder cannot be read (permission denied)` when its entries cannot be listed: git then
/// calls it missing or broken, which sends a person looking for the wrong thing.
pub fn unreadable_folder(folder: &Path) -> Option<String> {
    match std::fs::read_dir(folder) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Some(format!(
            "{} cannot be read (permission denied)",
            folder.display()
        )),
        _ => None,
    }
}

/// Save whatever files an unopenable slot still holds as a commit on top of the spec's branch
/// tip, under a recovery ref (an existing ref with the same content is reused). `None` if
/// nothing could be read.
pub fn save_unopenable_slot(
    main: &MainRepo,
    spec: &str,
    slot: &Slot,
    label: &str,
) -> anyhow::Result<Option<String>> {
    let tree = match slot.open_registered(main) {
        // Through git's registration, the folder's files are read with the user's ignore
        // rules, as `git add -A` would.
        Ok(wt) => {
            let mut index = wt.index()?;
            let staged = (|| -> Result<Oid, git2::Error> {
                index.add_all(["*"], git2::IndexAddOption::DEFAULT, None)?;
                index.update_all(["*"], None)?;
                index.write_tree_to(&main.repo)
            })();
            let _ = index.read(true);
            staged?
        }
        Err(_) => tree_of_folder(&main.repo, &slot.path)?,
    };
    let parent = main
        .branch_tip(&branch_for(spec))
        .and_then(|t| main.repo.find_commit(t).ok());
    if let Some((name, _)) = crate::git::refs::recovery_refs(&main.repo, spec)
        .into_iter()
        .find(|(_, o)| main.repo.find_commit(*o).is_ok_and(|c| c.tree_id() == tree))
    {
        return Ok(Some(name));
    }
    let tree = main.repo.find_tree(tree)?;
    let sig = crate::git::signature(&main.repo)?;
    let message = format!(
        "auto-claude: files of the worktree {} that git could not open",
        slot.path.display()
    );
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    let oid = main
        .repo
        .commit(None, &sig, &sig, &message, &tree, &parents)?;
    let refname = crate::git::refs::next_recovery_ref(&main.repo, spec, label)?;
    main.repo.reference(&refname, oid, false, &message)?;
    Ok(Some(refname))
}

/// A worktree runner cannot open exactly: save what its folder holds, block `chunk` (the one in
/// progress there, if any), journal it, and return what a person should do. Its work is never
/// judged by another repository (the main one, found by searching upwards).
pub fn unopenable_worktree(
    main: &MainRepo,
    paths: &SpecPaths,
    journal: &Journal,
    folder: &Path,
    why: &str,
    chunk: Option<&str>,
    dry_run: bool,
) -> anyhow::Result<String> {
    let slot = Slot {
        name: folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: folder.to_path_buf(),
    };
    let branch = branch_for(&paths.name);
    let shown = folder.display();
    let quoted = crate::sh(folder.to_string_lossy());
    let quoted_aside = crate::sh(format!("{}.broken", folder.to_string_lossy()));
    let mut message = format!("{why}; runner will not judge its work by any other repository.");
    // Files that cannot be read cannot be saved; the dry run says what the real one will do.
    let readable = unreadable_folder(folder).is_none();
    if dry_run {
        message.push_str(if readable {
            " (dry run: its files would be saved to a recovery ref)"
        } else {
            " (dry run: its files cannot be read, so none would be saved)"
        });
        return Ok(message);
    }
    let saved = if readable {
        save_unopenable_slot(main, &paths.name, &slot, chunk.unwrap_or("worktree"))?
    } else {
        message.push_str(" Its files cannot be read, so none were saved.");
        None
    };
    crate::failpoint::hit("after_unopenable_saved");
    if let Some(r) = &saved {
        message.push_str(&format!(
            " The files it still holds are saved at {r} (a commit on top of {branch}; see `git show --stat {}`).",
            quote(r)
        ));
    }
    if let Some(id) = chunk {
        block_chunk(paths, id, &format!("its worktree {shown} cannot be opened"))?;
        message.push_str(&format!(" Chunk {id} is blocked."));
    }
    if !readable {
        message.push_str(&format!(
            " If the folder is yours, make it readable again (chmod -R u+rwX {quoted}) and run `runner recover` again; otherwise:"
        ));
    }
    let take = if saved.is_some() {
        "take what you need from the saved ref, "
    } else {
        ""
    };
    message.push_str(&format!(
        " To go on: move the folder away (mv {quoted} {quoted_aside}), run `git worktree prune`, {take}set the chunk back to \"pending\" in {}, and run again; the worktree is recreated from {branch}.",
        paths.plan.path().display()
    ));
    journal.record(
        "worktree_unopenable",
        chunk,
        json!({"worktree": folder, "why": why, "saved_ref": saved}),
    )?;
    if let Some(id) = chunk {
        journal.record(
            "chunk_status",
            Some(id),
            json!({"from": "in_progress", "to": "blocked", "why": "worktree cannot be opened"}),
        )?;
    }
    Ok(message)
}

/// Every file under `dir` (but `.git`) as a tree, when git cannot help.
fn tree_of_folder(repo: &Repository, dir: &Path) -> anyhow::Result<Oid> {
    let mut builder = repo.treebuilder(None)?;
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path)?;
        let (oid, mode) = if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path)?;
            (repo.blob(target.as_os_str().as_encoded_bytes())?, 0o120000)
        } else if meta.is_dir() {
            (tree_of_folder(repo, &path)?, 0o040000)
        } else {
            use std::os::unix::fs::PermissionsExt;
            let exec = meta.permissions().mode() & 0o111 != 0;
            (
                repo.blob_path(&path)?,
                if exec { 0o100755 } else { 0o100644 },
            )
        };
        builder.insert(name.as_encoded_bytes(), oid, mode)?;
    }
    Ok(builder.write()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(recorded: &[(&str, bool)], start: Option<bool>) -> HistoryFacts {
        HistoryFacts {
            branch_exists: true,
            recorded: recorded
                .iter()
                .map(|(c, p)| (c.to_string(), format!("{c}-commit"), *p))
                .collect(),
            start: start.map(|p| ("cur".to_string(), "start".to_string(), p)),
            hollowed: Vec::new(),
        }
    }

    #[test]
    fn history_intact_is_no_breach() {
        assert_eq!(
            judge_history(&facts(&[("a", true), ("b", true)], Some(true))),
            None
        );
        assert_eq!(judge_history(&HistoryFacts::default()), None);
    }

    #[test]
    fn a_missing_recorded_commit_or_start_is_a_breach() {
        let b = judge_history(&facts(&[("a", false), ("b", true)], Some(true))).unwrap();
        assert_eq!(b.missing, vec![("a".to_string(), "a-commit".to_string())]);
        assert_eq!(b.start_lost, None);
        let b = judge_history(&facts(&[("a", true)], Some(false))).unwrap();
        assert!(b.missing.is_empty());
        assert_eq!(b.start_lost.as_deref(), Some("start"));
        assert!(b.describe("auto-claude/x").contains("rewritten"));
    }

    #[test]
    fn changes_hidden_by_a_merge_are_a_breach() {
        let mut f = facts(&[("a", true)], None);
        f.hollowed = vec![("a".to_string(), vec!["x.txt".to_string()])];
        let b = judge_history(&f).unwrap();
        assert!(b.missing.is_empty());
        assert!(
            b.describe("br").contains("a (x.txt)"),
            "{}",
            b.describe("br")
        );
    }

    #[test]
    fn a_gone_branch_is_a_breach_only_with_recorded_work() {
        let mut f = facts(&[("a", false)], None);
        f.branch_exists = false;
        assert!(judge_history(&f).unwrap().branch_gone);
        let f = HistoryFacts {
            branch_exists: false,
            ..Default::default()
        };
        assert_eq!(judge_history(&f), None);
    }

    #[test]
    fn a_plan_restores_only_when_runner_was_running_or_it_is_torn() {
        use PlanOnDisk::*;
        assert!(restore_missing_plan(Unparsable, false, true));
        assert!(restore_missing_plan(Missing, true, true));
        assert!(restore_missing_plan(Invalid, true, true));
        assert!(!restore_missing_plan(Missing, false, true));
        assert!(!restore_missing_plan(Invalid, false, true));
        assert!(!restore_missing_plan(Missing, true, false));
    }

    #[test]
    fn the_last_run_is_unfinished_without_a_run_end() {
        let ev = |e: &str| json!({"event": e});
        assert!(last_run_unfinished(&[
            ev("run_end"),
            ev("run_start"),
            ev("commit")
        ]));
        assert!(!last_run_unfinished(&[ev("run_start"), ev("run_end")]));
        assert!(!last_run_unfinished(&[]));
    }

    fn plan(statuses: &[(&str, &str)]) -> Plan {
        let chunks: Vec<Value> = statuses
            .iter()
            .map(|(id, s)| json!({"id": id, "description": format!("do {id}"), "status": s}))
            .collect();
        let text = json!({"phases": [{"id": "p1", "subtasks": chunks}]}).to_string();
        crate::plan::parse_plan(Path::new("t.json"), text.as_bytes()).unwrap()
    }

    fn with_attempt(mut p: Plan, id: &str, session: &str, reported: Option<&str>) -> Plan {
        let pos = p.find_chunk(id).unwrap();
        p.chunk_mut(pos).set_attempts(&[crate::plan::Attempt {
            n: 1,
            session_id: Some(session.into()),
            reported: reported.map(str::to_string),
            ..Default::default()
        }]);
        p
    }

    #[test]
    fn other_chunks_statuses_are_undone_and_the_own_report_stands() {
        let before = with_attempt(
            plan(&[("a", "in_progress"), ("b", "pending"), ("c", "pending")]),
            "a",
            "s1",
            None,
        );
        let found = with_attempt(
            plan(&[("a", "in_progress"), ("b", "completed"), ("c", "completed")]),
            "a",
            "s1",
            Some("done"),
        );
        let (settled, undone) = settle_plan(&before, &found, "a", "s1", &[]);
        let st: Vec<Status> = settled.chunks().map(|c| c.status).collect();
        assert_eq!(
            st,
            vec![Status::InProgress, Status::Pending, Status::Pending]
        );
        assert_eq!(
            settled
                .chunk(settled.find_chunk("a").unwrap())
                .last_attempt()
                .unwrap()
                .reported
                .as_deref(),
            Some("done")
        );
        assert_eq!(
            undone,
            vec!["b completed → pending", "c completed → pending"]
        );
    }

    #[test]
    fn a_persons_change_and_the_own_completed_status_stand() {
        let before = plan(&[("a", "in_progress"), ("b", "pending")]);
        let found = plan(&[("a", "completed"), ("b", "completed")]);
        let (settled, undone) = settle_plan(&before, &found, "a", "s1", &["b".to_string()]);
        assert!(undone.is_empty(), "{undone:?}");
        assert_eq!(settled.to_value(), found.to_value());
    }

    #[test]
    fn removed_attempts_and_added_chunks_are_put_back() {
        let before = with_attempt(
            plan(&[("a", "in_progress"), ("b", "completed")]),
            "b",
            "old",
            Some("done"),
        );
        let found = plan(&[("a", "in_progress"), ("b", "completed"), ("x", "pending")]);
        let (settled, undone) = settle_plan(&before, &found, "a", "s1", &[]);
        assert_eq!(settled.to_value(), before.to_value());
        assert_eq!(undone, vec!["x (added) removed"]);
    }

    #[test]
    fn person_changes_are_read_from_the_journal_since_the_session_started() {
        let events = vec![
            json!({"event": "chunk_report", "chunk": "old", "session_id": null}),
            json!({"event": "session_start", "session_id": "s1"}),
            json!({"event": "chunk_report", "chunk": "a", "session_id": "s1"}),
            json!({"event": "chunk_report", "chunk": "b", "session_id": null}),
        ];
        assert_eq!(changed_by_person(&events, "s1"), vec!["b"]);
    }
}
