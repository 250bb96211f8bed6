//! Output that tells the truth: bytes that are not UTF-8, closed pipes, Ctrl-C and question
//! messages, `recover --dry-run` against `recover`, `status`, and errors that help.

use crate::common::*;
use serde_json::Value;

mod dry_run;
mod errors;
mod failures;
mod signals;

// ---------------------------------------------------------------------------------------------
// Bytes that are not UTF-8

#[test]
fn a_non_utf8_journal_line_still_shows_the_previous_failures_in_the_retry_prompt() {
    let repo = TestRepo::new();
    repo.add_spec("001-bytes");
    repo.script("core-b 1 taint-journal the database is down\n");
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 0);
    let retry = std::fs::read_dir(repo.tmp.path().join("prompts"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .find(|t| t.contains("This is attempt 2"))
        .expect("a retry prompt");
    // From the journal (with its log), not the plan's fallback (which has no log).
    assert!(retry.contains("the database is down (log: "), "{retry}");
}

#[test]
fn a_non_utf8_journal_line_does_not_hide_an_interrupted_run() {
    let repo = repo_with_fixture_plan("001-bytes");
    let dir = repo.spec_dir("001-bytes");
    // A run that started and never ended, then a line with a byte that is not UTF-8.
    let mut journal =
        br#"{"time":"2026-01-01T00:00:00Z","run_id":"r1","event":"run_start"}"#.to_vec();
    journal.extend_from_slice(b"\n{\"event\":\"agent_note\",\"text\":\"caf\xe9\"}\n");
    std::fs::write(dir.join("events.jsonl"), journal).unwrap();
    let agent = fixture("fake-agent").display().to_string();
    let out = repo.runner(&[
        "run",
        "--auto-continue",
        "--agent-command",
        &agent,
        "--json",
    ]);
    assert_exit(&out, 0);
    let summaries: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        summaries["runs"][0]["spec"],
        "001-bytes",
        "{}",
        stdout(&out)
    );
    assert_eq!(summaries["runs"][0]["outcome"], "complete");
}

#[test]
fn a_verification_printing_a_non_utf8_byte_passes() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("001-bytes");
    std::fs::write(
        dir.join("implementation_plan.json"),
        r#"{"phases": [{"id": "p", "subtasks": [
            {"id": "v", "description": "prints latin-1", "status": "pending",
             "verification": {"type": "command", "run": "printf 'caf\\351 ok\\n'",
                              "expect_output": "ok"}}]}]}"#,
    )
    .unwrap();
    repo.write_config("[run]\nmax_attempts = 1\n");
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 0);
    assert_eq!(repo.chunk("001-bytes", "v")["status"], "completed");
}

// ---------------------------------------------------------------------------------------------
// Closed pipes

/// A pipe whose reading end is already closed: every write to it fails with EPIPE.
fn closed_pipe() -> std::process::Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer.into()
}

#[test]
fn a_run_whose_stdout_and_stderr_are_closed_pipes_completes_its_chunks() {
    let repo = TestRepo::new();
    repo.add_spec("001-pipe");
    let agent = fixture("fake-agent").display().to_string();
    let status = repo
        .cmd(&["run", "--spec", "001", "--agent-command", &agent])
        .stdout(closed_pipe())
        .stderr(closed_pipe())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0), "the run died: {status:?}");
    assert_eq!(
        repo.statuses("001-pipe")
            .into_iter()
            .map(|(_, s)| s)
            .collect::<Vec<_>>(),
        ["completed", "completed", "completed"]
    );
    assert_eq!(repo.branch_log("auto-claude/001-pipe").len(), 3);
    // The journal (the run's log) was written to the end.
    let events = repo.events("001-pipe");
    assert_eq!(events.last().unwrap()["event"], "run_end");
}

