//! `runner chunk …` as agents and people call it, and plan round trips through the binary.

use crate::common::*;
use serde_json::Value;

fn failed_run(repo: &TestRepo, spec: &str) {
    repo.add_spec(spec);
    repo.script("polish * fail not today\n");
    repo.write_config("[run]\nmax_attempts = 1\n");
    assert_exit(&repo.run_spec(spec, &[]), 3);
    repo.script("");
}

#[test]
fn chunk_commands_find_the_spec_from_inside_the_worktree() {
    let repo = TestRepo::new();
    failed_run(&repo, "001-wt");
    // No --spec and no RUNNER_SPEC_DIR: the worktree's branch says which spec.
    let show = repo
        .cmd(&["chunk", "show", "polish", "--json"])
        .current_dir(repo.worktree().join("work"))
        .output()
        .unwrap();
    assert_exit(&show, 0);
    let v: Value = serde_json::from_str(&stdout(&show)).unwrap();
    assert_eq!(v["spec"], "001-wt");
    assert_eq!(v["current"]["chunk"]["id"], "polish");
    assert_eq!(v["current"]["chunk"]["status"], "failed");
    assert_eq!(v["progress"]["completed"], 2);

    // A person marks the failed chunk done by hand: it becomes completed directly.
    let done = repo
        .cmd(&["chunk", "done", "polish", "--notes", "fixed by hand"])
        .current_dir(repo.worktree())
        .output()
        .unwrap();
    assert_exit(&done, 0);
    let polish = repo.chunk("001-wt", "polish");
    assert_eq!(polish["status"], "completed");
    assert_eq!(polish["notes"], "fixed by hand");
    assert!(polish["completed_at"].is_string());
    let report = repo
        .events("001-wt")
        .into_iter()
        .rfind(|e| e["event"] == "chunk_report")
        .unwrap();
    assert_eq!(report["chunk"], "polish");

    // And `fail` by hand.
    let fail = repo
        .cmd(&["chunk", "fail", "core-a", "--reason", "regressed", "--json"])
        .current_dir(repo.worktree())
        .output()
        .unwrap();
    assert_exit(&fail, 0);
    let v: Value = serde_json::from_str(&stdout(&fail)).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["schema"], 1);
    assert_eq!(v["spec"], "001-wt");
    assert_eq!(v["chunk"], "core-a");
    assert_eq!(repo.chunk("001-wt", "core-a")["status"], "failed");
    assert_eq!(
        repo.chunk("001-wt", "core-a")["failure_reason"],
        "regressed"
    );
}

#[test]
fn chunk_errors_are_clear_and_change_nothing() {
    let repo = TestRepo::new();
    failed_run(&repo, "002-err");
    let before = std::fs::read(repo.plan_path("002-err")).unwrap();

    let unknown = repo.runner(&["chunk", "done", "nope", "--spec", "002"]);
    assert_exit(&unknown, 2);
    assert!(stderr(&unknown).contains("no chunk \"nope\"") && stderr(&unknown).contains("core-a"));

    // Outside any worktree, with several specs and nothing to say which: a usage error that
    // gives the command for each.
    repo.add_spec("003-other");
    let lost = repo.runner(&["chunk", "done", "polish"]);
    assert_exit(&lost, 2);
    assert!(
        stderr(&lost).contains("cannot tell which spec")
            && stderr(&lost).contains("runner chunk done polish --spec 002-err"),
        "{}",
        stderr(&lost)
    );

    let escape = repo.runner(&["chunk", "show", "--spec", "../../etc"]);
    assert_exit(&escape, 2);
    assert_eq!(std::fs::read(repo.plan_path("002-err")).unwrap(), before);
}

#[test]
fn a_report_from_a_stale_session_is_refused() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("003-stale");
    std::fs::write(
        dir.join("implementation_plan.json"),
        r#"{"phases": [{"id": "p", "subtasks": [
            {"id": "c", "description": "d", "status": "in_progress",
             "attempts": [{"n": 1, "session_id": "s-new"}]}]}]}"#,
    )
    .unwrap();
    let before = std::fs::read(repo.plan_path("003-stale")).unwrap();
    let out = repo
        .cmd(&["chunk", "done", "c", "--spec", "003"])
        .env("RUNNER_SESSION_ID", "s-old")
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("not the current attempt"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(repo.plan_path("003-stale")).unwrap(), before);

    // The current session's report is recorded on the attempt; the chunk stays in progress
    // until the run has verified it.
    let out = repo
        .cmd(&["chunk", "done", "c", "--spec", "003", "--notes", "all good"])
        .env("RUNNER_SESSION_ID", "s-new")
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let c = repo.chunk("003-stale", "c");
    assert_eq!(c["status"], "in_progress");
    assert_eq!(c["attempts"][0]["reported"], "done");
    assert_eq!(c["attempts"][0]["report_notes"], "all good");
}

