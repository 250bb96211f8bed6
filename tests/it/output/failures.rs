//! Failures that say why, once: a failed verification shows the end of its output, a planner
//! that wrote no plan says so with what it printed, and output that could not be written to
//! stdout is an error (a closed pipe stays quiet).

use super::*;

/// The logs named `file` of every session of `spec`, by attempt (a session id ends in `-a<N>`;
/// ids made in the same second do not sort by time).
fn session_logs(repo: &TestRepo, spec: &str, file: &str) -> Vec<String> {
    let mut logs: Vec<(String, String)> = std::fs::read_dir(repo.spec_dir(spec).join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join(file).is_file())
        .map(|p| {
            let id = p.file_name().unwrap().to_string_lossy().into_owned();
            let attempt = id.rsplit("-a").next().unwrap().to_string();
            (attempt, p.join(file).display().to_string())
        })
        .collect();
    logs.sort();
    logs.into_iter().map(|(_, log)| log).collect()
}

#[test]
fn a_failed_verification_shows_the_end_of_its_output_and_names_its_log_once() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("001-verify");
    // Thirty numbered lines, a line coloured as test runners colour FAILED, a line far too
    // wide for a terminal, a bell: then it fails.
    let check = repo.tmp.path().join("check.sh");
    std::fs::write(
        &check,
        "i=1\nwhile [ $i -le 30 ]; do echo \"line $i\"; i=$((i+1)); done\n\
         printf '\\033[31mFAILED\\033[0m test_login\\n'\n\
         head -c 600 /dev/zero | tr '\\000' y; echo\n\
         printf 'bell\\007 end\\n'\nexit 1\n",
    )
    .unwrap();
    let plan = serde_json::json!({"phases": [{"id": "p", "subtasks": [
        {"id": "v", "description": "checked", "status": "pending",
         "verification": {"type": "command", "run": format!("sh {}", check.display())}}]}]});
    std::fs::write(dir.join("implementation_plan.json"), plan.to_string()).unwrap();
    repo.write_config("[run]\nmax_attempts = 2\n");
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    // The end of the output, as a person reads it: colours gone, nothing that drives the
    // terminal, the wide line cut.
    assert!(err.contains("FAILED test_login"), "{err}");
    assert!(err.contains("line 30"), "{err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("yyyyyyyyyy"), "{err}");
    assert!(!err.contains(&"y".repeat(300)), "{err}");
    // The last lines only: not the start of the output.
    assert!(
        !err.lines().any(|l| l.trim_end().ends_with("line 5")),
        "{err}"
    );
    // Both attempts' output was shown (the retried one's with its ✗ line, the last one's in the
    // summary), each attempt's log named exactly once.
    assert_eq!(
        err.matches("FAILED test_login").count(),
        2,
        "each attempt's output once: {err}"
    );
    let logs = session_logs(&repo, "001-verify", "verification.log");
    assert_eq!(logs.len(), 2, "{logs:?}");
    for log in &logs {
        assert_eq!(err.matches(log.as_str()).count(), 1, "{log} in:\n{err}");
    }
    // The final summary carries the last attempt's output and log.
    let summary = &err[err.find("runner: chunk v failed").expect("the summary")..];
    assert!(summary.contains("FAILED test_login"), "{summary}");
    assert!(summary.contains(&logs[1]), "{summary}");
    // The plan keeps the reason with its log, for `chunk show` and the next prompt.
    let reason = repo.chunk("001-verify", "v")["attempts"][1]["reason"].clone();
    assert!(reason.as_str().unwrap().contains(&logs[1]), "{reason}");
}

#[test]
fn a_planner_that_wrote_no_plan_says_so_with_what_it_printed() {
    let repo = TestRepo::new();
    repo.add_spec("001-noplan");
    let agent = repo.tmp.path().join("talker.sh");
    std::fs::write(
        &agent,
        "cat >/dev/null\ni=1\nwhile [ $i -le 25 ]; do echo \"thinking $i\"; i=$((i+1)); done\n\
         echo 'Error: not logged in; run the login command first' >&2\nexit 0\n",
    )
    .unwrap();
    let command = format!("sh {}", agent.display());
    repo.write_config("[run]\nmax_attempts = 2\n");
    let out = repo.runner(&["run", "--spec", "001", "--agent-command", &command]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    let summary = &err[err.find("runner: ").expect("the error")..];
    assert!(summary.contains("wrote no plan"), "{summary}");
    // What it printed, its log, and where to look: the agent command.
    assert!(
        summary.contains("Error: not logged in; run the login command first"),
        "{summary}"
    );
    assert!(summary.contains("thinking 25"), "{summary}");
    let logs = session_logs(&repo, "001-noplan", "output.log");
    assert_eq!(logs.len(), 2, "{logs:?}");
    assert!(summary.contains(&logs[1]), "{summary}");
    for log in &logs {
        assert_eq!(err.matches(log.as_str()).count(), 1, "{log} in:\n{err}");
    }
    assert!(summary.contains("--agent-command"), "{summary}");
    // No plan file that does not exist, and no hand edit of one.
    assert!(!err.contains("rejected-*"), "{err}");
    assert!(!err.contains("fix a plan by hand"), "{err}");
    assert!(
        !err.contains("the planner did not produce a valid plan"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Output that could not be written

/// `/dev/full`: every write to it fails with ENOSPC, as on a full disk.
fn full_disk() -> std::process::Stdio {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full (Linux)")
        .into()
}

/// Commands whose whole answer is on stdout.
const REPORTS: &[&[&str]] = &[
    &["man"],
    &["--help"],
    &["completions", "bash"],
    &["status", "--json"],
    &["new", "Add a login page", "--json"],
];

#[test]
fn a_report_that_could_not_be_written_to_stdout_is_an_error() {
    for args in REPORTS {
        let repo = TestRepo::new();
        repo.add_spec("001-there");
        let out = repo.cmd(args).stdout(full_disk()).output().unwrap();
        assert_ne!(out.status.code(), Some(101), "runner {args:?} panicked");
        assert_eq!(
            out.status.code(),
            Some(1),
            "runner {args:?}: {}",
            stderr(&out)
        );
        let err = stderr(&out);
        assert!(
            err.contains("runner: ") && err.contains("stdout") && err.contains("No space left"),
            "runner {args:?}: {err}"
        );
        assert_eq!(
            err.matches("stdout").count(),
            1,
            "said once: runner {args:?}: {err}"
        );
    }
}

#[test]
fn a_report_into_a_closed_pipe_stays_quiet_and_succeeds() {
    for args in REPORTS {
        let repo = TestRepo::new();
        repo.add_spec("001-there");
        let out = repo.cmd(args).stdout(closed_pipe()).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "runner {args:?}: {}",
            stderr(&out)
        );
        assert!(
            !stderr(&out).contains("stdout"),
            "runner {args:?}: {}",
            stderr(&out)
        );
    }
}
