//! One session's `output.log`, read as it grows (`runner logs`, `--follow`): whole lines as
//! they are written, the last line kept back until its newline comes (or the session ends).
//!
//! The log is opened without following a link (`fs::safe::open_read_no_link`: an agent can plant
//! one where its log belongs) and read through that one handle; a log that is not there yet is
//! looked for again on the next read. Each read is one `fstat` when nothing changed.
//!
//! The log shrinks once: at the end of a session whose output passed `agent.max_log_bytes`,
//! `agent::capture` cuts it back to its first half and writes a marker line and the last half
//! after it. While live, the log only grows (to the cap), so bytes already read never change;
//! a file shorter than what was read, or whose bytes just before the read position changed, was
//! cut. The read then goes on from the marker: where the kept tail still overlaps what was
//! read, just after what was read (nothing printed twice); past a gap, from the marker line
//! itself (which says what was cut), and the reader drops the rest of the line the cut fell in.
//! Never garbage, never a loop: the marker is found once, and only where it must be.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The most bytes one read takes (a burst of output is given in pieces).
const READ_BYTES: usize = 1 << 20;
/// The most bytes of one line kept (a longer line is cut: its end is dropped).
pub const MAX_LINE: usize = 8 << 20;
/// How many bytes before the read position are kept to notice the log was written over.
const CHECK_BYTES: usize = 64;
/// The marker line is shorter than this (its three numbers have at most 20 digits each).
const MARKER_MAX: u64 = 400;

/// A session's log being read.
pub struct SessionLog {
    path: PathBuf,
    file: Option<File>,
    /// Why the log cannot be read (a link, a FIFO), once found.
    refused: Option<String>,
    /// The next byte of the file to read.
    pos: u64,
    /// Size and modification time at the last read: unchanged, there is nothing to do.
    seen: (u64, i64, i64),
    /// The bytes just before `pos`, as read.
    before: Vec<u8>,
    /// The last line so far (no newline yet).
    partial: Vec<u8>,
    /// The cut was noticed but its marker is not all written yet.
    cutting: bool,
    /// The file's size and time when the marker was last looked for in vain.
    cut_tried: (u64, i64, i64),
}

impl SessionLog {
    pub fn new(path: &Path) -> SessionLog {
        SessionLog {
            path: path.to_path_buf(),
            file: None,
            refused: None,
            pos: 0,
            seen: (0, 0, 0),
            before: Vec::new(),
            partial: Vec::new(),
            cutting: false,
            cut_tried: (0, 0, 0),
        }
    }

    /// Why the log is not read (it is a link or not a regular file), if that is so.
    pub fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    /// The whole lines (each with its newline) written since the last call, about
    /// [`READ_BYTES`] of them at most (more when one line is longer); empty when no whole line
    /// is there (what is read of a last line is kept for the next call).
    pub fn read_lines(&mut self) -> Vec<u8> {
        let Some(size) = self.changed_size() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if self.cutting || size < self.pos || !self.same_before() {
            match self.after_cut(size) {
                Some(marker) => out.extend(marker),
                None => return out,
            }
        }
        let Some(file) = self.file.take() else {
            return out;
        };
        // Piece by piece until a whole line is there or the file's end: a long line costs
        // several pieces (and at most MAX_LINE of memory), never a missed end.
        while out.is_empty() && self.pos < size {
            let want = (size - self.pos).min(READ_BYTES as u64) as usize;
            let mut bytes = vec![0; want];
            let got = read_at_most(&file, &mut bytes, self.pos);
            if got == 0 {
                break;
            }
            bytes.truncate(got);
            self.pos += got as u64;
            self.remember_before(&bytes);
            self.take_lines(&bytes, &mut out);
        }
        if self.pos < size {
            // More to read: come back at once, not after the next change.
            self.seen = (0, 0, 0);
        }
        self.file = Some(file);
        out
    }

