//! A checkpoint checked against the repository before it is believed.
//!
//! It is **invalid** (reconstruction falls back to the journal, saying why: the
//! `policy::set_aside` reason and the detail) when:
//! - a chunk has a status runner does not read (unreadable);
//! - its chunks are not the plan's (other ids, another order): most often it is older than the
//!   plan (written before planning, or before a person edited the plan);
//! - it is another spec's;
//! - its branch is `auto-claude/<another spec>`;
//! - its recorded tip is no longer on the branch (neither the tip nor an ancestor of it): the
//!   branch's history was rewritten;
//! - a completed chunk's commit is not on the branch (or, the branch gone, not in the
//!   repository at all);
//! - its worktree holds a branch now that is no spec's (another spec's `auto-claude/…` branch
//!   is runner's own switch of a shared slot: the checkpoint is kept, its files not checked).
//!
//! It is **kept, with points off** (`policy::confidence`) when:
//! - the branch is gone (−5), its completed chunks' commits still in the repository;
//! - files of completed chunks are missing (−10). A file counts as missing when a completed
//!   chunk's commit (the one the checkpoint records) added or changed it, the branch's tip (the
//!   recorded tip when the branch is gone) still has it, and the worktree does not: it was
//!   deleted outside any commit. A file a later commit deleted on purpose is not missing. With
//!   no worktree there is nothing to look at, and nothing counts as missing (a warning says the
//!   worktree is gone).

use std::collections::BTreeSet;

use crate::git::{MainRepo, Oid, Slot, SlotState, commit_id};
use crate::plan::{Plan, Status};
use crate::policy::set_aside::SetAside;
use crate::store::checkpoint::Checkpoint;

/// Why a checkpoint is not believed (`NotThePlans` for any checkpoint whose chunks are not the
/// plan's: whether it is merely older than the plan is the caller's to tell), and what exactly
/// was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub why: SetAside,
    pub detail: String,
}

fn rejected(why: SetAside, detail: String) -> Rejected {
    Rejected { why, detail }
}

/// What validation found about a usable checkpoint.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    pub branch_gone: bool,
    /// Files of completed chunks missing from the worktree (sorted, each once).
    pub missing_files: Vec<String>,
    /// Things worth saying that do not make the checkpoint wrong.
    pub warnings: Vec<String>,
}

/// Check `cp`, the checkpoint of spec `spec` (whose chunks are `plan`'s when there is a plan),
/// against the repository. `Err` says what is wrong.
pub fn check(
    main: &MainRepo,
    root: &std::path::Path,
    spec: &str,
    cp: &Checkpoint,
    plan: Option<&Plan>,
) -> Result<Checked, Rejected> {
    if cp.spec != spec {
        return Err(rejected(
            SetAside::NotTheRepository,
            format!("it is spec {:?}'s checkpoint, not {spec:?}'s", cp.spec),
        ));
    }
    if let Some(bad) = cp
        .chunks
        .iter()
        .find(|c| Status::parse(&c.status).is_none())
    {
        return Err(rejected(
            SetAside::Unreadable,
            format!("chunk {} has the unknown status {:?}", bad.id, bad.status),
        ));
    }
    if let Some(plan) = plan {
        let ids = cp.chunks.iter().map(|c| c.id.as_str());
        if !ids.eq(plan.chunks().map(|c| c.id.as_str())) {
            return Err(rejected(
                SetAside::NotThePlans,
                "its chunks are not the plan's".into(),
            ));
        }
    }
    let own = crate::git::branch_for(spec);
    let repository = |detail: String| rejected(SetAside::NotTheRepository, detail);
    if cp.branch != own {
        return Err(repository(format!(
            "it names the branch {}, not {own}",
            cp.branch
        )));
    }
    let mut checked = Checked::default();
    let completed = completed_commits(cp).map_err(repository)?;
    let recorded_tip = match &cp.tip {
        Some(text) => Some(
            commit_id(text)
                .ok_or_else(|| repository(format!("its tip {text:?} is not a commit id")))?,
        ),
        None => None,
    };
    let tip = match main.branch_tip(&cp.branch) {
        Some(tip) => {
            check_on_branch(main, &cp.branch, tip, recorded_tip, &completed)?;
            Some(tip)
        }
        None => {
            checked.branch_gone = true;
            checked
                .warnings
                .push(format!("The branch {} is gone", cp.branch));
            if let Some((chunk, oid)) = completed
                .iter()
                .find(|(_, oid)| !crate::git::history::commit_exists(&main.repo, *oid))
            {
                return Err(repository(format!(
                    "chunk {chunk}'s commit {} is not in the repository",
                    crate::git::short_id(&oid.to_string())
                )));
            }
            recorded_tip
        }
    };
    match (worktree_of(main, root, cp).map_err(repository)?, tip) {
        (Place::At(dir), Some(tip)) => {
            checked.missing_files = missing_files(main, &dir, tip, &completed)
        }
        (Place::At(_), None) => {}
        (Place::Gone, _) => checked.warnings.push(format!(
            "The worktree of {} is gone; files of completed chunks were not checked",
            cp.branch
        )),
        (Place::Switched(why), _) => checked.warnings.push(why),
    }
    Ok(checked)
}

