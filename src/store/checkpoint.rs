//! The checkpoint: `.auto-claude/specs/<spec>/checkpoint.json`, rewritten at every chunk
//! boundary of a run (and when a run starts and ends). It is what `runner resume` loads first:
//! every chunk's status, the branch and its tip, the commit of each completed chunk, the last
//! verification, the time and money spent, and the run that wrote it.
//!
//! A summary, not the truth: the plan and the branch are. `runner resume` validates it against
//! the repository before believing it (branch present, tip reachable, completed chunks'
//! commits present, worktree present) and falls back to the journal when it does not pass.
//! Written atomically and durably; what is read is bounded and checked, never a panic.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub const FILE_NAME: &str = "checkpoint.json";

/// 800 chunks take about 100 KB; anything far larger is not one of ours.
const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// Why the checkpoint was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    RunStart,
    /// A chunk was committed and marked completed.
    ChunkDone,
    /// A chunk's attempt failed (it may be retried) or the chunk failed for good.
    ChunkFailed,
    /// Recovery changed chunks' statuses.
    Recovered,
    RunEnd,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkState {
    pub id: String,
    /// The plan's status word (`pending`, `in_progress`, `completed`, `failed`, …).
    pub status: String,
    /// The commit that completed the chunk (full hex), when known.
    #[serde(default)]
    pub commit: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LastVerification {
    pub chunk: String,
    pub passed: bool,
    /// The command, or `-` when the chunk had no verification command.
    pub command: String,
    #[serde(default)]
    pub detail: String,
    pub time: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Always 1 for this format.
    pub schema: u32,
    /// A fresh id per write (`ids::run_id` form), so `runner show` can name the checkpoint.
    pub id: String,
    pub run_id: String,
    pub spec: String,
    pub time: DateTime<Utc>,
    pub trigger: Trigger,
    /// Every chunk of the plan, in plan order.
    pub chunks: Vec<ChunkState>,
    /// The chunk being worked on (or last worked on).
    #[serde(default)]
    pub current_chunk: Option<String>,
    /// `auto-claude/<spec>`.
    pub branch: String,
    /// The branch's tip (full hex), `None` before the branch exists.
    #[serde(default)]
    pub tip: Option<String>,
    /// The base branch the spec builds on.
    #[serde(default)]
    pub base: Option<String>,
    /// The slot (worktree name) holding the branch.
    #[serde(default)]
    pub slot: Option<String>,
    #[serde(default)]
    pub verification: Option<LastVerification>,
    /// Seconds of agent sessions and verification spent on the spec, over all runs.
    #[serde(default)]
    pub seconds_spent: u64,
    #[serde(default)]
    pub cost_usd: f64,
    #[serde(default)]
    pub tokens: u64,
}

/// What reading a spec's checkpoint found.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    Nothing,
    Checkpoint(Box<Checkpoint>),
    /// The file is there but not usable (why, naming the file).
    Corrupt(String),
}

pub fn path(spec_dir: &Path) -> PathBuf {
    spec_dir.join(FILE_NAME)
}

/// The checkpoint of the spec whose folder is `spec_dir`.
pub fn read(spec_dir: &Path) -> Found {
    let path = path(spec_dir);
    let corrupt = |why: String| Found::Corrupt(format!("{}: {why}", path.display()));
    let bytes = match super::agent_memory::read_small(&path, MAX_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Found::Nothing,
        Err(why) => return corrupt(why),
    };
    match serde_json::from_slice::<Checkpoint>(&bytes) {
        Ok(c) if c.schema != 1 => {
            corrupt(format!("schema {} is not one this runner reads", c.schema))
        }
        Ok(c) if !super::ids::is_run_id(&c.run_id) => {
            corrupt(format!("{:?} is not a run id", c.run_id))
        }
        // Its id is printed as it is (`runner show`, `runner resume`): the run id form only.
        Ok(c) if !super::ids::is_run_id(&c.id) => {
            corrupt(format!("{:?} is not a checkpoint id", c.id))
        }
        Ok(c) if !c.cost_usd.is_finite() || c.cost_usd < 0.0 => corrupt("a cost below zero".into()),
        Ok(c) => Found::Checkpoint(Box::new(c)),
        Err(e) => corrupt(format!("not a checkpoint ({e})")),
    }
}

/// Write (or replace) the checkpoint, atomically and durably.
pub fn write(spec_dir: &Path, checkpoint: &Checkpoint) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(checkpoint).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write_bytes(spec_dir, &bytes)
}

/// Write (or replace) the checkpoint made by [`bytes_with_chunks`], atomically and durably.
pub fn write_bytes(spec_dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::store::atomic::write_atomic_advisory(&path(spec_dir), bytes)
}

/// A chunk's entry as the checkpoint's file has it (for [`bytes_with_chunks`]).
pub fn chunk_text(chunk: &ChunkState) -> String {
    // A struct of strings: serialising it cannot fail.
    serde_json::to_string(chunk).unwrap_or_default()
}

