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
//! (`renameat2(RENAME_EXCHANGE)`); the swap then holds the bytes just replaced. A reader sees
//! the old bytes or the new ones, never a mix, as with the plain replace, because the swap is
//! overwritten only while no one has it open: a write lease (`F_SETLEASE`), which the kernel
//! grants only to the one open of a file, is taken first. A reader who opened the target
//! before the last write, and so holds the swap's inode, sends this write back to the plain
//! replace. So does anything unusual at the swap's name (a link, a hard link, a folder: a
//! link is removed, never written through), and a file system that cannot exchange or lease.
//!
//! Only for a file with one writer at a time (the plan, under its lock): two writers would
//! overwrite one swap at once.

use std::ffi::OsStr;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::{Dir, Mode, cstring, open_in, parent, replace, retry, unlink_in};

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
    match overwrite_unshared(&dir, &swap, name, bytes) {
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
    dir.sync()
}

/// Write `bytes` over the swap file `swap` (made if missing) and fsync it, if no one else has
/// it open and it is not (any more) the file at `target`. `Ok(false)`: it could not be used
/// (left as it was, or removed if it was a link or a hard link), nothing written through it.
fn overwrite_unshared(
    dir: &Dir,
    swap: &OsStr,
    target: &OsStr,
    bytes: &[u8],
) -> std::io::Result<bool> {
    let file = match open_in(dir, swap, Mode::InPlace) {
        Ok(file) => file,
        Err(_) => {
            // A link, a hard link or a special file an agent put there: its name is removed
            // (never what it leads to) so that the next write makes the swap anew. A folder
            // stays, and this write goes the plain way.
            let _ = unlink_in(dir, swap);
            return Ok(false);
        }
    };
    // SAFETY: `file` is open; F_SETLEASE takes an int.
    let leased = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_WRLCK) } == 0;
    // The file opened must still be the swap and not the target: a writer that broke the
    // lock's rule could have exchanged them since the open, and the target is never written
    // in place.
    let ours = super::stat_fd(std::os::fd::AsFd::as_fd(&file)).map(|st| (st.st_dev, st.st_ino));
    let still_the_swap = ours.is_ok()
        && inode_at(dir, swap) == ours.as_ref().ok().copied()
        && inode_at(dir, target) != ours.as_ref().ok().copied();
    if !leased || !still_the_swap {
        // Someone has the swap open (a reader of the file it was before the last write), or
        // leases are not to be had here.
        if leased {
            // SAFETY: as above.
            unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
        }
        return Ok(false);
    }
    let written = file
        .write_all_at(bytes, 0)
        .and_then(|()| file.set_len(bytes.len() as u64))
        .and_then(|()| file.sync_all());
    // SAFETY: as above. Closing the file would also end the lease; it is ended now so that
    // no one who opens the swap meanwhile waits for this function's caller.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
    written.map(|()| true)
}

/// The device and inode of what is at `name` in `dir` (a link itself, not what it leads to).
fn inode_at(dir: &Dir, name: &OsStr) -> Option<(libc::dev_t, libc::ino_t)> {
    let c = cstring(name).ok()?;
    // SAFETY: an all-zero `stat` is a valid value to be overwritten by fstatat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, string and out pointer.
    let r = unsafe {
        libc::fstatat(
            dir.fd.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    (r == 0).then_some((st.st_dev, st.st_ino))
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