/// The commit of every completed chunk that records one.
fn completed_commits(cp: &Checkpoint) -> Result<Vec<(String, Oid)>, String> {
    cp.chunks
        .iter()
        .filter(|c| Status::parse(&c.status) == Some(Status::Completed))
        .filter_map(|c| Some((c, c.commit.as_ref()?)))
        .map(|(c, text)| match commit_id(text) {
            Some(oid) => Ok((c.id.clone(), oid)),
            None => Err(format!(
                "chunk {}'s commit {text:?} is not a commit id",
                c.id
            )),
        })
        .collect()
}

/// The recorded tip and every completed chunk's commit are on the branch (at `tip` or before).
fn check_on_branch(
    main: &MainRepo,
    branch: &str,
    tip: Oid,
    recorded: Option<Oid>,
    completed: &[(String, Oid)],
) -> Result<(), Rejected> {
    let mut wanted: Vec<Oid> = completed.iter().map(|(_, oid)| *oid).collect();
    wanted.extend(recorded);
    let found = crate::git::history::reachable_among(&main.repo, tip, &wanted);
    if let Some(recorded) = recorded
        && !found.contains(&recorded)
    {
        return Err(rejected(
            SetAside::HistoryRewritten,
            format!(
                "its tip {} is no longer on {branch} (the branch's history was rewritten)",
                crate::git::short_id(&recorded.to_string())
            ),
        ));
    }
    match completed.iter().find(|(_, oid)| !found.contains(oid)) {
        Some((chunk, oid)) => Err(rejected(
            SetAside::NotTheRepository,
            format!(
                "chunk {chunk}'s commit {} is not on {branch}",
                crate::git::short_id(&oid.to_string())
            ),
        )),
        None => Ok(()),
    }
}

/// Where the checkpoint's worktree is now.
enum Place {
    At(std::path::PathBuf),
    Gone,
    /// Its slot holds another spec's branch: runner switched the slot to that spec (the work
    /// is safe on the branch, which the next run checks out again). What to say about it.
    Switched(String),
}

/// The worktree folder of the checkpoint's slot; `Err` when the slot now holds a branch that
/// is no spec's (not runner's doing).
fn worktree_of(main: &MainRepo, root: &std::path::Path, cp: &Checkpoint) -> Result<Place, String> {
    let slot = match cp.slot.as_deref().and_then(|name| Slot::named(root, name)) {
        Some(slot) => slot,
        None => match crate::git::slot_holding(main, &cp.branch) {
            Some(slot) => slot,
            None => return Ok(Place::Gone),
        },
    };
    match slot.inspect(main) {
        SlotState::Ready {
            branch: Some(branch),
        } if branch != cp.branch => {
            if crate::git::spec_of_branch(&branch).is_some() {
                Ok(Place::Switched(format!(
                    "The slot {} was switched to {branch} since; files of completed chunks were not checked (the run checks {} out again)",
                    slot.path.display(),
                    cp.branch
                )))
            } else {
                Err(format!(
                    "its worktree {} holds {branch} now, not {}",
                    slot.path.display(),
                    cp.branch
                ))
            }
        }
        SlotState::Ready { .. } => Ok(Place::At(slot.path)),
        _ => Ok(Place::Gone),
    }
}

/// The files of completed chunks missing from the worktree `dir` (see the module's doc).
fn missing_files(
    main: &MainRepo,
    dir: &std::path::Path,
    tip: Oid,
    completed: &[(String, Oid)],
) -> Vec<String> {
    let touched: BTreeSet<String> = completed
        .iter()
        .flat_map(|(_, oid)| crate::git::history::added_or_changed_files(&main.repo, *oid))
        .collect();
    let touched: Vec<String> = touched.into_iter().collect();
    crate::git::history::paths_present(&main.repo, tip, &touched)
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(dir.join(p)).is_err())
        .collect()
}
