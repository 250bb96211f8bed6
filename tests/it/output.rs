//! Output that tells the truth: bytes that are not UTF-8, closed pipes, Ctrl-C and question
//! messages, `recover --dry-run` against `recover`, `status`, and errors that help.

use crate::common::*;
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

fn recover_report(repo: &TestRepo, args: &[&str]) -> (Option<i32>, Value) {
    let mut all = vec!["recover", "--json"];
    all.extend_from_slice(args);
    let out = repo.runner(&all);
    let report = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(&out), stderr(&out)));
    (out.status.code(), report)
}

/// The dry run's report, then the real one: the same actions, kinds, chunks and decisions;
/// where the dry run names two outcomes, the real decision is the one for `verification`.
#[track_caller]
fn assert_dry_run_predicts(repo: &TestRepo, args: &[&str], verification: Option<bool>) {
    let mut dry_args = args.to_vec();
    dry_args.push("--dry-run");
    let (dry_code, dry) = recover_report(repo, &dry_args);
    let (real_code, real) = recover_report(repo, args);
    assert_eq!(
        dry_code, real_code,
        "exit codes\ndry: {dry:#}\nreal: {real:#}"
    );
    let dry_specs = dry["specs"].as_array().unwrap();
    let real_specs = real["specs"].as_array().unwrap();
    assert_eq!(dry_specs.len(), real_specs.len());
    for (d, r) in dry_specs.iter().zip(real_specs) {
        assert_eq!(d["outcome"], r["outcome"], "dry: {d:#}\nreal: {r:#}");
        let (da, ra) = (
            d["actions"].as_array().unwrap(),
            r["actions"].as_array().unwrap(),
        );
        assert_eq!(da.len(), ra.len(), "dry: {d:#}\nreal: {r:#}");
        for (d, r) in da.iter().zip(ra) {
            assert_eq!(d["kind"], r["kind"], "dry: {d:#}\nreal: {r:#}");
            assert_eq!(d["chunk"], r["chunk"], "dry: {d:#}\nreal: {r:#}");
            let predicted = match &d["if_verification"] {
                Value::Null => d["decision"].clone(),
                both => {
                    assert_eq!(d["decision"], Value::Null, "{d:#}");
                    let key = match verification {
                        Some(true) => "passes",
                        Some(false) => "fails",
                        None => {
                            panic!("a dry run named two outcomes where none was expected: {d:#}")
                        }
                    };
                    both[key].clone()
                }
            };
            assert_eq!(predicted, r["decision"], "dry: {d:#}\nreal: {r:#}");
        }
    }
}

/// One test over every state: the states whose prediction was already right guard the rest.
#[test]
fn dry_run_predicts_what_recover_does_for_each_interrupted_state() {
    states_without_a_check();
    states_where_the_verification_decides();
    human_review_and_retry_failed();
}

fn states_without_a_check() {
    for (rules, expected) in [
        ("core-a * uncommitted\n", "continue"),
        ("core-a * done\n", "next"),
        ("core-a * noop\n", "restart"),
    ] {
        let repo = interrupted("001-dry", rules, Some("after_coder_session"));
        let dead_temp = repo
            .spec_dir("001-dry")
            .join(".implementation_plan.json.tmp-999999999-0");
        std::fs::write(&dead_temp, "half").unwrap();
        assert_dry_run_predicts(&repo, &[], None);
        let real = &repo.events("001-dry");
        assert!(
            real.iter()
                .any(|e| e["event"] == "recovery_decision" && e["decision"] == expected),
            "{rules}"
        );
    }
}

fn states_where_the_verification_decides() {
    // core-b reported done and its check (test -f work/core-b.txt) passes: next.
    let repo = interrupted("001-dry", "", Some("after_coder_session@2"));
    let (_, dry) = recover_report(&repo, &["--dry-run"]);
    let action = &dry["specs"][0]["actions"][0];
    assert_eq!(
        action["if_verification"],
        serde_json::json!({"passes": "next", "fails": "continue"}),
        "{action:#}"
    );
    let text = stdout(&repo.runner(&["recover", "--dry-run"]));
    assert!(
        text.contains("chunk core-b: next if its verification passes, continue if it fails"),
        "{text}"
    );
    assert_dry_run_predicts(&repo, &[], Some(true));

    // core-b reported done, but its file is gone: the check fails and nothing is left: restart.
    let repo = interrupted("001-dry", "", Some("after_coder_session@2"));
    std::fs::remove_file(repo.worktree().join("work/core-b.txt")).unwrap();
    assert_dry_run_predicts(&repo, &[], Some(false));
    assert_eq!(repo.chunk("001-dry", "core-b")["status"], "pending");
}

