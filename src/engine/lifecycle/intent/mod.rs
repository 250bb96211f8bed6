//! Merge, discard and undo as all-or-nothing operations, even when SIGKILLed.
//!
//! Each writes an intent record, `.auto-claude/specs/<spec>/lifecycle.json` (atomically), before
//! its first change, and removes it last. The record says which operation, which backup it
//! makes, and what it needs to finish. Whoever next holds the spec's run lock (`runner recover`,
//! or the next merge/discard/undo of that spec) finds the record and, by the rule in
//! [`direction`], finishes the operation forward (past its point of no return) or rolls it back;
//! both are idempotent, so a crash during recovery is recovered the same way.

mod finish;

pub use finish::*;

use std::path::PathBuf;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::store::Journal;
use crate::store::{SpecPaths, Workspace};

pub const INTENT_FILE: &str = "lifecycle.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    Merge,
    Discard,
    Undo,
}

/// What an interrupted operation needs to be finished or rolled back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intent {
    pub op: Op,
    pub spec: String,
    /// The refs prefix of the backup the operation writes (merge, discard) or undoes (undo).
    pub backup: String,
    pub branch: String,
    pub branch_tip: Option<String>,
    /// The slot (worktree name) the operation removes (merge, discard) or restores (undo).
    #[serde(default)]
    pub slot: Option<String>,
    /// Merge: `merge`, `squash` or `no-commit`.
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub target_before: Option<String>,
    #[serde(default)]
    pub target_after: Option<String>,
    /// Merge: the merged tree, written into the main worktree when the target is checked out.
    #[serde(default)]
    pub merged_tree: Option<String>,
    #[serde(default)]
    pub main_files: bool,
    #[serde(default)]
    pub keep_worktree: bool,
    /// Undo: the slot was missing and undo is creating it (anything found there is its own).
    #[serde(default)]
    pub creating_slot: bool,
    /// Undo of a merge: it started putting the target's old files back in the main worktree
    /// (whatever differs there from the merge result on the merge's paths is its own half-done
    /// work, or is saved before being overwritten).
    #[serde(default)]
    pub resetting_target: bool,
}

impl Intent {
    /// An intent with only what every operation records; the others fill in the rest.
    pub fn new(op: Op, spec: &str, backup: String, branch: String) -> Intent {
        Intent {
            op,
            spec: spec.to_string(),
            backup,
            branch,
            branch_tip: None,
            slot: None,
            mode: None,
            target: None,
            target_before: None,
            target_after: None,
            merged_tree: None,
            main_files: false,
            keep_worktree: false,
            creating_slot: false,
            resetting_target: false,
        }
    }
}

/// Remove the slot the intent names if it is the operation's own: it holds the intent's
/// branch, or it is what a cut-off removal left (registered but its folder gone or no longer
/// a worktree of that branch, or only git's admin folder left). Another spec's slot, or a folder
/// git does not know, is never touched.
///
/// Changes made in the slot after the operation's backup (someone kept working there while the
/// operation was cut off) are saved first, to a recovery ref of the spec, whose name is
/// returned: removing a worktree never loses a file.
pub fn remove_own_slot(ws: &Workspace, intent: &Intent) -> anyhow::Result<Option<String>> {
    use crate::git::{Slot, SlotState, slot};
    let Some(name) = &intent.slot else {
        return Ok(None);
    };
    let s = Slot::named(&ws.root, name)
        .with_context(|| format!("{name:?} in the intent record is no worktree slot"))?;
    let admin = slot::admin_dir(&ws.main, &s);
    // git's half-pruned record of the slot still says whose it was.
    let admin_head = std::fs::read_to_string(admin.join("HEAD"));
    let admin_says_ours = admin_head
        .as_ref()
        .is_ok_and(|h| h.trim() == format!("ref: refs/heads/{}", intent.branch));
    let admin_remnant =
        admin.symlink_metadata().is_ok() && (admin_says_ours || admin_head.is_err());
    let ours = match s.inspect(&ws.main) {
        SlotState::Ready { branch } => branch.as_deref() == Some(intent.branch.as_str()),
        SlotState::Broken { .. } => !s.path.exists() || admin_says_ours,
        SlotState::Missing => admin.symlink_metadata().is_ok(),
        // A folder git no longer knows is only removed beside its half-pruned record.
        SlotState::Unregistered => admin_remnant,
    };
    let mut saved = None;
    if ours {
        if s.path.exists()
            && let Ok(wt) = s.open(&ws.main)
        {
            saved = save_late_changes(ws, &wt, intent)?;
        }
        slot::remove_worktree(&ws.main, &s)?;
    }
    Ok(saved)
}

