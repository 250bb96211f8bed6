//! Repairs of what a crash leaves behind: temp files of interrupted atomic writes, a stale
//! `index.lock` in a worktree, a worktree whose folder is gone, a folder git does not know.
//! None of them deletes work: the only things removed are empty git bookkeeping and temp files
//! whose writer is dead; a folder git does not know is moved aside, not deleted.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::git::{MainRepo, Slot, SlotState};
use crate::store::is_temp_file;

/// Is process `pid` alive?
fn alive(pid: i32) -> bool {
    // Signal 0 only checks for existence and permission.
    pid > 0
        && rustix::process::Pid::from_raw(pid).is_some_and(|pid| {
            matches!(
                rustix::process::test_kill_process(pid),
                Ok(()) | Err(rustix::io::Errno::PERM)
            )
        })
}

/// The writer's pid in a temp file name `.<name>.tmp-<pid>-<n>`.
fn temp_writer(name: &str) -> Option<i32> {
    let rest = &name[name.rfind(".tmp-")? + 5..];
    rest.split('-').next()?.parse().ok()
}

/// Temp files of the spec whose folder is `spec_dir` left by atomic writes whose process is
/// gone: in its folder and in its runs folder (a run killed in a record's write leaves one
/// there). Returns what was (or, in a dry run, would be) removed.
pub fn stale_temp_files(spec_dir: &Path, dry_run: bool) -> Vec<PathBuf> {
    let mut out = stale_temp_files_in(spec_dir, dry_run);
    out.extend(stale_temp_files_in(
        &crate::store::runs::dir(spec_dir),
        dry_run,
    ));
    out
}

/// The stale temp files of the spec's runs folder (what `stale_temp_files` finds there), in a
/// dry run.
pub fn stale_temp_files_of_runs(spec_dir: &Path) -> Vec<PathBuf> {
    stale_temp_files_in(&crate::store::runs::dir(spec_dir), true)
}

/// Temp files in `dir` (not below it) left by atomic writes whose process is gone.
fn stale_temp_files_in(dir: &Path, dry_run: bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !is_stale_temp_file(&name) {
            continue;
        }
        if dry_run || crate::store::safe::remove(&entry.path()).is_ok() {
            out.push(entry.path());
        }
    }
    out
}

/// Is the folder entry `name` a temp file of an atomic write whose process is gone?
pub fn is_stale_temp_file(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .is_some_and(|name| is_temp_file(name) && !temp_writer(name).is_some_and(alive))
}

/// The questions `recover --all`'s look asks of a spec's folder, from one listing of it
/// (`None`: it could not be listed). A name is only a hint that the file may be there: what
/// the look does with one (probe a lock, list the runs folder) is what it did before; a name
/// that is not there spares a lookup that would have found nothing.
pub struct SpecFolderNames {
    pub run_lock: bool,
    pub runs: bool,
    pub stale_temp_file: bool,
}

impl SpecFolderNames {
    pub fn of(spec_dir: &Path) -> Option<SpecFolderNames> {
        let mut names = SpecFolderNames {
            run_lock: false,
            runs: false,
            stale_temp_file: false,
        };
        for entry in std::fs::read_dir(spec_dir).ok()? {
            let entry = entry.ok()?;
            let name = entry.file_name();
            match name.as_encoded_bytes() {
                b"run.lock" => names.run_lock = true,
                n if n == crate::store::runs::RUNS_DIR.as_bytes() => names.runs = true,
                _ => names.stale_temp_file |= is_stale_temp_file(&name),
            }
        }
        Some(names)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotRepair {
    /// The registration of a worktree whose folder is gone was pruned.
    Pruned { slot: String },
    /// A folder git does not know was moved aside.
    MovedAside { slot: String, to: PathBuf },
    /// A symbolic link where the slot belongs was moved aside (the link, not what it names).
    LinkMovedAside {
        slot: String,
        target: PathBuf,
        dangling: bool,
        to: PathBuf,
    },
    /// A registered slot whose folder held nothing was removed and its registration pruned.
    EmptyRemoved { slot: String },
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
            SlotRepair::LinkMovedAside {
                slot,
                target,
                dangling,
                to,
            } => format!(
                "{slot} was a symbolic link to {}{}, not a folder: moved aside to {} as it was (runner never builds or writes through a link)",
                target.display(),
                if *dangling {
                    ", which does not exist"
                } else {
                    ""
                },
                to.display()
            ),
            SlotRepair::EmptyRemoved { slot } => format!(
                "the worktree {slot} held nothing (its .git file gone, as a removal cut off leaves it): removed and its registration pruned (it is created again from its branch on the next run)"
            ),
        }
    }
}

