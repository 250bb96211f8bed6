//! Mechanism layer: runner's state on disk. Workspace and spec paths, atomic durable writes
//! (`atomic`, `safe`: never through a link or a FIFO), locks with holder records (`lock`,
//! `guard`), ids, and the typed journal (`event`, `journal`, its `segments`, and the
//! `failures` kept beside each session for retry prompts). No policy and no printing here.

pub mod agent_memory;
pub mod checkpoint;
pub mod event;
pub mod guard;
pub mod journal;
pub mod ledger;
pub mod new_spec;
pub mod pause;
pub mod resolve_cache;
pub mod runs;
pub mod session_log;
pub mod sessions;
pub mod spec;
pub mod spec_text;
pub mod status_cache;
pub mod workspace;

pub use journal::{Event, Journal, failures, lines, read_entries, read_typed, segments};
// The ground floor's primitives, where store's users have always found them.
pub use crate::fs::{
    FileLock, Holder, LockState, at, atomic, is_temp_file, lock, lossy, read_lossy, safe,
    unused_path, watch, write_atomic,
};
pub use crate::ids;
pub use workspace::{SpecPaths, Workspace};
