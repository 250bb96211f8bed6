//! `recover`'s options and refusals: `--dry-run`, `--retry-failed`, and a spec being run.

use super::*;

/// Everything a recovery could change.
fn state(repo: &TestRepo, spec: &str) -> (Vec<u8>, String, String, String, Vec<String>) {
    let dir = repo.spec_dir(spec);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    (
        std::fs::read(repo.plan_path(spec)).unwrap(),
        std::fs::read_to_string(dir.join("events.jsonl")).unwrap(),
        refs(repo),
        wt_git(repo, &["status", "--porcelain", "--untracked-files=all"]),
        names,
    )
}

#[test]
fn dry_run_reports_and_changes_nothing() {
    let spec = "020-dry";
    let repo = interrupted_core_a(spec, "uncommitted");
    let dead_temp = repo
        .spec_dir(spec)
        .join(".implementation_plan.json.tmp-999999999-0");
    std::fs::write(&dead_temp, "half").unwrap();
    let before = state(&repo, spec);

    let out = recover(&repo, &["--dry-run"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("020-dry: would be recovered"), "{text}");
    assert!(text.contains("chunk core-a: continue"), "{text}");
    assert!(
        text.contains(".implementation_plan.json.tmp-999999999-0"),
        "{text}"
    );
    crate::assert_screen!(repo, text, @r#"
        020-dry: would be recovered
          - would remove [repo]/.auto-claude/specs/020-dry/.implementation_plan.json.tmp-[commit]-0 left by an interrupted write
          - chunk core-a: continue — partial work is there: uncommitted changes
        "#);
    let report = recover_json(&repo, &["--dry-run"], 0);
    assert_eq!(report["dry_run"], true);
    let kinds: Vec<&str> = report["specs"][0]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["removed_temp_file", "chunk"]);
    assert_eq!(report["specs"][0]["actions"][1]["decision"], "continue");
    assert_eq!(state(&repo, spec), before, "a dry run changed something");
    assert!(dead_temp.exists());
    assert_eq!(repo.chunk(spec, "core-a")["status"], "in_progress");

    // The real thing does change it.
    assert_exit(&recover(&repo, &[]), 0);
    assert_ne!(state(&repo, spec), before);
    assert!(!dead_temp.exists());
    assert_eq!(repo.chunk(spec, "core-a")["status"], "pending");
}

#[test]
fn retry_failed_sets_failed_chunks_back_to_pending_keeping_attempts() {
    let spec = "021-retry";
    let repo = repo_with_fixture_plan(spec);
    repo.write_config("[run]\nmax_attempts = 1\n");
    repo.script("core-a * fail not today\n");
    assert_exit(&repo.run_spec(spec, &[]), 3);
    assert_eq!(repo.chunk(spec, "core-a")["status"], "failed");

    // Without the flag a failed chunk stays failed.
    let plain = recover(&repo, &[]);
    assert_exit(&plain, 0);
    assert!(stdout(&plain).contains("Nothing to recover"));
    assert_eq!(repo.chunk(spec, "core-a")["status"], "failed");
    // A dry run says it would, and does not.
    let dry = recover_json(&repo, &["--retry-failed", "--dry-run"], 0);
    assert_eq!(dry["specs"][0]["actions"][0]["kind"], "retry_failed");
    assert_eq!(repo.chunk(spec, "core-a")["status"], "failed");

    let report = recover_json(&repo, &["--retry-failed"], 0);
    let action = &report["specs"][0]["actions"][0];
    assert_eq!(action["kind"], "retry_failed");
    assert_eq!(action["chunk"], "core-a");
    let a = repo.chunk(spec, "core-a");
    assert_eq!(a["status"], "pending");
    let attempts = a["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["outcome"], "failed");
    assert!(
        attempts[0]["reason"]
            .as_str()
            .unwrap()
            .contains("not today")
    );
    let back = events_of(&repo, spec, "chunk_status")
        .into_iter()
        .filter(|e| e["from"] == "failed" && e["to"] == "pending")
        .count();
    assert_eq!(back, 1);

    repo.script("");
    assert_exit(&repo.run_spec(spec, &[]), 0);
    let a = repo.chunk(spec, "core-a");
    assert_eq!(a["status"], "completed");
    assert_eq!(a["attempts"].as_array().unwrap().len(), 2);
}

#[test]
fn a_spec_being_run_is_busy() {
    let spec = "022-busy";
    let repo = repo_with_fixture_plan(spec);
    repo.add_spec("023-idle");
    repo.script("core-a * slow 3\n");
    let mut running = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the coder to start", || {
        repo.agent_log().iter().any(|l| l.starts_with("coder"))
    });

    let one = recover(&repo, &["--spec", spec]);
    assert_exit(&one, 4);
    assert!(
        stderr(&one).contains(&format!("pid {}", running.id())),
        "{}",
        stderr(&one)
    );
    let all = recover(&repo, &["--all", "--json"]);
    assert_exit(&all, 0);
    let report: Value = serde_json::from_str(&stdout(&all)).unwrap();
    let busy = report["specs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["spec"] == spec)
        .unwrap();
    assert_eq!(busy["outcome"], "busy");
    let text = stdout(&recover(&repo, &[]));
    assert!(
        text.contains(&format!("{spec}: skipped, a runner holds it")),
        "{text}"
    );
    // The run is not disturbed.
    assert!(running.wait().unwrap().success());
    assert!(
        repo.statuses(spec).iter().all(|(_, s)| s == "completed"),
        "{:?}",
        repo.statuses(spec)
    );
    assert!(events_of(&repo, spec, "recovery_decision").is_empty());
}
