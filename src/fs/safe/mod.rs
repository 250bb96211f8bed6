//! The one way runner writes a state file: never through a link, never outside the repository,
//! never into a file that is not its own.
//!
//! An agent can edit any file, `.auto-claude/` included, and it runs *while* runner writes: it
//! can plant a link where runner is about to write (a log, the journal, a lock), or swap a
//! whole folder (the spec folder, `.auto-claude/`, a session folder) for a link to a folder
//! elsewhere, even right after runner created it. Checking a path and then opening it would
//! race with that. So every write here is resolved from a directory handle:
//!
//! - `anchor` opens the repository's root once, when a command starts (`Workspace::open`).
//! - A path below the root is walked from that handle one folder at a time with
//!   `openat(dir, name, O_NOFOLLOW | O_DIRECTORY)`: a link anywhere on the way (put there at
//!   any moment) makes the walk fail instead of leaving the repository. Folders the user may
//!   link inside the repository (`.auto-claude/`, `specs/`, a spec folder) are checked and
//!   replaced by their real location when the command starts (`Workspace`), so the walk meets
//!   real folders only; a link that appears later is a swap and is refused.
//! - The file itself is opened with `openat(dir, name, O_NOFOLLOW | O_NONBLOCK)`, then
//!   checked with `fstat`: it must be a regular file (a FIFO would block runner forever, a
//!   device is not runner's), and a file written in place must not have another hard link (it
//!   would be someone else's file too). `O_TRUNC` is applied only after those checks.
//! - A durable replacement is a temp file created with `O_EXCL` in the folder's handle, fsync,
//!   `renameat` within that same handle, fsync of the handle.
//!
//! A refusal is an `io::Error` carrying a `RunnerError::BadInput` (exit 2) that names the path
//! and says what to do. Paths not below the anchored root (unit tests, `runner demo`'s new
//! folder) keep the last-component rules only.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustix::fs::{AtFlags, FileType, Mode as Perm, OFlags, Stat};
use rustix::io::Errno;

use crate::error::RunnerError;

mod journal_io;
pub use journal_io::{append_located, rename_new};

fn refusal(err: RunnerError) -> std::io::Error {
    std::io::Error::other(err)
}

/// The advice for a file runner refuses: a command that removes it, quoted for the shell.
fn remove_hint(path: &Path) -> String {
    format!(
        "remove it (`rm {}`) and run again",
        crate::sh(path.display().to_string())
    )
}

/// The error for a link where runner writes.
pub fn link_refused(path: &Path) -> std::io::Error {
    refusal(
        RunnerError::bad_input(format!(
            "{} is a symbolic link; runner never writes through a link it did not create",
            path.display()
        ))
        .with_hint(remove_hint(path)),
    )
}

fn not_regular(path: &Path) -> std::io::Error {
    refusal(
        RunnerError::bad_input(format!(
            "{} is not a regular file (a FIFO, a device or a socket); runner only writes its own \
             files",
            path.display()
        ))
        .with_hint(remove_hint(path)),
    )
}

/// A folder where runner reads a file: `rm` would not remove it, and it is no FIFO either.
fn folder_not_file(path: &Path) -> std::io::Error {
    refusal(
        RunnerError::bad_input(format!(
            "{} is a folder, where runner reads a file",
            path.display()
        ))
        .with_hint(format!(
            "move the folder away (`mv {0} {0}.folder`) and run again",
            crate::sh(path.display().to_string())
        )),
    )
}

fn hard_linked(path: &Path) -> std::io::Error {
    refusal(
        RunnerError::bad_input(format!(
            "{} has other hard links; writing it in place would change another file too",
            path.display()
        ))
        .with_hint(remove_hint(path)),
    )
}

fn in_the_way(path: &Path) -> std::io::Error {
    refusal(
        RunnerError::bad_input(format!(
            "{} is in the way: runner needs a folder there",
            path.display()
        ))
        .with_hint("move it away and run again"),
    )
}

/// The repository root, opened once: every write below it is resolved from this handle.
struct Anchor {
    /// The root as the command found it, and canonical (paths may be built from either).
    root: PathBuf,
    canonical: PathBuf,
    fd: OwnedFd,
}

