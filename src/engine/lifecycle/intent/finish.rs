//! Finishing or rolling back an interrupted merge, discard or undo, under the main worktree's lock.

use super::*;

/// Take the main worktree's lock (see `Workspace::main_worktree_lock`) for `spec`, or refuse
/// at once (exit 4) naming its holder: runner never waits.
pub fn lock_main_worktree(ws: &Workspace, spec: &str) -> anyhow::Result<crate::store::FileLock> {
    use crate::store::guard;
    let path = ws.main_worktree_lock();
    let holder = guard::new_holder(&crate::store::ids::run_id(), Some(spec));
    guard::take(&path, &holder, guard::Patience::Once, || {
        format!(
            "another runner is changing the files of {} (a merge, an undo or a recovery; its lock is {}), so nothing was done",
            ws.root.display(),
            path.display(),
        )
    })
}

/// The git lock files finishing or rolling back `intent` may meet: the spec's refs and slot
/// (as `recover` repairs them), the main worktree's index and HEAD if it touches them, the
/// target's ref, the backup's moved refs.
pub(super) fn git_locks_of(ws: &Workspace, intent: &Intent) -> Vec<PathBuf> {
    let common = ws.main.common_dir().to_path_buf();
    let slot_git_dir = intent
        .slot
        .as_deref()
        .and_then(|n| crate::git::Slot::named(&ws.root, n))
        .map(|s| crate::git::slot::admin_dir(&ws.main, &s));
    let mut out =
        crate::git::locks::lock_candidates(&common, slot_git_dir.as_deref(), &intent.spec);
    if touches_main_worktree(intent) {
        let git_dir = ws.main.git_dir();
        out.extend(["index.lock", "HEAD.lock", "ORIG_HEAD.lock"].map(|n| git_dir.join(n)));
    }
    if let Some(t) = &intent.target {
        out.push(common.join("refs/heads").join(format!("{t}.lock")));
    }
    let undone = common
        .join("refs/auto-claude/undone")
        .join(crate::git::refs::ref_component(&intent.spec));
    if let Some(stamp) = intent.backup.rsplit('/').next() {
        out.push(undone.join(stamp).join("meta.lock"));
        for n in crate::git::backup::REF_NAMES {
            out.push(undone.join(stamp).join(format!("{n}.lock")));
        }
    }
    out.retain(|p| p.symlink_metadata().is_ok());
    out
}

/// Remove the git lock files a SIGKILLed operation left (nobody holds them open); one still
/// held stops the recovery (exit 3, nothing changed) naming it.
pub(super) fn clear_stale_git_locks(ws: &Workspace, intent: &Intent) -> anyhow::Result<()> {
    for lock in git_locks_of(ws, intent) {
        if crate::git::locks::stale_lock(&lock, false).is_none() && lock.exists() {
            return Err(crate::error::RunnerError::NeedsHuman(format!(
                "{} is held by a running git command; the interrupted {} of {} was left as it is",
                lock.display(),
                op_name(intent.op),
                intent.spec,
            ))
            .with_hint(format!(
                "wait for that command to finish (or stop it), then `runner recover --spec {}`",
                crate::sh(&intent.spec)
            ))
            .into());
        }
    }
    Ok(())
}

/// Whether finishing or rolling back `intent` may change the main worktree.
pub(super) fn touches_main_worktree(intent: &Intent) -> bool {
    match intent.op {
        Op::Merge => intent.main_files,
        Op::Undo => true,
        Op::Discard => false,
    }
}

/// Finish or roll back the spec's interrupted merge, discard or undo, if there is one. The
/// caller holds the spec's run lock; the main worktree's lock is taken here when the operation
/// touches it. Returns what was done, for the report.
pub fn finish_interrupted(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
    dry_run: bool,
) -> anyhow::Result<Option<Finished>> {
    finish_interrupted_inner(ws, paths, journal, dry_run, false)
}

/// `finish_interrupted` for a caller that already holds the main worktree's lock.
pub fn finish_interrupted_holding_main(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
) -> anyhow::Result<Option<Finished>> {
    finish_interrupted_inner(ws, paths, journal, false, true)
}

pub(super) fn finish_interrupted_inner(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
    dry_run: bool,
    holding_main: bool,
) -> anyhow::Result<Option<Finished>> {
    let Some(intent) = load(paths)? else {
        return Ok(None);
    };
    let _main_lock = if !dry_run && !holding_main && touches_main_worktree(&intent) {
        Some(lock_main_worktree(ws, &paths.name)?)
    } else {
        None
    };
    if !dry_run {
        clear_stale_git_locks(ws, &intent)?;
    }
    let what = op_name(intent.op);
    let direction = direction(&intent, observe(ws, &intent));
    let done = |rolled_back: bool, message: String| {
        Ok(Some(Finished {
            op: intent.op,
            intent: intent.clone(),
            rolled_back,
            message,
        }))
    };
    if dry_run {
        return match direction {
            Direction::Forward => done(false, format!("an interrupted {what} would be finished")),
            Direction::Back => done(true, format!("an interrupted {what} would be rolled back")),
            Direction::Human(why) => Err(crate::error::RunnerError::NeedsHuman(why).into()),
        };
    }
    match direction {
        Direction::Human(why) => Err(crate::error::RunnerError::NeedsHuman(why).into()),
        Direction::Forward => {
            let saved = match intent.op {
                Op::Merge => crate::engine::lifecycle::merge::finish(ws, paths, &intent, journal)?,
                Op::Discard => {
                    crate::engine::lifecycle::discard::finish(ws, paths, &intent, journal)?
                }
                Op::Undo => {
                    crate::engine::lifecycle::undo::finish(ws, paths, &intent, journal)?;
                    None
                }
            };
            clear(paths)?;
            let saved = saved
                .map(|r| format!("; uncommitted changes found in its worktree were saved to {r} (git checkout {r} -- . brings them back)"))
                .unwrap_or_default();
            done(false, format!("finished an interrupted {what}{saved}"))
        }
        Direction::Back => {
            let saved = if intent.op == Op::Merge {
                crate::engine::lifecycle::merge::roll_back(ws, &intent)?
            } else {
                None
            };
            crate::git::backup::delete(&ws.main.repo, &intent.backup)?;
            clear(paths)?;
            journal.write(&crate::store::Event::LifecycleRolledBack(
                crate::store::event::LifecycleRolledBack {
                    op: what.to_string(),
                    backup: intent.backup.clone(),
                    saved: saved.clone(),
                },
            ))?;
            done(
                true,
                format!(
                    "rolled back an interrupted {what}{}",
                    crate::engine::lifecycle::saved_note(saved.as_deref())
                ),
            )
        }
    }
}
