//! `runner run` end to end: the real binary, real git repositories, the fake agent.

use crate::common::*;
use serde_json::Value;
use serde_json::json;

mod planning;
mod slots;

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
fn a_terminal_gets_a_progress_bar_and_a_pipe_gets_plain_lines() {
    let repo = TestRepo::new();
    repo.add_spec("130-tty");
    let agent = fixture("fake-agent").display().to_string();
    // util-linux `script` runs runner on a pseudo-terminal.
    let command = format!("{} run --spec 130 --agent-command {}", RUNNER, agent);
    let out = crate::common::isolated("script")
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
        err.contains("[1/3] core-a: Build part A (attempt 1 of 3)"),
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

/// Files named `pwned*` anywhere under `dir`: what a chunk id run as a command would make.
fn pwned_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p);
            } else if e.file_name().to_string_lossy().starts_with("pwned") {
                out.push(p);
            }
        }
    }
    out
}

/// A hostile plan's chunk ids reach the agent's shell only as one quoted word: the coder's
/// prompt quotes them in every command it gives, and an agent that runs the report command
/// as told reports the right chunk (spaces, `;`, `$( )`, a quote, a leading dash) and runs
/// nothing else.
#[test]
fn hostile_chunk_ids_are_quoted_in_the_commands_the_prompt_gives() {
    let repo = TestRepo::new();
    let spec = "001-hostile";
    repo.add_spec(spec);
    let ids = [
        "x; touch pwned-semicolon",
        "two words",
        "it's $(touch pwned-subst)",
        "-n `touch pwned-backtick`",
    ];
    let plan = json!({
        "feature": "Hostile ids",
        "phases": [{"id": "p", "name": "P", "subtasks": ids.iter().map(|id| json!({
            "id": id, "description": "do it", "status": "pending"
        })).collect::<Vec<_>>()}]
    });
    repo.write_plan(spec, &serde_json::to_string_pretty(&plan).unwrap());
    repo.script("");
    let agent = fixture("fake-agent").display().to_string();
    let out = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent])
        .env("FAKE_AGENT_DEFAULT", "as-told")
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let statuses = repo.statuses(spec);
    assert!(
        statuses.iter().all(|(_, s)| s == "completed"),
        "{statuses:?}\n{}",
        stderr(&out)
    );
    assert_eq!(
        pwned_files(repo.tmp.path()),
        Vec::<std::path::PathBuf>::new()
    );

    let prompts: Vec<String> = std::fs::read_dir(repo.tmp.path().join("prompts"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    // runner by its absolute path, one shell word.
    let runner = runner_word();
    let done = format!(
        "- Report success with: `{runner} chunk done --notes \"what you did\" -- 'x; touch pwned-semicolon'`"
    );
    assert!(
        prompts.iter().any(|p| p.contains(&done)),
        "no prompt has the line {done}"
    );
    let fail = format!("`{runner} chunk fail --reason \"why\" -- 'it'\\''s $(touch pwned-subst)'`");
    assert!(
        prompts.iter().any(|p| p.contains(&fail)),
        "no prompt has {fail}"
    );
}
