//! The one way runner opens a file to write it: never through a symbolic link.
//!
//! An agent can edit any file, `.auto-claude/` included, so it can plant a link where runner is
//! about to write (a log, the journal, a lock) pointing at a file elsewhere on the machine.
//! Every open for writing here adds `O_NOFOLLOW`: a link at the final component makes the open
//! fail (ELOOP) instead of writing to the link's target. Replacing a file by rename
//! (`write_atomic`) replaces a link rather than writing through it, and its temp file is created
//! with `O_EXCL`, which does not follow links either.
//!
//! Folders: the ones runner creates (`sessions/`, `sessions/<id>/`, `slots/`) must be real
//! folders (`create_real_dirs`, `refuse_link`); the ones the user owns (`.auto-claude/`, its
//! `specs/`, a spec folder) may be links only to a place inside the repository
//! (`check_link_inside`).
//!
//! A refusal is an `io::Error` carrying a `RunnerError::BadInput` (exit 2) that names the path
//! and says what to do.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::RunnerError;

/// The error for a link where runner writes.
pub fn link_refused(path: &Path) -> std::io::Error {
    std::io::Error::other(RunnerError::bad_input(format!(
        "{} is a symbolic link; runner never writes through a link it did not create. \
         Remove it (`rm {}`) and run again",
        path.display(),
        path.display()
    )))
}

/// Open `path` with `opts`, never following a link at its last component.
pub fn open(path: &Path, opts: &mut OpenOptions) -> std::io::Result<File> {
    match opts
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Err(link_refused(path)),
        other => other,
    }
}

/// A new or truncated file at `path` (a session's log).
pub fn create(path: &Path) -> std::io::Result<File> {
    open(
        path,
        OpenOptions::new().write(true).create(true).truncate(true),
    )
}

/// `std::fs::write` that does not follow a link (a session's prompt: advisory, not fsynced).
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    create(path)?.write_all(bytes)
}

/// Append `bytes` with one `O_APPEND` write; with `durable`, fsync the file (and the folder
/// when the file was new).
pub fn append(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let existed = std::fs::symlink_metadata(path).is_ok();
    let mut file = open(path, OpenOptions::new().create(true).append(true))?;
    file.write_all(bytes)?;
    if durable {
        file.sync_all()?;
        if !existed {
            sync_parent(path)?;
        }
    }
    Ok(())
}

/// A copy of `from` at `to`, which must not exist yet (not even as a dangling link), fsynced.
pub fn copy_new(from: &Path, to: &Path) -> std::io::Result<()> {
    let bytes = std::fs::read(from)?;
    let mut file = open(to, OpenOptions::new().write(true).create_new(true))?;
    file.write_all(&bytes)?;
    file.sync_all()?;
    sync_parent(to)
}

fn sync_parent(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => File::open(dir)?.sync_all(),
        _ => Ok(()),
    }
}

/// Refuse if `path` is a link (a folder runner owns and creates itself).
pub fn refuse_link(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(link_refused(path)),
        _ => Ok(()),
    }
}

/// Create the folders of `rel` under `base` one by one, refusing any that is a link, so that
/// nothing is created or written through a link planted inside runner's own folders.
pub fn create_real_dirs(base: &Path, rel: &[&str]) -> std::io::Result<std::path::PathBuf> {
    let mut dir = base.to_path_buf();
    for part in rel {
        dir.push(part);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let meta = std::fs::symlink_metadata(&dir)?;
                if meta.file_type().is_symlink() {
                    return Err(link_refused(&dir));
                }
                if !meta.is_dir() {
                    return Err(std::io::Error::other(format!(
                        "{} is in the way: runner needs a folder there",
                        dir.display()
                    )));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(dir)
}

/// A folder the user owns (`.auto-claude/`, `specs/`, a spec folder) may be a link, but only to
/// a place inside the repository `root` (canonical): runner writes there, and must not write
/// outside its repository.
pub fn check_link_inside(root: &Path, path: &Path) -> Result<(), RunnerError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {}
        _ => return Ok(()),
    }
    match path.canonicalize() {
        Ok(target) if target.starts_with(root) => Ok(()),
        Ok(target) => Err(RunnerError::bad_input(format!(
            "{} is a symbolic link to {}, outside the repository {}; runner does not write \
             outside its repository. Replace the link with a real folder (or a link to a \
             folder inside the repository) and run again",
            path.display(),
            target.display(),
            root.display()
        ))),
        Err(e) => Err(RunnerError::bad_input(format!(
            "{} is a symbolic link that does not lead to a folder ({e}); remove it and run again",
            path.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn outside_and_link() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "precious").unwrap();
        let link = dir.path().join("link");
        symlink(&outside, &link).unwrap();
        (dir, outside, link)
    }

    fn is_refusal(e: &std::io::Error) -> bool {
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<RunnerError>())
            .is_some_and(|r| r.exit_code() == crate::error::exit::BAD_INPUT)
    }

    #[test]
    fn no_write_goes_through_a_link() {
        let (dir, outside, link) = outside_and_link();
        assert!(is_refusal(&create(&link).unwrap_err()));
        assert!(is_refusal(&write(&link, b"x").unwrap_err()));
        assert!(is_refusal(&append(&link, b"x", true).unwrap_err()));
        let dangling = dir.path().join("dangling");
        symlink(dir.path().join("new-outside"), &dangling).unwrap();
        assert!(copy_new(&outside, &dangling).is_err());
        assert!(!dir.path().join("new-outside").exists());
        assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
    }

    #[test]
    fn append_keeps_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        append(&path, b"\xffa", true).unwrap();
        append(&path, b"b\n", false).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"\xffab\n");
    }

    #[test]
    fn real_dirs_refuse_links() {
        let dir = tempfile::tempdir().unwrap();
        let made = create_real_dirs(dir.path(), &["a", "b"]).unwrap();
        assert!(made.is_dir());
        create_real_dirs(dir.path(), &["a", "b"]).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        symlink(elsewhere.path(), dir.path().join("l")).unwrap();
        assert!(is_refusal(
            &create_real_dirs(dir.path(), &["l", "x"]).unwrap_err()
        ));
        assert!(!elsewhere.path().join("x").exists());
    }

    #[test]
    fn user_folders_may_link_inside_the_repository_only() {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        symlink(root.join("real"), root.join("inside")).unwrap();
        assert!(check_link_inside(&root, &root.join("inside")).is_ok());
        assert!(check_link_inside(&root, &root.join("real")).is_ok());
        assert!(check_link_inside(&root, &root.join("missing")).is_ok());
        let elsewhere = tempfile::tempdir().unwrap();
        symlink(elsewhere.path(), root.join("out")).unwrap();
        let err = check_link_inside(&root, &root.join("out")).unwrap_err();
        assert_eq!(err.exit_code(), crate::error::exit::BAD_INPUT);
        assert!(err.to_string().contains("out"), "{err}");
    }
}
