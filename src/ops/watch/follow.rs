//! A session's log followed as it grows, for watch's log pane: each poll reads only the bytes
//! appended since the last, turns its whole lines into activities (`agent::output::activity`)
//! and keeps a partial last line for later. The log is the agent's to write, so it is read as
//! hostile: a link or a FIFO planted in its place is not opened, a log that shrank (runner
//! cuts it back to its head and tail when the session ends) or was replaced is read again from
//! its start, and only the newest activities are kept.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::agent::output::activity::{self, Activity};

/// At most this many activities are kept (the pane shows the newest).
pub const KEPT: usize = 5000;

/// At most this much is read of a log when it is first opened (or read again): its tail.
const FIRST_READ: u64 = 256 * 1024;

/// At most this much is read in one poll; the rest waits for the next.
const ONE_READ: u64 = 1024 * 1024;

/// A partial line longer than this is taken as a whole line (an agent printing without a
/// newline must not grow runner's memory).
const LONGEST_LINE: usize = 64 * 1024;

/// One session's log, followed.
pub struct Follow {
    path: PathBuf,
    /// The file read so far (device, inode) and where reading stopped.
    file: Option<(u64, u64)>,
    offset: u64,
    partial: Vec<u8>,
    activities: VecDeque<Activity>,
    /// Why the log cannot be read (a link, a FIFO, a folder), if it cannot.
    refused: Option<String>,
}

impl Follow {
    /// The log of session `id` under `sessions_dir`, nothing read yet.
    pub fn new(sessions_dir: &Path, id: &str) -> Follow {
        Follow {
            path: crate::store::sessions::log_of(sessions_dir, id),
            file: None,
            offset: 0,
            partial: Vec::new(),
            activities: VecDeque::new(),
            refused: None,
        }
    }

    /// The activities read so far, oldest first.
    pub fn activities(&self) -> &VecDeque<Activity> {
        &self.activities
    }

    /// Why the log is not shown, when it is not (raw text: it names a path).
    pub fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    /// Read what was written since the last poll; whether anything shown changed.
    pub fn poll(&mut self) -> bool {
        let mut file = match open_log(&self.path) {
            Ok(Some(file)) => file,
            Ok(None) => return false,
            Err(why) => {
                let changed = self.refused.as_deref() != Some(why.as_str());
                self.refused = Some(why);
                return changed;
            }
        };
        self.refused = None;
        let Ok(meta) = file.metadata() else {
            return false;
        };
        let id = (meta.dev(), meta.ino());
        let len = meta.len();
        let mut changed = false;
        if self.file != Some(id) || len < self.offset {
            // A new file, or this one cut back: start again from its tail.
            changed = !self.activities.is_empty();
            self.activities.clear();
            self.partial.clear();
            self.file = Some(id);
            self.offset = len.saturating_sub(FIRST_READ);
            // A tail read from the middle starts inside a line: that piece is dropped.
            if self.offset > 0 {
                self.partial.clear();
                self.skip_to_line_start(&mut file, len);
            }
        }
        if len == self.offset {
            return changed;
        }
        let mut bytes = Vec::new();
        let read = file
            .seek(SeekFrom::Start(self.offset))
            .and_then(|_| file.take(ONE_READ).read_to_end(&mut bytes));
        if read.is_err() {
            return changed;
        }
        self.offset += bytes.len() as u64;
        self.take(&bytes) || changed
    }

    /// Move `offset` past the first newline at or after it.
    fn skip_to_line_start(&mut self, file: &mut std::fs::File, len: u64) {
        let mut buf = vec![0u8; 8192];
        while self.offset < len {
            let Ok(n) = file
                .seek(SeekFrom::Start(self.offset))
                .and_then(|_| file.read(&mut buf))
            else {
                return;
            };
            if n == 0 {
                return;
            }
            if let Some(at) = memchr::memchr(b'\n', &buf[..n]) {
                self.offset += at as u64 + 1;
                return;
            }
            self.offset += n as u64;
        }
    }

    /// Whole lines of `partial` + `bytes` turned into activities; the rest kept.
    fn take(&mut self, bytes: &[u8]) -> bool {
        self.partial.extend_from_slice(bytes);
        let whole = match memchr::memrchr(b'\n', &self.partial) {
            Some(at) => at + 1,
            None if self.partial.len() > LONGEST_LINE => self.partial.len(),
            None => return false,
        };
        let rest = self.partial.split_off(whole);
        let lines = std::mem::replace(&mut self.partial, rest);
        let new = activity::of_lines(&lines);
        let changed = !new.is_empty();
        self.activities.extend(new);
        while self.activities.len() > KEPT {
            self.activities.pop_front();
        }
        changed
    }
}

/// The log opened for reading: `Ok(None)` when it is not there yet; `Err(why)` when what is
/// there is not a regular file runner wrote (a link is not followed, a FIFO never blocks).
fn open_log(path: &Path) -> Result<Option<std::fs::File>, String> {
    use rustix::fs::{FileType, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => {
            return Err(format!("{} is a link: not followed", path.display()));
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| format!("{}: {e}", path.display()))?;
    if FileType::from_raw_mode(st.st_mode as _) != FileType::RegularFile {
        return Err(format!("{} is not a regular file", path.display()));
    }
    Ok(Some(std::fs::File::from(fd)))
}

#[cfg(test)]
#[path = "follow_tests.rs"]
mod tests;
