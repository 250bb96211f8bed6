//! Files at the edge: durable writes, locks, the journal.

pub mod atomic;
pub mod journal;
pub mod lock;
pub mod safe;

pub use atomic::{is_temp_file, write_atomic};
pub use journal::{Journal, read_events, read_events_containing};
pub use lock::{FileLock, Holder, LockState};

/// `path` if nothing is there, else `path-2`, `path-3`, …: names for files runner keeps aside,
/// so that two in the same second never replace each other.
/// A dangling link counts as taken: nothing is ever written through it.
pub fn unused_path(path: &std::path::Path) -> std::path::PathBuf {
    let taken = |p: &std::path::Path| std::fs::symlink_metadata(p).is_ok();
    if !taken(path) {
        return path.to_path_buf();
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (2..)
        .map(|n| path.with_file_name(format!("{name}-{n}")))
        .find(|p| !taken(p))
        .unwrap_or_else(|| path.to_path_buf())
}