#[test]
fn status_and_recover_into_a_closed_pipe_do_not_panic() {
    let repo = TestRepo::new();
    repo.add_spec("001-pipe");
    for args in [
        &["status", "--json"][..],
        &["status"],
        &["recover", "--json"],
        &["recover", "--dry-run"],
    ] {
        let out = repo
            .cmd(args)
            .stdout(closed_pipe())
            .stderr(closed_pipe())
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(101), "runner {args:?} panicked");
        assert_eq!(out.status.code(), Some(0), "runner {args:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// `recover --dry-run` predicts `recover`

fn agent() -> String {
    fixture("fake-agent").display().to_string()
}

// ---------------------------------------------------------------------------------------------
// `status` names the current chunk; failed chunks point at `recover --retry-failed`

/// `runner run --spec SPEC` in the background, its output thrown away.
fn spawn_quiet_run(repo: &TestRepo, spec: &str) -> std::process::Child {
    repo.cmd(&["run", "--spec", spec, "--agent-command", &agent()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn status_names_the_chunk_being_worked_on_and_the_one_left_interrupted() {
    let repo = repo_with_fixture_plan("001-now");
    repo.script("core-a * slow 30\n");
    let mut run = spawn_quiet_run(&repo, "001");
    let mut report = Value::Null;
    wait_for("the run to be working on core-a", || {
        report = serde_json::from_slice(&repo.runner(&["status", "--json"]).stdout).unwrap();
        report["specs"][0]["status"] == "running"
            && report["specs"][0]["chunks"]["in_progress"] == 1
    });
    assert_eq!(report["specs"][0]["current_chunk"], "core-a", "{report:#}");
    let text = stdout(&repo.runner(&["status"]));
    assert!(text.contains("working on: core-a"), "{text}");
    assert!(!text.contains("next: core-b"), "{text}");
    run.kill().unwrap();
    run.wait().unwrap();

    // The run is dead and core-a still in progress: it was left interrupted.
    let text = stdout(&repo.runner(&["status"]));
    assert!(text.contains("interrupted at: core-a"), "{text}");
    crate::assert_screen!(repo, text, @r#"
        001-now                          interrupted   0/3 chunks, interrupted at: core-a
            interrupted: the last run did not end; `runner run --spec 001-now --auto-continue` continues it
            worktree: [repo]/.worktrees/auto-claude
        slot [repo]/.worktrees/auto-claude [ready] holds auto-claude/001-now
        "#);
}

#[test]
fn a_chunk_failed_for_good_points_at_recover_retry_failed() {
    let repo = repo_with_fixture_plan("001-fail");
    repo.write_config("[run]\nmax_attempts = 1\n");
    repo.script("core-b * fail broken\n");
    let hint = "runner recover --spec 001-fail --retry-failed";
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 3);
    assert!(stderr(&out).contains(hint), "{}", stderr(&out));
    // A new run stops on it and says the same.
    let again = repo.run_spec("001", &[]);
    assert_exit(&again, 3);
    assert!(stderr(&again).contains(hint), "{}", stderr(&again));
    assert!(
        !stderr(&again).contains("implementation_plan.json"),
        "no hand edit of the plan: {}",
        stderr(&again)
    );
    crate::assert_screen!(repo, stderr(&again), @r#"
        runner: spec 001-fail cannot go on:
          - chunk core-b is failed
          - phase-2 waits for phase-1
          hint: look at the journal [repo]/.auto-claude/specs/001-fail/events.jsonl and the session logs in [repo]/.auto-claude/specs/001-fail/sessions
          hint: for failed chunks: after fixing the cause, `runner recover --spec 001-fail --retry-failed` sets them back to pending (their attempts are kept); then `runner run --spec 001-fail --auto-continue --agent-command [checkout]/fixtures/fake-agent` again
        "#);
    let text = stdout(&repo.runner(&["status"]));
    assert!(text.contains(hint), "{text}");
    crate::assert_screen!(repo, text, @r#"
        001-fail                         failed        1/3 chunks, 1 failed
            failed chunks: after fixing the cause, `runner recover --spec 001-fail --retry-failed` sets them back to pending (their attempts are kept); then `runner run --spec 001-fail --auto-continue` again
            worktree: [repo]/.worktrees/auto-claude
        slot [repo]/.worktrees/auto-claude [ready] holds auto-claude/001-fail
        "#);
    // And the hint works.
    repo.script("");
    assert_exit(
        &repo.runner(&["recover", "--spec", "001-fail", "--retry-failed"]),
        0,
    );
    assert_exit(&repo.run_spec("001", &[]), 0);
}

#[test]
fn an_event_after_a_torn_journal_line_is_kept() {
    use std::io::Write;
    let repo = interrupted("001-torn", "core-a * done\n", Some("after_coder_session"));
    // The runner died mid-write: the journal's last line has no newline.
    let mut journal = std::fs::OpenOptions::new()
        .append(true)
        .open(repo.spec_dir("001-torn").join("events.jsonl"))
        .unwrap();
    journal
        .write_all(br#"{"time":"2026-01-01T00:00:00Z","eve"#)
        .unwrap();
    drop(journal);
    assert_exit(&repo.runner(&["recover"]), 0);
    let text = std::fs::read_to_string(repo.spec_dir("001-torn").join("events.jsonl")).unwrap();
    let decided = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|e| e["event"] == "recovery_decision");
    assert!(decided, "{text}");
}

/// Hand the tree at `path` to `uid` (so that, run as `uid`, only file modes decide).
fn chown_tree(path: &std::path::Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).unwrap() {
            chown_tree(&entry.unwrap().path(), uid);
        }
    }
}

/// stderr of a child, collected as it comes.
fn collect_stderr(child: &mut std::process::Child) -> std::sync::Arc<std::sync::Mutex<String>> {
    use std::io::BufRead;
    let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let pipe = child.stderr.take().unwrap();
    let sink = text.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
            let mut t = sink.lock().unwrap();
            t.push_str(&line);
            t.push('\n');
        }
    });
    text
}

fn sigint(child: &std::process::Child) {
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
}

/// A repository whose spec `spec` has the two-phase plan, with the fake agent doing `rules`,
/// and a run that SIGKILLed itself at `failpoint` (None: a run that ends by itself).
fn interrupted(spec: &str, rules: &str, failpoint: Option<&str>) -> TestRepo {
    let repo = repo_with_fixture_plan(spec);
    repo.script(rules);
    let mut cmd = repo.cmd(&["run", "--spec", spec, "--agent-command", &agent()]);
    if let Some(fp) = failpoint {
        cmd.env("RUNNER_FAILPOINTS", fp);
    }
    let out = cmd.output().unwrap();
    if failpoint.is_some() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{}", stderr(&out));
    }
    repo.script("");
    repo
}
