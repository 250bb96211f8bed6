//! A chunk's earlier failures for its retry prompt, without reading the whole journal.
//!
//! When the journal takes an `attempt_failed` line, the same line is appended to
//! `sessions/<session>/failures.jsonl`, beside that session's log. The prompt of a chunk reads
//! the records of its own sessions (the plan's attempts): a few small files, whatever the
//! length of the run. Like the journal these records are advisory and never trusted blindly:
//! a record is used only if every line of it is an `attempt_failed` of that chunk and that
//! session, whole (no torn line), and the journal is still there. A session whose attempt the
//! plan says failed but that has no record (a crash between the journal's line and the
//! record's, a journal written by an older runner, a record deleted) makes the answer come
//! from a scan of the whole journal, as before ([`scanned`]): a missing, torn or forged
//! record costs time, never a wrong prompt.

use std::path::{Path, PathBuf};

use super::event::{AttemptFailed, Event};

/// The file, in a session's folder, that holds the session's `attempt_failed` lines.
pub const RECORD_FILE: &str = "failures.jsonl";

/// Whether `id` can name a session folder (runner's ids do; a hand-edited plan's may not).
fn plain_name(id: &str) -> bool {
    !id.is_empty() && id != "." && id != ".." && !id.contains(['/', '\0'])
}

fn record_path(spec_dir: &Path, session: &str) -> PathBuf {
    spec_dir
        .join(super::workspace::SESSIONS_DIR)
        .join(session)
        .join(RECORD_FILE)
}

/// Keep `line` (an `attempt_failed` just appended to the journal) beside its session. Best
/// effort and not fsynced, like the journal: a record that is not written is read as missing.
pub(super) fn record(spec_dir: &Path, session: &str, line: &[u8]) {
    if plain_name(session) {
        let _ = super::safe::append(&record_path(spec_dir, session), line, false);
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
    super::journal::read_typed_containing(spec_dir, "\"attempt_failed\"")
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
    if attempts.is_empty() {
        return Some(Vec::new());
    }
    // A journal removed by hand: its failures are gone for the scan too.
    if !super::segments::exists(spec_dir) {
        return None;
    }
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
        match read_record(spec_dir, session) {
            Ok(Some(bytes)) => found.extend(validate(&bytes, chunk, session)?),
            Ok(None) if !failed => {}
            Ok(None) | Err(()) => return None,
        }
    }
    Some(found)
}

/// The record's bytes, `Ok(None)` if there is none, `Err` if something else is in the way (a
/// link, a FIFO, an unreadable file).
fn read_record(spec_dir: &Path, session: &str) -> Result<Option<Vec<u8>>, ()> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let path = record_path(spec_dir, session);
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(()),
    };
    if !file.metadata().map_err(|_| ())?.file_type().is_file() {
        return Err(());
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|_| ())?;
    Ok(Some(bytes))
}

/// Every line of a record, if each is a whole `attempt_failed` of `chunk` by `session`.
fn validate(bytes: &[u8], chunk: &str, session: &str) -> Option<Vec<AttemptFailed>> {
    if bytes.is_empty() || bytes.last() != Some(&b'\n') {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    text.lines()
        .map(|line| {
            let value = serde_json::from_str::<serde_json::Value>(line).ok()?;
            match super::journal::entry(value)?.event {
                Event::AttemptFailed(f) if f.chunk == chunk && f.session_id == session => Some(f),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "failures_tests.rs"]
mod tests;
