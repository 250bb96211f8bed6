//! The planning step of a run and the plan a run reads: a planner's failures and drafts, a
//! corrupt or unknown plan, an agent that breaks the plan, spec names.

use super::*;

#[test]
fn planner_output_invalid_then_fixed() {
    let repo = TestRepo::new();
    repo.add_spec("007-plan");
    repo.script("planner 1 garbage\n");
    let out = repo.run_spec("007", &[]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("not a valid plan"),
        "{}",
        stderr(&out)
    );
    let second = std::fs::read_dir(repo.tmp.path().join("prompts"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .find(|t| t.contains("Your previous plan was rejected"))
        .expect("the second planner prompt carries the errors");
    assert!(second.contains("not valid JSON"), "{second}");
    let rejected = repo
        .events("007-plan")
        .into_iter()
        .filter(|e| e["event"] == "plan_rejected")
        .count();
    assert_eq!(rejected, 1);
    assert!(
        repo.statuses("007-plan")
            .iter()
            .all(|(_, s)| s == "completed")
    );
}

#[test]
fn a_draft_left_by_an_earlier_run_is_set_aside_and_a_plan_in_the_spec_folder_is_taken() {
    let repo = TestRepo::new();
    repo.add_spec("016-draft");
    repo.write_config("[run]\nmax_attempts = 1\n");
    // A first run's planner writes nothing: the worktree is there, no plan.
    repo.script("planner * none\n");
    assert_exit(&repo.run_spec("016", &[]), 3);
    // A draft is left in the worktree (by a planner killed with its runner, say): a valid
    // plan, but not the next planner's.
    let draft = repo.worktree().join(".auto-claude/plan-draft.json");
    let stale = r#"{"phases": [{"id": "old", "subtasks": [{"id": "stale", "description": "x", "status": "pending"}]}]}"#;
    std::fs::write(&draft, stale).unwrap();
    // The next planner writes its plan straight into the spec folder (an agent that knows
    // the Auto-Claude layout): with no draft of its own, that plan is taken.
    let plan = fixture("plans/two-phases.json");
    repo.script(&format!("planner * plan-in-spec {}\n", plan.display()));
    assert_exit(&repo.run_spec("016", &[]), 0);
    let statuses = repo.statuses("016-draft");
    assert!(
        !statuses.iter().any(|(id, _)| id == "stale"),
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|(_, s)| s == "completed"),
        "{statuses:?}"
    );
    let left: Vec<_> = std::fs::read_dir(repo.spec_dir("016-draft"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("plan-draft.json.left-")
        })
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(std::fs::read_to_string(&left[0]).unwrap(), stale);
    assert!(!draft.exists());
}

#[test]
fn a_planner_whose_cli_fails_is_shown_in_the_clis_own_words() {
    let repo = TestRepo::new();
    repo.add_spec("008-login");
    repo.write_config("[run]\nmax_attempts = 1\n");
    repo.script("planner * exit 1 Error: not logged in. Run /login first.\n");
    let out = repo.run_spec("008", &[]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    let draft = repo.worktree().join(".auto-claude/plan-draft.json");
    assert!(
        err.contains(&format!(
            "the planner wrote no plan (it was to write {})",
            draft.display()
        )),
        "{err}"
    );
    // Its own words, once, as the end of what it printed.
    assert_eq!(
        err.matches("Error: not logged in. Run /login first.")
            .count(),
        1,
        "{err}"
    );
}

#[test]
fn planner_that_never_produces_a_plan_stops_with_exit_3_and_keeps_its_output() {
    let repo = TestRepo::new();
    repo.add_spec("008-noplan");
    repo.write_config("[run]\nmax_attempts = 2\n");
    repo.script("planner * invalid\n");
    let out = repo.run_spec("008", &[]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains("did not produce a valid plan in 2 attempts"),
        "{err}"
    );
    assert!(err.contains("missing (every chunk needs an id)"), "{err}");
    // Each rejected draft is kept in the spec folder for the user to look at, named in the
    // problems; nothing is installed as the plan and no draft is left in the worktree.
    let dir = repo.spec_dir("008-noplan");
    let mut rejected: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("plan-draft.json.rejected-")
        })
        .collect();
    rejected.sort();
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    for kept in &rejected {
        assert!(std::fs::read_to_string(kept).unwrap().contains("no id"));
    }
    assert!(
        err.contains(&format!(
            "the rejected plan is kept as {}",
            rejected[1].display()
        )),
        "{err}"
    );
    assert!(err.contains("plan-draft.json.rejected-*"), "{err}");
    assert!(!repo.plan_path("008-noplan").exists());
    assert!(
        !repo
            .worktree()
            .join(".auto-claude/plan-draft.json")
            .exists()
    );
    assert_eq!(repo.agent_log().len(), 2);
}

