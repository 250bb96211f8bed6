//! The durable replace of the plan without making or freeing a file each time.
//!
//! A plain atomic replace writes a new temp file and renames it over the old one, which frees
//! the old file's inode and blocks. On our CI disk (ext4 without a journal, mounted with
//! `discard`) both ends of that cost grow with a run: freeing a 650 KB plan's blocks discards
//! them, and every new inode is found by skipping each inode freed in the last minutes
//! (`recently_deleted`), of which a long run leaves thousands. Measured alone, the replace of a
//! 650 KB file took 0.77 ms this way and 0.35 ms reusing the file (50 KB: 0.35 and 0.22 ms).
//!
//! So the file the last write replaced is kept beside the target as the *swap* file: the next
//! write overwrites it in place, fsyncs it, and exchanges the two names in one step
//! (`renameat2(RENAME_EXCHANGE)`); the swap then holds the bytes just replaced (or, after a
//! write cut short, part of newer ones: it is no backup). A reader sees the old bytes or the
//! new ones, never a mix, as with the plain replace, because the swap is overwritten only
//! while no one has it open: a write lease (`F_SETLEASE`), which the kernel grants only to the
//! one open of a file, is taken first. Someone who opens the swap during the write waits for
//! the lease's end (runner is told with SIGURG, which it ignores: the default, SIGIO, would
//! kill it). A reader who opened the target before the last write, and so holds the swap's
//! inode, sends this write back to the plain replace. So does anything unusual at the swap's
//! name (a link, a hard link, a special file — removed, never opened — or a folder) or at the
//! target's (only a regular file is exchanged), and a file system that cannot exchange or
//! lease. The written file takes the target's permissions before it takes its name.
//!
//! Known limit: a reader that never holds the file open — one that `splice`s or `sendfile`s
//! its pages into a pipe and closes it before the pipe is drained — can see the next writes'
//! bytes in those pages. The plan's readers (runner, Auto-Claude, editors) read and close.
//!
//! Only for a file with one writer at a time (the plan, under its lock): two writers would
//! overwrite one swap at once.

use std::ffi::OsStr;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::{Dir, Mode, cstring, open_in, parent, replace, retry, unlink_in};

/// `super::stat_at` from the folder's handle.
fn stat_at(dir: &Dir, name: &OsStr) -> Option<libc::stat> {
    super::stat_at(std::os::fd::AsFd::as_fd(&dir.fd), name)
}

/// The name of the swap file kept beside a file named `name`.
pub fn swap_name(name: &OsStr) -> std::ffi::OsString {
    let mut swap = std::ffi::OsString::from(".");
    swap.push(name);
    swap.push(SWAP_MARK);
    swap
}

/// Is `file_name` the swap file of another file (not a leftover to clean up)?
pub fn is_swap_file(file_name: &str) -> bool {
    file_name.starts_with('.') && file_name.ends_with(SWAP_MARK)
}

const SWAP_MARK: &str = ".swap";

/// `write_atomic`, by way of the swap file when it can be overwritten safely (see the module
/// comment), else by a new temp file named `temp_name`. Durable either way: the written file
/// is fsynced before it takes the name, and the folder after.
pub fn write_atomic_swapping(path: &Path, bytes: &[u8], temp_name: &OsStr) -> std::io::Result<()> {
    let (dir, name) = parent(path)?;
    let swap = swap_name(name);
    // Only a regular file (or nothing) at the target is exchanged: anything else there (a
    // folder, a link, a FIFO) meets the plain replace, which refuses or replaces it as it
    // always did, instead of being moved aside under the swap's name.
    let target = stat_at(&dir, name);
    if target.as_ref().is_some_and(|st| !is_regular(st)) {
        return replace(path, bytes, temp_name, Some(false));
    }
    match overwrite_unshared(&dir, &swap, target.as_ref(), bytes) {
        Ok(true) => {}
        Ok(false) => return replace(path, bytes, temp_name, Some(false)),
        Err(e) => return Err(e),
    }
    crate::failpoint::hit("atomic_before_rename");
    match exchange(&dir, &swap, name) {
        Ok(true) => {}
        // Nothing at `name` yet, or a file system that cannot exchange: the swap takes the
        // name by a plain rename (and is made anew by the next write).
        Ok(false) => match super::rename_in(&dir, &swap, &dir, name) {
            Ok(()) => {}
            // The swap went away since it was written (someone removed it): the plain way.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return replace(path, bytes, temp_name, Some(false));
            }
            Err(e) => return Err(e),
        },
        Err(e) => return Err(e),
    }
    crate::failpoint::hit("atomic_after_rename");
    dir.sync().inspect_err(|_| {
        // The exchange may not be on disk: the swap may still be the plan there, and must
        // not be written in place. The next write makes a new one.
        let _ = unlink_in(&dir, &swap);
    })
}

