//! Ctrl-C, Esc, SIGTERM and SIGHUP: said at once, a second one is the user's stop, questions
//! cancelled with nothing changed, checks cut short deciding nothing.

use super::*;

#[test]
fn ctrl_c_says_at_once_what_happens_and_a_second_is_the_users_stop() {
    let repo = repo_with_fixture_plan("001-stop");
    repo.script("core-a 1 stubborn\n");
    let mut child = repo
        .cmd(&[
            "run",
            "--spec",
            "001",
            "--agent-command",
            &agent(),
            "--drain-timeout",
            "60",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let err = collect_stderr(&mut child);
    let pid_file = repo.spec_dir("001-stop").join("fake-agent.pid");
    wait_for("the agent", || pid_file.exists());
    sigint(&child);
    wait_for("the stopping message", || {
        err.lock()
            .unwrap()
            .contains("stopping: waiting up to 60 s for the agent; Ctrl-C again to stop now")
    });
    assert!(
        child.try_wait().unwrap().is_none(),
        "the message comes while the agent is still drained"
    );
    sigint(&child);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    // Let the reader thread see the end of the pipe.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let err = err.lock().unwrap().clone();
    assert!(err.contains("with a second Ctrl-C"), "{err}");
    assert!(!err.contains("drain timeout"), "{err}");
    // The journal says the same.
    let end = repo
        .events("001-stop")
        .into_iter()
        .find(|e| e["event"] == "session_end")
        .unwrap();
    assert!(
        end["ended"].as_str().unwrap().contains("second Ctrl-C"),
        "{end}"
    );
}

#[test]
fn esc_at_a_question_says_nothing_was_changed() {
    use expectrl::session::OsSession;
    use expectrl::{Eof, Expect};
    let repo = repo_with_fixture_plan("001-ask");
    repo.write_config("[run]\nmax_sessions = 1\n");
    assert_exit(&repo.run_spec("001", &[]), 5);
    std::fs::remove_file(repo.path(".auto-claude/config.toml")).unwrap();
    let plan_before = std::fs::read(repo.plan_path("001-ask")).unwrap();
    let mut cmd = crate::common::runner_command();
    cmd.args(["run", "--spec", "001", "--agent-command", &agent()])
        .current_dir(&repo.root)
        .env("TERM", "xterm");
    let mut s = OsSession::spawn(cmd).unwrap();
    s.set_expect_timeout(Some(std::time::Duration::from_secs(20)));
    s.expect("What now?").unwrap();
    s.send("\x1b").unwrap();
    s.expect("cancelled; nothing was changed").unwrap();
    let _ = s.expect(Eof);
    assert!(format!("{:?}", s.get_process_mut().wait().unwrap()).contains(", 130)"));
    assert_eq!(
        std::fs::read(repo.plan_path("001-ask")).unwrap(),
        plan_before
    );
}

#[test]
fn a_verbose_run_into_a_closed_stderr_completes() {
    let repo = TestRepo::new();
    repo.add_spec("001-pipe");
    let agent = fixture("fake-agent").display().to_string();
    // -vv: the log lines go to stderr too; their failed writes must not panic (exit 101).
    let status = repo
        .cmd(&["-vv", "run", "--spec", "001", "--agent-command", &agent])
        .stdout(closed_pipe())
        .stderr(closed_pipe())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0), "the run died: {status:?}");
    assert_eq!(repo.events("001-pipe").last().unwrap()["event"], "run_end");
}

/// A spec whose one chunk `c1` has a verification that takes 30 s (then passes if the agent's
/// file is there), and a second chunk.
fn repo_with_slow_check(spec: &str) -> TestRepo {
    let repo = TestRepo::new();
    let dir = repo.add_spec(spec);
    std::fs::write(
        dir.join("implementation_plan.json"),
        r#"{"feature": "S", "phases": [{"id": "p1", "name": "P", "depends_on": [], "subtasks": [
            {"id": "c1", "description": "one", "status": "pending",
             "verification": {"type": "command", "command": "sleep 30; test -f work/c1.txt"}},
            {"id": "c2", "description": "two", "status": "pending"}]}]}"#,
    )
    .unwrap();
    repo
}