/// A symbolic link where the slot belongs, dangling or naming a folder anywhere, is never the
/// slot: creating the slot would stop on it ("already exists"), and using it would build and
/// write through it. The link itself is moved aside beside the slot, under a name no other
/// file has, and never followed. Returns what was (or, in a dry run, would be) done.
pub fn set_aside_link(slot: &Slot, dry_run: bool) -> anyhow::Result<Option<SlotRepair>> {
    let is_link = std::fs::symlink_metadata(&slot.path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(None);
    }
    let target = std::fs::read_link(&slot.path).unwrap_or_default();
    let dangling = std::fs::metadata(&slot.path).is_err();
    // A link to a git worktree (a folder with a `.git` file: the slot's own, moved elsewhere
    // and linked back, works through the link): moving the link aside would leave its
    // uncommitted work behind unsaved, and the slot made afresh would take over its
    // registration, so that two folders shared one index. A person puts it back.
    if !dangling && std::fs::symlink_metadata(slot.path.join(".git")).is_ok_and(|m| m.is_file()) {
        let sh = |p: &Path| crate::sh(p.display().to_string());
        return Err(crate::error::RunnerError::bad_input(format!(
            "{} is a symbolic link to {}, a git worktree (it holds a .git file): runner never \
             builds through a link, and moving the link aside would leave that worktree's work \
             behind",
            slot.path.display(),
            target.display()
        ))
        .with_hint(format!(
            "put the worktree back in place (`rm {0} && mv {1} {0}`), then run again",
            sh(&slot.path),
            sh(&target)
        ))
        .into());
    }
    let to = crate::store::unused_path(&slot.path.with_file_name(format!(
        "{}.link-{}",
        slot.name,
        crate::clock::stamp()
    )));
    if !dry_run {
        crate::store::safe::rename(&slot.path, &to)
            .with_context(|| format!("moving the link {} aside", slot.path.display()))?;
    }
    Ok(Some(SlotRepair::LinkMovedAside {
        slot: slot.path.display().to_string(),
        target,
        dangling,
        to,
    }))
}

/// Undo or finish what a crash left of a slot's creation, before anything else looks at the
/// slot: a creation runner marked in `marker` (removed, to be made afresh: no agent ran there
/// yet), a registration git cannot read (removed, as it would block every creation; a folder
/// with anything in it is moved aside), a worktree whose checkout never completed (the missing
/// files written from HEAD, so that no commit records them as deleted). Returns what was (or,
/// in a dry run, would be) done.
pub fn unfinished_creation(
    main: &MainRepo,
    slot: &Slot,
    marker: &Path,
    dry_run: bool,
) -> anyhow::Result<Option<String>> {
    let admin = crate::git::slot::admin_dir(main, slot);
    let what = if marker.symlink_metadata().is_ok() {
        if !dry_run {
            slot.finish_interrupted_create(main, marker)?;
        }
        "its creation was cut off: removed, to be created afresh"
    } else if admin.is_dir() && !main.has_worktree(&slot.name) {
        if !dry_run {
            slot.clear_unreadable_registration(main)?;
        }
        "its registration in .git/worktrees was left unfinished: removed, to be created afresh"
    } else if matches!(slot.inspect(main), SlotState::Ready { .. })
        && crate::git::repo::checkout_unfinished(&slot.open(main)?)
    {
        if !dry_run {
            crate::git::repo::finish_incomplete_checkout(&slot.open(main)?)?;
        }
        "its checkout was never completed: the missing files were written from its branch"
    } else {
        return Ok(None);
    };
    let would = if dry_run { " (would be done)" } else { "" };
    Ok(Some(format!(
        "the worktree slot {}: {what}{would}",
        slot.path.display()
    )))
}

/// A registered slot whose folder holds nothing, no file at any depth (a removal cut off by
/// kill -9 leaves the folder, perhaps folders in it, its `.git` file and files gone): nothing
/// there can be lost, so it is removed folder by folder (a file written there meanwhile stops
/// the removal) and its registration pruned, to be created again from its branch. A folder
/// holding anything keeps the careful path: its files saved, then a person. Returns what was
/// (or, in a dry run, would be) done.
pub fn clear_empty_slot(
    main: &MainRepo,
    slot: &Slot,
    dry_run: bool,
) -> anyhow::Result<Option<SlotRepair>> {
    if !matches!(slot.inspect(main), SlotState::Broken { .. }) || !holds_nothing(&slot.path) {
        return Ok(None);
    }
    if !dry_run {
        remove_empty_folders(&slot.path)
            .with_context(|| format!("removing the empty folder {}", slot.path.display()))?;
        slot.prune_missing(main)?;
    }
    Ok(Some(SlotRepair::EmptyRemoved {
        slot: slot.path.display().to_string(),
    }))
}

/// The most entries [`holds_nothing`] looks at: a folder with more is not called empty.
const EMPTY_LOOK_LIMIT: usize = 10_000;

/// Whether `dir` is a real folder (not a link) with no file, link or other entry at any depth
/// below it, only folders.
fn holds_nothing(dir: &Path) -> bool {
    let mut folders = vec![dir.to_path_buf()];
    let mut seen = 0;
    while let Some(folder) = folders.pop() {
        if !std::fs::symlink_metadata(&folder).is_ok_and(|m| m.is_dir()) {
            return false;
        }
        let Ok(entries) = std::fs::read_dir(&folder) else {
            return false;
        };
        for entry in entries {
            seen += 1;
            // (`file_type` does not follow a link.)
            match entry.and_then(|e| Ok((e.file_type()?, e.path()))) {
                Ok((kind, path)) if kind.is_dir() && seen <= EMPTY_LOOK_LIMIT => folders.push(path),
                _ => return false,
            }
        }
    }
    true
}