fn human_review_and_retry_failed() {
    // The agent left conflict markers: a person must look (exit 3 both times).
    let repo = interrupted(
        "001-dry",
        "core-a * uncommitted\n",
        Some("after_coder_session"),
    );
    std::fs::write(
        repo.worktree().join("work/core-a.txt"),
        "<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n",
    )
    .unwrap();
    assert_dry_run_predicts(&repo, &[], None);
    assert_eq!(repo.chunk("001-dry", "core-a")["status"], "blocked");

    // A chunk failed for good: --retry-failed sets it back.
    let repo = repo_with_fixture_plan("002-dry");
    repo.write_config("[run]\nmax_attempts = 1\n");
    repo.script("core-b * fail broken\n");
    assert_exit(&repo.run_spec("002", &[]), 3);
    assert_dry_run_predicts(&repo, &["--retry-failed"], None);
    assert_eq!(repo.chunk("002-dry", "core-b")["status"], "pending");
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
    let text = stdout(&repo.runner(&["status"]));
    assert!(text.contains(hint), "{text}");
    // And the hint works.
    repo.script("");
    assert_exit(
        &repo.runner(&["recover", "--spec", "001-fail", "--retry-failed"]),
        0,
    );
    assert_exit(&repo.run_spec("001", &[]), 0);
}

// ---------------------------------------------------------------------------------------------
// Ctrl-C and Esc

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
    let mut cmd = std::process::Command::new(RUNNER);
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

// ---------------------------------------------------------------------------------------------
// Errors that help