/// Whether a session directory whose name contains `what` exists for `spec`.
fn session_started(repo: &TestRepo, spec: &str, what: &str) -> bool {
    std::fs::read_dir(repo.spec_dir(spec).join("sessions"))
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().contains(what))
        })
        .unwrap_or(false)
}

#[track_caller]
fn assert_left_undecided(repo: &TestRepo, spec: &str) {
    assert_eq!(repo.chunk(spec, "c1")["status"], "in_progress");
    let decided: Vec<Value> = repo
        .events(spec)
        .into_iter()
        .filter(|e| e["event"] == "recovery_decision")
        .collect();
    assert!(decided.is_empty(), "{decided:?}");
}

#[test]
fn ctrl_c_during_a_recovery_check_decides_nothing() {
    let repo = repo_with_slow_check("001-slow");
    // c1 reported done; runner died before its check.
    run_killed_at(&repo, "001", "after_coder_session");
    let mut child = repo
        .cmd(&["recover"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let err = collect_stderr(&mut child);
    wait_for("the check", || {
        session_started(&repo, "001-slow", "recovery-check")
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    sigint(&child);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{}", err.lock().unwrap());
    assert_left_undecided(&repo, "001-slow");
}

#[test]
fn a_chunk_reported_done_in_the_drain_is_not_failed_by_a_check_cut_short() {
    let repo = repo_with_slow_check("001-slow");
    // On SIGTERM the agent finishes its work and reports done at once (within the drain).
    repo.script("c1 1 graceful 60\n");
    let mut child = repo
        .cmd(&[
            "run",
            "--spec",
            "001",
            "--agent-command",
            &agent(),
            "--drain-timeout",
            "2",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let err = collect_stderr(&mut child);
    let pid_file = repo.spec_dir("001-slow").join("fake-agent.pid");
    wait_for("the agent", || pid_file.exists());
    sigint(&child);
    // The check needs 30 s; the drain's budget is 2 s: it is cut short, not failed.
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{}", err.lock().unwrap());
    assert_left_undecided(&repo, "001-slow");
}

#[test]
fn a_second_ctrl_c_stops_the_shutdown_check_at_once() {
    let repo = repo_with_slow_check("001-slow");
    repo.script("c1 1 graceful 60\n");
    let mut child = repo
        .cmd(&[
            "run",
            "--spec",
            "001",
            "--agent-command",
            &agent(),
            "--drain-timeout",
            "60",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let err = collect_stderr(&mut child);
    let pid_file = repo.spec_dir("001-slow").join("fake-agent.pid");
    wait_for("the agent", || pid_file.exists());
    sigint(&child);
    wait_for("the shutdown's check", || {
        session_started(&repo, "001-slow", "recovery-check")
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let asked = std::time::Instant::now();
    sigint(&child);
    let status = child.wait().unwrap();
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(5),
        "a second Ctrl-C took {:?}",
        asked.elapsed()
    );
    assert_eq!(status.code(), Some(130), "{}", err.lock().unwrap());
    assert_left_undecided(&repo, "001-slow");
}

#[test]
fn ctrl_c_during_the_recovery_evaluator_decides_nothing() {
    let repo = repo_with_fixture_plan("001-eval");
    repo.write_config(&format!(
        "[recovery]\nevaluator = \"agent\"\n\n[agent]\ncommand = [{:?}]\n",
        agent()
    ));
    // Partial work (the rules weigh it, so the agent is asked), then a slow evaluator.
    repo.script("core-a * uncommitted\nrecovery * hang\n");
    run_killed_at(&repo, "001-eval", "after_coder_session");
    let mut child = repo
        .cmd(&["recover"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let err = collect_stderr(&mut child);
    let pid_file = repo.spec_dir("001-eval").join("fake-agent.pid");
    wait_for("the evaluator", || pid_file.exists());
    sigint(&child);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{}", err.lock().unwrap());
    assert_eq!(repo.chunk("001-eval", "core-a")["status"], "in_progress");
    assert!(
        !repo
            .events("001-eval")
            .iter()
            .any(|e| e["event"] == "recovery_decision"),
        "nothing may be decided"
    );
}

#[test]
fn a_repin_is_undone_when_the_run_does_not_go_ahead() {
    let repo = repo_with_fixture_plan("001-base");
    repo.git(&["branch", "dev"]);
    repo.write_config("[run]\nmax_sessions = 1\n");
    assert_exit(&repo.run_spec("001", &["--base-branch", "dev"]), 5);
    repo.git(&["branch", "-D", "dev"]);
    // Confirmed (--yes), but there is existing work and no terminal to ask what to do about
    // it ("-v" first: the harness adds --auto-continue only to a bare `run`).
    let out = repo.runner(&[
        "-v",
        "run",
        "--spec",
        "001",
        "--agent-command",
        &agent(),
        "--base-branch",
        "main",
        "--yes",
    ]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("--auto-continue"), "{}", stderr(&out));
    assert_eq!(repo.plan("001-base")["base_branch"], "dev");
}

#[test]
fn a_signal_while_a_question_is_open_cancels_it() {
    use expectrl::session::OsSession;
    use expectrl::{Eof, Expect};
    let repo = repo_with_fixture_plan("001-ask");
    repo.write_config("[run]\nmax_sessions = 1\n");
    assert_exit(&repo.run_spec("001", &[]), 5);
    std::fs::remove_file(repo.path(".auto-claude/config.toml")).unwrap();
    let sessions_before = repo.agent_log().len();
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let mut cmd = crate::common::runner_command();
        cmd.args(["run", "--spec", "001", "--agent-command", &agent()])
            .current_dir(&repo.root)
            .env("TERM", "xterm");
        let mut s = OsSession::spawn(cmd).unwrap();
        s.set_expect_timeout(Some(std::time::Duration::from_secs(20)));
        s.expect("What now?").unwrap();
        let pid = s.get_process().pid().as_raw();
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(pid, sig) };
        s.expect("cancelled; nothing was changed").unwrap();
        let _ = s.expect(Eof);
        let status = format!("{:?}", s.get_process_mut().wait().unwrap());
        assert!(status.contains(", 130)"), "signal {sig}: {status}");
    }
    assert_eq!(
        repo.agent_log().len(),
        sessions_before,
        "no session may start"
    );
}

#[test]
fn a_closed_terminal_sighup_drains_like_sigterm() {
    let repo = repo_with_fixture_plan("001-hup");
    // On SIGTERM the agent finishes at once and reports done.
    repo.script("core-a 1 graceful 60\n");
    let mut child = repo
        .cmd(&["run", "--spec", "001", "--agent-command", &agent()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid_file = repo.spec_dir("001-hup").join("fake-agent.pid");
    wait_for("the agent", || pid_file.exists());
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    // The agent finished within the drain: its chunk is completed, and the run ended.
    assert_eq!(repo.chunk("001-hup", "core-a")["status"], "completed");
    assert_eq!(repo.events("001-hup").last().unwrap()["event"], "run_end");
}

#[test]
fn a_session_whose_chunk_recovery_completed_is_not_run_again() {
    let repo = repo_with_fixture_plan("001-done");
    repo.script("core-a 1 done-stubborn\n");
    let mut child = repo
        .cmd(&[
            "run",
            "--spec",
            "001",
            "--agent-command",
            &agent(),
            "--drain-timeout",
            "1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let err = collect_stderr(&mut child);
    let pid_file = repo.spec_dir("001-done").join("fake-agent.pid");
    wait_for("the agent", || pid_file.exists());
    sigint(&child);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    std::thread::sleep(std::time::Duration::from_millis(200));
    let err = err.lock().unwrap().clone();
    assert_eq!(
        repo.chunk("001-done", "core-a")["status"],
        "completed",
        "{err}"
    );
    assert!(!err.contains("the next start runs it again"), "{err}");
    assert!(err.contains("not run again"), "{err}");
}
