//! The two writes of the journal's segments and failure records (see `store::segments`,
//! `store::failures`), by the rules of this module: resolved from the anchor, never through a
//! link. Neither is fsynced: both files are advisory.

use std::io::Write;
use std::path::Path;

use rustix::fs::RenameFlags;
use rustix::io::Errno;

use super::{Mode, errno, open_in, parent, retry};

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
    let renamed = retry(|| {
        rustix::fs::renameat_with(&dir.fd, from_name, &dir.fd, to_name, RenameFlags::NOREPLACE)
    });
    match renamed {
        Ok(()) => Ok(true),
        Err(e) if matches!(errno(&e), Some(Errno::EXIST | Errno::INVAL | Errno::NOSYS)) => {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}
