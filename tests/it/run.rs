//! `runner run` end to end: the real binary, real git repositories, the fake agent.

use crate::common::*;
use serde_json::Value;

#[test]
fn full_run_plans_builds_and_commits_every_chunk() {
    let repo = TestRepo::new();
    repo.add_spec("001-add-login");
    let out = repo.run_spec("001", &["--json"]);
    assert_exit(&out, 0);
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(summary["outcome"], "complete");
    assert_eq!(summary["completed"], 3);
    assert_eq!(summary["total"], 3);
    assert_eq!(summary["branch"], "auto-claude/001-add-login");
    assert_eq!(summary["base_branch"], "main");

    // Every chunk completed, in order, each with its own commit on the spec's branch.
    let statuses = repo.statuses("001-add-login");
    assert_eq!(
        statuses,
        vec![
            ("core-a".to_string(), "completed".to_string()),
            ("core-b".into(), "completed".into()),
            ("polish".into(), "completed".into()),
        ]
    );
    assert_eq!(
        repo.branch_log("auto-claude/001-add-login"),
        vec![
            "auto-claude: core-a - Build part A",
            "auto-claude: core-b - Build part B",
            "auto-claude: polish - Polish it",
        ]
    );
    let tree = repo.git(&["ls-tree", "-r", "--name-only", "auto-claude/001-add-login"]);
    for f in ["work/core-a.txt", "work/core-b.txt", "work/polish.txt"] {
        assert!(tree.lines().any(|l| l == f), "{f} not committed: {tree}");
    }
    // The worktree is the slot, on the spec's branch, and clean.
    let wt = repo.worktree();
    assert_eq!(
        git_in(&wt, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "auto-claude/001-add-login"
    );
    assert_eq!(git_in(&wt, &["status", "--porcelain"]), "");
    // runner's folders are excluded through .git/info/exclude, not .gitignore.
    let exclude = repo.read(".git/info/exclude");
    assert!(exclude.contains("/.auto-claude/") && exclude.contains("/.worktrees/"));
    assert!(!repo.path(".gitignore").exists());
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    // main did not move.
    assert_eq!(repo.git(&["log", "--format=%s", "main"]).trim(), "initial");

    // Unknown fields of the plan survived every write; the base branch is pinned.
    let plan = repo.plan("001-add-login");
    assert_eq!(plan["custom_top"], serde_json::json!([1, 2, 3]));
    assert!(plan.as_object().unwrap().contains_key("qa_signoff"));
    assert_eq!(
        repo.chunk("001-add-login", "polish")["x_custom"]["kept"],
        true
    );
    assert_eq!(plan["base_branch"], "main");
    let attempts = repo.chunk("001-add-login", "core-b")["attempts"].clone();
    assert_eq!(attempts.as_array().unwrap().len(), 1);
    assert_eq!(attempts[0]["outcome"], "completed");
    assert_eq!(attempts[0]["reported"], "done");
    assert!(attempts[0]["start_commit"].as_str().unwrap().len() == 40);

    // The journal tells the story.
    let events = repo.events("001-add-login");
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    for k in [
        "run_start",
        "session_start",
        "session_end",
        "plan_accepted",
        "chunk_status",
        "verification",
        "commit",
        "run_end",
    ] {
        assert!(kinds.contains(&k), "no {k} event in {kinds:?}");
    }
    let end = events.iter().find(|e| e["event"] == "session_end").unwrap();
    for key in [
        "role",
        "attempt",
        "session_id",
        "start_commit",
        "exit_status",
        "duration_ms",
        "time",
        "run_id",
    ] {
        assert!(end.get(key).is_some(), "session_end lacks {key}: {end}");
    }
    let verification = events
        .iter()
        .find(|e| e["event"] == "verification")
        .unwrap();
    assert_eq!(verification["chunk"], "core-b");
    assert_eq!(verification["passed"], true);
    assert_eq!(events.last().unwrap()["outcome"], "complete");

    // Sessions are logged: the prompt given and the output.
    let sessions: Vec<_> = std::fs::read_dir(repo.spec_dir("001-add-login").join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(sessions.len(), 4, "planner + 3 coders");
    for s in &sessions {
        assert!(s.join("prompt.md").is_file() && s.join("output.log").is_file());
    }

    // The agent saw the contract.
    let log = repo.agent_log();
    assert_eq!(log.len(), 4);
    assert!(log[0].starts_with("planner - 1 "));
    assert!(log[1].starts_with("coder core-a 1 "));

    // Running again has nothing to do and says so.
    let again = repo.run_spec("001-add-login", &[]);
    assert_exit(&again, 0);
    assert_eq!(repo.agent_log().len(), 4);
}

#[test]
fn coder_prompt_carries_spec_chunk_files_and_progress() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    assert_exit(&repo.run_spec("001-x", &[]), 0);
    let prompts = repo.tmp.path().join("prompts");
    let text: Vec<String> = std::fs::read_dir(&prompts)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    let core_b = text
        .iter()
        .find(|t| t.contains("Your step: core-b"))
        .expect("core-b prompt");
    assert!(core_b.contains("Build the thing."), "spec text missing");
    assert!(
        core_b.contains("test -f work/core-b.txt"),
        "verification missing"
    );
    assert!(
        core_b.contains("1 of 3 steps are done"),
        "progress missing:\n{core_b}"
    );
    // runner is named by its absolute path (an agent's shell may not have runner's PATH).
    assert!(
        core_b.contains(&format!(
            "{} chunk done --notes \"what you did\" -- core-b",
            runner_word()
        )),
        "{core_b}"
    );
    let core_a = text
        .iter()
        .find(|t| t.contains("Your step: core-a"))
        .unwrap();
    assert!(
        core_a.contains("work/core-a.txt"),
        "files_to_create missing"
    );
    let planner = text
        .iter()
        .find(|t| t.contains("You are the planner"))
        .unwrap();
    // The planner writes its draft in the worktree; runner installs it as the spec's plan.
    let draft = repo.worktree().join(".auto-claude/plan-draft.json");
    assert!(planner.contains(&draft.display().to_string()), "{planner}");
    assert!(!planner.contains("implementation_plan.json"), "{planner}");
}

#[test]
fn phases_run_in_dependency_order_not_file_order() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("002-deps");
    std::fs::copy(
        fixture("plans/out-of-order.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
    let out = repo.run_spec("002", &[]);
    assert_exit(&out, 0);
    let order: Vec<String> = repo
        .agent_log()
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap().to_string())
        .collect();
    assert_eq!(order, vec!["types-1", "types-2", "build-api", "use-api"]);
    // The chunks-era plan keeps its shape: `chunks`, numeric phases, synonyms normalised.
    let plan = repo.plan("002-deps");
    assert!(plan["phases"][2].get("chunks").is_some());
    assert!(plan["phases"][2].get("subtasks").is_none());
    assert_eq!(plan["phases"][0]["depends_on"], serde_json::json!([2]));
    assert_eq!(repo.chunk("002-deps", "types-1")["title"], "Define types");
    assert!(
        repo.statuses("002-deps")
            .iter()
            .all(|(_, s)| s == "completed")
    );
}

#[test]
fn a_failing_chunk_is_retried_with_the_reason_then_fails_for_good() {
    let repo = TestRepo::new();
    repo.add_spec("003-fail");
    repo.write_config("[run]\nmax_attempts = 2\n");
    repo.script("core-b * fail the database is down\n");
    let out = repo.run_spec("003", &[]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(err.contains("chunk core-b failed 2 times"), "{err}");
    assert!(err.contains("the database is down"), "{err}");
    assert!(
        err.contains("sessions"),
        "should say where the logs are: {err}"
    );

    let chunk = repo.chunk("003-fail", "core-b");
    assert_eq!(chunk["status"], "failed");
    let attempts = chunk["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    assert!(attempts.iter().all(|a| a["outcome"] == "failed"));
    assert!(
        chunk["failure_reason"]
            .as_str()
            .unwrap()
            .contains("database is down")
    );
    // core-a stays completed; polish never started.
    assert_eq!(repo.chunk("003-fail", "core-a")["status"], "completed");
    assert_eq!(repo.chunk("003-fail", "polish")["status"], "pending");

    // The retry prompt said what went wrong the first time.
    let retry = std::fs::read_dir(repo.tmp.path().join("prompts"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .find(|t| t.contains("This is attempt 2"))
        .expect("a retry prompt");
    assert!(retry.contains("the database is down"), "{retry}");
    assert!(retry.contains("Your step: core-b"));

    // A new run does not loop on the failed chunk: it needs a human.
    let again = repo.run_spec("003", &[]);
    assert_exit(&again, 3);
    assert!(
        stderr(&again).contains("core-b is failed"),
        "{}",
        stderr(&again)
    );
    assert_eq!(repo.agent_log().len(), 4, "no new session was started");
}

#[test]
fn an_attempt_that_crashes_is_retried_and_its_leftovers_kept() {
    let repo = TestRepo::new();
    repo.add_spec("004-retry");
    repo.script("core-a 1 exit 7 Error: the model is overloaded\n");
    let out = repo.run_spec("004", &[]);
    assert_exit(&out, 0);
    let chunk = repo.chunk("004-retry", "core-a");
    let attempts = chunk["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0]["outcome"], "failed");
    // The reason says how the session ended and what its CLI said last.
    let reason = attempts[0]["reason"].as_str().unwrap();
    assert!(reason.contains("status 7"), "{reason}");
    assert!(
        reason.contains("the agent's CLI said: Error: the model is overloaded"),
        "{reason}"
    );
    assert_eq!(attempts[1]["outcome"], "completed");
    // The first attempt's partial file was left for the second, and both lines were committed.
    let committed = repo.git(&["show", "auto-claude/004-retry:work/core-a.txt"]);
    assert_eq!(committed, "core-a attempt 1\ncore-a attempt 2\n");
    let retry_prompt = std::fs::read_dir(repo.tmp.path().join("prompts"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .find(|t| t.contains("This is attempt 2"))
        .unwrap();
    assert!(
        retry_prompt.contains("work/"),
        "leftovers listed: {retry_prompt}"
    );
}

#[test]
fn verification_failure_is_a_failed_attempt() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("005-verify");
    std::fs::write(
        dir.join("implementation_plan.json"),
        r#"{"phases": [{"id": "p", "subtasks": [
            {"id": "v", "description": "needs a file", "status": "pending",
             "verification": {"type": "command", "run": "test -f never-there"}}]}]}"#,
    )
    .unwrap();
    repo.write_config("[run]\nmax_attempts = 1\n");
    let out = repo.run_spec("005", &[]);
    assert_exit(&out, 3);
    let chunk = repo.chunk("005-verify", "v");
    assert_eq!(chunk["status"], "failed");
    let reason = chunk["attempts"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("test -f never-there"), "{reason}");
    // Nothing was committed for the failed chunk.
    assert!(repo.branch_log("auto-claude/005-verify").is_empty());
}

#[test]
fn uncommitted_work_is_committed_and_agent_commits_are_kept() {
    let repo = TestRepo::new();
    repo.add_spec("006-commits");
    repo.script("core-a * commit\n");
    let out = repo.run_spec("006", &[]);
    assert_exit(&out, 0);
    assert_eq!(
        repo.branch_log("auto-claude/006-commits"),
        vec![
            "agent: core-a",
            "auto-claude: core-b - Build part B",
            "auto-claude: polish - Polish it",
        ]
    );
}

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
        err.contains(&format!("the planner did not write {}", draft.display())),
        "{err}"
    );
    assert!(
        err.contains("the agent's CLI said: Error: not logged in. Run /login first."),
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
fn two_runs_of_one_spec_exactly_one_proceeds_the_other_exits_4() {
    let repo = TestRepo::new();
    repo.add_spec("012-busy");
    repo.script("core-a 1 slow 3\n");
    let agent = fixture("fake-agent").display().to_string();
    let mut first = repo
        .cmd(&["run", "--spec", "012", "--agent-command", &agent])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first run is in its coder session.
    wait_for("a coder session", || {
        repo.agent_log().iter().any(|l| l.starts_with("coder"))
    });
    let second = repo.run_spec("012", &[]);
    assert_exit(&second, 4);
    let err = stderr(&second);
    assert!(err.contains(&format!("pid {}", first.id())), "{err}");
    let holder: Value = serde_json::from_str(
        std::fs::read_to_string(repo.spec_dir("012-busy").join("run.lock"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    let run_id = holder["run_id"].as_str().unwrap();
    assert!(run_id.starts_with('r') && run_id.len() == 13, "{run_id}");
    assert!(
        err.contains(&format!("run {run_id}")),
        "names the run id: {err}"
    );

    // status sees who runs it.
    let st: Value = serde_json::from_str(&stdout(&repo.runner(&["status", "--json"]))).unwrap();
    assert_eq!(st["specs"][0]["running"]["pid"], first.id());
    assert_eq!(st["specs"][0]["status"], "running");

    assert!(first.wait().unwrap().success());
    // Only the first run's sessions happened.
    assert_eq!(repo.agent_log().len(), 4);
    let st: Value = serde_json::from_str(&stdout(&repo.runner(&["status", "--json"]))).unwrap();
    assert_eq!(st["specs"][0]["running"], Value::Null);
}

#[test]
fn a_hanging_agent_is_killed_with_its_whole_process_group() {
    let repo = TestRepo::new();
    repo.add_spec("013-hang");
    repo.write_config("[run]\nsession_timeout = 1\nmax_attempts = 1\n");
    repo.script("core-a * hang\n");
    let started = std::time::Instant::now();
    let out = repo.run_spec("013", &[]);
    assert_exit(&out, 3);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let reason = repo.chunk("013-hang", "core-a")["attempts"][0]["reason"].clone();
    assert!(reason.as_str().unwrap().contains("timed out"), "{reason}");
    // The agent's background child is gone too.
    let pid: i32 = std::fs::read_to_string(repo.spec_dir("013-hang").join("fake-agent-child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let alive = std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ");
    assert!(!alive, "background child {pid} survived the timeout");
}

#[test]
fn slot_switches_between_specs_and_saves_uncommitted_changes_first() {
    let repo = TestRepo::new();
    repo.add_spec("020-a");
    repo.add_spec("021-b");
    assert_exit(&repo.run_spec("020-a", &[]), 0);
    let a_tip = repo.git(&["rev-parse", "auto-claude/020-a"]);

    // Leftovers of A in the slot: saved to A's recovery ref before the slot switches to B.
    std::fs::write(repo.worktree().join("scratch.txt"), "keep me").unwrap();
    std::fs::write(repo.worktree().join("README.md"), "changed\n").unwrap();
    let out = repo.run_spec("021-b", &[]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains(
            "uncommitted changes of spec 020-a: saved at refs/auto-claude/recovery/020-a/worktree/1"
        ),
        "{err}"
    );
    assert!(err.contains("Switched the slot"), "{err}");
    assert_eq!(
        git_in(&repo.worktree(), &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "auto-claude/021-b"
    );
    assert!(!repo.worktree().join("scratch.txt").exists());
    // Nothing lost: the ref holds both changes on top of A's tip.
    let saved = "refs/auto-claude/recovery/020-a/worktree/1";
    assert_eq!(
        repo.git(&["show", &format!("{saved}:scratch.txt")]),
        "keep me"
    );
    assert_eq!(
        repo.git(&["show", &format!("{saved}:README.md")]),
        "changed\n"
    );
    assert_eq!(repo.git(&["rev-parse", &format!("{saved}^")]), a_tip);
    // A's branch is intact.
    assert_eq!(repo.git(&["rev-parse", "auto-claude/020-a"]), a_tip);
    assert_eq!(repo.branch_log("auto-claude/020-a").len(), 3);

    // status reports which spec the slot holds.
    let st: Value = serde_json::from_str(&stdout(&repo.runner(&["status", "--json"]))).unwrap();
    let specs = st["specs"].as_array().unwrap();
    assert_eq!(specs[0]["worktree"], Value::Null);
    assert_eq!(specs[0]["branch"], "auto-claude/020-a");
    assert!(
        specs[1]["worktree"]
            .as_str()
            .unwrap()
            .ends_with(".worktrees/auto-claude")
    );
    assert_eq!(st["slots"][0]["spec"], "021-b");
}

#[test]
fn a_slot_on_a_foreign_branch_with_changes_is_refused() {
    let repo = TestRepo::new();
    repo.add_spec("022-a");
    assert_exit(&repo.run_spec("022-a", &[]), 0);
    // Someone checked out their own branch in the slot and left work there.
    git_in(&repo.worktree(), &["checkout", "-q", "-b", "my-experiment"]);
    std::fs::write(repo.worktree().join("scratch.txt"), "mine").unwrap();
    repo.add_spec("023-b");
    let out = repo.run_spec("023-b", &[]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("uncommitted changes") && err.contains("scratch.txt"),
        "{err}"
    );
    assert!(err.contains("--slot"), "says how to avoid it: {err}");
    assert_eq!(
        std::fs::read_to_string(repo.worktree().join("scratch.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn two_slots_build_two_specs_at_once() {
    let repo = TestRepo::new();
    repo.add_spec("030-a");
    repo.add_spec("031-b");
    repo.script("* * slow 1\n");
    let agent = fixture("fake-agent").display().to_string();
    let a = repo
        .cmd(&["run", "--spec", "030", "--agent-command", &agent])
        .spawn()
        .unwrap();
    let b = repo
        .cmd(&[
            "run",
            "--spec",
            "031",
            "--agent-command",
            &agent,
            "--slot",
            "two",
        ])
        .spawn()
        .unwrap();
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert_exit(&a, 0);
    assert_exit(&b, 0);
    assert!(repo.path(".worktrees/auto-claude-two").is_dir());
    assert_eq!(repo.branch_log("auto-claude/030-a").len(), 3);
    assert_eq!(repo.branch_log("auto-claude/031-b").len(), 3);
}

#[test]
fn a_second_spec_in_a_busy_slot_exits_4() {
    let repo = TestRepo::new();
    repo.add_spec("040-a");
    repo.add_spec("041-b");
    repo.script("core-a * slow 3\n");
    let agent = fixture("fake-agent").display().to_string();
    let mut first = repo
        .cmd(&["run", "--spec", "040", "--agent-command", &agent])
        .spawn()
        .unwrap();
    wait_for("a coder session", || {
        repo.agent_log().iter().any(|l| l.starts_with("coder"))
    });
    let out = repo.run_spec("041", &[]);
    assert_exit(&out, 4);
    assert!(stderr(&out).contains("slot"), "{}", stderr(&out));
    assert!(first.wait().unwrap().success());
}

#[test]
fn a_worktree_whose_folder_is_gone_is_reported_and_recreated() {
    let repo = TestRepo::new();
    repo.add_spec("050-gone");
    repo.script("polish * fail not yet\n");
    repo.write_config("[run]\nmax_attempts = 1\n");
    assert_exit(&repo.run_spec("050", &[]), 3);
    std::fs::remove_dir_all(repo.worktree()).unwrap();

    let st: Value = serde_json::from_str(&stdout(&repo.runner(&["status", "--json"]))).unwrap();
    assert_eq!(st["slots"][0]["state"], "broken");
    assert!(st["slots"][0]["problem"].as_str().unwrap().contains("gone"));
    assert_eq!(st["specs"][0]["worktree"], Value::Null);
    assert_eq!(st["specs"][0]["status"], "failed");
    assert_eq!(st["specs"][0]["chunks"]["completed"], 2);
    assert_eq!(st["specs"][0]["chunks"]["failed"], 1);

    // Put the chunk back and run: the slot is recreated from the branch, nothing lost.
    let plan = std::fs::read_to_string(repo.plan_path("050-gone")).unwrap();
    repo.write_plan(
        "050-gone",
        &plan.replace("\"status\": \"failed\"", "\"status\": \"pending\""),
    );
    repo.script("");
    let out = repo.run_spec("050", &[]);
    assert_exit(&out, 0);
    assert!(stderr(&out).contains("recreating it"), "{}", stderr(&out));
    assert!(repo.worktree().join("work/core-a.txt").is_file());
    assert_eq!(repo.branch_log("auto-claude/050-gone").len(), 3);
}

#[test]
fn status_json_has_the_documented_shape() {
    let repo = TestRepo::new();
    repo.add_spec("060-a");
    repo.add_spec("061-b");
    repo.script("polish * fail nope\n");
    repo.write_config("[run]\nmax_attempts = 1\n");
    assert_exit(&repo.run_spec("060", &[]), 3);
    let st: Value = serde_json::from_str(&stdout(&repo.runner(&["status", "--json"]))).unwrap();
    let a = &st["specs"][0];
    assert_eq!(st["schema"], 1);
    assert_eq!(a["spec"], "060-a");
    assert_eq!(a["status"], "failed");
    assert_eq!(a["branch"], "auto-claude/060-a");
    assert_eq!(
        a["chunks"],
        serde_json::json!({"total": 3, "completed": 2, "pending": 0, "in_progress": 0, "failed": 1, "blocked": 0})
    );
    assert_eq!(a["next_chunk"], Value::Null);
    assert_eq!(a["running"], Value::Null);
    let b = &st["specs"][1];
    assert_eq!(b["status"], "not_planned");
    assert_eq!(b["branch"], Value::Null);
    assert_eq!(b["worktree"], Value::Null);
    assert_eq!(b["next_chunk"], Value::Null);
    // The human form says the same.
    let text = stdout(&repo.runner(&["status"]));
    assert!(
        text.contains("060-a") && text.contains("2/3 chunks") && text.contains("1 failed"),
        "{text}"
    );
}

#[test]
fn base_branch_is_pinned_and_must_exist() {
    let repo = TestRepo::new();
    repo.git(&["branch", "develop"]);
    repo.add_spec("070-base");
    let missing = repo.run_spec("070", &["--base-branch", "nope"]);
    assert_exit(&missing, 2);
    assert!(
        stderr(&missing).contains("\"nope\" does not exist"),
        "{}",
        stderr(&missing)
    );

    repo.script("polish * fail later\n");
    repo.write_config("[run]\nmax_attempts = 1\n");
    assert_exit(&repo.run_spec("070", &["--base-branch", "develop"]), 3);
    assert_eq!(repo.plan("070-base")["base_branch"], "develop");
    let other = repo.run_spec("070", &["--base-branch", "main"]);
    assert_exit(&other, 2);
    assert!(stderr(&other).contains("pinned"), "{}", stderr(&other));
}

#[test]
fn an_orphaned_in_progress_chunk_is_reset_and_run_again() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("080-orphan");
    std::fs::write(
        dir.join("implementation_plan.json"),
        r#"{"phases": [{"id": "p", "subtasks": [
            {"id": "a", "description": "first", "status": "completed"},
            {"id": "b", "description": "second", "status": "in_progress",
             "attempts": [{"n": 1, "session_id": "old"}]}]}]}"#,
    )
    .unwrap();
    let out = repo.run_spec("080", &[]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("Recovered 080-orphan: chunk b: restart"),
        "{}",
        stderr(&out)
    );
    let b = repo.chunk("080-orphan", "b");
    assert_eq!(b["status"], "completed");
    assert_eq!(b["attempts"][0]["outcome"], "interrupted");
    assert_eq!(b["attempts"][1]["outcome"], "completed");
    assert_eq!(repo.agent_log().len(), 1, "only b ran");
}

#[test]
fn sigint_stops_the_agent_and_exits_130() {
    let repo = TestRepo::new();
    repo.add_spec("090-int");
    repo.script("core-a * hang\n");
    let agent = fixture("fake-agent").display().to_string();
    let child = repo
        .cmd(&["run", "--spec", "090", "--agent-command", &agent])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the agent", || {
        repo.spec_dir("090-int")
            .join("fake-agent-child.pid")
            .exists()
    });
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 130);
    let a = repo.chunk("090-int", "core-a");
    assert_eq!(a["status"], "pending");
    assert_eq!(a["attempts"][0]["outcome"], "interrupted");
    // Partial work stays in the worktree for the next attempt.
    assert!(repo.worktree().join("work/core-a.txt").is_file());
    // And the next run picks it up.
    repo.script("");
    assert_exit(&repo.run_spec("090", &[]), 0);
    assert_eq!(repo.chunk("090-int", "core-a")["status"], "completed");
}

#[test]
fn no_agent_command_is_a_usage_error() {
    let repo = TestRepo::new();
    repo.add_spec("100-x");
    let out = repo.runner(&["run", "--spec", "100"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("--agent-command"));
    // A config typo is named.
    repo.write_config("[run]\nmax_attemps = 2\n");
    let out = repo.runner(&["run", "--spec", "100"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("max_attemps"));
}

#[test]
fn the_session_budget_stops_a_run_with_exit_5() {
    let repo = TestRepo::new();
    repo.add_spec("110-budget");
    repo.write_config("[run]\nmax_sessions = 2\n");
    let out = repo.run_spec("110", &[]);
    assert_exit(&out, 5);
    assert_eq!(repo.agent_log().len(), 2);
    // Statuses are consistent: nothing left in progress.
    let s = repo.statuses("110-budget");
    assert_eq!(s.iter().filter(|(_, st)| st == "completed").count(), 1);
    assert_eq!(s.iter().filter(|(_, st)| st == "in_progress").count(), 0);
    assert_exit(&repo.run_spec("110", &[]), 0);
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

#[test]
fn a_terminal_gets_a_progress_bar_and_a_pipe_gets_plain_lines() {
    let repo = TestRepo::new();
    repo.add_spec("130-tty");
    let agent = fixture("fake-agent").display().to_string();
    // util-linux `script` runs runner on a pseudo-terminal.
    let command = format!("{} run --spec 130 --agent-command {}", RUNNER, agent);
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(&repo.root)
        .env("FAKE_AGENT_PLAN", fixture("plans/two-phases.json"))
        .env("TERM", "xterm")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let screen = stdout(&out);
    assert!(
        screen.contains("3/3 chunks"),
        "no bar on a terminal:\n{screen}"
    );
    assert!(screen.contains('█'), "no bar drawn:\n{screen}");

    // Piped: plain lines, no terminal control codes.
    let repo2 = TestRepo::new();
    repo2.add_spec("131-pipe");
    let out = repo2.run_spec("131", &[]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains("[1/3] core-a: Build part A (attempt 1)"),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "escape codes in piped output: {err:?}"
    );
}

#[test]
fn an_agent_that_cannot_start_leaves_the_chunk_pending() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("140-nostart");
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
    let out = repo.runner(&[
        "run",
        "--spec",
        "140",
        "--agent-command",
        "/no/such/agent --flag",
    ]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("cannot start"), "{}", stderr(&out));
    let a = repo.chunk("140-nostart", "core-a");
    assert_eq!(a["status"], "pending");
    assert_eq!(a["attempts"][0]["outcome"], "not_started");
}

#[test]
fn prompt_templates_can_be_overridden_per_repository() {
    let repo = TestRepo::new();
    repo.add_spec("150-tpl");
    repo.write(
        ".auto-claude/templates/coder.md",
        "CUSTOM CODER PROMPT for {{ chunk.id }} ({{ progress.completed }}/{{ progress.total }})\n",
    );
    assert_exit(&repo.run_spec("150", &[]), 0);
    let prompts: Vec<String> = std::fs::read_dir(repo.tmp.path().join("prompts"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(
        prompts
            .iter()
            .any(|p| p.contains("CUSTOM CODER PROMPT for core-b (1/3)"))
    );
    // The planner template was not overridden and is the embedded one.
    assert!(prompts.iter().any(|p| p.contains("You are the planner")));

    // A broken override is a clear usage error.
    repo.add_spec("151-bad-tpl");
    repo.write(".auto-claude/templates/planner.md", "{% if %}\n");
    let out = repo.run_spec("151", &[]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("planner.md"), "{}", stderr(&out));
}

#[test]
fn work_committed_off_the_spec_branch_is_not_counted_as_done() {
    let repo = TestRepo::new();
    repo.add_spec("160-detached");
    // The agent detaches HEAD, commits there, and reports done.
    let agent = repo.tmp.path().join("detaching-agent");
    std::fs::write(
        &agent,
        "#!/bin/sh\ncat >/dev/null\nif [ \"$RUNNER_ROLE\" = planner ]; then cp \"$FAKE_AGENT_PLAN\" \"$RUNNER_PLAN_FILE\"; exit 0; fi\ngit checkout -q --detach\nmkdir -p work && echo x > work/$RUNNER_CHUNK_ID.txt\ngit add -A && git -c user.name=a -c user.email=a@b commit -q -m detached\nrunner chunk done \"$RUNNER_CHUNK_ID\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = repo.runner(&[
        "run",
        "--spec",
        "160",
        "--agent-command",
        agent.to_str().unwrap(),
    ]);
    assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("not on auto-claude/160-detached"),
        "{}",
        stderr(&out)
    );
    let a = repo.chunk("160-detached", "core-a");
    assert_eq!(a["status"], "blocked");
    assert!(
        repo.branch_log("auto-claude/160-detached").is_empty(),
        "nothing landed on the branch"
    );
    // The detached commit is not lost when another spec takes the slot.
    let detached = git_in(&repo.worktree(), &["rev-parse", "HEAD"]);
    repo.add_spec("161-next");
    let out = repo.run_spec("161", &[]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("detached HEAD had commits on no branch"),
        "{}",
        stderr(&out)
    );
    let holders = repo.git(&[
        "for-each-ref",
        "--contains",
        detached.trim(),
        "refs/auto-claude",
    ]);
    assert!(
        holders.contains("refs/auto-claude/recovery/_detached/"),
        "{holders}"
    );
}
