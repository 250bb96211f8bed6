//! A corrupt or missing plan: restored from the last good copy, the journal or the commits,
//! never over a newer plan, and every broken file kept.

use super::*;
use serde_json::json;

fn corrupt_copies(repo: &TestRepo, spec: &str) -> Vec<Vec<u8>> {
    files_starting(&repo.spec_dir(spec), "implementation_plan.json.corrupt-")
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

#[test]
fn a_corrupt_plan_is_restored_from_the_last_good_copy_the_journal_or_the_commits() {
    let spec = "040-corrupt";
    let repo = partial_run(spec);
    let expected = repo.statuses(spec);
    let last_good = repo
        .spec_dir(spec)
        .join("implementation_plan.json.last-good");
    assert!(last_good.is_file());

    // 1. From the last good copy.
    let garbage1 = b"{\"phases\": [ {\"id\": \"p1\",, ".to_vec();
    std::fs::write(repo.plan_path(spec), &garbage1).unwrap();
    // A dry run says where it would restore from, and leaves the broken file.
    let dry = recover_json(&repo, &["--dry-run"], 0);
    assert_eq!(dry["specs"][0]["plan_source"], "last_good");
    assert_eq!(dry["specs"][0]["actions"][0]["kind"], "plan_restored");
    assert_eq!(std::fs::read(repo.plan_path(spec)).unwrap(), garbage1);
    assert!(corrupt_copies(&repo, spec).is_empty());
    assert!(events_of(&repo, spec, "plan_restored").is_empty());
    let report = recover_json(&repo, &[], 0);
    let s = &report["specs"][0];
    assert_eq!(s["plan_source"], "last_good");
    assert_eq!(s["outcome"], "recovered");
    assert_eq!(s["actions"][0]["kind"], "plan_restored");
    assert_eq!(repo.statuses(spec), expected);
    // The restored plan kept everything, attempts included.
    assert_eq!(
        repo.chunk(spec, "core-a")["attempts"][0]["outcome"],
        "completed"
    );
    assert_eq!(corrupt_copies(&repo, spec), vec![garbage1.clone()]);
    let restored = events_of(&repo, spec, "plan_restored");
    assert_eq!(restored.len(), 1);
    assert_eq!(restored[0]["source"], "last_good");
    assert_eq!(
        std::fs::read(restored[0]["broken_copy"].as_str().unwrap()).unwrap(),
        garbage1
    );

    // 2. No last good copy: the journal's snapshot with the status changes replayed.
    std::fs::remove_file(&last_good).unwrap();
    let garbage2 = b"not a plan at all".to_vec();
    std::fs::write(repo.plan_path(spec), &garbage2).unwrap();
    let report = recover_json(&repo, &[], 0);
    assert_eq!(report["specs"][0]["plan_source"], "journal");
    assert_eq!(repo.statuses(spec), expected);
    assert!(corrupt_copies(&repo, spec).contains(&garbage2));
    assert_eq!(
        events_of(&repo, spec, "plan_restored").last().unwrap()["source"],
        "journal"
    );

    // 3. No status changes in the journal: the snapshot and the branch's commits.
    let journal = repo.spec_dir(spec).join("events.jsonl");
    let kept: Vec<String> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("\"event\":\"chunk_status\""))
        .map(str::to_string)
        .collect();
    assert!(
        kept.iter()
            .any(|l| l.contains("\"event\":\"plan_snapshot\""))
    );
    std::fs::write(&journal, kept.join("\n") + "\n").unwrap();
    std::fs::remove_file(&last_good).unwrap();
    let garbage3 = b"[1, 2".to_vec();
    std::fs::write(repo.plan_path(spec), &garbage3).unwrap();
    let report = recover_json(&repo, &[], 0);
    assert_eq!(report["specs"][0]["plan_source"], "commits");
    assert_eq!(repo.statuses(spec), expected);
    assert!(corrupt_copies(&repo, spec).contains(&garbage3));

    // The restored plan is good enough to finish on.
    assert_exit(&repo.run_spec(spec, &[]), 0);
    assert!(repo.statuses(spec).iter().all(|(_, s)| s == "completed"));
    assert_eq!(repo.branch_log(&format!("auto-claude/{spec}")).len(), 3);
}

