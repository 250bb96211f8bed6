//! Where an interrupted spec stands, rebuilt for `runner resume` from the best source there is,
//! and how sure runner is of it (`policy::confidence`):
//!
//! 1. the **checkpoint** (`store::checkpoint`), validated against the repository
//!    ([`validate`]); journal events newer than it are replayed on top ([`events`]);
//! 2. a **replay of the journal's events** on top of the plan's chunk list ([`events`]);
//! 3. the branch's **chunk commits** and the plan alone ([`commits`]), low confidence.
//!
//! The statuses from the first two are then checked against the plan and git ([`witness`]): a
//! completed chunk whose commit is no longer on the branch is not done, and every status the
//! plan or git contradicts is named in a warning and costs confidence.
//!
//! It reads and never writes: nothing here changes a file, a ref or the plan.

pub mod commits;
pub mod events;
pub mod reconstruct;
pub mod validate;
pub mod witness;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::store::checkpoint::{ChunkState, LastVerification, Trigger};

pub use reconstruct::reconstruct;

/// Which source the chunk statuses were rebuilt from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Checkpoint,
    Events,
    Commits,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Checkpoint => "checkpoint",
            Source::Events => "events",
            Source::Commits => "commits",
        }
    }
}

/// The checkpoint that was read (whether or not it was used).
#[derive(Debug, Clone, Serialize)]
pub struct CheckpointInfo {
    pub id: String,
    pub time: DateTime<Utc>,
    pub trigger: Trigger,
    /// Seconds from its time to `now` (below zero when its time is in the future).
    pub age_secs: i64,
}

/// A spec's state, rebuilt.
#[derive(Debug, Clone, Serialize)]
pub struct Reconstruction {
    pub source: Source,
    /// Every chunk of the plan, in plan order.
    pub chunks: Vec<ChunkState>,
    /// The chunk being worked on when the run stopped (or last worked on).
    pub current_chunk: Option<String>,
    /// 0..=100 (see `policy::confidence`).
    pub confidence: u8,
    pub confidence_reason: String,
    /// What did not add up, for a person: why the checkpoint was set aside ("Checkpoint
    /// corrupted, falling back to events" when it cannot be read, "Checkpoint older than the
    /// plan, rebuilt from events", …) and what exactly was wrong, each status the plan or git
    /// contradicts;
    /// from the commits source scoring 80 or more, also "Low confidence recovery. Verify
    /// manually." (below 80 the score says it: consumers warn from the score).
    pub warnings: Vec<String>,
    /// A chunk counted completed has its commit gone from the branch, no chunk commit naming
    /// it, the plan still calling it completed (`agreement::Finding::CommitGone`): the next
    /// run's recovery stops for a person there (exit 3, history rewritten), so the way on is
    /// `runner recover`, not a continue.
    pub commit_gone: bool,
    pub checkpoint: Option<CheckpointInfo>,
    pub verification: Option<LastVerification>,
    pub seconds_spent: u64,
    pub cost_usd: f64,
    pub tokens: u64,
}