#[test]
fn a_repository_with_no_commits_says_make_a_first_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("empty");
    std::fs::create_dir_all(root.join(".auto-claude/specs/001-x")).unwrap();
    std::fs::write(root.join(".auto-claude/specs/001-x/spec.md"), "# x\n").unwrap();
    git_in(&root, &["init", "-q", "-b", "main"]);
    for extra in [&[][..], &["--base-branch", "main"]] {
        let mut args = vec!["run", "--spec", "001", "--agent-command", "true"];
        args.extend_from_slice(extra);
        let out = std::process::Command::new(RUNNER)
            .args(&args)
            .current_dir(&root)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_exit(&out, 2);
        assert!(
            stderr(&out).contains("make a first commit"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn a_deleted_pinned_base_branch_can_be_repinned_when_confirmed() {
    let repo = repo_with_fixture_plan("001-base");
    repo.git(&["branch", "dev"]);
    repo.write_config("[run]\nmax_sessions = 1\n");
    assert_exit(&repo.run_spec("001", &["--base-branch", "dev"]), 5);
    assert_eq!(repo.plan("001-base")["base_branch"], "dev");
    std::fs::remove_file(repo.path(".auto-claude/config.toml")).unwrap();
    repo.git(&["branch", "-D", "dev"]);

    // Without a flag: the error says the pin is gone and how to re-pin.
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("no longer exists") && err.contains("--base-branch NAME"),
        "{err}"
    );

    // Re-pinning needs a confirmation: without a terminal, --yes. Nothing changes before.
    let before = std::fs::read(repo.plan_path("001-base")).unwrap();
    let out = repo.run_spec("001", &["--base-branch", "main"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("pass --yes"), "{}", stderr(&out));
    assert_eq!(std::fs::read(repo.plan_path("001-base")).unwrap(), before);

    // A pin whose branch still exists is never replaced, confirmed or not.
    repo.git(&["branch", "dev"]);
    let out = repo.run_spec("001", &["--base-branch", "main", "--yes"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("pinned to base branch"),
        "{}",
        stderr(&out)
    );
    repo.git(&["branch", "-D", "dev"]);

    // A crash right after the re-pin leaves the confirmed pin; the next run goes on with it.
    let out = repo
        .cmd(&[
            "run",
            "--spec",
            "001",
            "--agent-command",
            &agent(),
            "--base-branch",
            "main",
            "--yes",
        ])
        .env("RUNNER_FAILPOINTS", "after_base_repin")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{}", stderr(&out));
    assert_eq!(repo.plan("001-base")["base_branch"], "main");
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 0);
    assert_eq!(repo.plan("001-base")["base_branch"], "main");
    assert!(
        repo.statuses("001-base")
            .iter()
            .all(|(_, s)| s == "completed")
    );
}

#[test]
fn a_busy_message_does_not_say_it_waits() {
    let repo = repo_with_fixture_plan("001-busy");
    repo.script("core-a * slow 30\n");
    let mut run = spawn_quiet_run(&repo, "001");
    wait_for("the run to hold the spec", || {
        let st: Value = serde_json::from_slice(&repo.runner(&["status", "--json"]).stdout).unwrap();
        st["specs"][0]["running"] != Value::Null
    });
    for command in ["merge", "discard"] {
        let out = repo.runner(&[command, "--spec", "001", "--yes"]);
        assert_exit(&out, 4);
        let err = stderr(&out);
        assert!(!err.contains("waits"), "{command}: {err}");
        assert!(err.contains("did not start"), "{command}: {err}");
    }
    run.kill().unwrap();
    run.wait().unwrap();
}

#[test]
fn an_unusable_file_is_named_in_the_error() {
    // A directory where the journal should be: fails for root too.
    let repo = repo_with_fixture_plan("001-path");
    let journal = repo.spec_dir("001-path").join("events.jsonl");
    std::fs::create_dir(&journal).unwrap();
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains(&journal.display().to_string()),
        "{}",
        stderr(&out)
    );
    // A folder the user names that cannot be made.
    let file = repo.tmp.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let target = file.join("demo");
    let out = repo.runner(&["demo", "--dir", target.to_str().unwrap()]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains(&target.display().to_string()),
        "{}",
        stderr(&out)
    );
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

#[test]
fn permission_denied_names_the_path() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let repo = repo_with_fixture_plan("001-perm");
    // A journal nobody may write to (its folder stays writable, so the run gets that far).
    let journal = repo.spec_dir("001-perm").join("events.jsonl");
    std::fs::write(&journal, "").unwrap();
    let mut cmd = repo.cmd(&["run", "--spec", "001", "--agent-command", &agent()]);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // Root is never denied by file modes: run runner as `nobody`, owning the repository.
        const NOBODY: u32 = 65534;
        chown_tree(&repo.tmp.path().canonicalize().unwrap(), NOBODY);
        cmd.uid(NOBODY).gid(NOBODY).env("HOME", repo.tmp.path());
    }
    std::fs::set_permissions(&journal, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = cmd.output().unwrap();
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("Permission denied"), "{err}");
    assert!(err.contains(&journal.display().to_string()), "{err}");
}

#[test]
fn on_a_terminal_repinning_a_deleted_base_is_a_question() {
    use expectrl::session::OsSession;
    use expectrl::{Eof, Expect};
    let repo = repo_pinned_to_a_deleted_base("001-ask");
    let spawn = || {
        let mut cmd = std::process::Command::new(RUNNER);
        cmd.args([
            "run",
            "--spec",
            "001",
            "--agent-command",
            &agent(),
            "--base-branch",
            "main",
            "--auto-continue",
        ])
        .current_dir(&repo.root)
        .env("TERM", "xterm");
        let mut s = OsSession::spawn(cmd).unwrap();
        s.set_expect_timeout(Some(std::time::Duration::from_secs(20)));
        s.expect("Re-pin 001-ask to \"main\"?").unwrap();
        s
    };
    // No: nothing changes.
    let mut s = spawn();
    s.send("n\r").unwrap();
    s.expect("cancelled; nothing was changed").unwrap();
    let _ = s.expect(Eof);
    assert_eq!(repo.plan("001-ask")["base_branch"], "dev");
    // Yes: re-pinned, and the run goes on.
    let mut s = spawn();
    s.send("y\r").unwrap();
    s.expect("All 3 chunks").unwrap();
    let _ = s.expect(Eof);
    assert!(format!("{:?}", s.get_process_mut().wait().unwrap()).contains(", 0)"));
    assert_eq!(repo.plan("001-ask")["base_branch"], "main");
}

// ---------------------------------------------------------------------------------------------
// Review fixes (outfix)

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
fn dry_run_restores_a_torn_plan_as_recover_does() {
    let repo = interrupted("001-torn", "core-a * done\n", Some("after_coder_session"));
    let plan = repo.plan_path("001-torn");
    let text = std::fs::read(&plan).unwrap();
    std::fs::write(&plan, &text[..text.len() / 2]).unwrap();
    let dry = repo.runner(&["recover", "--dry-run"]);
    assert_exit(&dry, 0);
    assert!(
        stdout(&dry).contains("would restore it from"),
        "{}",
        stdout(&dry)
    );
    assert_dry_run_predicts(&repo, &[], None);
    assert_eq!(repo.chunk("001-torn", "core-a")["status"], "completed");
}

#[test]
fn an_unreadable_worktree_is_named_and_predicted_alike() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let repo = interrupted(
        "001-perm",
        "core-a * uncommitted\n",
        Some("after_coder_session"),
    );
    let wt = repo.worktree();
    // SAFETY: geteuid has no preconditions.
    let as_root = unsafe { libc::geteuid() } == 0;
    const NOBODY: u32 = 65534;
    if as_root {
        // Root is never denied by file modes: runner runs as `nobody`, owning the repository.
        chown_tree(&repo.tmp.path().canonicalize().unwrap(), NOBODY);
    }
    std::fs::set_permissions(&wt, std::fs::Permissions::from_mode(0o000)).unwrap();
    let run = |args: &[&str]| {
        let mut cmd = repo.cmd(args);
        if as_root {
            cmd.uid(NOBODY).gid(NOBODY).env("HOME", repo.tmp.path());
        }
        cmd.output().unwrap()
    };
    let want = format!("{} cannot be read (permission denied)", wt.display());
    let status = run(&["status"]);
    assert!(stdout(&status).contains(&want), "{}", stdout(&status));
    let dry = run(&["recover", "--dry-run"]);
    let real = run(&["recover"]);
    std::fs::set_permissions(&wt, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_exit(&dry, 3);
    assert_exit(&real, 3);
    for out in [&dry, &real] {
        assert!(stdout(out).contains(&want), "{}", stdout(out));
    }
    assert!(
        stdout(&dry).contains("its files cannot be read, so none would be saved"),
        "{}",
        stdout(&dry)
    );
    assert!(
        stdout(&real).contains("Its files cannot be read, so none were saved"),
        "{}",
        stdout(&real)
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
        let mut cmd = std::process::Command::new(RUNNER);
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

/// The commands a text shows between backticks, each split as a POSIX shell would.
fn shown_commands(text: &str) -> Vec<Vec<String>> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| c.starts_with("runner "))
        .map(|c| shell_words::split(c).unwrap_or_else(|e| panic!("{c}: {e}")))
        .collect()
}

#[test]
fn suggested_commands_quote_the_spec_name() {
    let spec = "002-$(id);it's";
    let repo = repo_with_fixture_plan(spec);
    repo.write_config("[run]\nmax_attempts = 1\n");
    repo.script("core-b * fail broken\n");
    let out = repo.run_spec("002", &[]);
    assert_exit(&out, 3);
    let commands = shown_commands(&stderr(&out));
    assert!(
        commands.contains(&vec![
            "runner".to_string(),
            "recover".into(),
            "--spec".into(),
            spec.into(),
            "--retry-failed".into()
        ]),
        "{}",
        stderr(&out)
    );
    let status = stdout(&repo.runner(&["status"]));
    assert!(
        shown_commands(&status)
            .iter()
            .all(|c| c.get(3).map(String::as_str) == Some(spec)),
        "{status}"
    );
}

#[test]
fn printed_run_commands_work_as_shown() {
    let repo = repo_with_fixture_plan("001-again");
    repo.write_config("[run]\nmax_sessions = 1\n");
    // The agent comes from the flag only: the printed command must carry it.
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 5);
    let commands = shown_commands(&stderr(&out));
    let again = commands
        .iter()
        .find(|c| c[1] == "run")
        .unwrap_or_else(|| panic!("no run command in: {}", stderr(&out)));
    assert!(again.contains(&"--agent-command".to_string()), "{again:?}");
    assert!(again.contains(&agent()), "{again:?}");
    // Run exactly as shown (runner is not on PATH here: its path instead of the name); no
    // terminal, existing work: the command has --auto-continue.
    std::fs::remove_file(repo.path(".auto-claude/config.toml")).unwrap();
    let mut cmd = std::process::Command::new(RUNNER);
    cmd.args(&again[1..])
        .current_dir(&repo.root)
        .env("FAKE_AGENT_SCRIPT", repo.tmp.path().join("agent-script"))
        .env("FAKE_AGENT_PLAN", fixture("plans/two-phases.json"))
        .stdin(std::process::Stdio::null());
    let out = cmd.output().unwrap();
    assert_exit(&out, 0);
}

