//! `runner merge`: land a spec's branch on its pinned base branch, computed in memory first,
//! with both tips backed up before anything moves, and nothing deleted until the result is
//! verified to contain the branch's work.

use crate::engine::track::RunTrack;
use crate::store::runs::RunKind;
use anyhow::Context;
use serde::Serialize;
use serde_json::json;

use super::base_branch;
use super::discard::refuse_if_index_locked;
use super::intent::{self, Intent, Op};
use crate::error::RunnerError;
use crate::git::backup::{self, BackupMeta};
use crate::git::merge::{CheckedOut, preview, where_checked_out};
use crate::git::{Oid, Repository, branch_for, commit_id, dirty_paths, history, slot_holding};
use crate::plan::{Plan, Status};
use crate::store::Journal;
use crate::store::workspace::{SpecPaths, Workspace};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MergeMode {
    #[default]
    Merge,
    Squash,
    NoCommit,
}

impl MergeMode {
    /// The mode `as_str` names (a plain merge for anything else).
    pub fn from_name(name: Option<&str>) -> MergeMode {
        match name {
            Some("squash") => MergeMode::Squash,
            Some("no-commit") => MergeMode::NoCommit,
            _ => MergeMode::Merge,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MergeMode::Merge => "merge",
            MergeMode::Squash => "squash",
            MergeMode::NoCommit => "no-commit",
        }
    }
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct MergeReport {
    pub spec: String,
    pub target: String,
    pub mode: MergeMode,
    /// The new commit on the target (none for --no-commit or when already merged).
    pub commit: Option<String>,
    /// The commits that landed (`commits` in JSON; the field name is older than the shape).
    #[serde(rename = "commits")]
    pub landed: Vec<super::CommitLine>,
    pub files: usize,
    pub backup: Option<String>,
    /// The worktree slot was freed (if there was one) and the branch deleted.
    pub cleaned_up: bool,
    /// The worktree that was freed, if the spec had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freed_worktree: Option<String>,
    pub already_merged: bool,
}

/// Merge the spec. The caller holds the spec's run lock. A merge that landed something leaves
/// a run record (`Merge`).
pub fn merge(
    ws: &Workspace,
    paths: &SpecPaths,
    mode: MergeMode,
    keep_worktree: bool,
    journal: &Journal,
) -> anyhow::Result<MergeReport> {
    let op = || merge_unrecorded(ws, paths, mode, keep_worktree, journal);
    let (dir, id) = (&paths.dir, journal.run_id());
    RunTrack::around(dir, id, &paths.name, RunKind::Merge, op, |o| {
        (!o.already_merged).then_some("merged")
    })
}

fn merge_unrecorded(
    ws: &Workspace,
    paths: &SpecPaths,
    mode: MergeMode,
    keep_worktree: bool,
    journal: &Journal,
) -> anyhow::Result<MergeReport> {
    // One merge or undo at a time changes the main worktree (held until this one returns).
    let _main_lock = intent::lock_main_worktree(ws, &paths.name)?;
    // A merge of this spec cut off past its point of no return is finished: that is this one.
    if let Some(done) = intent::finish_interrupted_holding_main(ws, paths, journal)?
        && done.op == Op::Merge
        && !done.rolled_back
    {
        return outcome_of_finished(ws, paths, &done.intent);
    }
    let repo = &ws.main.repo;
    let plan = paths.plan.load()?;
    let target = base_branch(ws, plan.as_ref())?;
    let branch = branch_for(&paths.name);
    let branch_tip = ws.main.branch_tip(&branch).ok_or_else(|| {
        RunnerError::bad_input(format!(
            "spec {} has no branch {branch}: nothing to merge",
            paths.name
        ))
    })?;
    let target_tip = ws.main.branch_tip(&target).ok_or_else(|| {
        RunnerError::bad_input(format!("the base branch {target:?} does not exist"))
    })?;

    // Refusals first: nothing is touched, no backup is written.
    let slot = slot_holding(&ws.main, &branch);
    refuse_lost_work(ws, paths, journal, plan.as_ref(), slot.as_ref())?;
    let checked_out = refuse_unsafe_places(ws, paths, &target, mode, keep_worktree, slot.as_ref())?;
    if history::contains(repo, target_tip, branch_tip)? {
        return Ok(MergeReport {
            spec: paths.name.clone(),
            target,
            mode,
            commit: None,
            landed: Vec::new(),
            files: 0,
            backup: None,
            cleaned_up: false,
            freed_worktree: None,
            already_merged: true,
        });
    }
    let result = preview(repo, target_tip, branch_tip)?;
    let Some(tree_id) = result.tree else {
        return Err(RunnerError::NeedsHuman(format!(
            "{branch} does not merge cleanly into {target}: conflicts in\n{}\nNothing was changed",
            result.conflicts.iter().map(|c| format!("  {c}")).collect::<Vec<_>>().join("\n"),
        ))
        .with_hint(format!(
            "bring {target} into the spec's branch and resolve the conflicts there (for example `git -C {} merge {target}`), then merge again",
            crate::sh(slot.as_ref().map(|s| s.path.display().to_string()).unwrap_or_else(|| ".".into())),
        ))
        .into());
    };
    let (landed, files) = what_lands(repo, plan.as_ref(), target_tip, branch_tip)?;
    let new_commit = match mode {
        MergeMode::Merge => Some(history::write_commit(
            repo,
            tree_id,
            &[target_tip, branch_tip],
            &merge_message(&paths.name, plan.as_ref(), false),
        )?),
        MergeMode::Squash => Some(history::write_commit(
            repo,
            tree_id,
            &[target_tip],
            &merge_message(&paths.name, plan.as_ref(), true),
        )?),
        MergeMode::NoCommit => None,
    };
    let stamp = backup::new_stamp(repo, &paths.name);
    let intent = Intent {
        branch_tip: Some(branch_tip.to_string()),
        slot: slot.as_ref().map(|s| s.name.clone()),
        mode: Some(mode.as_str().into()),
        target: Some(target.clone()),
        target_before: Some(target_tip.to_string()),
        target_after: new_commit.map(|c| c.to_string()),
        merged_tree: Some(tree_id.to_string()),
        main_files: checked_out == CheckedOut::Main,
        keep_worktree,
        ..Intent::new(
            Op::Merge,
            &paths.name,
            backup::prefix(&paths.name, &stamp),
            branch.clone(),
        )
    };
    let refs_prefix = record_and_back_up(ws, paths, &intent, stamp)?;
    crate::failpoint::hit("merge_after_backup");
    land_or_put_back(ws, paths, &intent, tree_id, new_commit, target_tip)?;
    crate::failpoint::hit("merge_after_ref");

    finish(ws, paths, &intent, journal)?;
    intent::clear(paths)?;
    let cleaned_up = mode != MergeMode::NoCommit && !keep_worktree;
    Ok(MergeReport {
        freed_worktree: slot
            .filter(|_| cleaned_up)
            .map(|s| s.path.display().to_string()),
        spec: paths.name.clone(),
        target,
        mode,
        commit: new_commit.map(|c| c.to_string()),
        landed,
        files,
        backup: Some(refs_prefix),
        cleaned_up,
        already_merged: false,
    })
}

/// What a merge that an earlier run of this command took past its point of no return (and
/// this one finished) landed, told as this merge's outcome.
fn outcome_of_finished(
    ws: &Workspace,
    paths: &SpecPaths,
    intent: &Intent,
) -> anyhow::Result<MergeReport> {
    let cleaned_up = intent.mode.as_deref() != Some("no-commit") && !intent.keep_worktree;
    let oid = |s: &Option<String>| s.as_deref().and_then(commit_id);
    let (landed, files) = match (oid(&intent.target_before), oid(&intent.branch_tip)) {
        (Some(before), Some(tip)) => {
            let plan = paths.plan.load().ok().flatten();
            what_lands(&ws.main.repo, plan.as_ref(), before, tip)?
        }
        _ => (Vec::new(), 0),
    };
    Ok(MergeReport {
        spec: paths.name.clone(),
        target: intent.target.clone().unwrap_or_default(),
        mode: MergeMode::from_name(intent.mode.as_deref()),
        commit: intent.target_after.clone(),
        landed,
        files,
        backup: Some(intent.backup.clone()),
        cleaned_up,
        freed_worktree: intent
            .slot
            .as_deref()
            .filter(|_| cleaned_up)
            .and_then(|n| crate::git::Slot::named(&ws.root, n))
            .map(|s| s.path.display().to_string()),
        already_merged: false,
    })
}

/// A branch that lost completed work is not merged (nor called "already merged"): the last
/// tip runner knew is kept under a recovery ref and the way back is printed.
fn refuse_lost_work(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
    plan: Option<&Plan>,
    slot: Option<&crate::git::Slot>,
) -> anyhow::Result<()> {
    let Some(plan) = plan else { return Ok(()) };
    if crate::engine::integrity::missing_work(&ws.main, &paths.name, plan).is_none() {
        return Ok(());
    }
    let wt = slot.and_then(|s| s.open(&ws.main).ok());
    if let Some(guarded) = crate::engine::integrity::guard_history(
        &ws.main,
        paths,
        journal,
        plan,
        None,
        wt.as_ref(),
        slot.map(|s| s.path.as_path()),
        false,
        None,
    )? {
        return Err(RunnerError::NeedsHuman(format!(
            "{}
Nothing was merged.",
            guarded.message
        ))
        .into());
    }
    Ok(())
}

/// Refuse a merge that would lose or clobber something where it writes: uncommitted changes in
/// the spec's worktree or in the checked-out target, a target checked out in another
/// worktree, a held index lock. Returns where the target is checked out.
fn refuse_unsafe_places(
    ws: &Workspace,
    paths: &SpecPaths,
    target: &str,
    mode: MergeMode,
    keep_worktree: bool,
    slot: Option<&crate::git::Slot>,
) -> anyhow::Result<CheckedOut> {
    if let Some(slot) = slot {
        let dirty = dirty_paths(&slot.open(&ws.main)?)?;
        if !dirty.is_empty() {
            return Err(RunnerError::NeedsHuman(format!(
                "the spec's worktree {} has uncommitted changes ({}); they would not be part of the merge",
                slot.path.display(),
                crate::text::capped_list(&dirty),
            ))
            .with_hint(format!(
                "finish the chunk (`{}`) or commit them there, then merge",
                crate::policy::next_command::continue_command(&paths.name, None)
            ))
            .into());
        }
    }
    let checked_out = where_checked_out(&ws.main, target);
    match &checked_out {
        CheckedOut::Linked(path) => {
            return Err(RunnerError::NeedsHuman(format!(
                "{target} is checked out in the worktree {}; runner will not change files there",
                path.display()
            ))
            .with_hint("check out another branch in it, or merge from there by hand")
            .into());
        }
        CheckedOut::Main => {
            let dirty = dirty_paths(&ws.main.repo)?;
            if !dirty.is_empty() {
                return Err(RunnerError::NeedsHuman(format!(
                    "{target} is checked out in {} with uncommitted changes ({}). Nothing was changed",
                    ws.root.display(),
                    crate::text::capped_list(&dirty)
                ))
                .with_hint("commit or stash them, then merge")
                .into());
            }
        }
        CheckedOut::Nowhere if mode == MergeMode::NoCommit => {
            return Err(RunnerError::bad_input(format!(
                "--no-commit stages the merge in your working tree, so {target} must be checked out there (git switch {target})"
            ))
            .into());
        }
        CheckedOut::Nowhere => {}
    }
    // A held index lock would make the update fail half-way: refuse before touching anything.
    if checked_out == CheckedOut::Main {
        refuse_if_index_locked(ws.main.git_dir())?;
    }
    if let Some(slot) = slot
        && mode != MergeMode::NoCommit
        && !keep_worktree
    {
        refuse_if_index_locked(&crate::git::slot::admin_dir(&ws.main, slot))?;
    }
    Ok(checked_out)
}

/// Record the intent, then back up both tips (and the plan) before anything moves. Returns the
/// backup's refs prefix; a failed backup leaves nothing behind.
fn record_and_back_up(
    ws: &Workspace,
    paths: &SpecPaths,
    intent: &Intent,
    stamp: String,
) -> anyhow::Result<String> {
    let repo = &ws.main.repo;
    let tip = |s: &Option<String>| {
        s.as_deref()
            .and_then(commit_id)
            .context("merge intent without tips")
    };
    let (branch_tip, target_tip) = (tip(&intent.branch_tip)?, tip(&intent.target_before)?);
    let meta = BackupMeta {
        kind: "merge".into(),
        spec: paths.name.clone(),
        time: crate::clock::now(),
        stamp,
        branch: intent.branch.clone(),
        branch_tip: intent.branch_tip.clone(),
        target: intent.target.clone(),
        target_tip_before: intent.target_before.clone(),
        target_tip_after: intent.target_after.clone(),
        mode: intent.mode.clone(),
        uncommitted: None,
    };
    let plan_bytes = crate::store::safe::read(paths.plan.path()).ok();
    intent::record(paths, intent)?;
    crate::failpoint::hit("merge_intent_recorded");
    match backup::write(
        repo,
        &meta,
        &[("branch", branch_tip), ("target", target_tip)],
        plan_bytes.as_deref(),
    ) {
        Ok(prefix) => Ok(prefix),
        Err(e) => {
            // Nothing changed yet but a partial backup: forget it (recover would too).
            let _ = roll_back_refused(ws, paths, intent);
            Err(e.context("writing the backup; nothing was changed"))
        }
    }
}

/// Land it: files first (when the target is checked out), then the ref. A failure before the
/// ref moved puts back whatever was written: nothing of a refused merge remains.
fn land_or_put_back(
    ws: &Workspace,
    paths: &SpecPaths,
    intent: &Intent,
    tree: Oid,
    new_commit: Option<Oid>,
    target_tip: Oid,
) -> anyhow::Result<()> {
    let Err(e) = land(ws, intent, tree, new_commit, target_tip) else {
        return Ok(());
    };
    let target = intent.target.as_deref().unwrap_or_default();
    Err(match roll_back_refused(ws, paths, intent) {
        Ok(saved) => e.context(format!(
            "merging into {target} failed; the files, the index and {target} were put back as they were{}",
            super::saved_note(saved.as_deref())
        )),
        Err(undo_err) => e.context(format!(
            "merging into {target} failed, and putting it back failed too ({undo_err:#}); `runner recover --spec {}` retries",
            crate::sh(&paths.name)
        )),
    })
}

/// The commits (one line each) and the number of files merging `branch_tip` into
/// `target_tip` lands.
fn what_lands(
    repo: &Repository,
    plan: Option<&Plan>,
    target_tip: Oid,
    branch_tip: Oid,
) -> anyhow::Result<(Vec<super::CommitLine>, usize)> {
    let fork = history::merge_base(repo, target_tip, branch_tip).unwrap_or(target_tip);
    let landed = super::commit_lines(repo, plan, fork, branch_tip)?;
    let files = crate::git::merge::file_changes(repo, fork, branch_tip)?.len();
    Ok((landed, files))
}

/// Write the merged tree into the checked-out target (if it is) and move the target's ref.
fn land(
    ws: &Workspace,
    intent: &Intent,
    tree: Oid,
    new_commit: Option<Oid>,
    target_tip: Oid,
) -> anyhow::Result<()> {
    let repo = &ws.main.repo;
    let target = intent.target.as_deref().unwrap_or_default();
    if intent.main_files {
        crate::git::tree::checkout_tree_safely(repo, tree)
            .with_context(|| format!("updating the files of {target} in {}", ws.root.display()))?;
    }
    crate::failpoint::hit("merge_files_written");
    if let Some(commit) = new_commit {
        crate::git::refs::move_if_at(
            repo,
            &format!("refs/heads/{target}"),
            commit,
            target_tip,
            &format!("runner: merge {}", intent.spec),
        )
        .with_context(|| format!("moving {target} (did it move meanwhile?)"))?;
    }
    Ok(())
}

/// After a failure before the point of no return: files back, backup and intent gone.
fn roll_back_refused(
    ws: &Workspace,
    paths: &SpecPaths,
    intent: &Intent,
) -> anyhow::Result<Option<String>> {
    let saved = roll_back(ws, intent)?;
    backup::delete(&ws.main.repo, &intent.backup)?;
    intent::clear(paths)?;
    Ok(saved)
}

/// Put the main worktree's files and index back to the target's old tree, for the paths the
/// merge changes only. A file there that is neither its old nor its merged version (cut off
/// half-written, or written by someone since) is saved to a recovery ref first, whose name is
/// returned.
pub fn roll_back(ws: &Workspace, intent: &Intent) -> anyhow::Result<Option<String>> {
    if !intent.main_files {
        return Ok(None);
    }
    let oid = |s: &Option<String>| -> anyhow::Result<Oid> {
        s.as_deref()
            .and_then(commit_id)
            .context("intent without a tree")
    };
    crate::git::merge::restore_paths(
        &ws.main.repo,
        &ws.root,
        oid(&intent.target_before)?,
        oid(&intent.merged_tree)?,
        &intent.spec,
        "merge-rollback",
    )
}

/// The steps after the point of no return, each skipped if already done, so that recovery can
/// run them again after a crash: verify, then (unless `--no-commit` or `--keep-worktree`) free
/// the slot, delete the branch, mark the plan merged; tell the journal.
pub fn finish(
    ws: &Workspace,
    paths: &SpecPaths,
    intent: &Intent,
    journal: &Journal,
) -> anyhow::Result<Option<String>> {
    let repo = &ws.main.repo;
    let mode = MergeMode::from_name(intent.mode.as_deref());
    let oid = |s: &Option<String>| s.as_deref().and_then(commit_id);
    let target = intent
        .target
        .clone()
        .context("merge intent without a target")?;
    let branch_tip = oid(&intent.branch_tip).context("merge intent without a branch tip")?;
    let tree_id = oid(&intent.merged_tree).context("merge intent without a tree")?;
    let new_commit = oid(&intent.target_after);
    // Verify before deleting anything.
    verify(repo, mode, &target, new_commit, branch_tip, tree_id)?;
    let cleaned_up = mode != MergeMode::NoCommit && !intent.keep_worktree;
    let mut saved = None;
    if cleaned_up {
        saved = intent::remove_own_slot(ws, intent)?;
        crate::failpoint::hit("merge_worktree_removed");
        if ws.main.branch_tip(&intent.branch) == Some(branch_tip) {
            crate::git::refs::delete_branch(repo, &intent.branch)?;
        }
        crate::failpoint::hit("merge_branch_deleted");
        // A spec merged without a plan (its branch is all there is) has none to mark.
        if paths.plan.exists() {
            paths.plan.update(|plan| {
            plan.set_field(
                "merged",
                json!({"into": target, "commit": new_commit.map(|c| c.to_string()), "mode": mode.as_str(), "at": crate::clock::now(), "backup": intent.backup}),
            );
            Ok(())
        })?;
        }
    }
    journal.write(&crate::store::Event::Merged(crate::store::event::Merged {
        into: target.to_string(),
        mode: mode.as_str().to_string(),
        commit: new_commit.map(|c| c.to_string()),
        backup: intent.backup.clone(),
        cleaned_up,
        late_changes: saved.clone(),
    }))?;
    Ok(saved)
}

fn verify(
    repo: &Repository,
    mode: MergeMode,
    target: &str,
    commit: Option<Oid>,
    branch_tip: Oid,
    tree: Oid,
) -> anyhow::Result<()> {
    let ok = match (mode, commit) {
        // The target at the merge commit, or moved on from it (commits made on top since).
        (MergeMode::Merge, Some(c)) => {
            let tip = history::branch_commit(repo, target)?;
            history::contains(repo, tip, c)?
                && c != branch_tip
                && history::contains(repo, c, branch_tip)?
        }
        (MergeMode::Squash, Some(c)) => {
            let tip = history::branch_commit(repo, target)?;
            history::contains(repo, tip, c)? && history::tree_of(repo, c) == Some(tree)
        }
        _ => crate::git::tree::index_tree(repo)? == tree,
    };
    if ok {
        Ok(())
    } else {
        Err(anyhow::anyhow!(
            "the merge result on {target} does not contain the branch's work as expected; nothing was deleted"
        ))
    }
}

fn merge_message(spec: &str, plan: Option<&Plan>, squash: bool) -> String {
    let mut msg = if squash {
        format!("auto-claude: {spec} (squashed)\n\n")
    } else {
        format!("auto-claude: merge {spec}\n\n")
    };
    if let Some(plan) = plan {
        msg.push_str("Chunks:\n");
        for c in plan.chunks() {
            let mark = if c.status == Status::Completed {
                ""
            } else {
                " (not completed)"
            };
            msg.push_str(&format!("- {}: {}{mark}\n", c.id, c.description()));
        }
    }
    msg
}
