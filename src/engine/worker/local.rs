//! The worker's clone against the remote: before a job starts, the local state of its spec is
//! made the remote's (what the clone had that differs is saved first); when a lease is lost,
//! what the job left that was never published is kept. Both on local refs under
//! `refs/auto-claude/recovery/<spec>/`, where `runner recover`, `review` and the user see them:
//!
//! - `…/_taken/<n>/branch` and `…/_taken/<n>/folder`: what the clone had when this worker took
//!   the spec (its branch tip with any uncommitted work of its slot on top, its folder as a
//!   commit), when it differed from the remote's;
//! - `…/_lease-lost/<n>/branch` and `…/_lease-lost/<n>/folder`: what the job had done when its
//!   lease was lost.
//!
//! (A chunk's own recovery refs are `…/<chunk>/<n>`: `ref_component` escapes a chunk id's
//! leading `_`, so these names never meet one.)

use crate::git::{Oid, branch_for, slot_holding};
use crate::store::workspace::Workspace;

/// Why leftovers are kept: the last component but the number.
#[derive(Debug, Clone, Copy)]
pub enum Why {
    Taken,
    LeaseLost,
}

impl Why {
    fn component(self) -> &'static str {
        match self {
            Why::Taken => "_taken",
            Why::LeaseLost => "_lease-lost",
        }
    }
}

/// What the clone holds of `spec`: its branch tip (with the uncommitted work of the slot that
/// has it checked out, as a commit on top) and its folder as a commit.
struct Local {
    branch: Option<Oid>,
    folder: Option<Oid>,
}

/// (`folder_if_it_can`: a folder that cannot be made a commit, a link planted at a published
/// name, is left out rather than failing the whole; else it fails.)
fn local_state(
    ws: &Workspace,
    spec: &str,
    message: &str,
    folder_if_it_can: bool,
) -> anyhow::Result<Local> {
    let repo = &ws.main.repo;
    let branch_name = branch_for(spec);
    let mut branch = ws.main.branch_tip(&branch_name);
    if let Some(slot) = slot_holding(&ws.main, &branch_name) {
        let wt = slot.open(&ws.main)?;
        // A scratch ref: the snapshot is kept under its final name by `keep`.
        let scratch = format!(
            "{}/{}/_scratch",
            crate::git::refs::RECOVERY_PREFIX,
            crate::git::refs::ref_component(spec)
        );
        if let Some(oid) = crate::git::refs::snapshot_worktree(&wt, &scratch, message)? {
            branch = Some(oid);
        }
        crate::git::refs::delete_if_present(repo, &scratch)?;
    }
    let paths = ws.spec(spec)?;
    let folder = match paths.dir.is_dir() {
        true => match crate::fleet::snapshot::commit_folder(repo, &paths.dir, None, message) {
            Ok(folder) => Some(folder),
            Err(_) if folder_if_it_can => None,
            Err(e) => return Err(e),
        },
        false => None,
    };
    Ok(Local { branch, folder })
}