#[test]
fn an_interrupted_run_prints_the_command_that_resumes_it() {
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
            "1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let err = collect_stderr(&mut child);
    let pid_file = repo.spec_dir("001-stop").join("fake-agent.pid");
    wait_for("the agent", || pid_file.exists());
    sigint(&child);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    std::thread::sleep(std::time::Duration::from_millis(200));
    let err = err.lock().unwrap().clone();
    let want = format!(
        "runner run --spec 001-stop --auto-continue --agent-command {}",
        agent()
    );
    assert!(err.contains(&want), "{err}");
}

#[test]
fn a_dry_run_says_would_for_everything_it_did_not_do() {
    let repo = interrupted("001-would", "core-a * done\n", Some("after_coder_session"));
    let dir = repo.spec_dir("001-would");
    std::fs::write(
        dir.join(".implementation_plan.json.tmp-999999999-0"),
        "half",
    )
    .unwrap();
    let plan = repo.plan_path("001-would");
    let text = std::fs::read(&plan).unwrap();
    std::fs::write(&plan, &text[..text.len() / 2]).unwrap();
    let dry = stdout(&repo.runner(&["recover", "--dry-run"]));
    for would in [
        "would remove",
        "would restore it from",
        "would keep the broken file",
    ] {
        assert!(dry.contains(would), "{would:?} missing in:\n{dry}");
    }
    for claim in ["removed ", "restored it", "kept the broken"] {
        assert!(!dry.contains(claim), "a dry run claims {claim:?}:\n{dry}");
    }

    // A failed chunk: --retry-failed in a dry run.
    let repo = repo_with_fixture_plan("001-fail");
    repo.write_config("[run]\nmax_attempts = 1\n");
    repo.script("core-b * fail broken\n");
    assert_exit(&repo.run_spec("001", &[]), 3);
    let dry = stdout(&repo.runner(&["recover", "--dry-run", "--retry-failed"]));
    assert!(
        dry.contains("failed chunk would be set back to pending"),
        "{dry}"
    );
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

#[test]
fn a_restart_says_the_worktree_was_reset() {
    let repo = repo_with_fixture_plan("001-restart");
    repo.write_config(&format!(
        "[recovery]\nevaluator = \"agent\"\n\n[agent]\ncommand = [{:?}]\n",
        agent()
    ));
    repo.script("core-a * uncommitted\nrecovery * answer restart not worth it\n");
    run_killed_at(&repo, "001-restart", "after_coder_session");
    let out = repo.runner(&["recover"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.contains("reset to where the attempt started"),
        "{text}"
    );
    assert!(!text.contains("left in the worktree"), "{text}");
}

#[test]
fn merge_in_a_repository_with_no_commits_does_not_say_detached() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git_in(root, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(root.join(".auto-claude/specs/001-a")).unwrap();
    std::fs::write(root.join(".auto-claude/specs/001-a/spec.md"), "# a\n").unwrap();
    let out = std::process::Command::new(RUNNER)
        .args(["merge", "--spec", "001", "--yes"])
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(!err.contains("detached"), "{err}");
    assert!(err.contains("no commits yet"), "{err}");
}

#[test]
fn recover_of_every_spec_goes_on_past_a_refused_folder() {
    let repo = repo_with_fixture_plan("001-fine");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("spec.md"), "# elsewhere\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.spec_dir("002-link")).unwrap();
    let out = repo.runner(&["recover", "--json"]);
    assert_exit(&out, 2);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&out), stderr(&out)));
    let outcome = |name: &str| {
        report["specs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["spec"] == name)
            .map(|s| s["outcome"].clone())
    };
    assert_eq!(outcome("001-fine"), Some("clean".into()), "{report:#}");
    assert_eq!(outcome("002-link"), Some("refused".into()), "{report:#}");
    assert!(stderr(&out).contains("002-link"), "{}", stderr(&out));
}

#[test]
fn a_dry_run_leaves_the_run_lock_record_alone() {
    let repo = interrupted("001-lock", "core-a * done\n", Some("after_coder_session"));
    let lock = repo.spec_dir("001-lock").join("run.lock");
    let before = std::fs::read(&lock).unwrap();
    assert_exit(&repo.runner(&["recover", "--dry-run"]), 0);
    assert_eq!(
        std::fs::read(&lock).unwrap(),
        before,
        "the holder record was rewritten"
    );
}
