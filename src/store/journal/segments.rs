//! The journal's segments. When `events.jsonl` reaches a size ([`segment_bytes`]), the next
//! append first renames it `events.<n>.jsonl` (n one more than the highest there) and starts a
//! new `events.jsonl`: no line is ever moved or lost, and the file an append opens stays small.
//! Readers read the segments in order of n, then the live file.
//!
//! Safety, against a crash, a second process and an agent that plants files:
//! - The rename never replaces anything (`RENAME_NOREPLACE`): two processes rotating at once
//!   cannot overwrite each other's segment; the loser re-checks the (new, small) live file and
//!   leaves it. A process that opened the live file before it was renamed appends to the
//!   segment: its line is read in order, before everything after it.
//! - A crash between the rename and the next append leaves no live file: readers read the
//!   segments; the next append creates the live file.
//! - Only a regular live file with one link is renamed (an append refuses anything else,
//!   as before). A segment is read only if it is a regular file, opened without following a
//!   link, so a link planted at a segment's name is skipped. A name that is not exactly
//!   `events.<decimal n>.jsonl` (`events.01.jsonl`, non-UTF-8) is not a segment.
//! - Each file's text is split into lines on its own: a torn last line of a segment is
//!   skipped and never glued to the next file's first line; a non-UTF-8 byte spoils its line
//!   only (see `journal::read_text`).
//! - A segment deleted by hand loses its lines only; numbering goes on from the highest left.
//! - A reader that another process's rotation overtakes (its listing of the folder may miss a
//!   segment renamed meanwhile) reads again ([`settled`]): it reads the journal as it was at
//!   one moment, never with a segment missing, twice or out of order.

use std::path::{Path, PathBuf};

use super::entry::JOURNAL_FILE;

/// The size at which the live journal is rotated, unless [`SEGMENT_BYTES_ENV`] says otherwise.
pub const DEFAULT_SEGMENT_BYTES: u64 = 4 * 1024 * 1024;

/// The environment variable that sets the rotation size in bytes (a positive integer; anything
/// else keeps the default).
pub const SEGMENT_BYTES_ENV: &str = "RUNNER_JOURNAL_SEGMENT_BYTES";

/// The rotation size for this process (read once).
pub fn segment_bytes() -> u64 {
    static BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| parse_segment_bytes(std::env::var(SEGMENT_BYTES_ENV).ok().as_deref()))
}

fn parse_segment_bytes(value: Option<&str>) -> u64 {
    value
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_SEGMENT_BYTES)
}

/// The name of segment `n`.
pub fn segment_name(n: u64) -> String {
    format!("events.{n}.jsonl")
}

/// `n` if `name` is exactly a segment's name.
pub fn segment_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("events.")?.strip_suffix(".jsonl")?;
    let n = digits.parse::<u64>().ok()?;
    (digits.bytes().all(|b| b.is_ascii_digit()) && n.to_string() == digits).then_some(n)
}

/// Every name in the spec folder that is a segment's (whatever the file), lowest n first.
pub fn list(spec_dir: &Path) -> Vec<(u64, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(spec_dir) else {
        return Vec::new();
    };
    let mut found: Vec<(u64, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let n = segment_number(e.file_name().to_str()?)?;
            Some((n, e.path()))
        })
        .collect();
    found.sort_by_key(|(n, _)| *n);
    found
}

/// The live file's size if it is a regular file with one link (what an append writes to).
fn live_size(live: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(live).ok()?;
    (meta.file_type().is_file() && meta.nlink() == 1).then_some(meta.len())
}