/// Remove `dir` and the empty folders in it, deepest first; `remove_dir` refuses a folder that
/// is not empty, so nothing written meanwhile is deleted.
fn remove_empty_folders(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            remove_empty_folders(&entry.path())?;
        }
    }
    std::fs::remove_dir(dir)
}

/// Repair one slot if it is broken or unknown to git.
pub fn repair_slot(
    main: &MainRepo,
    slot: &Slot,
    dry_run: bool,
) -> anyhow::Result<Option<SlotRepair>> {
    if let Some(link) = set_aside_link(slot, dry_run)? {
        return Ok(Some(link));
    }
    if let Some(cleared) = clear_empty_slot(main, slot, dry_run)? {
        return Ok(Some(cleared));
    }
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
    use crate::git::locks::{RefLocks, lock_candidates, stale_lock};

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

        // A run killed while it rewrote its record leaves the temp file in the runs folder.
        let runs = crate::store::runs::dir(dir.path());
        std::fs::create_dir(&runs).unwrap();
        let dead = runs.join(".r0123456789ab.json.tmp-999999999-7");
        let live = runs.join(format!(".r0123456789ab.json.tmp-{}-1", std::process::id()));
        for p in [&dead, &live] {
            std::fs::write(p, "x").unwrap();
        }
        assert_eq!(stale_temp_files(dir.path(), true), vec![dead.clone()]);
        assert!(dead.exists(), "a dry run removes nothing");
        assert_eq!(stale_temp_files(dir.path(), false), vec![dead.clone()]);
        assert!(!dead.exists());
        assert!(live.exists());
    }

    #[test]
    fn lock_candidates_cover_the_spec_branch_and_worktree() {
        let dir = tempfile::tempdir().unwrap();
        let common = dir.path().join("git");
        let wt = common.join("worktrees/auto-claude");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::create_dir_all(common.join("refs/heads/auto-claude")).unwrap();
        std::fs::create_dir_all(common.join("refs/auto-claude/recovery/001-x/c1")).unwrap();
        for f in [
            wt.join("HEAD.lock"),
            common.join("refs/heads/auto-claude/001-x.lock"),
            common.join("refs/heads/auto-claude/002-other.lock"),
            common.join("refs/auto-claude/recovery/001-x/c1/2.lock"),
        ] {
            std::fs::write(f, "").unwrap();
        }
        let found = lock_candidates(&common, Some(&wt), "001-x");
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            !found.iter().any(|p| p.ends_with("002-other.lock")),
            "another spec's lock is not ours"
        );
    }

    /// The listing of every spec's ref locks at once answers as `lock_candidates` per spec.
    #[test]
    fn ref_locks_listed_once_agree_with_the_look_per_spec() {
        let dir = tempfile::tempdir().unwrap();
        let common = dir.path().join("git");
        let none = RefLocks::list(&common).expect("missing folders are no locks");
        assert!(!none.any_for("001-x"));
        std::fs::create_dir_all(common.join("refs/heads/auto-claude")).unwrap();
        std::fs::create_dir_all(common.join("refs/auto-claude/recovery/001-x/c1")).unwrap();
        std::fs::create_dir_all(common.join("refs/auto-claude/backup/a%2Eb")).unwrap();
        std::fs::create_dir_all(common.join("refs/auto-claude/backup/004-clean/c")).unwrap();
        for f in [
            "refs/heads/auto-claude/002-head.lock",
            "refs/heads/auto-claude/005-ref",
            "refs/auto-claude/recovery/001-x/c1/2.lock",
            "refs/auto-claude/backup/a%2Eb/x.lock",
            "refs/auto-claude/backup/004-clean/c/ref",
        ] {
            std::fs::write(common.join(f), "").unwrap();
        }
        let locks = RefLocks::list(&common).unwrap();
        for spec in [
            "001-x",
            "002-head",
            "a.b",
            "004-clean",
            "005-ref",
            "006-none",
        ] {
            let per_spec = !lock_candidates(&common, None, spec).is_empty();
            assert_eq!(locks.any_for(spec), per_spec, "{spec}");
        }
        assert!(locks.any_for("a.b") && !locks.any_for("004-clean"));
    }

    #[test]
    fn an_index_lock_nobody_holds_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("index.lock");
        std::fs::write(&lock, "").unwrap();
        let held = std::fs::File::open(&lock).unwrap();
        assert_eq!(
            stale_lock(&dir.path().join("index.lock"), false),
            None,
            "held open: not stale"
        );
        drop(held);
        // Another test of this process that forks while the file was open gives its child a
        // copy of the descriptor until the child's exec closes it (close-on-exec): under load
        // that takes a moment, and the lock is rightly seen as held until then.
        let canonical = lock.canonicalize().unwrap_or(lock.clone());
        let mut stale = None;
        for _ in 0..100 {
            stale = stale_lock(&dir.path().join("index.lock"), false);
            if stale.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(stale, Some(canonical));
        assert!(!lock.exists());
    }
}
