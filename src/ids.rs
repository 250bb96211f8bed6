//! The one format of runner's ids.
//!
//! A **run id** names one process's work on the state (a run, a recover, a merge, a discard, an
//! undo, a `runner chunk` report): `r` and 12 lowercase hex digits, e.g. `r3f9a0c41b2d7`. It
//! is written into every journal line and lock holder record, and handed to agents as
//! `RUNNER_RUN_ID`. A **session id** names one agent session and its folder under
//! `sessions/`; it stays readable and sortable (`20261122T192400Z-3f9a-coder-subtask-1-1-a2`)
//! and takes its distinguishing hex digits from the same source.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// 64 bits that differ between any two calls: the time to the nanosecond, the process id, a
/// counter within the process (two ids in the same instant), and the standard library's
/// per-process random hash keys (two hosts, or a pid reused).
fn unique_bits() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(nanos);
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

/// A new run id: `r` and 12 lowercase hex digits.
pub fn run_id() -> String {
    format!("r{:012x}", unique_bits() & 0xffff_ffff_ffff)
}

/// Whether `text` has the form of a run id (see [`run_id`]).
pub fn is_run_id(text: &str) -> bool {
    text.len() == 13
        && text.starts_with('r')
        && text[1..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `20261122T192400Z-3f9a-coder-subtask-1-1-a2`: sortable, readable, safe as a folder name.
pub fn session_id(role: &str, chunk: Option<&str>, attempt: u32) -> String {
    let chunk: String = chunk
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    let mut id = format!(
        "{}-{:04x}-{role}",
        crate::clock::stamp(),
        unique_bits() & 0xffff
    );
    if !chunk.is_empty() {
        id.push('-');
        id.push_str(&chunk);
    }
    id.push_str(&format!("-a{attempt}"));
    id
}

/// A random (version 4) UUID, `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`: the agent session id
/// runner gives claude (`--session-id` takes only a UUID). 16 bytes of `/dev/urandom`; where
/// that cannot be read, the bits of [`unique_bits`] (unique, if not secret: an id, not a key).
pub fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b));
    if read.is_err() {
        b[..8].copy_from_slice(&unique_bits().to_le_bytes());
        b[8..].copy_from_slice(&unique_bits().to_le_bytes());
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_is_version_4_and_never_repeats() {
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| uuid_v4()).collect();
        assert_eq!(ids.len(), 1000);
        for id in &ids {
            let parts: Vec<&str> = id.split('-').collect();
            assert_eq!(
                parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
                [8, 4, 4, 4, 12]
            );
            assert!(
                id.bytes()
                    .all(|c| c == b'-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            );
            assert!(parts[2].starts_with('4'), "{id}");
            assert!("89ab".contains(&parts[3][..1]), "{id}");
        }
    }

    #[test]
    fn a_run_id_is_r_and_twelve_lowercase_hex_digits_and_never_repeats() {
        let ids: Vec<String> = (0..1000).map(|_| run_id()).collect();
        for id in &ids {
            assert!(is_run_id(id), "{id}");
        }
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
        assert!(!is_run_id("run-20261122T192400Z-42"));
        assert!(!is_run_id("r3F9A0C41B2D7"));
    }

    #[test]
    fn a_session_id_is_a_safe_folder_name_that_names_role_chunk_and_attempt() {
        let id = session_id("coder", Some("sub/task 1"), 2);
        assert!(id.ends_with("-coder-sub_task_1-a2"), "{id}");
        assert!(!id.contains('/'));
        assert!(session_id("planner", None, 1).ends_with("-planner-a1"));
    }
}