/// Keep `local` under `…/<why>/<n>/{branch,folder}` (the next free `n`); the refs made.
fn keep(ws: &Workspace, spec: &str, why: Why, local: &Local) -> anyhow::Result<Vec<String>> {
    let repo = &ws.main.repo;
    let base = format!(
        "{}/{}/{}",
        crate::git::refs::RECOVERY_PREFIX,
        crate::git::refs::ref_component(spec),
        why.component()
    );
    let taken: Vec<u32> = crate::git::refs::commit_times(repo, &format!("{base}/*"))?
        .into_iter()
        .filter_map(|(name, _)| {
            name.strip_prefix(&format!("{base}/"))?
                .split('/')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    let n = taken.into_iter().max().unwrap_or(0) + 1;
    let mut made = Vec::new();
    for (what, oid) in [("branch", local.branch), ("folder", local.folder)] {
        if let Some(oid) = oid {
            let name = format!("{base}/{n}/{what}");
            crate::git::refs::create(repo, &name, oid, "runner worker: kept")?;
            made.push(name);
        }
    }
    Ok(made)
}

/// What making the clone's state of a spec the remote's did.
#[derive(Debug, Default)]
pub struct Adopted {
    /// The refs that keep what the clone had that differed.
    pub kept: Vec<String>,
    /// The chunks whose report of "done" was withdrawn: its work was never published
    /// (`super::reports`); they are built again.
    pub withdrawn: Vec<String>,
}

/// Make the clone's state of `spec` the remote's: its branch at `branch` (none: no branch),
/// its folder `folder`'s files. What the clone had that differs is kept first (see the
/// module); the refs made are returned. The spec's slot, if one has its branch checked out, is
/// reset to the remote's tip (no job uses it: the spec is not running here); without a branch
/// on the remote, that slot is removed and the local branch deleted, so the job starts the
/// spec afresh as `runner run` would. A report in the remote's plan whose work was never
/// published is withdrawn (`super::reports`).
pub fn adopt(
    ws: &Workspace,
    spec: &str,
    folder: Oid,
    branch: Option<Oid>,
) -> anyhow::Result<Adopted> {
    let repo = &ws.main.repo;
    // A run of this spec still alive in this clone — the draining run of a worker that was
    // killed (its jobs get SIGTERM, a drain, when it dies) — would go on writing the plan and
    // the branch under the copy about to be made the remote's. The worker's look leaves such
    // specs out (`busy_here`); asked again here, just before anything moves.
    if crate::engine::jobs::held_by_another(ws, spec) {
        return Err(crate::error::RunnerError::Busy(format!(
            "a run of {spec} from before is still ending in this clone; the worker takes it once that run has ended"
        ))
        .into());
    }
    // The clone's own checkout on the branch: moving the branch would leave its index and
    // files on the old tip (a `git commit -a` there would undo the remote's chunks), and a slot
    // on it too would make two worktrees on one branch. Left alone, before anything moves.
    if crate::git::head_branch(repo).as_deref() == Some(branch_for(spec).as_str()) {
        return Err(crate::error::RunnerError::bad_input(format!(
            "{} is checked out in this clone's main worktree ({}); the worker leaves {spec} alone",
            branch_for(spec),
            ws.root.display()
        ))
        .with_hint("check out another branch there (a worker's clone is for the worker)")
        .into());
    }
    let local = local_state(
        ws,
        spec,
        &format!("runner worker: {spec} as this clone had it"),
        false,
    )?;
    let tree = |oid: Option<Oid>| oid.and_then(|o| crate::git::history::tree_of(repo, o));
    let same_folder = local.folder.is_some() && tree(local.folder) == tree(Some(folder));
    let same_branch = local.branch == branch;
    let kept = match (same_folder, same_branch) {
        (true, true) => Vec::new(),
        _ => keep(
            ws,
            spec,
            Why::Taken,
            &Local {
                branch: local.branch.filter(|_| !same_branch),
                folder: local.folder.filter(|_| !same_folder),
            },
        )?,
    };
    let branch_name = branch_for(spec);
    let slot = slot_holding(&ws.main, &branch_name);
    match (branch, slot) {
        (Some(tip), Some(slot)) => {
            let wt = slot.open(&ws.main)?;
            // Moves the branch (the slot's HEAD), its index and its files; then the files
            // the tip does not have go (they were kept above).
            crate::git::tree::reset_hard(&wt, tip)?;
            crate::git::tree::clean_to_head(&wt)?;
        }
        (Some(tip), None) => {
            crate::git::refs::set(
                repo,
                &format!("refs/heads/{branch_name}"),
                tip,
                "runner worker: the remote's tip",
            )?;
            check_out(ws, &branch_name)?;
        }
        (None, slot) => {
            if let Some(slot) = slot {
                crate::git::slot::remove_worktree(&ws.main, &slot)?;
            }
            if ws.main.branch_tip(&branch_name).is_some() {
                crate::git::refs::delete_branch(repo, &branch_name)?;
            }
        }
    }
    let paths = ws.spec(spec)?;
    crate::fleet::snapshot::materialize(repo, folder, &paths.dir)?;
    let withdrawn = super::reports::withdraw_unpublished(ws, &paths, branch)?;
    Ok(Adopted { kept, withdrawn })
}

/// Check `branch` out in a new slot of its own (the first `auto-claude-<n>` that is free), as
/// the worktree of the spec's work: the run's recovery then finds the worktree an attempt of
/// another host left in progress there, exactly at the published tip with nothing
/// uncommitted, and starts that chunk again (the other host's unpublished work is not here to
/// be lost), instead of finding no worktree at all and asking a person.
fn check_out(ws: &Workspace, branch: &str) -> anyhow::Result<()> {
    let mut n = 0usize;
    loop {
        n += 1;
        let suffix = n.to_string();
        let slot = crate::git::Slot::new(&ws.root, Some(&suffix));
        if slot.path.symlink_metadata().is_ok()
            || slot.inspect(&ws.main) != crate::git::SlotState::Missing
        {
            continue;
        }
        // Held while it is made: a run that picks its slot meanwhile skips it.
        let Some(_lock) = crate::fs::lock::FileLock::try_acquire(&ws.slot_lock(&slot.name))? else {
            continue;
        };
        return slot.create(&ws.main, branch, &ws.slot_create_marker(&slot.name));
    }
}

/// Keep what the job of `spec` left (its branch tip with its slot's uncommitted work, its
/// folder) after its lease was lost; the refs made. A folder that cannot be made a commit
/// (what made the spec unpublishable) is left where it is; the branch is kept all the same.
pub fn keep_leftovers(ws: &Workspace, spec: &str) -> anyhow::Result<Vec<String>> {
    let local = local_state(
        ws,
        spec,
        &format!("runner worker: {spec} as its job left it when the lease was lost"),
        true,
    )?;
    keep(ws, spec, Why::LeaseLost, &local)
}
