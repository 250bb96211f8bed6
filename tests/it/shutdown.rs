//! Ctrl-C and SIGTERM: the drain, the interrupted-sessions file, and resuming cut-off sessions.

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

fn start_run(repo: &TestRepo, spec: &str, extra: &[&str]) -> Child {
    let agent = fixture("fake-agent").display().to_string();
    let mut args = vec!["run", "--spec", spec, "--agent-command", agent.as_str()];
    args.extend_from_slice(extra);
    repo.cmd(&args).stderr(Stdio::piped()).spawn().unwrap()
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, sig) };
}

fn interrupted_file(repo: &TestRepo) -> PathBuf {
    repo.path(".auto-claude/interrupted-sessions.json")
}

#[test]
fn a_drain_that_succeeds_completes_the_chunk_and_writes_no_file() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("001-drain");
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
    repo.script("core-a * graceful 30\n");
    // A stale entry of this spec from an earlier shutdown must go.
    repo.write(
        ".auto-claude/interrupted-sessions.json",
        r#"{"sessions": [{"session_id": "old", "spec": "001-drain", "role": "coder", "chunk_id": "core-a",
            "prompt_path": "/nowhere", "prompt_preview": "x", "time": "t"}]}"#,
    );
    let child = start_run(&repo, "001", &["--drain-timeout", "20"]);
    wait_for("the agent", || dir.join("fake-agent.pid").exists());
    signal(&child, libc::SIGTERM);
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 130);
    assert!(started.elapsed() < Duration::from_secs(10));
    // The agent finished within the drain and reported done: recovery's rules make it `next`.
    let a = repo.chunk("001-drain", "core-a");
    assert_eq!(a["status"], "completed", "{a}");
    assert_eq!(a["attempts"][0]["recovery"]["decision"], "next");
    assert_eq!(
        repo.branch_log("auto-claude/001-drain"),
        vec!["auto-claude: core-a - Build part A"]
    );
    assert!(!interrupted_file(&repo).exists(), "no session was cut off");
    // Nothing else started after the signal.
    assert_eq!(repo.chunk("001-drain", "core-b")["status"], "pending");
}

#[test]
fn a_drain_that_runs_out_lists_the_session_which_runs_again_once() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("002-stubborn");
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
    repo.script("core-a 1 stubborn\n");
    let child = start_run(&repo, "002", &["--drain-timeout", "1"]);
    wait_for("the agent", || dir.join("fake-agent.pid").exists());
    signal(&child, libc::SIGINT);
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 130);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the drain is 1 s"
    );
    assert!(
        stderr(&out).contains("still working when the drain timeout ran out"),
        "{}",
        stderr(&out)
    );

    // The session is listed, with its prompt.
    let file: Value =
        serde_json::from_slice(&std::fs::read(interrupted_file(&repo)).unwrap()).unwrap();
    let entry = &file["sessions"][0];
    assert_eq!(file["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(entry["spec"], "002-stubborn");
    assert_eq!(entry["role"], "coder");
    assert_eq!(entry["chunk_id"], "core-a");
    let prompt_path = entry["prompt_path"].as_str().unwrap();
    assert!(
        std::fs::read_to_string(prompt_path)
            .unwrap()
            .contains("Your step: core-a")
    );
    assert!(
        entry["prompt_preview"]
            .as_str()
            .unwrap()
            .starts_with("You are a coder session")
    );
    assert!(entry["time"].is_string() && entry["session_id"].is_string());
    // The killed attempt's partial work was kept: the chunk continues.
    let a = repo.chunk("002-stubborn", "core-a");
    assert_eq!(a["status"], "pending");
    assert_eq!(a["attempts"][0]["recovery"]["decision"], "continue");
    assert!(
        repo.git(&["for-each-ref", "refs/auto-claude/recovery/"])
            .contains("002-stubborn/core-a/1")
    );

    // The next start re-runs it first, with its original prompt, and deletes the entry at once:
    // a crash during the re-run (here: right after the agent starts) must not loop.
    let crashed = repo
        .cmd(&[
            "run",
            "--spec",
            "002",
            "--agent-command",
            &fixture("fake-agent").display().to_string(),
        ])
        .env("RUNNER_FAILPOINTS", "after_spawn")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        crashed.status.signal(),
        Some(libc::SIGKILL),
        "{}",
        stderr(&crashed)
    );
    let err = stderr(&crashed);
    assert!(
        err.contains(
            "Resuming interrupted work for coder on 002-stubborn/core-a: \"You are a coder session"
        ),
        "{err}"
    );
    assert!(
        !interrupted_file(&repo).exists(),
        "the entry is deleted as soon as it is queued"
    );
    // The agent was killed with runner before it could read its prompt; runner's own copy of
    // what it sent is in the session folder.
    let resumed: Vec<String> = std::fs::read_dir(dir.join("sessions"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path().join("prompt.md")).ok())
        .filter(|t| t.contains("this session was interrupted"))
        .collect();
    assert_eq!(resumed.len(), 1);
    assert!(
        resumed[0].contains("Your step: core-a"),
        "the original prompt"
    );
    assert!(
        resumed[0].contains("refs/auto-claude/recovery/002-stubborn/core-a/1"),
        "{}",
        resumed[0]
    );

    // The run after that does not resume again, and finishes.
    let out = repo.run_spec("002", &[]);
    assert_exit(&out, 0);
    assert!(
        !stderr(&out).contains("Resuming interrupted work"),
        "{}",
        stderr(&out)
    );
    assert!(
        repo.statuses("002-stubborn")
            .iter()
            .all(|(_, s)| s == "completed")
    );
}