static ANCHOR: RwLock<Option<Arc<Anchor>>> = RwLock::new(None);

/// Resolve every later write below `root` from a handle on it (see the module comment).
/// runner works on one repository per process; a later call replaces the anchor.
pub fn anchor(root: &Path) -> std::io::Result<()> {
    let file = File::open(root)?;
    let canonical = root.canonicalize()?;
    let anchor = Anchor {
        root: root.to_path_buf(),
        canonical,
        fd: OwnedFd::from(file),
    };
    *ANCHOR.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(anchor));
    Ok(())
}

fn current_anchor() -> Option<Arc<Anchor>> {
    ANCHOR.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// `f` again while a signal interrupts it.
fn retry<T>(mut f: impl FnMut() -> rustix::io::Result<T>) -> std::io::Result<T> {
    loop {
        match f() {
            Err(Errno::INTR) => continue,
            r => return r.map_err(std::io::Error::from),
        }
    }
}

fn openat(dir: BorrowedFd, name: &OsStr, flags: OFlags) -> std::io::Result<OwnedFd> {
    let mode = Perm::from_bits_truncate(0o666);
    retry(|| rustix::fs::openat(dir, name, flags | OFlags::CLOEXEC, mode))
}

fn stat_fd(fd: BorrowedFd) -> std::io::Result<Stat> {
    retry(|| rustix::fs::fstat(fd))
}

fn is_regular(st: &Stat) -> bool {
    FileType::from_raw_mode(st.st_mode as _) == FileType::RegularFile
}

/// Back to blocking I/O once the file is known to be regular.
fn clear_nonblock(fd: &OwnedFd) -> std::io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(fd)?;
    rustix::fs::fcntl_setfl(fd, flags - OFlags::NONBLOCK)?;
    Ok(())
}

/// What is at `name` in `dir` (a link itself, not what it leads to), if anything.
fn stat_at(dir: BorrowedFd, name: &OsStr) -> Option<Stat> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()
}

fn is_link_at(dir: BorrowedFd, name: &OsStr) -> bool {
    stat_at(dir, name)
        .is_some_and(|st| FileType::from_raw_mode(st.st_mode as _) == FileType::Symlink)
}

fn exists_at(dir: BorrowedFd, name: &OsStr) -> bool {
    stat_at(dir, name).is_some()
}

/// An open folder and the path it was reached by (for messages).
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    fn sync(&self) -> std::io::Result<()> {
        retry(|| rustix::fs::fsync(&self.fd))
    }

    /// The folder `name` inside this one, created first with `create`; never a link.
    fn child(&self, name: &OsStr, create: bool) -> std::io::Result<Dir> {
        let path = self.path.join(name);
        if create {
            match rustix::fs::mkdirat(&self.fd, name, Perm::from_bits_truncate(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW;
        match openat(self.fd.as_fd(), name, flags) {
            Ok(fd) => Ok(Dir { fd, path }),
            Err(e) if errno(&e) == Some(Errno::LOOP) || errno(&e) == Some(Errno::NOTDIR) => {
                if is_link_at(self.fd.as_fd(), name) {
                    Err(link_refused(&path))
                } else {
                    Err(in_the_way(&path))
                }
            }
            Err(e) => Err(e),
        }
    }
}

/// The folder at `path`, walked from the anchor without following any link (see the module
/// comment); with `create`, missing folders are made on the way.
pub fn dir(path: &Path, create: bool) -> std::io::Result<Dir> {
    let below = current_anchor().and_then(|a| {
        let rel = path
            .strip_prefix(&a.root)
            .or_else(|_| path.strip_prefix(&a.canonical))
            .ok()?
            .to_path_buf();
        Some((a, rel))
    });
    let Some((anchor, rel)) = below else {
        if create {
            std::fs::create_dir_all(path)?;
        }
        let file = File::open(path)?;
        return Ok(Dir {
            fd: OwnedFd::from(file),
            path: path.to_path_buf(),
        });
    };
    let mut dir = Dir {
        fd: anchor.fd.try_clone()?,
        path: anchor.root.clone(),
    };
    for part in rel.components() {
        match part {
            Component::Normal(name) => dir = dir.child(name, create)?,
            Component::CurDir => {}
            _ => {
                return Err(refusal(RunnerError::bad_input(format!(
                    "{} leads out of the repository; runner writes only inside it",
                    path.display()
                ))));
            }
        }
    }
    Ok(dir)
}

/// The folder holding `path` and the file's name in it.
fn parent(path: &Path) -> std::io::Result<(Dir, &OsStr)> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other(format!("{} has no file name", path.display())))?;
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Ok((dir(folder, false)?, name))
}

