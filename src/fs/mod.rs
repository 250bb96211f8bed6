//! The ground floor: the durable file primitives every layer above builds on — paths resolved
//! from a handle on the repository that never follow a link out of it (`safe`), atomic and
//! durable writes (`atomic`: temp file, fsync, rename, fsync the folder), locks with their
//! holder records (`lock`), and the watcher of a folder's changes (`watch`). `git/`, `plan/`,
//! `agent/` and `store/` use these without importing one another for them.

pub mod atomic;
pub mod lock;
pub mod safe;
pub mod watch;

pub use atomic::{is_temp_file, write_atomic};
pub use lock::{FileLock, Holder, LockState};

/// `program` as `PATH` finds it: the first executable regular file of that name in an
/// absolute folder of `PATH` (a relative one would depend on where runner was started).
pub fn on_path(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

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
