//! A chunk's earlier failures for its retry prompt, without reading the whole journal.
//!
//! When the journal takes an `attempt_failed` line, where that line is (the journal file's
//! inode, the line's offset and length) is appended to `sessions/<session>/failures.jsonl`,
//! beside that session's log. The prompt of a chunk reads the records of its own sessions (the
//! plan's attempts) and reads each line they point to from the journal itself: a few small
//! reads, whatever the length of the run. A rotation renames the file, it keeps its inode, so
//! a location stays valid in whichever segment its line ends up.
//!
//! The records are advisory (like the journal) and never trusted: each line they point to must
//! be, in full, an `attempt_failed` of that chunk and that session, in a file of this journal
//! (the live file or a segment, never through a link). Since every answer is read from the
//! journal, a forged record can at most point at the journal's own lines, never put words in
//! the prompt. When a record cannot answer (missing for an attempt the plan says failed: a
//! crash between the journal's line and the record's, a journal from an older runner; or
//! unreadable, torn, pointing nowhere, or at a line of another chunk), the answer comes from a
//! scan of the whole journal, as before ([`scanned`]): a bad record costs time, never a wrong
//! prompt.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::store::event::{AttemptFailed, Event};

/// The file, in a session's folder, that holds where the session's `attempt_failed` lines are.
pub const RECORD_FILE: &str = "failures.jsonl";

/// Where one journal line is: the file (by inode, which a rotation keeps), the offset of its
/// first byte and its length with the newline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineAt {
    pub ino: u64,
    pub offset: u64,
    pub len: u64,
}

/// Whether `id` can name a session folder (runner's ids do; a hand-edited plan's may not).
fn plain_name(id: &str) -> bool {
    !id.is_empty() && id != "." && id != ".." && !id.contains(['/', '\0'])
}

fn record_path(spec_dir: &Path, session: &str) -> PathBuf {
    spec_dir
        .join(crate::store::workspace::SESSIONS_DIR)
        .join(session)
        .join(RECORD_FILE)
}

/// Note where the `attempt_failed` just appended to the journal is, beside its session. Best
/// effort and not fsynced, like the journal: a record that is not written is read as missing.
pub(super) fn record(spec_dir: &Path, session: &str, at: LineAt) {
    if !plain_name(session) {
        return;
    }
    if let Ok(mut line) = serde_json::to_vec(&at) {
        line.push(b'\n');
        let _ = crate::store::safe::append(&record_path(spec_dir, session), &line, false);
    }
}

/// One of the plan's attempts of a chunk, as the lookup needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRef {
    pub session_id: String,
    /// The plan says this attempt failed.
    pub failed: bool,
}

/// The `attempt_failed` events of `chunk` by one of `attempts`' sessions, in the journal's
/// order: from the records when they can be trusted, else from a scan of the whole journal.
pub fn previous(spec_dir: &Path, chunk: &str, attempts: &[AttemptRef]) -> Vec<AttemptFailed> {
    from_records(spec_dir, chunk, attempts).unwrap_or_else(|| {
        let sessions: Vec<&str> = attempts.iter().map(|a| a.session_id.as_str()).collect();
        scanned(spec_dir, chunk, &sessions)
    })
}

/// The slow path and the reference: every `attempt_failed` of `chunk` in the whole journal
/// whose session is one of `sessions`.
pub fn scanned(spec_dir: &Path, chunk: &str, sessions: &[&str]) -> Vec<AttemptFailed> {
    super::read::read_typed_containing(spec_dir, "\"attempt_failed\"")
        .into_iter()
        .filter_map(|e| match e {
            Event::AttemptFailed(f) if f.chunk == chunk => Some(f),
            _ => None,
        })
        .filter(|f| sessions.contains(&f.session_id.as_str()))
        .collect()
}

/// The fast path: `None` when the records cannot answer (see the module comment).
pub fn from_records(
    spec_dir: &Path,
    chunk: &str,
    attempts: &[AttemptRef],
) -> Option<Vec<AttemptFailed>> {
    let mut files = JournalFiles::new(spec_dir);
    let mut found = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for attempt in attempts {
        let session = attempt.session_id.as_str();
        if seen.contains(&session) {
            continue;
        }
        seen.push(session);
        let failed = attempts.iter().any(|a| a.session_id == session && a.failed);
        if !plain_name(session) {
            // No record can be kept for it: only the scan knows.
            return None;
        }
        match read_regular(&record_path(spec_dir, session)) {
            Ok(Some(bytes)) => {
                let mut lines: Vec<LineAt> = Vec::new();
                for at in parse_record(&bytes)? {
                    // A line noted twice is one line of the journal.
                    if !lines.contains(&at) {
                        lines.push(at);
                    }
                }
                for at in lines {
                    found.push(files.attempt_failed(at, chunk, session)?);
                }
            }
            Ok(None) if !failed => {}
            Ok(None) | Err(()) => return None,
        }
    }
    Some(found)
}

