//! What `runner watch` looks at between two reads, so that it reads again only what changed: a
//! few `lstat`s and one lock probe per spec. Each state file runner writes is replaced whole
//! (a new inode) or appended to (a new size), and each record lands in its folder by a rename
//! (a new folder mtime), so a stamp that did not change means a file that did not.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::store::lock::{self, LockState};
use crate::store::workspace::SpecPaths;

/// A file's or folder's identity and last change, as `lstat` says (a link is not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// The stamp of `path`; `None` when it is not there (or cannot be looked at).
pub fn of(path: &Path) -> Option<FileStamp> {
    let m = std::fs::symlink_metadata(path).ok()?;
    Some(FileStamp {
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
    })
}

/// Who holds a spec's run lock: a run that is killed leaves its lock file as it was, so the
/// lock itself is asked (the OS lets it go with its process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    Free,
    Held(Option<String>),
    Unknown,
}

/// Everything `status` reads of one spec that can change while watch runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecStamp {
    plan: Option<FileStamp>,
    runs: Option<FileStamp>,
    lock: Holder,
    lock_file: Option<FileStamp>,
    pause: Option<FileStamp>,
    spec_dir: Option<FileStamp>,
}

/// The stamp of spec `paths` (`state_dir`: where its pause file is).
pub fn spec(state_dir: &Path, paths: &SpecPaths) -> SpecStamp {
    let lock = match lock::probe(&paths.run_lock) {
        Ok(LockState::Free) => Holder::Free,
        Ok(LockState::Held(holder)) => Holder::Held(holder.map(|h| h.run_id)),
        Err(_) => Holder::Unknown,
    };
    SpecStamp {
        plan: of(paths.plan.path()),
        runs: of(&crate::store::runs::dir(&paths.dir)),
        lock,
        lock_file: of(&paths.run_lock),
        pause: of(&crate::store::pause::path(state_dir, &paths.name)),
        spec_dir: of(&paths.dir),
    }
}

/// What the agent's latest line depends on: the spec's sessions folder (a new session is a
/// new folder in it) and the newest session's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogStamp {
    pub sessions: Option<FileStamp>,
    pub log: Option<FileStamp>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_changes_with_an_append_a_replacement_and_a_removal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        assert_eq!(of(&path), None);
        std::fs::write(&path, "a").unwrap();
        let first = of(&path).unwrap();
        assert_eq!(of(&path), Some(first));
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"b"))
            .unwrap();
        let appended = of(&path).unwrap();
        assert_ne!(appended, first);
        std::fs::write(dir.path().join("g"), "ab").unwrap();
        std::fs::rename(dir.path().join("g"), &path).unwrap();
        assert_ne!(of(&path).unwrap(), appended);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(of(&path), None);
    }
}
