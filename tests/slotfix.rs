//! Chunk ids that hold ` - ` read back from commits, and hostile chunk ids in the agent's
//! prompt (slot creation's crash safety is tested in tests/crash.rs).

mod common;

use common::*;
use serde_json::json;

/// A plan is rebuilt from the branch's commits only when neither its last-good copy nor a
/// journaled status change is there: the commit `auto-claude: x - y - first` is chunk `x - y`'s,
/// not chunk `x`'s.
#[test]
fn a_plan_rebuilt_from_commits_completes_the_chunk_whose_id_holds_the_separator() {
    let repo = TestRepo::new();
    let spec = "001-dash";
    repo.add_spec(spec);
    let plan = json!({
        "feature": "Dashes",
        "base_branch": "main",
        "phases": [{"id": "p", "name": "P", "subtasks": [
            {"id": "x", "description": "second", "status": "pending"},
            {"id": "x - y", "description": "first", "status": "pending"}
        ]}]
    });
    let snapshot = json!({"time": "2026-01-01T00:00:00Z", "run_id": "r1",
        "event": "plan_snapshot", "plan": plan});
    std::fs::write(
        repo.spec_dir(spec).join("events.jsonl"),
        format!("{snapshot}\n"),
    )
    .unwrap();
    // The branch holds chunk `x - y`'s commit, made as runner makes it.
    repo.git(&["branch", "auto-claude/001-dash", "main"]);
    let wt = repo.tmp.path().join("wt");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        wt.to_str().unwrap(),
        "auto-claude/001-dash",
    ]);
    std::fs::write(wt.join("first.txt"), "first\n").unwrap();
    git_in(&wt, &["add", "-A"]);
    git_in(&wt, &["commit", "-q", "-m", "auto-claude: x - y - first"]);
    // A torn plan, and no last-good copy.
    std::fs::write(repo.plan_path(spec), "{\"feature\": \"Dash").unwrap();

    let out = repo.runner(&["recover", "--spec", spec]);
    assert!(
        stdout(&out).contains("commits") || stderr(&out).contains("commits"),
        "the plan should be rebuilt from the commits:\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let statuses = repo.statuses(spec);
    assert_eq!(
        statuses,
        vec![
            ("x".to_string(), "pending".to_string()),
            ("x - y".to_string(), "completed".to_string())
        ],
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
}