#[test]
fn real_auto_claude_plans_survive_a_write_through_the_binary() {
    let Some(dir) = reference_plans_dir() else {
        return;
    };
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        seen += 1;
        let repo = TestRepo::new();
        let spec_dir = repo.add_spec("001-real");
        std::fs::copy(&path, spec_dir.join("implementation_plan.json")).unwrap();
        let original: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();

        // The binary agrees on what is next.
        let show = repo.runner(&["chunk", "show", "--spec", "001", "--json"]);
        assert_exit(&show, 0);
        let shown: Value = serde_json::from_str(&stdout(&show)).unwrap();
        let next = shown["current"]["chunk"]["id"]
            .as_str()
            .unwrap()
            .to_string();

        // Mark it done by hand: the plan is rewritten by runner.
        assert_exit(&repo.runner(&["chunk", "done", &next, "--spec", "001"]), 0);
        let mut written = repo.plan("001-real");

        // Everything but that chunk's status and completed_at is exactly as it was.
        let chunk_key = if original["phases"][0].get("subtasks").is_some() {
            "subtasks"
        } else {
            "chunks"
        };
        let mut found = false;
        for phase in written["phases"].as_array_mut().unwrap() {
            for c in phase[chunk_key].as_array_mut().unwrap() {
                if c["id"] == next.as_str() {
                    assert_eq!(c["status"], "completed");
                    let obj = c.as_object_mut().unwrap();
                    obj.remove("completed_at").expect("completed_at set");
                    found = true;
                }
            }
        }
        assert!(found);
        let mut expected = original.clone();
        for phase in expected["phases"].as_array_mut().unwrap() {
            for c in phase[chunk_key].as_array_mut().unwrap() {
                if c["id"] == next.as_str() {
                    c["status"] = Value::from("completed");
                }
            }
        }
        assert_eq!(
            written,
            expected,
            "{} lost or changed fields",
            path.display()
        );
        // Field order is kept at the top level.
        let keys_written: Vec<&String> = written.as_object().unwrap().keys().collect();
        let keys_original: Vec<&String> = original.as_object().unwrap().keys().collect();
        assert_eq!(keys_written, keys_original);
    }
    assert!(
        seen >= 2,
        "expected the reference plans in {}",
        dir.display()
    );
}

#[test]
fn the_run_lock_says_who_holds_it() {
    let repo = TestRepo::new();
    repo.add_spec("004-lock");
    repo.script("core-a * slow 2\n");
    let agent = fixture("fake-agent").display().to_string();
    let mut child = repo
        .cmd(&["run", "--spec", "004", "--agent-command", &agent])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("a coder session", || {
        repo.agent_log().iter().any(|l| l.starts_with("coder"))
    });
    let text = std::fs::read_to_string(repo.spec_dir("004-lock").join("run.lock")).unwrap();
    let holder: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(holder["pid"], child.id());
    let run_id = holder["run_id"].as_str().unwrap();
    assert!(
        run_id.len() == 13
            && run_id.starts_with('r')
            && run_id[1..]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "a run id is r and 12 lowercase hex digits: {run_id}"
    );
    for key in ["host", "since", "heartbeat"] {
        assert!(holder[key].is_string(), "{key} missing in {holder}");
    }
    assert!(child.wait().unwrap().success());
}

#[test]
fn an_agent_session_may_report_only_on_its_own_chunk() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("005-own");
    std::fs::write(
        dir.join("implementation_plan.json"),
        r#"{"phases": [{"id": "p", "subtasks": [
            {"id": "c1", "description": "d", "status": "in_progress",
             "attempts": [{"n": 1, "session_id": "s-1"}]},
            {"id": "c2", "description": "d", "status": "pending"}]}]}"#,
    )
    .unwrap();
    let before = std::fs::read(repo.plan_path("005-own")).unwrap();
    let out = repo
        .cmd(&["chunk", "done", "c2", "--spec", "005"])
        .env("RUNNER_SESSION_ID", "s-1")
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("may only report on the chunk it is working on"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(repo.plan_path("005-own")).unwrap(), before);
}

#[test]
fn chunk_show_reads_as_text_and_gives_json_with_json() {
    let repo = repo_with_fixture_plan("001-show");
    let mut plan = repo.plan("001-show");
    plan["phases"][1]["subtasks"][0]["description"] = "Polish \u{1b}[2J it".into();
    plan["phases"][1]["subtasks"][0]["files_to_modify"] = serde_json::json!(["src/a.rs"]);
    repo.write_plan("001-show", &serde_json::to_string_pretty(&plan).unwrap());
    let out = repo.runner(&["chunk", "show", "polish", "--spec", "001"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(serde_json::from_str::<Value>(&text).is_err(), "{text}");
    crate::assert_screen!(repo, text, @r#"
    Chunk polish [pending]
    Spec 001-show, phase phase-2 (Polish)

    Polish \u{1b}[2J it

    Files to modify:
    - src/a.rs

    Also in the plan:
      x_custom: {"kept":true}

    Progress: 0/3 chunks completed
    "#);
    let core_a = stdout(&repo.runner(&["chunk", "show", "core-a", "--spec", "001"]));
    assert!(
        core_a.contains("\nFiles to create:\n- work/core-a.txt\n"),
        "{core_a}"
    );

    let json: Value = serde_json::from_str(&stdout(
        &repo.runner(&["chunk", "show", "polish", "--json"]),
    ))
    .unwrap();
    assert_eq!(
        json["current"]["chunk"]["description"],
        "Polish \u{1b}[2J it"
    );
    assert_eq!(json["current"]["chunk"]["x_custom"]["kept"], true);
    assert_eq!(json["current"]["attempt"], Value::Null);
    let core_b: Value = serde_json::from_str(&stdout(
        &repo.runner(&["chunk", "show", "core-b", "--json"]),
    ))
    .unwrap();
    assert_eq!(
        core_b["current"]["verification"]["command"],
        "test -f work/core-b.txt"
    );
    assert_eq!(core_b["current"]["verification"]["runs"], true);
}
