//! Files at the edge: durable writes, locks, the journal.

pub mod atomic;
pub mod journal;
pub mod lock;

pub use atomic::{is_temp_file, write_atomic};
pub use journal::{Journal, read_events, read_events_containing};
pub use lock::{FileLock, Holder, LockState};
