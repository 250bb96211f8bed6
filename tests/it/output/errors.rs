//! Errors that help: what went wrong named (a path, a lock, a missing base), with the command
//! that fixes it, and every printed command working as shown.

use super::*;

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
        let out = crate::common::runner_command()
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
    crate::assert_screen!(repo, err, @r#"
        runner: the pinned base branch "dev" of spec 001-base no longer exists
          hint: recreate it: git branch dev <commit>
          hint: or re-pin the spec to another branch: runner run --spec 001-base --base-branch NAME (it asks to confirm; --yes without a terminal)
        "#);

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
        let mut cmd = crate::common::runner_command();
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
    let mut cmd = crate::common::runner_command();
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
    let out = crate::common::runner_command()
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
