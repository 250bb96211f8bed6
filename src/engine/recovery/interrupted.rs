//! `.auto-claude/interrupted-sessions.json`: sessions that were still busy when a shutdown's
//! drain ran out, so that the next start can run them again with the prompt they were given.
//! One file for the repository; each run only touches its own spec's entries, under a lock.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::store::{FileLock, write_atomic};

pub const FILE: &str = "interrupted-sessions.json";
const LOCK: &str = "interrupted-sessions.lock";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterruptedSession {
    pub session_id: String,
    pub spec: String,
    pub role: String,
    pub chunk_id: Option<String>,
    pub prompt_path: PathBuf,
    pub prompt_preview: String,
    pub time: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct FileBody {
    sessions: Vec<InterruptedSession>,
}

/// The first `n` characters of a prompt on one line.
pub fn preview(prompt: &str, n: usize) -> String {
    let flat: String = prompt.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= n {
        flat
    } else {
        flat.chars().take(n).collect()
    }
}

fn read(path: &Path) -> FileBody {
    crate::store::safe::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Read, change, write back (or delete when empty), under the file's lock.
fn modify<T>(
    state_dir: &Path,
    f: impl FnOnce(&mut Vec<InterruptedSession>) -> T,
) -> anyhow::Result<T> {
    let _lock = FileLock::acquire(&state_dir.join(LOCK))?;
    let path = state_dir.join(FILE);
    let mut body = read(&path);
    let before = body.sessions.clone();
    let out = f(&mut body.sessions);
    if body.sessions == before {
        return Ok(out);
    }
    if body.sessions.is_empty() {
        match crate::store::safe::remove(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
        }
    } else {
        let bytes = serde_json::to_vec_pretty(&body)?;
        write_atomic(&path, &bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(out)
}

/// Record sessions of `spec` cut off by a shutdown, replacing any older entries of the spec.
/// With none, the spec's stale entries are removed (and the file, if it ends up empty).
pub fn record(
    state_dir: &Path,
    spec: &str,
    sessions: Vec<InterruptedSession>,
) -> anyhow::Result<()> {
    modify(state_dir, |all| {
        all.retain(|s| s.spec != spec);
        all.extend(sessions);
    })
}

/// Take (and remove at once) the entries of `spec`.
pub fn take(state_dir: &Path, spec: &str) -> anyhow::Result<Vec<InterruptedSession>> {
    modify(state_dir, |all| {
        let (mine, rest): (Vec<_>, Vec<_>) = all.drain(..).partition(|s| s.spec == spec);
        *all = rest;
        mine
    })
}

/// The specs with entries, in file order.
pub fn specs(state_dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in read(&state_dir.join(FILE)).sessions {
        if !out.contains(&s.spec) {
            out.push(s.spec);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(spec: &str, id: &str) -> InterruptedSession {
        InterruptedSession {
            session_id: id.into(),
            spec: spec.into(),
            role: "coder".into(),
            chunk_id: Some("c1".into()),
            prompt_path: PathBuf::from("/p"),
            prompt_preview: "do it".into(),
            time: "t".into(),
        }
    }

    #[test]
    fn entries_are_per_spec_and_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        record(dir.path(), "a", vec![entry("a", "1")]).unwrap();
        record(dir.path(), "b", vec![entry("b", "2")]).unwrap();
        assert_eq!(specs(dir.path()), vec!["a", "b"]);
        assert_eq!(take(dir.path(), "a").unwrap(), vec![entry("a", "1")]);
        assert!(take(dir.path(), "a").unwrap().is_empty());
        assert!(dir.path().join(FILE).exists());
        // Recording none for b removes its stale entry, and the empty file goes.
        record(dir.path(), "b", Vec::new()).unwrap();
        assert!(!dir.path().join(FILE).exists());
    }

    #[test]
    fn preview_is_one_line_and_short() {
        assert_eq!(preview("a\n  b\tc", 80), "a b c");
        assert_eq!(preview(&"x".repeat(100), 80).len(), 80);
    }
}
