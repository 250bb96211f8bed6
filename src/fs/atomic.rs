//! Durable replacement of a file: temp file in the same folder, fsync, rename, fsync the folder
//! (done in `safe::write_atomic`, from the folder's handle).
//! A reader sees the old bytes or the new ones, never a mix, even after a power cut.
//!
//! Written here rather than with the `atomicwrites` crate: that crate makes, fsyncs and removes
//! a temporary *folder* for every write, which cost about 1 ms a write on our CI disk and put
//! the plan's load+save benchmark over its 5 ms target (see BENCHMARKS.md). The temp file sits
//! beside the target, named `.<name>.tmp-<pid>-<n>`, so recovery can find leftovers of a write
//! that was cut short (`is_temp_file`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

const TEMP_MARK: &str = ".tmp-";

/// See `safe::write_atomic`: the temp file and the rename are resolved from the folder's
/// handle, never through a link.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temp = temp_beside(path)?;
    super::safe::write_atomic(path, bytes, temp.as_os_str()).map_err(super::at(path))
}

/// Write `bytes` durably as a new file in `dir`, under the first of `names` that is not taken:
/// never replacing a file, not even one another process wrote a moment ago (the bytes are
/// written to a temp file, fsynced, then renamed with `RENAME_NOREPLACE`, and the folder
/// fsynced). Returns the path written.
pub fn write_new(
    dir: &Path,
    names: impl IntoIterator<Item = String>,
    bytes: &[u8],
) -> std::io::Result<std::path::PathBuf> {
    let staged = dir.join(temp_beside(&dir.join("new"))?);
    write_atomic(&staged, bytes)?;
    for name in names {
        let path = dir.join(name);
        match super::safe::rename_new(&staged, &path) {
            Ok(true) => {
                std::fs::File::open(dir)
                    .and_then(|d| d.sync_all())
                    .map_err(super::at(dir))?;
                return Ok(path);
            }
            Ok(false) => continue,
            Err(e) => {
                let _ = super::safe::remove(&staged);
                return Err(e);
            }
        }
    }
    let _ = super::safe::remove(&staged);
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!("{}: every name tried is taken", dir.display()),
    ))
}

/// `write_atomic` of an advisory file (a run record, the checkpoint): as durable, with
/// failpoints of its own (see `safe::write_atomic_advisory`).
pub fn write_atomic_advisory(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temp = temp_beside(path)?;
    super::safe::write_atomic_advisory(path, bytes, temp.as_os_str()).map_err(super::at(path))
}

/// `write_atomic` without any fsync: for a cache, whose loss or damage costs only time.
pub fn write_unsynced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temp = temp_beside(path)?;
    super::safe::write_replacing(path, bytes, temp.as_os_str()).map_err(super::at(path))
}

/// The name of a new temp file for `path`, in its folder.
fn temp_beside(path: &Path) -> std::io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other(format!("{} has no file name", path.display())))?;
    Ok(temp_path(Path::new(""), &name.to_string_lossy()))
}

fn temp_path(dir: &Path, name: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{name}{TEMP_MARK}{}-{n}", std::process::id()))
}

/// Is `file_name` a temp file left by an interrupted `write_atomic`?
pub fn is_temp_file(file_name: &str) -> bool {
    file_name.starts_with('.') && file_name.contains(TEMP_MARK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("f.json")]);
    }

    #[test]
    fn temp_names_are_recognised() {
        let dir = Path::new("/x");
        let temp = temp_path(dir, "implementation_plan.json");
        let name = temp.file_name().unwrap().to_str().unwrap();
        assert!(is_temp_file(name), "{name}");
        assert!(!is_temp_file("implementation_plan.json"));
        assert!(!is_temp_file("events.jsonl"));
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        write_atomic(&path, b"old").unwrap();
        // A folder in the way of the rename makes it fail.
        let blocked = dir.path().join("sub");
        std::fs::create_dir(&blocked).unwrap();
        std::fs::write(blocked.join("x"), "x").unwrap();
        assert!(write_atomic(&blocked, b"new").is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        let temps = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| is_temp_file(e.as_ref().unwrap().file_name().to_str().unwrap()))
            .count();
        assert_eq!(temps, 0);
    }
}