/// Save the uncommitted state of the operation's worktree `wt` (untracked files included) to
/// a new recovery ref of the spec, unless there is none or the backup already holds exactly
/// it. Returns the ref written.
fn save_late_changes(
    ws: &Workspace,
    wt: &crate::git::Repository,
    intent: &Intent,
) -> anyhow::Result<Option<String>> {
    use crate::git::refs::{next_recovery_ref, ref_component, snapshot_worktree};
    if crate::git::dirty_paths(wt)?.is_empty() {
        return Ok(None);
    }
    let repo = &ws.main.repo;
    let tmp = format!("refs/auto-claude/tmp/{}-late", ref_component(&intent.spec));
    let message = format!(
        "auto-claude: uncommitted changes of {} found when finishing its {}",
        intent.spec,
        op_name(intent.op)
    );
    let Some(commit) = snapshot_worktree(wt, &tmp, &message)? else {
        return Ok(None);
    };
    let tree_of = |oid| crate::git::history::tree_of(repo, oid);
    let backed_up =
        crate::git::refs::target(repo, &format!("{}/uncommitted", intent.backup)).and_then(tree_of);
    let name = if backed_up.is_some() && backed_up == tree_of(commit) {
        None
    } else {
        let name = next_recovery_ref(repo, &intent.spec, &format!("at-{}", op_name(intent.op)))?;
        crate::git::refs::create(repo, &name, commit, &message)?;
        Some(name)
    };
    crate::failpoint::hit("lifecycle_late_changes_saved");
    crate::git::refs::delete_if_present(repo, &tmp)?;
    Ok(name)
}

pub(crate) fn op_name(op: Op) -> &'static str {
    match op {
        Op::Merge => "merge",
        Op::Discard => "discard",
        Op::Undo => "undo",
    }
}

/// Where the target branch of an interrupted merge is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetNow {
    Before,
    After,
    /// Moved on from the merge result (commits made on top of it): the merge landed.
    PastAfter,
    Elsewhere,
}

/// What is observed of an interrupted operation (gathered by `observe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// The backup's `meta` ref exists (it is written last, so the backup is whole).
    pub backup_whole: bool,
    /// Merge: where the target is.
    pub target: TargetNow,
    /// `--no-commit` merge: the main worktree's index is exactly the merged tree.
    pub index_is_merged: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Direction {
    /// Past the point of no return: do the remaining steps.
    Forward,
    /// Before it: undo what was done; the state is as if the operation never started.
    Back,
    /// Someone changed things since (the merge target moved elsewhere): leave it to a person.
    Human(String),
}

/// The rule, per operation:
/// - discard: forward once its backup is whole (everything removed later is in it), back before
///   (nothing was removed yet; a partial backup is deleted).
/// - merge (default, `--squash`): forward once the target ref points at the merge result, back
///   while it is still at its old tip (files written into the main worktree are put back, the
///   backup deleted); anywhere else, a person decides.
/// - merge `--no-commit`: forward once the main worktree's index is the merged tree, else back.
/// - undo: always forward; its steps only restore from a backup that stays until the last one.
pub fn direction(intent: &Intent, facts: Facts) -> Direction {
    match intent.op {
        Op::Undo => Direction::Forward,
        Op::Discard if facts.backup_whole => Direction::Forward,
        Op::Discard => Direction::Back,
        Op::Merge if intent.mode.as_deref() == Some("no-commit") => {
            if facts.backup_whole && facts.index_is_merged && facts.target == TargetNow::Before {
                Direction::Forward
            } else if facts.target == TargetNow::Before {
                Direction::Back
            } else {
                Direction::Human(target_moved(intent))
            }
        }
        Op::Merge => match facts.target {
            TargetNow::After | TargetNow::PastAfter if facts.backup_whole => Direction::Forward,
            TargetNow::Before => Direction::Back,
            _ => Direction::Human(target_moved(intent)),
        },
    }
}

fn target_moved(intent: &Intent) -> String {
    format!(
        "the merge of {spec} was interrupted and {target} moved since to something that is neither its old tip nor built on the merge (the merge went from {} to {}); runner will not touch it. Nothing is lost: the branch tip {} and the backup {} are kept. Merge again by hand if you still want it (`git merge {}`), then delete .auto-claude/specs/{spec}/{INTENT_FILE} to tell runner it is settled",
        intent.target_before.as_deref().unwrap_or("?"),
        intent.target_after.as_deref().unwrap_or("(no commit)"),
        intent.branch_tip.as_deref().unwrap_or("?"),
        intent.backup,
        intent.branch_tip.as_deref().unwrap_or(&intent.branch),
        spec = intent.spec,
        target = intent.target.as_deref().unwrap_or("the target"),
    )
}

