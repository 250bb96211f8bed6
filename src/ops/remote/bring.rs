//! Bringing a spec built elsewhere here (`review`, `merge`, `undo` with `--remote`): one fetch,
//! its published folder checked whole and written into the local spec folder, its branch set
//! to the remote's tip. What was here and differs (the folder, the branch) is first kept on
//! local refs under `refs/auto-claude/backup/<spec>/<stamp>/` (no `meta`: not an undoable
//! backup, nothing `undo` acts on), named in the report.

use schemars::JsonSchema;
use serde::Serialize;

use crate::error::RunnerError;
use crate::fleet::names::spec_ref;
use crate::git::{Oid, branch_for};
use crate::store::{LockState, lock};

/// What bringing a spec here did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Brought {
    pub remote: String,
    /// The published folder's commit now in the spec folder.
    pub folder: String,
    /// The remote branch's tip the local branch is now at (null: the remote has none).
    pub branch: Option<String>,
    /// Local refs keeping what was here before: `…/local-folder` (the folder as a commit) and
    /// `…/local-branch` (the branch's old tip); empty when nothing here differed.
    pub backups: Vec<String>,
    /// Chunks the published plan said were reported done whose work the branch here does not
    /// hold (left uncommitted where they ran): the reports are withdrawn, as a worker taking
    /// the spec does, so a run here builds them again rather than completing them with no
    /// commit.
    pub reports_withdrawn: Vec<String>,
    /// The view's lease check: whether an unexpired lease held the spec.
    #[serde(skip)]
    pub held: bool,
}

/// Fetch `name` from `remote` and make the local folder and branch the remote's. With
/// `for_change` (merge, undo), a spec an unexpired lease holds is refused (exit 4).
pub fn bring(
    ctx: &super::super::Ctx,
    remote: &str,
    name: &str,
    for_change: bool,
) -> anyhow::Result<Brought> {
    let view = super::fetch(ctx, remote)?;
    let not_published = || {
        RunnerError::bad_input(format!("spec {name:?} is not published on {remote}")).with_hint(
            format!(
                "`runner status --remote {}` lists the specs published there",
                crate::sh(remote)
            ),
        )
    };
    let published = view.specs.get(name).ok_or_else(not_published)?;
    let folder = published.folder.ok_or_else(not_published)?;
    let now = ctx.now();
    let held = super::holder(published, now);
    if let (true, Some(lease)) = (for_change, held) {
        return Err(super::held_error(name, lease, now).into());
    }
    let repo = &ctx.ws.main.repo;
    let from = || format!("{remote}'s {}", spec_ref(name));
    crate::fleet::snapshot::validate(repo, folder).map_err(|e| e.context(from()))?;
    let paths = ctx.ws.spec(name)?;
    if let LockState::Held(holder) = lock::probe(&paths.run_lock)? {
        let pid = holder.map(|h| h.pid.to_string()).unwrap_or("?".into());
        return Err(RunnerError::Busy(format!(
            "spec {name} is being run here (pid {pid}); its folder is not replaced under it"
        ))
        .into());
    }
    let branch = branch_for(name);
    let local_tip = ctx.ws.main.branch_tip(&branch);
    let branch_moves = published.branch.is_some() && published.branch != local_tip;
    // The user's own checkout on the branch: moving it would leave their index and files on
    // the old tip, and a `git commit -a` would quietly undo the remote's chunks.
    if branch_moves && crate::git::head_branch(&ctx.ws.main.repo).as_deref() == Some(&branch) {
        return Err(RunnerError::bad_input(format!(
            "{branch} is checked out in your main worktree ({}); its tip is not moved under it",
            ctx.ws.root.display()
        ))
        .with_hint("check out another branch (`git switch -`), then run the command again")
        .into());
    }
    if branch_moves && let Some(slot) = crate::git::slot_holding(&ctx.ws.main, &branch) {
        return Err(RunnerError::bad_input(format!(
            "{branch} is checked out in {}; its tip is not moved under a worktree",
            slot.path.display()
        ))
        .with_hint(format!(
            "free the slot first (`runner discard --spec {}` keeps a backup), or review it there",
            crate::sh(name)
        ))
        .into());
    }
    // As every command that writes runner's folder: it is never part of the user's changes.
    ctx.ws.main.ensure_excluded()?;
    let backups = keep_what_differs(ctx, name, &paths.dir, folder, local_tip, branch_moves)?;
    crate::fleet::snapshot::materialize(repo, folder, &paths.dir).map_err(|e| e.context(from()))?;
    if let (true, Some(tip)) = (branch_moves, published.branch) {
        let full = crate::fleet::names::branch_ref(name);
        let message = format!("runner: {branch} as {remote} has it");
        match local_tip {
            Some(old) => crate::git::refs::move_if_at(repo, &full, tip, old, &message)?,
            None => crate::git::refs::create(repo, &full, tip, &message)?,
        }
    }
    // As a worker that takes the spec: a report whose work never reached the branch is not
    // the work (docs/fleet.md). A plan that does not parse has none to withdraw; what reads it
    // next says what is wrong with it.
    let tip = ctx.ws.main.branch_tip(&branch);
    let reports_withdrawn = match crate::engine::worker::withdraw_unpublished(&ctx.ws, &paths, tip)
    {
        Ok(chunks) => chunks,
        Err(e) if e.downcast_ref::<crate::plan::PlanError>().is_some() => Vec::new(),
        Err(e) => return Err(e),
    };
    Ok(Brought {
        remote: remote.to_string(),
        folder: folder.to_string(),
        branch: published.branch.map(|id| id.to_string()),
        backups,
        reports_withdrawn,
        held: held.is_some(),
    })
}

/// Keep the local folder (as a commit) when its published files differ from `folder`'s, and
/// the local branch's tip when it is to move; the refs written.
fn keep_what_differs(
    ctx: &super::super::Ctx,
    name: &str,
    dir: &std::path::Path,
    folder: Oid,
    local_tip: Option<Oid>,
    branch_moves: bool,
) -> anyhow::Result<Vec<String>> {
    let repo = &ctx.ws.main.repo;
    let mut keep: Vec<(&str, Oid)> = Vec::new();
    if dir.is_dir() {
        let here = crate::fleet::snapshot::commit_folder(
            repo,
            dir,
            None,
            &format!("runner: the local folder of {name} before it was replaced by a remote's"),
        )?;
        let tree = |id| crate::git::history::tree_of(repo, id);
        if tree(here) != tree(folder) && !is_empty_folder(repo, here) {
            keep.push(("local-folder", here));
        }
    }
    if let (true, Some(tip)) = (branch_moves, local_tip) {
        keep.push(("local-branch", tip));
    }
    if keep.is_empty() {
        return Ok(Vec::new());
    }
    let stamp = crate::git::backup::new_stamp(repo, name);
    let prefix = crate::git::backup::prefix(name, &stamp);
    let mut written = Vec::new();
    for (what, id) in keep {
        let full = format!("{prefix}/{what}");
        crate::git::refs::create(repo, &full, id, "runner: kept before a remote's spec")?;
        written.push(full);
    }
    Ok(written)
}

/// A folder commit with no published file at all (an empty local folder): nothing to keep.
fn is_empty_folder(repo: &crate::git::Repository, commit: Oid) -> bool {
    crate::fleet::snapshot::validate(repo, commit).is_ok_and(|files| files.is_empty())
}