/// Which signal the kernel sends runner when someone opens the swap while runner holds its
/// lease: SIGURG, ignored unless handled. The default, SIGIO, would kill runner.
const LEASE_BREAK_SIGNAL: libc::c_int = libc::SIGURG;

/// `fcntl`'s F_SETSIG (Linux), which the libc crate does not name.
const F_SETSIG: libc::c_int = 10;

/// Write `bytes` over the swap file `swap` (made if missing) and fsync it, if no one else has
/// it open and it is not (any more) the file at the target (`target`: its state, if there is
/// one; the swap takes its permissions). `Ok(false)`: it could not be used (left as it was,
/// or removed if it was a link, a hard link or a special file), nothing written through it.
fn overwrite_unshared(
    dir: &Dir,
    swap: &OsStr,
    target: Option<&libc::stat>,
    bytes: &[u8],
) -> std::io::Result<bool> {
    // A link, a FIFO, a device an agent put there is not even opened: its name is removed
    // (never what it leads to) so that the next write makes the swap anew. A folder stays,
    // and this write goes the plain way.
    let before = stat_at(dir, swap);
    if before.as_ref().is_some_and(|st| !is_regular(st)) {
        let _ = unlink_in(dir, swap);
        return Ok(false);
    }
    let file = match open_in(dir, swap, Mode::InPlace) {
        Ok(file) => file,
        Err(_) => {
            // A hard link (or a file swapped in since the look above): as above.
            let _ = unlink_in(dir, swap);
            return Ok(false);
        }
    };
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is open; F_SETSIG and F_SETLEASE take an int.
    let leased = unsafe {
        libc::fcntl(fd, F_SETSIG, LEASE_BREAK_SIGNAL) == 0
            && libc::fcntl(fd, libc::F_SETLEASE, libc::F_WRLCK) == 0
    };
    // The file opened must still be the swap and not the target: a writer that broke the
    // lock's rule could have exchanged them since the open, and the target is never written
    // in place.
    let ours = super::stat_fd(std::os::fd::AsFd::as_fd(&file)).ok();
    let id = |st: &libc::stat| (st.st_dev, st.st_ino);
    let still_the_swap = ours.as_ref().is_some_and(|ours| {
        stat_at(dir, swap).as_ref().map(id) == Some(id(ours)) && target.map(id) != Some(id(ours))
    });
    let release = || {
        // SAFETY: as above. Closing the file would also end the lease; it is ended at once so
        // that no one who opens the swap meanwhile waits for this function's caller.
        unsafe { libc::fcntl(fd, libc::F_SETLEASE, libc::F_UNLCK) };
    };
    if !leased || !still_the_swap {
        // Someone has the swap open (a reader of the file it was before the last write), or
        // leases are not to be had here.
        if leased {
            release();
        }
        return Ok(false);
    }
    // The file that takes the target's name keeps the target's permissions, as an edit in
    // place would (the swap has those of the file the write before replaced).
    let mode = |st: &libc::stat| st.st_mode & 0o7777;
    if let (Some(target), Some(ours)) = (target, &ours)
        && mode(target) != mode(ours)
        // SAFETY: `fd` is open.
        && unsafe { libc::fchmod(fd, mode(target)) } != 0
    {
        // Not ours to change (another owner): the plain way, which never needed to.
        release();
        return Ok(false);
    }
    let written = file
        .write_all_at(bytes, 0)
        .and_then(|()| file.set_len(bytes.len() as u64))
        .and_then(|()| file.sync_all());
    release();
    written.map(|()| true)
}

fn is_regular(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFREG
}

/// Exchange the names `a` and `b` in `dir`. `Ok(false)` if `b` is missing or the file system
/// cannot exchange (nothing moved).
fn exchange(dir: &Dir, a: &OsStr, b: &OsStr) -> std::io::Result<bool> {
    let (a, b) = (cstring(a)?, cstring(b)?);
    // SAFETY: valid descriptor and strings.
    let exchanged = retry(|| unsafe {
        libc::renameat2(
            dir.fd.as_raw_fd(),
            a.as_ptr(),
            dir.fd.as_raw_fd(),
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    });
    match exchanged {
        Ok(_) => Ok(true),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOENT | libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[path = "swap_tests.rs"]
mod tests;
