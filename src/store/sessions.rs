//! A spec's agent sessions as folders: `sessions/<session-id>/` (its `prompt.md`, `output.log`,
//! `verification.log`). Session ids start with their UTC start time
//! (`20261122T192400Z-3f9a-coder-subtask-1-1-a2`, see `ids::session_id`), so their names sort
//! in the order the sessions started. Which run a session belongs to is in the journal
//! (`session_start` lines carry the run id).

use std::path::{Path, PathBuf};

/// The ids of the sessions under `sessions_dir`, oldest first. Only real folders whose names
/// have a session id's form are listed (a link, a file, a name planted by hand are not);
/// nothing when the folder is missing or cannot be read.
pub fn list(sessions_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(sessions_dir) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| is_session_id(name))
        .collect();
    ids.sort();
    ids
}

/// The newest session's id, if any.
pub fn latest(sessions_dir: &Path) -> Option<String> {
    list(sessions_dir).pop()
}

/// The log of session `id` (`output.log`: what the agent printed, stdout and stderr).
pub fn log_of(sessions_dir: &Path, id: &str) -> PathBuf {
    sessions_dir.join(id).join("output.log")
}

/// Whether `name` has a session id's form: a `YYYYMMDDTHHMMSSZ-` time, then only the safe
/// characters `ids::session_id` writes.
pub fn is_session_id(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() > 17
        && bytes.len() <= 200
        && bytes[..8].iter().all(u8::is_ascii_digit)
        && bytes[8] == b'T'
        && bytes[9..15].iter().all(u8::is_ascii_digit)
        && bytes[15] == b'Z'
        && bytes[16] == b'-'
        && bytes[17..]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_listed_oldest_first_and_only_real_folders_named_like_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let made = crate::ids::session_id("coder", Some("1-1"), 1);
        assert!(is_session_id(&made), "{made}");
        for name in [
            "20261122T192400Z-3f9a-coder-1-2-a1",
            "20261122T192300Z-0001-planner-a1",
        ] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        std::fs::write(dir.path().join("20261122T192500Z-0002-coder-a1"), "").unwrap();
        std::fs::create_dir(dir.path().join("notes")).unwrap();
        std::fs::create_dir(dir.path().join("20261122T192600Z-..")).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("notes"),
            dir.path().join("20261122T192700Z-0003-coder-a1"),
        )
        .unwrap();
        assert_eq!(
            list(dir.path()),
            vec![
                "20261122T192300Z-0001-planner-a1".to_string(),
                "20261122T192400Z-3f9a-coder-1-2-a1".to_string(),
                "20261122T192600Z-..".to_string(),
            ]
        );
        assert!(!is_session_id("../../etc"));
        assert!(!is_session_id("20261122T192400Z-a/b"));
        assert_eq!(list(&dir.path().join("missing")), Vec::<String>::new());
    }
}
