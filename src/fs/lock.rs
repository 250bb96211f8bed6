//! OS file locks (flock through std's `File::lock`). A lock dies with its process, so "is
//! anyone running this?" has an exact answer: try the lock.
//!
//! A held run lock's file also says who holds it (run id, pid, host, start, heartbeat). That
//! content is advisory: it is rewritten in place with one fixed-size write at offset 0, so a
//! reader never sees a half-old, half-new record, and a missing or garbled record only means
//! runner knows less, never that it decides wrong.

use std::fs::{File, TryLockError};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The holder record is padded to this size so every rewrite covers the whole record.
const RECORD_SIZE: usize = 1024;

/// An exclusive lock; released when dropped (the file is closed).
#[derive(Debug)]
pub struct FileLock {
    file: File,
    path: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Holder {
    pub run_id: String,
    pub pid: u32,
    pub host: String,
    pub since: String,
    pub heartbeat: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
}

/// Open (creating) a lock file; an error names it.
fn open(path: &Path) -> std::io::Result<File> {
    if let Some(parent) = path.parent() {
        super::safe::create_dirs(parent).map_err(super::at(parent))?;
    }
    // Never through a link, never a FIFO or a hard-linked file: an agent could plant one to
    // make runner create, lock or overwrite a file elsewhere (see `store::safe`).
    super::safe::open(path, super::safe::Mode::InPlace).map_err(|e| {
        if e.raw_os_error() == Some(libc::EISDIR) {
            // Said plainly, with what to do: the folder may hold someone's files.
            return std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} is a folder where runner keeps a lock file: move it away, and runner makes the file again",
                    path.display()
                ),
            );
        }
        super::at(path)(e)
    })
}

impl FileLock {
    /// Take the lock if nobody holds it; `Ok(None)` if somebody does.
    pub fn try_acquire(path: &Path) -> std::io::Result<Option<FileLock>> {
        let file = open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock {
                file,
                path: path.to_path_buf(),
            })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(super::at(path)(e)),
        }
    }

    /// Wait for the lock. Used only for the short plan lock.
    pub fn acquire(path: &Path) -> std::io::Result<FileLock> {
        let file = open(path)?;
        file.lock().map_err(super::at(path))?;
        Ok(FileLock {
            file,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Record who holds the lock (one positioned write of a fixed-size record, then fsync).
    pub fn write_holder(&self, holder: &Holder) -> std::io::Result<()> {
        self.write_record(holder).map_err(super::at(&self.path))
    }

    fn write_record(&self, holder: &Holder) -> std::io::Result<()> {
        let mut record = serde_json::to_vec(holder).map_err(std::io::Error::other)?;
        if record.len() >= RECORD_SIZE {
            return Err(std::io::Error::other("lock holder record too long"));
        }
        record.resize(RECORD_SIZE - 1, b' ');
        record.push(b'\n');
        self.file.write_all_at(&record, 0)?;
        self.file.set_len(RECORD_SIZE as u64)?;
        self.file.sync_data()
    }
}

/// Is the lock at `path` held by a live process? If so, who says they hold it.
pub enum LockState {
    Free,
    Held(Option<Holder>),
}

pub fn probe(path: &Path) -> std::io::Result<LockState> {
    if !path.exists() {
        return Ok(LockState::Free);
    }
    match FileLock::try_acquire(path)? {
        Some(_lock) => Ok(LockState::Free),
        None => Ok(LockState::Held(read_holder(path))),
    }
}

pub fn read_holder(path: &Path) -> Option<Holder> {
    let mut text = String::new();
    super::safe::open_read(path)
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    serde_json::from_str(text.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(run_id: &str) -> Holder {
        Holder {
            run_id: run_id.into(),
            pid: 42,
            host: "h".into(),
            since: "t0".into(),
            heartbeat: "t1".into(),
            spec: None,
        }
    }

    #[test]
    fn second_try_fails_while_held_and_succeeds_after_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.lock");
        let first = FileLock::try_acquire(&path).unwrap().expect("free");
        assert!(FileLock::try_acquire(&path).unwrap().is_none());
        drop(first);
        let again = (0..20).find_map(|_| {
            let lock = FileLock::try_acquire(&path).unwrap();
            if lock.is_none() {
                // Held for an instant more (see `free_soon`).
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            lock
        });
        assert!(again.is_some());
    }

    #[test]
    fn holder_record_is_rewritten_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.lock");
        let lock = FileLock::try_acquire(&path).unwrap().unwrap();
        lock.write_holder(&holder("a-very-long-run-identifier"))
            .unwrap();
        lock.write_holder(&holder("b")).unwrap();
        assert_eq!(read_holder(&path), Some(holder("b")));
        match probe(&path).unwrap() {
            LockState::Held(Some(h)) => assert_eq!(h.run_id, "b"),
            _ => panic!("lock should be held"),
        }
        drop(lock);
        assert!(free_soon(&path));
    }

    /// Whether the lock at `path` is free within a second: a process another test thread is
    /// starting right now holds a copy of every descriptor of this one (a lock's too) until it
    /// execs, so a lock just dropped may stay held for that instant.
    fn free_soon(path: &std::path::Path) -> bool {
        (0..20).any(|_| {
            let free = matches!(probe(path).unwrap(), LockState::Free);
            if !free {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            free
        })
    }
}
