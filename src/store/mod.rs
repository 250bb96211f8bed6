//! Mechanism layer: runner's state on disk. Workspace and spec paths, atomic durable writes
//! (`atomic`, `safe`: never through a link or a FIFO), locks with holder records (`lock`,
//! `guard`), ids, and the typed journal (`event`, `journal`, its `segments`, and the
//! `failures` kept beside each session for retry prompts). No policy and no printing here.

pub mod agent_memory;
pub mod atomic;
pub mod checkpoint;
pub mod event;
pub mod guard;
pub mod ids;
pub mod journal;
pub mod ledger;
pub mod lock;
pub mod new_spec;
pub mod pause;
pub mod resolve_cache;
pub mod runs;
pub mod safe;
pub mod spec;
pub mod spec_text;
pub mod status_cache;
pub mod watch;
pub mod workspace;

pub use atomic::{is_temp_file, write_atomic};
pub use journal::{Event, Journal, failures, lines, read_entries, read_typed, segments};
pub use lock::{FileLock, Holder, LockState};
pub use workspace::{SpecPaths, Workspace};

/// An I/O error that names the file it happened to ("Permission denied" alone does not say
/// which of runner's files to look at). Its kind is kept, so callers can still match on it.
pub fn at(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> std::io::Error + '_ {
    move |e| {
        // A refusal (a link where runner writes) already names its path and carries the
        // `RunnerError` that sets the exit code: keep it as it is.
        if e.get_ref()
            .is_some_and(|inner| inner.is::<crate::error::RunnerError>())
        {
            return e;
        }
        std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
    }
}

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

/// Bytes as text, a byte that is not UTF-8 replaced by U+FFFD (no copy when all is UTF-8). For
/// what runner reads but did not write itself in full: agent and verification output, the
/// journal.
pub fn lossy(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// A file's text, lossy (see [`lossy`]); empty if it cannot be read.
pub fn read_lossy(path: &std::path::Path) -> String {
    std::fs::read(path).map(lossy).unwrap_or_default()
}