    /// The last line, without its newline (at the session's end); empty if there is none.
    pub fn rest(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.partial)
    }

    /// The file's size if it may have changed since the last read (`None`: nothing to do).
    fn changed_size(&mut self) -> Option<u64> {
        if self.file.is_none() && self.refused.is_none() {
            match crate::fs::safe::open_read_no_link(&self.path) {
                Ok(file) => self.file = Some(file),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
                Err(e) => {
                    self.refused = Some(format!("{} is not read: {e}", self.path.display()));
                    return None;
                }
            }
        }
        let meta = self.file.as_ref()?.metadata().ok()?;
        use std::os::unix::fs::MetadataExt;
        let now = (meta.len(), meta.mtime(), meta.mtime_nsec());
        if now == self.seen && !self.cutting {
            return None;
        }
        self.seen = now;
        Some(meta.len())
    }

    /// Whether the bytes before `pos` are still those read (a log only grows, but for its cut).
    fn same_before(&self) -> bool {
        let (Some(file), false) = (&self.file, self.before.is_empty()) else {
            return true;
        };
        let mut now = vec![0; self.before.len()];
        let start = self.pos - self.before.len() as u64;
        read_at_most(file, &mut now, start) == now.len() && now == self.before
    }

    fn remember_before(&mut self, bytes: &[u8]) {
        self.before.extend_from_slice(bytes);
        let extra = self.before.len().saturating_sub(CHECK_BYTES);
        self.before.drain(..extra);
    }

    /// The log was cut (see the module doc): find the marker and go on from it. The marker line
    /// to give out when output between what was read and the kept tail is lost; `None` while
    /// the marker is not all written yet.
    fn after_cut(&mut self, size: u64) -> Option<Vec<u8>> {
        let tried = self.seen;
        let file = self.file.as_ref()?;
        // The cut log is the cap, then the marker line (M bytes, about 110 to 170): its head is
        // half the cap, so the marker starts at (size - M) / 2 — a few hundred bytes to read,
        // whatever the cap. Its own words must put it exactly there (`find_marker`).
        let from = size.saturating_sub(MARKER_MAX) / 2;
        let mut region = vec![0; 2 * MARKER_MAX as usize];
        let got = read_at_most(file, &mut region, from);
        region.truncate(got);
        let Some(marker) = find_marker(&region, from, size) else {
            if self.cutting && self.cut_tried == tried {
                // Written over, not by the cut (the file stood still since the last look):
                // read on from its end, never from a place that means nothing.
                self.give_up_at(size);
                return Some(Vec::new());
            }
            self.cutting = true;
            self.cut_tried = tried;
            return None;
        };
        self.cutting = false;
        self.before.clear();
        // find_marker checked that this sum does not overflow.
        let tail_from_output = marker.head + marker.cut;
        if tail_from_output <= self.pos {
            // The tail overlaps what was read: go on just after it.
            self.pos = marker.tail_at + (self.pos - tail_from_output);
            return Some(Vec::new());
        }
        // A gap: the line being read is lost; the marker says what was cut.
        self.partial.clear();
        self.pos = marker.tail_at;
        Some(marker.line)
    }

    fn give_up_at(&mut self, size: u64) {
        self.cutting = false;
        self.before.clear();
        self.partial.clear();
        self.pos = size;
    }

    fn take_lines(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        let mut rest = bytes;
        while let Some(end) = memchr::memchr(b'\n', rest) {
            self.keep(&rest[..end]);
            out.append(&mut self.partial);
            out.push(b'\n');
            rest = &rest[end + 1..];
        }
        self.keep(rest);
    }

    /// Keep `bytes` of the last line, up to [`MAX_LINE`] of it.
    fn keep(&mut self, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.partial.len());
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// The cut marker `agent::capture` wrote: where its line is and what it says.
struct Marker {
    /// Bytes kept before it (the head) and cut after them.
    head: u64,
    cut: u64,
    /// Where the kept tail starts in the file.
    tail_at: u64,
    /// The marker's line (with its newline).
    line: Vec<u8>,
}

/// The marker in `region` (read from file offset `from`): the one whose own words put it where
/// it is (`the log keeps the first H`: its newline at offset H), all written.
fn find_marker(region: &[u8], from: u64, size: u64) -> Option<Marker> {
    let needle = b"\n[runner: ";
    for at in memchr::memmem::find_iter(region, needle) {
        let start = at + 1;
        let end = memchr::memchr(b'\n', &region[start..])? + start;
        let line = String::from_utf8_lossy(&region[start..end]);
        let number_after = |word: &str| -> Option<u64> {
            let (_, rest) = line.split_once(word)?;
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        };
        let (Some(cut), Some(head), Some(last)) = (
            number_after("[runner: "),
            number_after("keeps the first "),
            number_after(" and the last "),
        ) else {
            continue;
        };
        // The agent's own bytes come just before the real marker and may forge one: the real
        // one starts where its head ends, is followed by exactly its tail to the end of the
        // file, and its figures add up without overflowing.
        let tail_at = from + end as u64 + 1;
        if from + at as u64 == head
            && tail_at.checked_add(last) == Some(size)
            && head.checked_add(cut).is_some()
            && line.contains("bytes of output cut here")
        {
            return Some(Marker {
                head,
                cut,
                tail_at,
                line: region[start..=end].to_vec(),
            });
        }
    }
    None
}

/// Read up to `buf.len()` bytes at `offset`; how many were read (0 on an error).
fn read_at_most(file: &File, buf: &mut [u8], offset: u64) -> usize {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    got
}

/// The whole log at `path`, copied to `out` as it is (`runner logs --raw`), never through a
/// link; how many bytes.
pub fn copy_raw(path: &Path, out: &mut impl std::io::Write) -> std::io::Result<u64> {
    let mut file = crate::fs::safe::open_read_no_link(path)?;
    file.seek(SeekFrom::Start(0))?;
    let mut buf = vec![0; 64 * 1024];
    let mut total = 0;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        out.write_all(&buf[..n])?;
        total += n as u64;
    }
}

#[cfg(test)]
#[path = "session_log_tests.rs"]
mod tests;
