//! Output that tells the truth: bytes that are not UTF-8, closed pipes, Ctrl-C and question
//! messages, `recover --dry-run` against `recover`, `status`, and errors that help.

mod common;

use common::*;
use serde_json::Value;

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
    let repo = TestRepo::new();
    let dir = repo.add_spec("001-bytes");
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
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
    assert_eq!(summaries[0]["spec"], "001-bytes", "{}", stdout(&out));
    assert_eq!(summaries[0]["outcome"], "complete");
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
