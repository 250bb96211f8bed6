//! The two writes of the journal's segments and failure records (see `store::segments`,
//! `store::failures`), by the rules of this module: resolved from the anchor, never through a
//! link. Neither is fsynced: both files are advisory.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;

use super::{Mode, cstring, open_in, parent, retry};

/// [`append`] without fsync, saying where the bytes went: the file's inode and the offset
/// just past them (an `O_APPEND` write leaves the file's offset at the end of its own bytes,
/// whatever other appenders did).
pub fn append_located(path: &Path, bytes: &[u8]) -> std::io::Result<(u64, u64)> {
    use std::io::Seek;
    use std::os::unix::fs::MetadataExt;
    let (dir, name) = parent(path)?;
    let mut file = open_in(&dir, name, Mode::Append)?;
    file.write_all(bytes)?;
    let end = file.stream_position()?;
    Ok((file.metadata()?.ino(), end))
}

/// Rename `from` to `to` within one folder, never replacing anything at `to` (not even a
/// dangling link): `renameat2(RENAME_NOREPLACE)`. `Ok(false)` if `to` is taken or the file
/// system cannot rename without replacing (then nothing moved). Not fsynced: for advisory
/// files (the journal's segments).
pub fn rename_new(from: &Path, to: &Path) -> std::io::Result<bool> {
    let (dir, from_name) = parent(from)?;
    let to_name = to
        .file_name()
        .ok_or_else(|| std::io::Error::other(format!("{} has no file name", to.display())))?;
    let (a, b) = (cstring(from_name)?, cstring(to_name)?);
    // SAFETY: valid descriptor and strings.
    let renamed = retry(|| unsafe {
        libc::renameat2(
            dir.fd.as_raw_fd(),
            a.as_ptr(),
            dir.fd.as_raw_fd(),
            b.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    });
    match renamed {
        Ok(_) => Ok(true),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EEXIST | libc::EINVAL | libc::ENOSYS)
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}