/// A record's locations, if every line is one, whole.
fn parse_record(bytes: &[u8]) -> Option<Vec<LineAt>> {
    if bytes.last() != Some(&b'\n') {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    text.lines()
        .map(|l| serde_json::from_str::<LineAt>(l).ok())
        .collect()
}

/// A file's bytes if it is a regular file, opened without following a link; `Ok(None)` if
/// there is none, `Err` if something else is in the way (a link, a FIFO, an unreadable file).
fn read_regular(path: &Path) -> Result<Option<Vec<u8>>, ()> {
    use std::io::Read;
    match open_regular(path) {
        Ok(Some(mut file)) => {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).map_err(|_| ())?;
            Ok(Some(bytes))
        }
        Ok(None) => Ok(None),
        Err(()) => Err(()),
    }
}

fn open_regular(path: &Path) -> Result<Option<std::fs::File>, ()> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(()),
    };
    if !file.metadata().map_err(|_| ())?.file_type().is_file() {
        return Err(());
    }
    Ok(Some(file))
}

/// The journal's files, opened as they are needed and found by inode: the live file first
/// (where recent failures are), the segments only if a line is not there.
struct JournalFiles<'a> {
    spec_dir: &'a Path,
    open: Vec<(u64, std::fs::File)>,
    segments_listed: bool,
}

impl<'a> JournalFiles<'a> {
    fn new(spec_dir: &'a Path) -> Self {
        JournalFiles {
            spec_dir,
            open: Vec::new(),
            segments_listed: false,
        }
    }

    fn add(&mut self, path: &Path) {
        use std::os::unix::fs::MetadataExt;
        if let Ok(Some(file)) = open_regular(path)
            && let Ok(meta) = file.metadata()
            && !self.open.iter().any(|(ino, _)| *ino == meta.ino())
        {
            self.open.push((meta.ino(), file));
        }
    }

    fn file(&mut self, ino: u64) -> Option<&std::fs::File> {
        if self.open.is_empty() {
            self.add(&self.spec_dir.join(super::entry::JOURNAL_FILE));
        }
        if !self.open.iter().any(|(i, _)| *i == ino) && !self.segments_listed {
            self.segments_listed = true;
            for (_, path) in super::segments::list(self.spec_dir).iter().rev() {
                self.add(path);
            }
        }
        self.open.iter().find(|(i, _)| *i == ino).map(|(_, f)| f)
    }

    /// The line at `at`, if it is a whole `attempt_failed` of `chunk` by `session`.
    fn attempt_failed(&mut self, at: LineAt, chunk: &str, session: &str) -> Option<AttemptFailed> {
        use std::os::unix::fs::FileExt;
        // A journal line is small; a record asking for more is not runner's.
        if at.len == 0 || at.len > 16 * 1024 * 1024 {
            return None;
        }
        let file = self.file(at.ino)?;
        let mut bytes = vec![0u8; usize::try_from(at.len).ok()?];
        file.read_exact_at(&mut bytes, at.offset).ok()?;
        // Exactly one line: it starts a line and ends with its newline.
        if bytes.last() != Some(&b'\n') || bytes[..bytes.len() - 1].contains(&b'\n') {
            return None;
        }
        if at.offset > 0 {
            let mut before = [0u8; 1];
            file.read_exact_at(&mut before, at.offset - 1).ok()?;
            if before[0] != b'\n' {
                return None;
            }
        }
        let text = crate::store::lossy(bytes);
        let value = serde_json::from_str::<serde_json::Value>(text.trim_end()).ok()?;
        match super::entry::entry(value)?.event {
            Event::AttemptFailed(f) if f.chunk == chunk && f.session_id == session => Some(f),
            _ => None,
        }
    }
}

#[cfg(test)]
#[path = "failures_tests.rs"]
mod tests;
