//! `runner run --plan-only`: plan, show the plan, stop; a person edits it; the next run codes
//! from it without planning again.

use serde_json::Value;

use crate::common::*;

/// The fake agent's sessions of one role (`planner`, `coder`): its log's lines.
fn sessions_of(repo: &TestRepo, role: &str) -> Vec<String> {
    repo.agent_log()
        .into_iter()
        .filter(|l| l.split_whitespace().next() == Some(role))
        .collect()
}

#[test]
fn plan_only_plans_and_stops_and_the_next_run_codes_the_plan_as_a_person_left_it() {
    let repo = TestRepo::new();
    repo.add_spec("001-shape");
    let out = repo.run_spec("001-shape", &["--plan-only"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.starts_with("Plan of 001-shape: 0/3 chunks completed\n"),
        "{text}"
    );
    for id in ["core-a", "core-b", "polish"] {
        assert!(text.contains(&format!("  · {id}  pending\n")), "{text}");
    }
    let err = stderr(&out);
    assert!(err.contains("runner run --spec 001-shape"), "{err}");
    assert_eq!(
        sessions_of(&repo, "planner").len(),
        1,
        "{:?}",
        repo.agent_log()
    );
    assert!(
        sessions_of(&repo, "coder").is_empty(),
        "{:?}",
        repo.agent_log()
    );
    assert!(repo.branch_log("auto-claude/001-shape").is_empty());
    // The run says what it did: planned, not complete.
    let runs: Value = serde_json::from_str(&stdout(&repo.runner(&["runs", "--json"]))).unwrap();
    assert_eq!(runs["runs"][0]["outcome"], "planned", "{runs}");
    let status: Value = serde_json::from_str(&stdout(&repo.runner(&["status", "--json"]))).unwrap();
    assert_eq!(status["specs"][0]["status"], "planned", "{status}");

    // A person edits it: one chunk's description, and a chunk of their own.
    let mut plan = repo.plan("001-shape");
    plan["phases"][1]["subtasks"][0]["description"] = "Polish it, by hand".into();
    plan["phases"][1]["subtasks"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"id": "by-hand", "description": "Added by a person", "status": "pending"}));
    repo.write_plan("001-shape", &serde_json::to_string_pretty(&plan).unwrap());

    let out = repo.run_spec("001-shape", &[]);
    assert_exit(&out, 0);
    assert_eq!(
        sessions_of(&repo, "planner").len(),
        1,
        "the planner ran again: {:?}",
        repo.agent_log()
    );
    let coded: Vec<String> = sessions_of(&repo, "coder")
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    assert_eq!(coded, ["core-a", "core-b", "polish", "by-hand"]);
    let log = repo.branch_log("auto-claude/001-shape");
    assert!(log.iter().any(|s| s.contains("by-hand")), "{log:?}");
    let prompts = std::fs::read_dir(repo.tmp.path().join("prompts")).unwrap();
    let polished = prompts
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .any(|p| p.contains("Polish it, by hand"));
    assert!(
        polished,
        "the edited description reached the coder's prompt"
    );
    assert!(
        repo.statuses("001-shape")
            .iter()
            .all(|(_, s)| s == "completed"),
        "{:?}",
        repo.statuses("001-shape")
    );
}

#[test]
fn plan_only_with_a_plan_there_shows_it_and_starts_nothing() {
    let repo = repo_with_fixture_plan("001-there");
    let before = std::fs::read(repo.plan_path("001-there")).unwrap();
    let out = repo.run_spec("001-there", &["--plan-only"]);
    assert_exit(&out, 0);
    assert!(stdout(&out).starts_with("Plan of 001-there: 0/3 chunks completed\n"));
    let err = stderr(&out);
    assert!(err.contains("001-there has a plan already"), "{err}");
    assert!(repo.agent_log().is_empty(), "{:?}", repo.agent_log());
    assert_eq!(std::fs::read(repo.plan_path("001-there")).unwrap(), before);
    assert!(!repo.worktree().exists());

    // --json: the plan's report, as `runner plan --json` prints it.
    let out = repo.run_spec("001-there", &["--plan-only", "--json"]);
    assert_exit(&out, 0);
    let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let plan: Value = serde_json::from_str(&stdout(&repo.runner(&["plan", "--json"]))).unwrap();
    assert_eq!(shown, plan);
}

#[test]
fn plan_only_json_prints_the_plan_it_wrote() {
    let repo = TestRepo::new();
    repo.add_spec("001-json");
    let out = repo.run_spec("001-json", &["--plan-only", "--json"]);
    assert_exit(&out, 0);
    let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(shown["schema"], 1);
    assert_eq!(shown["spec"], "001-json");
    assert_eq!(shown["total"], 3);
    assert_eq!(shown["next_chunk"], "core-a");
    assert!(sessions_of(&repo, "coder").is_empty());
}

#[test]
fn plan_only_goes_with_one_spec() {
    let repo = TestRepo::new();
    let out = repo.runner(&["run", "--plan-only", "--jobs", "2"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("'--plan-only' cannot be used with '--jobs <N>'"),
        "{}",
        stderr(&out)
    );
}