#[test]
fn a_corrupt_plan_is_reported_and_left_byte_for_byte() {
    let repo = TestRepo::new();
    repo.add_spec("009-corrupt");
    let garbage = "{\n  \"phases\": [\n    {\"id\": \"p1\",, }\n  ]\n}\n";
    repo.write_plan("009-corrupt", garbage);
    let out = repo.run_spec("009", &[]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("implementation_plan.json:3:"),
        "path and line: {err}"
    );
    assert!(err.contains("left untouched"), "{err}");
    assert_eq!(
        std::fs::read_to_string(repo.plan_path("009-corrupt")).unwrap(),
        garbage
    );
    assert!(
        repo.agent_log().is_empty(),
        "no agent may run on a corrupt plan"
    );
    // status shows it too, without touching it.
    let st = repo.runner(&["status", "--json"]);
    assert_exit(&st, 0);
    let v: Value = serde_json::from_str(&stdout(&st)).unwrap();
    assert_eq!(v["specs"][0]["status"], "invalid_plan");
    assert_eq!(
        std::fs::read_to_string(repo.plan_path("009-corrupt")).unwrap(),
        garbage
    );
}

#[test]
fn an_unknown_status_is_named_not_guessed() {
    let repo = TestRepo::new();
    repo.add_spec("010-status");
    let text = r#"{"phases": [{"id": "p", "subtasks": [{"id": "c1", "description": "d", "status": "half-done"}]}]}"#;
    repo.write_plan("010-status", text);
    let out = repo.run_spec("010", &[]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("\"half-done\"") && err.contains("c1"), "{err}");
    assert_eq!(
        std::fs::read_to_string(repo.plan_path("010-status")).unwrap(),
        text
    );
}

#[test]
fn an_agent_that_breaks_the_plan_has_it_restored_and_the_broken_file_kept() {
    // Issue 8: a plan broken during a run is restored at once from runner's last copy (the
    // broken file kept aside), so the run stops only for the chunk's own failures.
    let repo = TestRepo::new();
    repo.add_spec("011-broken");
    repo.script("core-a * garbage-plan\n");
    let out = repo.run_spec("011", &[]);
    assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("The plan was broken during the session of core-a"),
        "{}",
        stderr(&out)
    );
    assert_eq!(repo.statuses("011-broken")[0].1, "failed");
    let kept = std::fs::read_dir(repo.spec_dir("011-broken"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect::<Vec<_>>();
    assert_eq!(kept, vec!["not json {"; 3]);
}

#[test]
fn spec_names_resolve_by_number_and_substring_and_reject_escapes() {
    let repo = TestRepo::new();
    repo.add_spec("001-add-login");
    repo.add_spec("002-add-logout");
    repo.add_spec("010-login-page");

    let ambiguous = repo.run_spec("login", &[]);
    assert_exit(&ambiguous, 2);
    let err = stderr(&ambiguous);
    assert!(
        err.contains("001-add-login") && err.contains("010-login-page"),
        "{err}"
    );

    for bad in ["../etc", "/etc/passwd", "a/b", "..", "x\u{1}y"] {
        let out = repo.run_spec(bad, &[]);
        assert_exit(&out, 2);
        assert!(
            stderr(&out).contains("invalid spec name"),
            "{bad}: {}",
            stderr(&out)
        );
    }
    let none = repo.run_spec("999", &[]);
    assert_exit(&none, 2);
    assert!(stderr(&none).contains("no spec matches"));
    assert!(repo.agent_log().is_empty());

    // A number finds its folder; a unique substring too.
    assert_exit(&repo.run_spec("001", &[]), 0);
    assert_exit(&repo.run_spec("logout", &["--slot", "b"]), 0);
    assert_eq!(repo.statuses("002-add-logout").len(), 3);
    assert!(
        !repo
            .spec_dir("010-login-page")
            .join("implementation_plan.json")
            .exists()
    );
}

#[test]
fn an_interrupted_planner_leaves_no_half_plan_in_the_way() {
    let repo = TestRepo::new();
    repo.add_spec("120-plan-int");
    // The planner writes half a plan, then hangs; Ctrl-C arrives.
    repo.script("planner 1 hang\n");
    let agent = fixture("fake-agent").display().to_string();
    let child = repo
        .cmd(&["run", "--spec", "120", "--agent-command", &agent])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the planner", || !repo.agent_log().is_empty());
    std::fs::write(repo.plan_path("120-plan-int"), "{\"phases\": [").unwrap();
    // Its draft in the worktree is half written too.
    let draft = repo.worktree().join(".auto-claude/plan-draft.json");
    std::fs::write(&draft, "{\"phases\": [ {").unwrap();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 130);
    assert!(!repo.plan_path("120-plan-int").exists());
    let named = |prefix: &str| -> Vec<_> {
        std::fs::read_dir(repo.spec_dir("120-plan-int"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
            .collect()
    };
    let aside = named("implementation_plan.json.interrupted-");
    assert_eq!(aside.len(), 1, "the partial plan is kept aside");
    // The half draft too, out of the worktree: the next planner does not read it as its own.
    let drafts = named("plan-draft.json.interrupted-");
    assert_eq!(drafts.len(), 1, "the partial draft is kept aside");
    assert_eq!(
        std::fs::read_to_string(&drafts[0]).unwrap(),
        "{\"phases\": [ {"
    );
    assert!(!draft.exists());
    repo.script("");
    assert_exit(&repo.run_spec("120", &[]), 0);
}