#[test]
fn a_second_interrupt_kills_at_once() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("003-twice");
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
    repo.script("core-a * stubborn\n");
    let child = start_run(&repo, "003", &["--drain-timeout", "60"]);
    wait_for("the agent", || dir.join("fake-agent.pid").exists());
    let started = Instant::now();
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 130);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    let pid: i32 = std::fs::read_to_string(dir.join("fake-agent.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z "),
        "the agent {pid} survived"
    );
    assert!(interrupted_file(&repo).exists());
}

#[test]
fn entries_of_specs_or_chunks_that_are_gone_are_skipped() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("004-gone");
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
    repo.write(
        ".auto-claude/interrupted-sessions.json",
        r#"{"sessions": [
            {"session_id": "a", "spec": "004-gone", "role": "coder", "chunk_id": "no-such-chunk",
             "prompt_path": "/nowhere", "prompt_preview": "x", "time": "t"},
            {"session_id": "b", "spec": "999-other", "role": "coder", "chunk_id": "c",
             "prompt_path": "/nowhere", "prompt_preview": "x", "time": "t"}]}"#,
    );
    let out = repo.run_spec("004", &[]);
    assert_exit(&out, 0);
    assert!(!stderr(&out).contains("Resuming"), "{}", stderr(&out));
    // This spec's entry is gone; the other spec's stays for its own run.
    let file: Value =
        serde_json::from_slice(&std::fs::read(interrupted_file(&repo)).unwrap()).unwrap();
    assert_eq!(file["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(file["sessions"][0]["spec"], "999-other");
}

#[test]
fn auto_continue_without_a_spec_resumes_every_interrupted_spec_most_recent_first() {
    let repo = TestRepo::new();
    for spec in ["010-a", "011-b", "012-c"] {
        let dir = repo.add_spec(spec);
        std::fs::copy(
            fixture("plans/two-phases.json"),
            dir.join("implementation_plan.json"),
        )
        .unwrap();
    }
    let agent = fixture("fake-agent").display().to_string();
    // Interrupt 010-a, then 011-b (more recent), each killed after its first coder session; use
    // separate slots so each keeps its worktree. 012-c never ran.
    for (spec, slot) in [("010-a", "a"), ("011-b", "b")] {
        let out = repo
            .cmd(&[
                "run",
                "--spec",
                spec,
                "--slot",
                slot,
                "--agent-command",
                &agent,
            ])
            .env("RUNNER_FAILPOINTS", "after_coder_session")
            .output()
            .unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&out.status),
            Some(9)
        );
        std::thread::sleep(Duration::from_millis(1100));
    }
    let out = repo.runner(&[
        "run",
        "--auto-continue",
        "--json",
        "--agent-command",
        &agent,
    ]);
    // Each resumed spec builds in the slot that holds its branch.
    assert_exit(&out, 0);
    let summaries: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = summaries["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["spec"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["011-b", "010-a"],
        "most recent first, never-run specs left alone"
    );
    assert!(repo.statuses("010-a").iter().all(|(_, s)| s == "completed"));
    assert!(repo.statuses("011-b").iter().all(|(_, s)| s == "completed"));
    assert!(repo.statuses("012-c").iter().all(|(_, s)| s == "pending"));
}

/// Ctrl-C while a chunk's completion is being written (a commit, plan writes: no `await`, so the
/// runtime's signal task does not run): no new session starts after it. The next chunk, taken
/// in the completion's write, is handed back never started, and the next run builds it.
#[test]
fn a_ctrl_c_as_a_chunk_completes_starts_no_new_session() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("004-between");
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
    repo.script("* * done\n");
    let agent = fixture("fake-agent").display().to_string();
    let child = repo
        .cmd(&["run", "--spec", "004", "--agent-command", agent.as_str()])
        // The completion of core-a (with core-b's take) is written, then the run pauses.
        .env("RUNNER_FAILPOINTS", "after_complete~3000")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("core-a's completion", || {
        repo.chunk("004-between", "core-a")["status"] == "completed"
    });
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 130);
    let started: Vec<Value> = repo
        .events("004-between")
        .into_iter()
        .filter(|e| e["event"] == "process_started")
        .filter(|e| {
            e["session_id"]
                .as_str()
                .is_some_and(|s| s.contains("core-b"))
        })
        .collect();
    assert!(
        started.is_empty(),
        "a session of core-b started after the Ctrl-C: {started:?}\n{}",
        stderr(&out)
    );
    let b = repo.chunk("004-between", "core-b");
    assert_eq!(b["status"], "pending", "{b}");
    for attempt in b["attempts"].as_array().into_iter().flatten() {
        assert_eq!(attempt["outcome"], "not_started", "{b}");
    }
    let out = repo
        .cmd(&["run", "--spec", "004", "--agent-command", agent.as_str()])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(repo.chunk("004-between", "core-b")["status"], "completed");
}
