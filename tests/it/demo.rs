//! `runner demo`: the README's first command must keep working.

use crate::common::*;
use serde_json::Value;

#[test]
fn demo_runs_the_whole_loop_on_a_throwaway_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let out = std::process::Command::new(RUNNER)
        .args(["demo", "--json", "--dir"])
        .arg(&dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["summary"]["outcome"], "complete");
    assert_eq!(v["summary"]["completed"], 3);
    assert_eq!(v["summary"]["total"], 3);
    assert_eq!(v["commits"].as_array().unwrap().len(), 3);
    let err = stderr(&out);
    for line in [
        "Planning",
        "Plan ready",
        "attempt 1 failed",
        "(attempt 2)",
        "All 3 chunks",
    ] {
        assert!(err.contains(line), "demo output lacks {line:?}:\n{err}");
    }
    // The work is real: the script runs from the spec's branch.
    let greet = git_in(&dir, &["show", "auto-claude/001-greeting-tool:greet.sh"]);
    assert!(greet.contains("Hello"));
    // A second demo into the same folder refuses instead of mixing.
    let again = std::process::Command::new(RUNNER)
        .args(["demo", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_exit(&again, 2);
}