/// How a file is opened for writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Created if missing, emptied (a session's log).
    Truncate,
    /// Created if missing, every write at the end (the journal).
    Append,
    /// Created if missing, read and written in place (a lock, the last-good copy).
    InPlace,
    /// Must not exist yet (a copy kept aside, a temp file).
    New,
}

fn open_in(dir: &Dir, name: &OsStr, mode: Mode) -> std::io::Result<File> {
    let path = dir.path.join(name);
    let access = match mode {
        Mode::Truncate => OFlags::WRONLY | OFlags::CREATE,
        Mode::Append => OFlags::WRONLY | OFlags::CREATE | OFlags::APPEND,
        Mode::InPlace => OFlags::RDWR | OFlags::CREATE,
        Mode::New => OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
    };
    // NONBLOCK: opening a FIFO for writing would otherwise wait for a reader forever.
    let fd = match openat(
        dir.fd.as_fd(),
        name,
        access | OFlags::NOFOLLOW | OFlags::NONBLOCK,
    ) {
        Ok(fd) => fd,
        Err(e) if errno(&e) == Some(Errno::LOOP) => return Err(link_refused(&path)),
        // A FIFO with no reader, a socket.
        Err(e) if errno(&e) == Some(Errno::NXIO) => return Err(not_regular(&path)),
        Err(e) => return Err(e),
    };
    let st = stat_fd(fd.as_fd())?;
    if !is_regular(&st) {
        return Err(not_regular(&path));
    }
    if mode != Mode::New && st.st_nlink > 1 {
        return Err(hard_linked(&path));
    }
    clear_nonblock(&fd)?;
    let file = File::from(fd);
    if mode == Mode::Truncate {
        file.set_len(0)?;
    }
    Ok(file)
}

/// Open `path` for writing (see `Mode`), by the rules in the module comment.
pub fn open(path: &Path, mode: Mode) -> std::io::Result<File> {
    let (dir, name) = parent(path)?;
    open_in(&dir, name, mode)
}

/// A new or emptied file at `path` (a session's log).
pub fn create(path: &Path) -> std::io::Result<File> {
    open(path, Mode::Truncate)
}

/// `std::fs::write` by the rules above (a session's prompt: advisory, not fsynced).
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    create(path)?.write_all(bytes)
}

/// Overwrite the file at `path` (created if missing) in place with `bytes`, without a rename
/// or an fsync: for copies kept beside the state (the plan's last-good copy) that are
/// rewritten often. Writing over the same file reuses its blocks, where replacing it frees them
/// and takes new ones (slow on disks that discard freed blocks). A crash may leave it torn:
/// its readers check that it parses.
pub fn overwrite(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let file = open(path, Mode::InPlace)?;
    file.write_all_at(bytes, 0)?;
    file.set_len(bytes.len() as u64)
}

/// Append `bytes` with one `O_APPEND` write; with `durable`, fsync the file (and the folder
/// when the file was new).
pub fn append(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let (dir, name) = parent(path)?;
    let existed = exists_at(dir.fd.as_fd(), name);
    let mut file = open_in(&dir, name, Mode::Append)?;
    file.write_all(bytes)?;
    if durable {
        file.sync_all()?;
        if !existed {
            dir.sync()?;
        }
    }
    Ok(())
}

