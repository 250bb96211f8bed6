//! What the engine layering made visible: one run-id format for every process that writes a
//! spec's state, and session ids in their readable form.

use crate::common::*;
use serde_json::Value;

/// `r` and 12 lowercase hex digits (docs/state.md, "The journal").
fn is_run_id(id: &str) -> bool {
    id.len() == 13
        && id.starts_with('r')
        && id[1..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[test]
fn run_merge_and_undo_each_journal_a_run_id_of_the_one_format() {
    let repo = TestRepo::new();
    repo.add_spec("001-add-login");
    let out = repo.run_spec("001", &["--json"]);
    assert_exit(&out, 0);
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let run_id = summary["run_id"].as_str().unwrap().to_string();
    assert!(is_run_id(&run_id), "{run_id}");

    assert_exit(&repo.runner(&["merge", "--spec", "001", "--yes"]), 0);
    assert_exit(&repo.runner(&["undo", "--spec", "001"]), 0);

    let events = repo.events("001-add-login");
    let mut ids: Vec<&str> = Vec::new();
    for e in &events {
        let id = e["run_id"].as_str().unwrap();
        assert!(is_run_id(id), "a run id of another form: {e}");
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    // The run's lines carry its id; the merge and the undo have one each, new.
    assert_eq!(ids[0], run_id);
    assert!(
        ids.len() >= 3,
        "the run, the merge and the undo each journal under a run id of their own: {ids:?}"
    );

    // Session ids stay readable: time, 4 hex digits, role, chunk, attempt.
    let start = events
        .iter()
        .find(|e| e["event"] == "session_start" && e["role"] == "coder")
        .unwrap();
    let session = start["session_id"].as_str().unwrap();
    let parts: Vec<&str> = session.splitn(3, '-').collect();
    assert_eq!(parts[0].len(), 16, "{session}");
    assert!(parts[0].ends_with('Z'), "{session}");
    assert!(
        parts[1].len() == 4 && parts[1].bytes().all(|b| b.is_ascii_hexdigit()),
        "{session}"
    );
    assert!(
        parts[2].starts_with("coder-") && parts[2].ends_with("-a1"),
        "{session}"
    );
}