pub fn intent_path(paths: &SpecPaths) -> PathBuf {
    paths.dir.join(INTENT_FILE)
}

/// Record the operation durably before its first change.
pub fn record(paths: &SpecPaths, intent: &Intent) -> anyhow::Result<()> {
    let path = intent_path(paths);
    crate::store::write_atomic(&path, &serde_json::to_vec_pretty(intent)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Forget the record: the operation is complete (or rolled back). Removed durably.
pub fn clear(paths: &SpecPaths) -> anyhow::Result<()> {
    let path = intent_path(paths);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
    }
    if let Ok(dir) = std::fs::File::open(&paths.dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// The record of an interrupted operation, if any. A record that does not read is reported,
/// never guessed at.
pub fn load(paths: &SpecPaths) -> anyhow::Result<Option<Intent>> {
    let path = intent_path(paths);
    // Never through a FIFO, a device or a link an agent planted (see `store::safe`).
    let bytes = match crate::store::safe::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let unusable = |why: String| -> anyhow::Error {
        crate::error::RunnerError::NeedsHuman(format!(
            "{} (the record of an interrupted merge, discard or undo) {why}",
            path.display()
        ))
        .with_hint("check `runner undo --list` and git's state, then delete the file")
        .into()
    };
    let intent: Intent =
        serde_json::from_slice(&bytes).map_err(|e| unusable(format!("does not read: {e}")))?;
    if let Some(why) = foreign_names(&intent, &paths.name) {
        return Err(unusable(why));
    }
    Ok(Some(intent))
}

/// Why an intent names things that are not its spec's own (it is a file anyone can write, and
/// finishing it deletes refs and branches), if it does.
pub fn foreign_names(intent: &Intent, spec: &str) -> Option<String> {
    use crate::git::backup::BACKUP_PREFIX;
    use crate::git::refs::{legacy_ref_component, ref_component};
    if intent.spec != spec {
        return Some(format!("is for spec {:?}", intent.spec));
    }
    if intent.branch != crate::git::branch_for(spec) {
        return Some(format!("names the branch {:?}", intent.branch));
    }
    // Exactly the prefix runner computes from the spec and a stamp it makes. A merge or
    // discard writes new-style names only; an undo may undo a backup written under the old
    // (shared) component, and checks that backup's own record names this spec.
    let mut components = vec![ref_component(spec)];
    if intent.op == Op::Undo {
        components.push(legacy_ref_component(spec));
    }
    let own_backup = components.iter().any(|c| {
        intent
            .backup
            .strip_prefix(&format!("{BACKUP_PREFIX}/{c}/"))
            .is_some_and(crate::git::backup::is_stamp)
    });
    if !own_backup {
        return Some(format!("names {:?}, no backup of this spec", intent.backup));
    }
    None
}

/// What an interrupted operation was left in, seen in git.
pub fn observe(ws: &Workspace, intent: &Intent) -> Facts {
    let repo = &ws.main.repo;
    let backup_whole = crate::git::refs::exists(repo, &format!("{}/meta", intent.backup));
    let oid = |s: &Option<String>| s.as_deref().and_then(crate::git::commit_id);
    let now = intent.target.as_deref().and_then(|t| ws.main.branch_tip(t));
    let after = oid(&intent.target_after);
    let target = match now {
        Some(now) if Some(now) == after => TargetNow::After,
        Some(now) if Some(now) == oid(&intent.target_before) => TargetNow::Before,
        Some(now)
            if after.is_some_and(|a| crate::git::history::strictly_descends(repo, now, a)) =>
        {
            TargetNow::PastAfter
        }
        _ => TargetNow::Elsewhere,
    };
    let index_is_merged = crate::git::tree::index_tree(repo)
        .ok()
        .is_some_and(|t| Some(t) == oid(&intent.merged_tree));
    Facts {
        backup_whole,
        target,
        index_is_merged,
    }
}

/// What `finish_interrupted` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub op: Op,
    pub intent: Intent,
    pub rolled_back: bool,
    /// One line for the report.
    pub message: String,
}

impl std::fmt::Display for Finished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests;