/// Append `bytes` to the file at `path` (created if missing) all or nothing: if the write fails
/// part way (a full disk), the file is cut back to its old length, so no partial line is left.
/// Durable (file and, when new, folder fsynced). Only for a file no one else appends to at the
/// same time (the caller holds a lock): the cut would drop their bytes too.
pub fn append_or_undo(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (dir, name) = parent(path)?;
    let existed = exists_at(dir.fd.as_fd(), name);
    let mut file = open_in(&dir, name, Mode::Append)?;
    let old_len = file.metadata()?.len();
    if let Err(e) = file.write_all(bytes).and_then(|()| file.sync_all()) {
        return match file.set_len(old_len).and_then(|()| file.sync_all()) {
            Ok(()) => Err(e),
            Err(undo) => Err(std::io::Error::other(format!(
                "{e}; cutting {} back to {old_len} bytes failed too: {undo}",
                path.display()
            ))),
        };
    }
    if !existed {
        dir.sync()?;
    }
    Ok(())
}

/// A copy of `from` at `to`, which must not exist yet (not even as a dangling link), fsynced.
pub fn copy_new(from: &Path, to: &Path) -> std::io::Result<()> {
    let bytes = read(from)?;
    let (dir, name) = parent(to)?;
    let mut file = open_in(&dir, name, Mode::New)?;
    file.write_all(&bytes)?;
    file.sync_all()?;
    dir.sync()
}

/// Replace `path` durably: a temp file beside it (`temp_name`), fsync, rename within the
/// folder's handle, fsync of the folder. A reader sees the old bytes or the new ones.
pub fn write_atomic(path: &Path, bytes: &[u8], temp_name: &OsStr) -> std::io::Result<()> {
    replace(path, bytes, temp_name, Some(false))
}

/// `write_atomic` of an advisory file (run record, checkpoint): its failpoints are its own, so
/// that the crash tests' counts of the state's durable writes stay what they were.
pub fn write_atomic_advisory(path: &Path, bytes: &[u8], temp_name: &OsStr) -> std::io::Result<()> {
    replace(path, bytes, temp_name, Some(true))
}

/// `write_atomic` without an fsync, for a cache (`status_cache`): a reader sees the old bytes
/// or the new ones; after a power cut the file may be empty or torn, which its reader detects.
pub fn write_replacing(path: &Path, bytes: &[u8], temp_name: &OsStr) -> std::io::Result<()> {
    replace(path, bytes, temp_name, None)
}

/// `durable`: `None` no fsync; `Some(advisory)` fsynced, passing the state's or advisory points.
fn replace(
    path: &Path,
    bytes: &[u8],
    temp_name: &OsStr,
    durable: Option<bool>,
) -> std::io::Result<()> {
    let (dir, name) = parent(path)?;
    let result = (|| {
        let mut file = open_in(&dir, temp_name, Mode::New)?;
        keep_mode(&dir, name, &file);
        file.write_all(bytes)?;
        let Some(advisory) = durable else {
            return rename_in(&dir, temp_name, &dir, name);
        };
        file.sync_all()?;
        match advisory {
            true => crate::failpoint::hit("advisory_before_rename"),
            false => crate::failpoint::hit("atomic_before_rename"),
        }
        rename_in(&dir, temp_name, &dir, name)?;
        match advisory {
            true => crate::failpoint::hit("advisory_after_rename"),
            false => crate::failpoint::hit("atomic_after_rename"),
        }
        dir.sync()
    })();
    if result.is_err() {
        let _ = unlink_in(&dir, temp_name);
    }
    result
}

/// The new file that replaces `name` takes its permissions, as an edit in place would; a file
/// runner may not change (another owner's) keeps the default ones.
fn keep_mode(dir: &Dir, name: &OsStr, new: &File) {
    if let Some(old) = stat_at(dir.fd.as_fd(), name).filter(is_regular) {
        let _ = rustix::fs::fchmod(new, Perm::from_raw_mode(old.st_mode as _));
    }
}

fn rename_in(from_dir: &Dir, from: &OsStr, to_dir: &Dir, to: &OsStr) -> std::io::Result<()> {
    retry(|| rustix::fs::renameat(&from_dir.fd, from, &to_dir.fd, to))
}