/// The bytes [`write`] writes for `checkpoint` with `chunks` (each one's [`chunk_text`], in
/// order) as its chunk list: a run keeps each chunk's text and makes again only the changed
/// ones, instead of serialising 800 chunks at every chunk. `checkpoint.chunks` must be empty.
pub fn bytes_with_chunks<'a>(
    checkpoint: &Checkpoint,
    chunks: impl IntoIterator<Item = &'a str>,
) -> std::io::Result<Vec<u8>> {
    if !checkpoint.chunks.is_empty() {
        return Err(std::io::Error::other(
            "the checkpoint's own chunk list is not empty",
        ));
    }
    let head = serde_json::to_vec(checkpoint).map_err(std::io::Error::other)?;
    // The first `"chunks":[]` is the field: in a string a quote is escaped, so no text before
    // it (`id`, `run_id`, `spec`, `time`, `trigger`) holds that sequence.
    const EMPTY: &[u8] = b"\"chunks\":[]";
    let at = head
        .windows(EMPTY.len())
        .position(|w| w == EMPTY)
        .ok_or_else(|| std::io::Error::other("no chunk list in the checkpoint"))?
        + EMPTY.len()
        - 1;
    let mut bytes = Vec::with_capacity(head.len() * 2);
    bytes.extend_from_slice(&head[..at]);
    for (i, chunk) in chunks.into_iter().enumerate() {
        if i > 0 {
            bytes.push(b',');
        }
        bytes.extend_from_slice(chunk.as_bytes());
    }
    bytes.extend_from_slice(&head[at..]);
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint() -> Checkpoint {
        Checkpoint {
            schema: 1,
            id: crate::store::ids::run_id(),
            run_id: crate::store::ids::run_id(),
            spec: "001-a".into(),
            time: DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
            trigger: Trigger::ChunkDone,
            chunks: vec![ChunkState {
                id: "subtask-1-1".into(),
                status: "completed".into(),
                commit: Some("ab".repeat(20)),
            }],
            current_chunk: Some("subtask-1-2".into()),
            branch: "auto-claude/001-a".into(),
            tip: Some("ab".repeat(20)),
            base: Some("main".into()),
            slot: Some("auto-claude".into()),
            verification: None,
            seconds_spent: 12,
            cost_usd: 0.5,
            tokens: 1000,
        }
    }

    /// The chunk list spliced in gives the bytes of serialising the whole checkpoint, whatever
    /// its texts hold (quotes, the field's own name, non-ASCII, control characters).
    #[test]
    fn chunks_spliced_in_give_the_bytes_of_the_whole_checkpoint() {
        let words = [
            "001-a",
            "\"chunks\":[]",
            "\",\"chunks\":[],\"",
            "é\u{1b}\\",
            "",
            "]",
        ];
        let mut seed: u64 = 7;
        let mut roll = |n: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as usize % n
        };
        for _ in 0..200 {
            let mut c = checkpoint();
            c.spec = words[roll(words.len())].to_string();
            c.current_chunk = Some(words[roll(words.len())].to_string());
            c.cost_usd = roll(1000) as f64 / 7.0;
            c.chunks = (0..roll(5))
                .map(|_| ChunkState {
                    id: words[roll(words.len())].to_string(),
                    status: words[roll(words.len())].to_string(),
                    commit: (roll(2) == 0).then(|| words[roll(words.len())].to_string()),
                })
                .collect();
            let mut whole = serde_json::to_vec(&c).unwrap();
            whole.push(b'\n');
            let texts: Vec<String> = c.chunks.iter().map(chunk_text).collect();
            let head = Checkpoint {
                chunks: Vec::new(),
                ..c.clone()
            };
            let spliced = bytes_with_chunks(&head, texts.iter().map(String::as_str)).unwrap();
            assert_eq!(
                String::from_utf8(spliced).unwrap(),
                String::from_utf8(whole).unwrap()
            );
        }
        assert!(bytes_with_chunks(&checkpoint(), []).is_err());
    }

    #[test]
    fn a_checkpoint_is_read_back_and_a_bad_one_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), Found::Nothing);
        let c = checkpoint();
        write(dir.path(), &c).unwrap();
        assert_eq!(read(dir.path()), Found::Checkpoint(Box::new(c.clone())));
        std::fs::write(path(dir.path()), b"{\"schema\":1,").unwrap();
        assert!(matches!(read(dir.path()), Found::Corrupt(w) if w.contains("checkpoint.json")));
        let mut bad = c.clone();
        bad.run_id = "../x".into();
        write(dir.path(), &bad).unwrap();
        assert!(matches!(read(dir.path()), Found::Corrupt(_)));
        // An id that is not of the run id form (an agent's escape sequence for the terminal).
        let mut bad = c.clone();
        bad.id = "\u{1b}]0;pwned\u{7}".into();
        write(dir.path(), &bad).unwrap();
        assert!(matches!(read(dir.path()), Found::Corrupt(w) if w.contains("checkpoint id")));
        let mut bad = c;
        bad.cost_usd = -1.0;
        write(dir.path(), &bad).unwrap();
        assert!(matches!(read(dir.path()), Found::Corrupt(_)));
    }
}