#[test]
fn every_broken_plan_is_kept_even_two_in_the_same_second() {
    let spec = "041-twice";
    let repo = partial_run(spec);
    // Start early in a second so both restores fall in it.
    wait_for("the start of a second", || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_millis()
            < 300
    });
    let garbage1 = b"first broken plan {".to_vec();
    let garbage2 = b"second broken plan {".to_vec();
    std::fs::write(repo.plan_path(spec), &garbage1).unwrap();
    assert_exit(&recover(&repo, &[]), 0);
    std::fs::write(repo.plan_path(spec), &garbage2).unwrap();
    assert_exit(&recover(&repo, &[]), 0);
    let copies = corrupt_copies(&repo, spec);
    assert!(
        copies.contains(&garbage1) && copies.contains(&garbage2),
        "both broken plans should be kept; kept: {:?}",
        copies
            .iter()
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_corrupt_plan_without_any_copy_is_left_untouched_exit_2() {
    let spec = "042-nocopy";
    let repo = TestRepo::new();
    repo.add_spec(spec);
    let garbage = "{\n  \"phases\": [\n    {\"id\": \"p1\",, }\n  ]\n}\n";
    repo.write_plan(spec, garbage);
    let out = recover(&repo, &[]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("implementation_plan.json"), "{err}");
    assert_eq!(
        std::fs::read_to_string(repo.plan_path(spec)).unwrap(),
        garbage
    );
    assert!(corrupt_copies(&repo, spec).is_empty());
    assert!(events_of(&repo, spec, "plan_restored").is_empty());
}

#[test]
fn a_plan_that_cannot_be_restored_is_reported_once() {
    let spec = "045-once";
    let repo = TestRepo::new();
    repo.add_spec(spec);
    repo.write_plan(spec, "{bad");
    for out in [recover(&repo, &[]), repo.run_spec(spec, &[])] {
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert_eq!(
            err.matches("not valid JSON").count(),
            1,
            "the error is printed more than once:\n{err}"
        );
    }
}

#[test]
fn a_planned_spec_can_be_restored_from_the_journal() {
    // The planner wrote the plan in the spec's first run; the journal snapshots a plan "at
    // each run start and plan acceptance" (src/engine/recovery/restore.rs).
    let spec = "043-planned";
    let repo = TestRepo::new();
    repo.add_spec(spec);
    repo.write_config("[run]\nmax_sessions = 2\n");
    assert_exit(&repo.run_spec(spec, &[]), 5);
    assert_eq!(repo.chunk(spec, "core-a")["status"], "completed");
    std::fs::remove_file(
        repo.spec_dir(spec)
            .join("implementation_plan.json.last-good"),
    )
    .unwrap();
    std::fs::write(repo.plan_path(spec), "broken {").unwrap();
    let out = recover(&repo, &["--json"]);
    assert_exit(&out, 0);
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["specs"][0]["plan_source"], "journal");
    assert_eq!(repo.chunk(spec, "core-a")["status"], "completed");
}

#[test]
fn run_restores_a_corrupt_plan_it_has_a_copy_of_and_finishes() {
    let spec = "044-run-restores";
    let repo = partial_run(spec);
    let garbage = b"{\"phases\": oops".to_vec();
    std::fs::write(repo.plan_path(spec), &garbage).unwrap();
    let sessions = repo.agent_log().len();
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("Recovered {spec}")) && err.contains("last good copy"),
        "{err}"
    );
    assert!(repo.statuses(spec).iter().all(|(_, s)| s == "completed"));
    // Only polish ran: the completed chunks were not redone.
    let new: Vec<String> = repo.agent_log()[sessions..].to_vec();
    assert_eq!(new.len(), 1, "{new:?}");
    assert!(new[0].starts_with("coder polish "), "{new:?}");
    assert_eq!(corrupt_copies(&repo, spec), vec![garbage]);
    assert_eq!(
        events_of(&repo, spec, "plan_restored")[0]["source"],
        "last_good"
    );
}

#[test]
fn a_plan_that_parses_but_breaks_a_rule_is_not_restored_over() {
    let spec = "050-rule";
    let repo = repo_with_fixture_plan(spec);
    assert_exit(&repo.run_spec(spec, &[]), 0);
    // A person edits the plan and leaves a chunk without a description.
    let text = std::fs::read_to_string(repo.plan_path(spec))
        .unwrap()
        .replace("\"description\": \"Polish it\"", "\"description\": \"\"");
    repo.write_plan(spec, &text);
    let out = recover(&repo, &["--spec", spec]);
    assert_exit(&out, 2);
    assert_eq!(
        std::fs::read_to_string(repo.plan_path(spec)).unwrap(),
        text,
        "left byte for byte"
    );
    assert!(corrupt_copies(&repo, spec).is_empty());
}

#[test]
fn a_new_plan_is_never_restored_from_the_old_plans_copies() {
    let spec = "051-replan";
    let repo = TestRepo::new();
    repo.add_spec(spec);
    assert_exit(&repo.run_spec(spec, &[]), 0);
    // The user moves the plan away to plan again; the planner writes garbage every time, as
    // its draft in the worktree: each is set aside, none becomes the spec's plan.
    std::fs::remove_file(repo.plan_path(spec)).unwrap();
    repo.script("planner * garbage\n");
    assert_exit(&repo.run_spec(spec, &[]), 3);
    assert!(!repo.plan_path(spec).exists());
    // Recovery must not bring the old, finished plan back in place of the new attempt.
    let out = recover(&repo, &["--spec", spec]);
    assert_exit(&out, 0);
    assert!(!repo.plan_path(spec).exists(), "{}", stdout(&out));
    assert!(events_of(&repo, spec, "plan_restored").is_empty());
    // Nor over a broken plan the planner wrote straight into the spec folder (an agent that
    // knows the Auto-Claude layout): that is left for the user, byte for byte.
    repo.script("planner * garbage-in-spec\n");
    assert_exit(&repo.run_spec(spec, &[]), 3);
    let out = recover(&repo, &["--spec", spec]);
    assert_exit(&out, 2);
    assert_eq!(
        std::fs::read_to_string(repo.plan_path(spec)).unwrap(),
        "{\"phases\": [ {\"id\": \"p1\", "
    );
    assert!(events_of(&repo, spec, "plan_restored").is_empty());
}

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