fn unlink_in(dir: &Dir, name: &OsStr) -> std::io::Result<()> {
    retry(|| rustix::fs::unlinkat(&dir.fd, name, AtFlags::empty()))
}

/// The system's error number in `e`, if it has one.
fn errno(e: &std::io::Error) -> Option<Errno> {
    e.raw_os_error().map(Errno::from_raw_os_error)
}

/// Rename `from` to `to` (a file kept aside), both resolved by the rules above; the folder is
/// fsynced.
pub fn rename(from: &Path, to: &Path) -> std::io::Result<()> {
    let (from_dir, from_name) = parent(from)?;
    let (to_dir, to_name) = parent(to)?;
    rename_in(&from_dir, from_name, &to_dir, to_name)?;
    to_dir.sync()
}

/// Remove the file at `path` (a marker, a lock), resolved by the rules above: a link on the
/// way is refused, so nothing outside the repository is removed.
pub fn remove(path: &Path) -> std::io::Result<()> {
    let (dir, name) = parent(path)?;
    unlink_in(&dir, name)
}

/// Open `path` to read it, refusing anything but a regular file: reading a FIFO planted where
/// runner keeps state would wait for a writer forever. (Reads may follow links: what runner
/// reads is judged before use, and nothing is written through them.)
pub fn open_read(path: impl AsRef<Path>) -> std::io::Result<File> {
    let path = path.as_ref();
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = retry(|| rustix::fs::open(path, flags, Perm::empty()))?;
    let st = stat_fd(fd.as_fd())?;
    if FileType::from_raw_mode(st.st_mode as _) == FileType::Directory {
        return Err(folder_not_file(path));
    }
    if !is_regular(&st) {
        return Err(not_regular(path));
    }
    clear_nonblock(&fd)?;
    Ok(File::from(fd))
}

/// Open `path` to read it as [`open_read`] does, but never through a link: not the file's
/// own name (an agent's log replaced by a link to a secret), nor a folder on the way below the
/// anchored root (walked as writes are). For what runner shows as it is (`runner logs`).
pub fn open_read_no_link(path: &Path) -> std::io::Result<File> {
    let (dir, name) = parent(path)?;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match openat(dir.fd.as_fd(), name, flags) {
        Ok(fd) => fd,
        Err(e) if errno(&e) == Some(Errno::LOOP) => {
            return Err(not_read(path, "a symbolic link"));
        }
        Err(e) => return Err(e),
    };
    if !is_regular(&stat_fd(fd.as_fd())?) {
        return Err(not_read(path, "not a regular file"));
    }
    clear_nonblock(&fd)?;
    Ok(File::from(fd))
}

fn not_read(path: &Path, what: &str) -> std::io::Error {
    refusal(RunnerError::bad_input(format!(
        "{} is {what}; runner does not read through it",
        path.display()
    )))
}

/// `std::fs::read` of a regular file only (see `open_read`).
pub fn read(path: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
    let path = path.as_ref();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut open_read(path)?, &mut bytes)?;
    Ok(bytes)
}

/// `std::fs::read_to_string` of a regular file only (see `open_read`).
pub fn read_to_string(path: impl AsRef<Path>) -> std::io::Result<String> {
    String::from_utf8(read(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
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
pub fn create_real_dirs(base: &Path, rel: &[&str]) -> std::io::Result<PathBuf> {
    let mut dir = dir(base, false)?;
    for part in rel {
        dir = dir.child(OsStr::new(part), true)?;
    }
    Ok(dir.path)
}

/// Create the folder `path` and any missing folder on the way (below the anchor: none of them
/// may be a link).
pub fn create_dirs(path: &Path) -> std::io::Result<()> {
    dir(path, true).map(|_| ())
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
             outside its repository",
            path.display(),
            target.display(),
            root.display()
        ))
        .with_hint(
            "replace the link with a real folder (or a link to a folder inside the repository) and run again",
        )),
        Err(e) => Err(RunnerError::bad_input(format!(
            "{} is a symbolic link that does not lead to a folder ({e})",
            path.display()
        ))
        .with_hint("remove it and run again")),
    }
}

#[cfg(test)]
mod tests;
