//! Repairs of what a crash leaves behind: temp files of interrupted atomic writes, a stale
//! `index.lock` in a worktree, a worktree whose folder is gone, a folder git does not know.
//! None of them deletes work: the only things removed are empty git bookkeeping and temp files
//! whose writer is dead; a folder git does not know is moved aside, not deleted.

use std::path::{Path, PathBuf};

use crate::git::{MainRepo, Slot, SlotState};
use crate::store::is_temp_file;

/// Is process `pid` alive?
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

/// The writer's pid in a temp file name `.<name>.tmp-<pid>-<n>`.
fn temp_writer(name: &str) -> Option<i32> {
    let rest = &name[name.rfind(".tmp-")? + 5..];
    rest.split('-').next()?.parse().ok()
}

/// Temp files in `dir` left by atomic writes whose process is gone. Returns what was (or, in
/// a dry run, would be) removed.
pub fn stale_temp_files(dir: &Path, dry_run: bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !is_temp_file(name) || temp_writer(name).is_some_and(alive) {
            continue;
        }
        if dry_run || std::fs::remove_file(entry.path()).is_ok() {
            out.push(entry.path());
        }
    }
    out
}

/// Does any process have `path` open? (Linux: /proc/*/fd.)
fn open_by_anyone(path: &Path) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return true; // cannot tell: assume it is in use
    };
    for p in procs.flatten() {
        if p.file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .is_none()
        {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|t| t == path) {
                return true;
            }
        }
    }
    false
}

/// A git `index.lock` left in the worktree's git folder by a killed agent: removed if no
/// process holds it open.
pub fn stale_index_lock(git_dir: &Path, dry_run: bool) -> Option<PathBuf> {
    let lock = git_dir.join("index.lock");
    let lock = lock.canonicalize().unwrap_or(lock);
    if !lock.exists() || open_by_anyone(&lock) {
        return None;
    }
    if dry_run || std::fs::remove_file(&lock).is_ok() {
        Some(lock)
    } else {
        None
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotRepair {
    /// The registration of a worktree whose folder is gone was pruned.
    Pruned { slot: String },
    /// A folder git does not know was moved aside.
    MovedAside { slot: String, to: PathBuf },
}

impl SlotRepair {
    pub fn describe(&self) -> String {
        match self {
            SlotRepair::Pruned { slot } => format!(
                "the worktree {slot} was registered but its folder is gone: pruned (it is recreated from its branch on the next run)"
            ),
            SlotRepair::MovedAside { slot, to } => format!(
                "{slot} was a folder git did not know as a worktree: moved aside to {} (nothing in it was deleted)",
                to.display()
            ),
        }
    }
}

/// Repair one slot if it is broken or unknown to git.
pub fn repair_slot(
    main: &MainRepo,
    slot: &Slot,
    dry_run: bool,
) -> anyhow::Result<Option<SlotRepair>> {
    match slot.inspect(main) {
        SlotState::Broken { .. } if !slot.path.exists() => {
            if !dry_run {
                slot.prune_missing(main)?;
            }
            Ok(Some(SlotRepair::Pruned {
                slot: slot.path.display().to_string(),
            }))
        }
        SlotState::Unregistered => {
            let to = slot.path.with_file_name(format!(
                "{}.unregistered-{}",
                slot.name,
                crate::clock::stamp()
            ));
            if !dry_run {
                std::fs::rename(&slot.path, &to)?;
            }
            Ok(Some(SlotRepair::MovedAside {
                slot: slot.path.display().to_string(),
                to,
            }))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_files_of_dead_writers_go_and_live_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let mine = format!(".plan.json.tmp-{}-0", std::process::id());
        let dead = ".plan.json.tmp-999999999-3";
        for n in [mine.as_str(), dead, "plan.json", ".hidden"] {
            std::fs::write(dir.path().join(n), "x").unwrap();
        }
        let removed = stale_temp_files(dir.path(), false);
        assert_eq!(removed, vec![dir.path().join(dead)]);
        assert!(dir.path().join(&mine).exists());
        assert!(dir.path().join("plan.json").exists());
        assert!(dir.path().join(".hidden").exists());
    }

    #[test]
    fn an_index_lock_nobody_holds_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("index.lock");
        std::fs::write(&lock, "").unwrap();
        let held = std::fs::File::open(&lock).unwrap();
        assert_eq!(
            stale_index_lock(dir.path(), false),
            None,
            "held open: not stale"
        );
        drop(held);
        assert_eq!(stale_index_lock(dir.path(), false), Some(lock.clone()));
        assert!(!lock.exists());
    }
}