/// Before an append: rename the live journal to the next segment if it has reached `limit`
/// bytes. `Ok(true)` if this call rotated it. One `lstat` when there is nothing to do.
pub fn rotate_if_full(spec_dir: &Path, limit: u64) -> std::io::Result<bool> {
    let live = spec_dir.join(JOURNAL_FILE);
    if live_size(&live).is_none_or(|len| len < limit) {
        return Ok(false);
    }
    // A few tries: another process may take the same number first.
    for _ in 0..3 {
        // Listed before the size is checked again: a rotation by another process in between
        // shows as a small live file, which is then left alone.
        let next = match list(spec_dir).last() {
            Some((n, _)) => match n.checked_add(1) {
                Some(next) => next,
                None => return Ok(false),
            },
            None => 1,
        };
        if live_size(&live).is_none_or(|len| len < limit) {
            return Ok(false);
        }
        if crate::store::safe::rename_new(&live, &spec_dir.join(segment_name(next)))? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A segment's bytes: a regular file, opened without following a link, else `None`.
fn read_segment(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.file_type().is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The live file's bytes (as runner always read it: never a FIFO), `None` if there is none.
fn read_live(spec_dir: &Path) -> Option<Vec<u8>> {
    crate::store::safe::read(spec_dir.join(JOURNAL_FILE)).ok()
}

/// Every file of the journal that can be read, oldest first: the segments, then the live
/// file. Empty if there is no journal. The journal as it was at one moment (see [`settled`]).
pub fn read_all(spec_dir: &Path) -> Vec<Vec<u8>> {
    settled(spec_dir, || {
        let live = read_live(spec_dir);
        let mut files: Vec<Vec<u8>> = list(spec_dir)
            .iter()
            .filter_map(|(_, p)| read_segment(p))
            .collect();
        files.extend(live);
        files
    })
}

/// Every file of the journal that can be read, oldest first (the files of [`read_all`]), handed
/// to `visit` one at a time: never more than one file in memory. The whole pass starts again
/// from `start()` when another process rotated the journal meanwhile (see [`settled`]).
pub fn fold<S>(spec_dir: &Path, start: impl Fn() -> S, visit: impl Fn(&mut S, Vec<u8>)) -> S {
    settled(spec_dir, || {
        let mut state = start();
        for (_, path) in list(spec_dir) {
            if let Some(bytes) = read_segment(&path) {
                visit(&mut state, bytes);
            }
        }
        if let Some(bytes) = read_live(spec_dir) {
            visit(&mut state, bytes);
        }
        state
    })
}

/// Which file the live file's name names (device, inode); when there is none (right after a
/// rotation), the highest segment's n instead: either changes when the journal rotates.
fn journal_state(spec_dir: &Path) -> (Option<(u64, u64)>, Option<u64>) {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(spec_dir.join(JOURNAL_FILE)) {
        Ok(meta) => (Some((meta.dev(), meta.ino())), None),
        Err(_) => (None, list(spec_dir).last().map(|(n, _)| *n)),
    }
}

/// `read` (of the live file and the segments), done again if another process rotated the
/// journal meanwhile. A rotation renames the live file while the segments are listed: the
/// listing may then miss the new segment, or one a rotation made just before (a folder read
/// while a file is renamed in it may or may not show it), and the read would lose those lines,
/// read them twice or out of order. When the live file's name still names the same file after
/// the read as before it (a file renamed away never comes back), or there is still no live
/// file and no new segment, no rotation happened in between and the read is whole. Bounded: a
/// journal rotating all the time (a segment size of a few bytes) gets the last read.
fn settled<T>(spec_dir: &Path, read: impl Fn() -> T) -> T {
    let mut tries = 0;
    loop {
        let before = journal_state(spec_dir);
        let found = read();
        tries += 1;
        if tries == 50 || journal_state(spec_dir) == before {
            return found;
        }
    }
}

/// The first answer `find` gives, trying the journal's files newest first: the live file,
/// then the segments from the highest n down, read only until an answer is found. For readers
/// that only need the recent past. The journal as it was at one moment (see [`settled`]).
pub fn read_newest_first<T>(spec_dir: &Path, find: impl Fn(Vec<u8>) -> Option<T>) -> Option<T> {
    settled(spec_dir, || {
        if let Some(found) = read_live(spec_dir).and_then(&find) {
            return Some(found);
        }
        list(spec_dir)
            .iter()
            .rev()
            .find_map(|(_, path)| read_segment(path).and_then(&find))
    })
}

/// When the journal was last written: the live file's time, else the newest segment's (a crash
/// right after a rotation leaves no live file). `None` if there is no journal.
pub fn modified(spec_dir: &Path) -> Option<std::time::SystemTime> {
    let live = std::fs::metadata(spec_dir.join(JOURNAL_FILE)).and_then(|m| m.modified());
    live.ok().or_else(|| {
        list(spec_dir)
            .iter()
            .rev()
            .find_map(|(_, p)| std::fs::symlink_metadata(p).and_then(|m| m.modified()).ok())
    })
}

/// Whether any file of the journal is there (the live file or a segment).
pub fn exists(spec_dir: &Path) -> bool {
    std::fs::symlink_metadata(spec_dir.join(JOURNAL_FILE)).is_ok() || !list(spec_dir).is_empty()
}

#[cfg(test)]
#[path = "segments_tests.rs"]
mod tests;
