//! `runner resume`: resolution of the hint (each step through the CLI), every error with its
//! exit code, the summary's shape, the handoff document, the list on a terminal, and a killed
//! run continued to completion as a new run with `resumed_from`.

use std::time::Duration;

use serde_json::Value;

use crate::common::*;

/// Spec `spec` run with the fake agent until it is SIGKILLed at `failpoint`; its run id.
fn interrupted(repo: &TestRepo, spec: &str, failpoint: &str) -> String {
    add_fixture_spec(repo, spec);
    repo.script("* * done\n");
    run_killed_at(repo, spec, failpoint);
    let ids = run_ids(repo, spec);
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

fn record(repo: &TestRepo, spec: &str, id: &str) -> Value {
    let path = repo.spec_dir(spec).join(format!("runs/{id}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `runner resume ARGS --no-run --json`: the summary (exit 0 asserted).
fn summary(repo: &TestRepo, args: &[&str]) -> Value {
    let mut all = vec!["resume"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--no-run", "--json"]);
    let out = repo.runner(&all);
    assert_exit(&out, 0);
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// A summary's warnings.
fn warnings_of(v: &Value) -> Vec<&str> {
    v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect()
}

fn resume(repo: &TestRepo, args: &[&str]) -> std::process::Output {
    let mut all = vec!["resume"];
    all.extend_from_slice(args);
    repo.runner(&all)
}

#[test]
fn no_match_is_exit_2_and_names_the_hint() {
    let repo = TestRepo::new();
    interrupted(&repo, "001-add-login", "after_commit@2");
    let out = resume(&repo, &["xyz", "--no-run"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("No run found matching 'xyz'"),
        "{}",
        stderr(&out)
    );
    crate::assert_screen!(repo, stderr(&out), @r#"
        runner: No run found matching 'xyz'
          hint: `runner runs` lists the runs and `runner status` the specs; `runner resume` alone takes the most recent run
        "#);
    // A run id prefix that matches no run, and a forced reading that does not fit.
    assert_exit(&resume(&repo, &["rfff", "--no-run"]), 2);
    assert_exit(&resume(&repo, &["--run", "001", "--no-run"]), 2);
    assert_exit(&resume(&repo, &["--chunk", "001", "--no-run"]), 2);
    // An empty hint is a mistake (a script's unset variable), not "the most recent run".
    for args in [
        &["", "--no-run"][..],
        &["--spec", " ", "--no-run"],
        &["--run", "", "--no-run"],
    ] {
        let out = resume(&repo, args);
        assert_exit(&out, 2);
        assert!(stderr(&out).contains("is empty"), "{}", stderr(&out));
        assert!(!stdout(&out).contains("Resuming"), "{}", stdout(&out));
    }
    // --json: the error object, same exit code.
    let out = resume(&repo, &["xyz", "--no-run", "--json"]);
    assert_exit(&out, 2);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["error"]["message"], "No run found matching 'xyz'");
}

#[test]
fn nothing_to_rebuild_from_is_exit_3() {
    let repo = TestRepo::new();
    // A spec never run, with no plan: nothing at all to rebuild from.
    repo.add_spec("001-new");
    let out = resume(&repo, &["001", "--no-run"]);
    assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("No data found to resume from"),
        "{}",
        stderr(&out)
    );
    // No hint and nothing resumable.
    let out = resume(&repo, &["--no-run", "--json"]);
    assert_exit(&out, 3);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["error"]["message"], "No data found to resume from");
}

#[test]
fn complete_merged_and_discarded_specs_are_never_candidates() {
    let repo = TestRepo::new();
    for spec in ["001-done", "002-landed"] {
        add_fixture_spec(&repo, spec);
        repo.script("* * done\n");
        assert_exit(&repo.run_spec(spec, &[]), 0);
    }
    assert_exit(&repo.runner(&["merge", "--spec", "002-landed", "--yes"]), 0);
    let thrown = interrupted(&repo, "003-thrown", "after_commit@2");
    assert_exit(
        &repo.runner(&["discard", "--spec", "003-thrown", "--yes"]),
        0,
    );
    for (hint, why) in [
        ("001-done", "complete"),
        ("002", "merged"),
        ("thrown", "discarded"),
        (thrown.as_str(), "discarded"),
    ] {
        let out = resume(&repo, &[hint, "--no-run"]);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains(&format!("No run found matching '{hint}'")),
            "{err}"
        );
        assert!(err.contains(why), "{hint}: {err}");
    }
    // No hint: nothing is left to resume.
    assert_exit(&resume(&repo, &["--no-run"]), 3);
    // Once the discarded spec runs again and is interrupted, it is a candidate again.
    repo.script("* * done\n");
    run_killed_at(&repo, "003-thrown", "after_commit@1");
    assert_eq!(summary(&repo, &[])["spec"], "003-thrown");
}

#[test]
fn each_reading_of_the_hint_resolves_through_the_cli() {
    let repo = TestRepo::new();
    // Interrupted at different chunks: core-b, core-a, polish in progress.
    let a = interrupted(&repo, "001-add-login", "after_commit@2");
    let b = interrupted(&repo, "002-add-logout", "after_commit@1");
    let c = interrupted(&repo, "010-login-page", "after_take@3");
    let spec_of = |args: &[&str]| {
        let v = summary(&repo, args);
        (
            v["spec"].as_str().unwrap().to_string(),
            v["run_id"].as_str().map(str::to_string),
        )
    };
    let s = |x: &str, id: &str| (x.to_string(), Some(id.to_string()));
    // 1. exact run id, 2. prefix (of 6, unique here or not: see the ambiguity test).
    assert_eq!(spec_of(&[&a]), s("001-add-login", &a));
    assert_eq!(spec_of(&[&b[..b.len() - 1]]), s("002-add-logout", &b));
    // 3. exact name, 4. number, 5. chunk in progress, 6. part of a name.
    assert_eq!(spec_of(&["010-login-page"]), s("010-login-page", &c));
    assert_eq!(spec_of(&["002"]), s("002-add-logout", &b));
    assert_eq!(spec_of(&["core-a"]), s("002-add-logout", &b));
    assert_eq!(spec_of(&["polish"]), s("010-login-page", &c));
    assert_eq!(spec_of(&["page"]), s("010-login-page", &c));
    // Forced readings.
    assert_eq!(spec_of(&["--spec", "logout"]), s("002-add-logout", &b));
    assert_eq!(spec_of(&["--run", &a]), s("001-add-login", &a));
    assert_eq!(spec_of(&["--chunk", "core-b"]), s("001-add-login", &a));
    // No hint: the most recent resumable run (the last one killed).
    assert_eq!(spec_of(&[]), s("010-login-page", &c));
    // A hint and a forced reading at once is a usage error.
    assert_exit(&resume(&repo, &["001", "--spec", "002", "--no-run"]), 2);
}

#[test]
fn several_matches_without_a_terminal_list_each_with_its_command_and_choice_picks() {
    let repo = TestRepo::new();
    let a = interrupted(&repo, "001-add-login", "after_commit@2");
    let c = interrupted(&repo, "010-login-page", "after_commit@1");
    let out = resume(&repo, &["login", "--no-run"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("'login' matches 2 resumable runs"), "{err}");
    // Each with the one command that continues its spec (what a resume of it would run).
    for (spec, id) in [("001-add-login", &a), ("010-login-page", &c)] {
        assert!(
            err.contains(&format!(" {}", &id[..6]))
                && err.contains(&format!("spec {spec}  chunk core-")),
            "{err}"
        );
        assert!(
            err.contains(&format!(": runner run --spec {spec} --auto-continue\n")),
            "{err}"
        );
    }
    assert!(!err.contains("runner resume r"), "{err}");
    assert!(err.contains("--choice N"), "{err}");
    assert_eq!(stdout(&out), "");
    // --json: the list as data, exit 2.
    let out = resume(&repo, &["login", "--no-run", "--json"]);
    assert_exit(&out, 2);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["schema"], 1);
    assert_eq!(v["success"], false);
    assert_eq!(v["user_hint"], "login");
    let matches = v["matches"].as_array().unwrap();
    assert_eq!(matches.len(), 2);
    // Most recently active first.
    assert_eq!(matches[0]["spec"], "010-login-page");
    assert_eq!(matches[0]["run_id"], c.as_str());
    assert_eq!(matches[0]["choice"], 1);
    assert_eq!(matches[0]["chunk"], "core-a");
    assert!(matches[0]["last_activity"].is_string());
    assert_eq!(
        matches[1]["command"],
        "runner run --spec 001-add-login --auto-continue"
    );
    // --choice picks; out of range is exit 2.
    let v = summary(&repo, &["login", "--choice", "2"]);
    assert_eq!(v["spec"], "001-add-login");
    let out = resume(&repo, &["login", "--choice", "3", "--no-run"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("--choice 3"), "{}", stderr(&out));
    assert_exit(&resume(&repo, &["login", "--choice", "0", "--no-run"]), 2);
    // A prefix shared by both run ids is ambiguous the same way (the ids are random: only
    // tested when they share their first four characters).
    let common = a.bytes().zip(c.bytes()).take_while(|(x, y)| x == y).count();
    if common >= 4 {
        assert_exit(&resume(&repo, &[&a[..common], "--no-run"]), 2);
    }
}

#[test]
fn on_a_terminal_several_matches_are_a_numbered_list_to_choose_from() {
    use expectrl::Expect;
    use expectrl::session::OsSession;
    let repo = TestRepo::new();
    interrupted(&repo, "001-add-login", "after_commit@2");
    interrupted(&repo, "010-login-page", "after_commit@1");
    let mut cmd = crate::common::runner_command();
    cmd.args(["resume", "login", "--no-run"])
        .current_dir(&repo.root)
        .env("TERM", "xterm")
        .env("NO_COLOR", "1");
    let mut s = OsSession::spawn(cmd).unwrap();
    s.set_expect_timeout(Some(Duration::from_secs(20)));
    s.expect("'login' matches several runs").unwrap();
    s.expect("2. ").unwrap();
    // Down to the second, Enter.
    s.send("\x1b[B").unwrap();
    s.send("\r").unwrap();
    s.expect("Where it stood:").unwrap();
    s.expect("spec 001-add-login").unwrap();
    s.expect(expectrl::Eof).unwrap();
}

#[test]
fn an_active_run_is_exit_4_with_its_heartbeat_pid_and_host() {
    let repo = TestRepo::new();
    add_fixture_spec(&repo, "001-busy");
    repo.script("* * hang\n");
    let agent = fixture("fake-agent").display().to_string();
    let mut child = repo
        .cmd(&[
            "run",
            "--spec",
            "001-busy",
            "--agent-command",
            &agent,
            "--drain-timeout",
            "1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the run's record", || run_ids(&repo, "001-busy").len() == 1);
    let id = run_ids(&repo, "001-busy").remove(0);
    wait_for("the agent to start", || repo.agent_log().len() == 1);
    for hint in [id.as_str(), &id[..6], "001-busy", "001", "core-a"] {
        let out = resume(&repo, &[hint, "--no-run"]);
        assert_exit(&out, 4);
        let err = stderr(&out);
        assert!(
            err.contains("Cannot resume an active run: heartbeat ")
                && err.contains(" s ago (pid ")
                && err.contains(&format!("pid {}", child.id()))
                && err.contains(", host "),
            "{hint}: {err}"
        );
    }
    // No hint: an active run is not resumable, and there is nothing else.
    assert_exit(&resume(&repo, &["--no-run"]), 3);
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
    // Stopped, it is resumable.
    assert_eq!(summary(&repo, &["001-busy"])["run_id"], id.as_str());
}

#[test]
fn the_summary_has_the_issues_shape_in_json_and_the_same_content_in_text() {
    let repo = TestRepo::new();
    let id = interrupted(&repo, "001-add-login", "after_commit@2");
    let v = summary(&repo, &[&id]);
    assert_eq!(v["schema"], 1);
    assert_eq!(v["success"], true);
    assert_eq!(v["run_id"], id.as_str());
    assert_eq!(v["spec"], "001-add-login");
    let s = &v["summary"];
    let current = &s["current_chunk"];
    assert_eq!(current["id"], "core-b");
    assert_eq!(current["description"], "Build part B");
    assert_eq!(current["status"], "in_progress");
    assert_eq!(current["attempts"], 1);
    let p = &s["progress"];
    assert_eq!(
        (p["done"].as_u64(), p["total"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(p["by_phase"].as_array().unwrap().len(), 2);
    assert_eq!(p["by_phase"][0]["done"], 1);
    assert!(p["seconds_spent"].is_u64() && p["cost_usd"].is_number());
    assert!(s.get("verification").is_some());
    let g = &s["git_status"];
    assert_eq!(g["branch"], "auto-claude/001-add-login");
    assert_eq!(g["commits_ahead"], 2);
    assert!(g["staged"].is_array() && g["changed"].is_array());
    assert_eq!(s["checkpoint"]["type"], "checkpoint");
    assert!(s["checkpoint"]["age_secs"].is_i64());
    let actions = s["recent_actions"].as_array().unwrap();
    assert!(
        actions
            .iter()
            .any(|a| a.as_str().unwrap().contains("committed core-a")),
        "{actions:?}"
    );
    let steps = s["next_steps"].as_array().unwrap();
    let commands: Vec<&str> = steps.iter().filter_map(|s| s["command"].as_str()).collect();
    assert!(
        commands.contains(&"runner run --spec 001-add-login --auto-continue"),
        "{commands:?}"
    );
    assert!(commands.contains(&"runner chunk show core-b --spec 001-add-login"));
    assert!(v["confidence_score"].as_u64().unwrap() >= 80);
    assert!(v["confidence_reason"].as_str().unwrap().len() > 5);
    assert_eq!(v["source"], "checkpoint");
    assert_eq!(v["handoff_document"], Value::Null);
    assert_eq!(v["run"], Value::Null);
    // The text says the same.
    let out = resume(&repo, &[&id, "--no-run"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for part in [
        format!("Where it stood: {id}  spec 001-add-login (--no-run: nothing was started)"),
        format!("confidence {}/100", v["confidence_score"]),
        "current chunk core-b (in_progress, 1 attempt): Build part B".into(),
        "progress 1/3 chunks".into(),
        "2 commits ahead of main".into(),
        "committed core-a".into(),
        "runner run --spec 001-add-login --auto-continue".into(),
    ] {
        assert!(text.contains(&part), "{part:?} in {text}");
    }
    // Nothing was started or changed.
    assert_eq!(run_ids(&repo, "001-add-login").len(), 1);
    assert_eq!(
        repo.chunk("001-add-login", "core-b")["status"],
        "in_progress"
    );
}

#[test]
fn a_corrupt_checkpoint_and_low_confidence_are_said() {
    let repo = TestRepo::new();
    let id = interrupted(&repo, "001-add-login", "after_commit@2");
    let checkpoint = repo.spec_dir("001-add-login").join("checkpoint.json");
    std::fs::write(&checkpoint, "{ not json").unwrap();
    let v = summary(&repo, &[&id]);
    assert_eq!(v["source"], "events");
    let warnings = warnings_of(&v);
    assert!(
        warnings.contains(&"Checkpoint corrupted, falling back to events"),
        "{warnings:?}"
    );
    let text = stdout(&resume(&repo, &[&id, "--no-run"]));
    assert!(
        text.contains("Checkpoint corrupted, falling back to events"),
        "{text}"
    );
    // Neither checkpoint nor journal: rebuilt from the commits, low confidence.
    std::fs::remove_file(&checkpoint).unwrap();
    std::fs::remove_file(repo.spec_dir("001-add-login").join("events.jsonl")).unwrap();
    let v = summary(&repo, &[&id]);
    assert_eq!(v["source"], "commits");
    assert!(v["confidence_score"].as_u64().unwrap() < 80, "{v}");
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .contains(&Value::from("Low confidence recovery. Verify manually.")),
        "{v}"
    );
    let text = stdout(&resume(&repo, &[&id, "--no-run"]));
    assert!(
        text.contains("Low confidence recovery. Verify manually."),
        "{text}"
    );
    assert!(
        text.contains("runner review --spec 001-add-login"),
        "{text}"
    );
}

#[test]
fn handoff_writes_markdown_and_never_overwrites_one() {
    let repo = TestRepo::new();
    let id = interrupted(&repo, "001-add-login", "after_commit@2");
    let first = summary(&repo, &[&id, "--handoff"]);
    let second = summary(&repo, &[&id, "--handoff"]);
    let (p1, p2) = (
        first["handoff_document"].as_str().unwrap().to_string(),
        second["handoff_document"].as_str().unwrap().to_string(),
    );
    assert_ne!(p1, p2);
    let dir = repo.path(".auto-claude/handoffs");
    for p in [&p1, &p2] {
        let path = std::path::Path::new(p);
        assert_eq!(path.parent().unwrap(), dir);
        let name = path.file_name().unwrap().to_str().unwrap();
        // YYYY-MM-DD-HHMM-<spec>-resume[-N].md
        assert_eq!(&name[4..5], "-");
        assert_eq!(&name[15..16], "-");
        assert!(name[16..].starts_with("001-add-login-resume"), "{name}");
        let text = std::fs::read_to_string(path).unwrap();
        assert!(
            text.starts_with("# Resume handoff: 001-add-login"),
            "{text}"
        );
        assert!(
            text.contains("runner run --spec 001-add-login --auto-continue"),
            "{text}"
        );
        assert!(text.contains("core-b"), "{text}");
    }
    // Written in the same minute: the second has a suffix (or the minute turned).
    if p1[..p1.len() - 3] == p2[..p1.len() - 3] {
        assert!(p2.ends_with("-resume-2.md"), "{p2}");
    }
    // No temp file is left; the config key does the same without the flag.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
    repo.write_config("[resume]\nhandoff = true\n");
    let third = summary(&repo, &[&id]);
    assert!(third["handoff_document"].is_string());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3);
}

#[test]
fn resume_continues_a_killed_run_to_completion_as_a_new_run() {
    let repo = TestRepo::new();
    let old = interrupted(&repo, "001-add-login", "after_commit@2");
    // No agent flag: the spec's remembered agent (the fake agent) goes on.
    let out = resume(&repo, &[]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains(&format!("Resuming {old}")), "{text}");
    assert!(
        text.contains("001-add-login: complete — 3/3 chunks"),
        "{text}"
    );
    assert!(
        repo.statuses("001-add-login")
            .iter()
            .all(|(_, s)| s == "completed")
    );
    let new: Vec<String> = run_ids(&repo, "001-add-login")
        .into_iter()
        .filter(|id| *id != old)
        .collect();
    // The recovery before the loop and the run itself.
    let resumed: Vec<Value> = new
        .iter()
        .map(|id| record(&repo, "001-add-login", id))
        .filter(|r| r["kind"] == "run")
        .collect();
    assert_eq!(resumed.len(), 1, "{new:?}");
    assert_eq!(resumed[0]["resumed_from"], old.as_str());
    assert_eq!(resumed[0]["outcome"], "complete");
    // Resuming again: the spec is complete, nothing is left.
    assert_exit(&resume(&repo, &["001", "--no-run"]), 2);
}

#[test]
fn resume_json_reports_the_summary_and_the_continued_run() {
    let repo = TestRepo::new();
    let old = interrupted(&repo, "001-add-login", "after_commit@2");
    let out = resume(&repo, &[&old, "--json"]);
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["run_id"], old.as_str());
    assert_eq!(v["run"]["outcome"], "complete");
    let new = v["run"]["run_id"].as_str().unwrap();
    assert_ne!(new, old);
    assert_eq!(
        record(&repo, "001-add-login", new)["resumed_from"],
        old.as_str()
    );
}

#[test]
fn a_slot_runner_switched_to_another_spec_leaves_the_checkpoint_trusted() {
    let repo = TestRepo::new();
    // 001 is killed in the default slot; 002 then runs there: runner switches the slot to
    // 002's branch (001's work is safe on its branch). 001's checkpoint is not corrupt.
    let first = interrupted(&repo, "001-add-login", "after_commit@2");
    interrupted(&repo, "002-other", "after_commit@2");
    let v = summary(&repo, &[&first]);
    assert_eq!(v["source"], "checkpoint", "{v}");
    let warnings = warnings_of(&v);
    assert!(
        !warnings.contains(&"Checkpoint corrupted, falling back to events"),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("was switched to auto-claude/002-other")),
        "{warnings:?}"
    );
    // A branch no spec owns checked out there is still not runner's doing: not trusted.
    repo.git(&[
        "-C",
        ".worktrees/auto-claude",
        "checkout",
        "-q",
        "-b",
        "mine",
    ]);
    let v = summary(&repo, &[&first]);
    assert_eq!(v["source"], "events", "{v}");
    // And resuming 001 still works from there (it takes the slot back).
    repo.git(&[
        "-C",
        ".worktrees/auto-claude",
        "checkout",
        "-q",
        "auto-claude/002-other",
    ]);
    repo.script("* * done\n");
    let agent = fixture("fake-agent").display().to_string();
    let out = resume(&repo, &[&first, "--agent-command", &agent]);
    assert_exit(&out, 0);
    assert!(
        repo.branch_log("auto-claude/001-add-login").len() >= 3,
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_next_steps_show_the_chunk_still_to_do_when_the_last_one_worked_on_is_done() {
    let repo = TestRepo::new();
    // 002's run in the slot recovers 001 first: 001's core-b, reported done, is completed, and
    // it is 001's last worked chunk.
    let first = interrupted(&repo, "001-add-login", "after_commit@2");
    interrupted(&repo, "002-other", "after_commit@2");
    let v = summary(&repo, &[&first]);
    // core-b, the chunk last worked on, is done: the next step shows the chunk still to do.
    assert_eq!(v["summary"]["current_chunk"]["status"], "completed", "{v}");
    let commands: Vec<&str> = v["summary"]["next_steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["command"].as_str())
        .collect();
    assert!(
        commands.contains(&"runner chunk show polish --spec 001-add-login"),
        "{commands:?}"
    );
    assert!(
        !commands.iter().any(|c| c.contains("chunk show core-b")),
        "{commands:?}"
    );
}

#[test]
fn a_handoff_written_before_a_refused_run_says_that_the_run_was_refused() {
    let repo = TestRepo::new();
    let id = interrupted(&repo, "001-add-login", "after_commit@2");
    let out = resume(&repo, &[&id, "--handoff", "--max-usd", "0"]);
    assert_exit(&out, 5);
    let dir = repo.path(".auto-claude/handoffs");
    let docs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(docs.len(), 1, "{docs:?}");
    let text = std::fs::read_to_string(&docs[0]).unwrap();
    assert!(
        text.starts_with("# Resume handoff: 001-add-login"),
        "{text}"
    );
    assert!(
        text.contains("runner run --spec 001-add-login --auto-continue"),
        "{text}"
    );
    // The document does not leave the reader to believe the run went on.
    let tail = text.rsplit("## The run").next().unwrap();
    assert!(text.contains("## The run"), "{text}");
    assert!(
        tail.contains("refused") && tail.contains("exit 5"),
        "{text}"
    );
    assert!(tail.contains("budget"), "{text}");
    // A run that is not refused leaves the document as it was.
    let again = summary(&repo, &[&id, "--handoff"]);
    let path = again["handoff_document"].as_str().unwrap();
    assert!(
        !std::fs::read_to_string(path)
            .unwrap()
            .contains("## The run")
    );
}
