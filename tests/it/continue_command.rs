//! "Continue this spec" is one command (`runner run --spec S --auto-continue`, with the agent
//! flag the run was given), printed the same on every screen that offers it, and it works as
//! printed: each command is collected from its screen and run through `sh -c` with no terminal
//! (stdin /dev/null), and the spec goes on. Also: `status` says `interrupted` whatever stopped
//! the last run, and the words of `resume --no-run` and `new` say what happened.

use std::process::{Output, Stdio};

use serde_json::Value;

use crate::common::*;

fn agent() -> String {
    fixture("fake-agent").display().to_string()
}

/// Every `runner run …` command printed in `text`: from `runner run` to its closing backtick
/// or the end of its line.
fn run_commands(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while let Some(at) = rest.find("runner run ") {
            let command = &rest[at..];
            let end = command.find('`').unwrap_or(command.len());
            found.push(command[..end].trim().to_string());
            rest = &command[end..];
        }
    }
    found
}

/// The one continue command of `spec`, without and with the fake agent's flag.
fn expected(spec: &str) -> [String; 2] {
    let bare = format!("runner run --spec {spec} --auto-continue");
    let with_agent = format!("{bare} --agent-command {}", shell_words::quote(&agent()));
    [bare, with_agent]
}

/// `command` run as printed: `sh -c`, `runner` found on PATH, no terminal (stdin /dev/null,
/// output captured), in the repository, with the fake agent's script.
fn run_as_printed(repo: &TestRepo, command: &str) -> Output {
    let bin = repo.tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("runner");
    if !link.exists() {
        std::os::unix::fs::symlink(RUNNER, &link).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    isolated("sh")
        .arg("-c")
        .arg(command)
        .current_dir(&repo.root)
        .env("PATH", path)
        .env("FAKE_AGENT_SCRIPT", repo.tmp.path().join("agent-script"))
        .env("FAKE_AGENT_LOG", repo.tmp.path().join("agent-log"))
        .env("FAKE_AGENT_PLAN", fixture("plans/two-phases.json"))
        .env_remove("RUNNER_SPEC_DIR")
        .env_remove("RUNNER_CHUNK_ID")
        .env_remove("RUNNER_SESSION_ID")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn completed(repo: &TestRepo, spec: &str) -> usize {
    repo.statuses(spec)
        .iter()
        .filter(|(_, s)| s == "completed")
        .count()
}

/// Run `command` as printed: it must end well (exit 0) and leave `spec` complete.
#[track_caller]
fn assert_continues(repo: &TestRepo, spec: &str, command: &str) {
    repo.script("* * done\n");
    let out = run_as_printed(repo, command);
    assert_exit(&out, 0);
    assert_eq!(
        completed(repo, spec),
        3,
        "`{command}` did not finish the spec: {:?}\n{}",
        repo.statuses(spec),
        stderr(&out)
    );
}

/// Spec `spec` (the two-phase plan) whose run was stopped by `signal` while its agent worked on
/// the first chunk: the run's stderr.
pub fn stopped_by(repo: &TestRepo, spec: &str, signal: i32) -> String {
    stopped_at(repo, spec, "core-a", signal)
}

/// Spec `spec` whose run was stopped by `signal` while its agent worked on `chunk` (attempt 1):
/// the run's stderr.
fn stopped_at(repo: &TestRepo, spec: &str, chunk: &str, signal: i32) -> String {
    repo.script(&format!("{chunk} 1 slow 30\n"));
    let child = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the agent's session", || {
        repo.agent_log()
            .iter()
            .any(|l| l.starts_with(&format!("coder {chunk} ")))
    });
    // SAFETY: a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().unwrap();
    if signal != libc::SIGKILL {
        assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    }
    stderr(&out)
}

fn status_json(repo: &TestRepo, spec: &str) -> Value {
    let out = repo.runner(&["status", "--json"]);
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    v["specs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["spec"] == spec)
        .cloned()
        .unwrap_or_else(|| panic!("no {spec} in {v}"))
}

#[test]
fn the_hint_of_ctrl_c_and_of_a_closed_terminal_continues_the_spec_as_printed() {
    for signal in [libc::SIGINT, libc::SIGHUP] {
        let repo = repo_with_fixture_plan("001-stop");
        let err = stopped_by(&repo, "001-stop", signal);
        let commands = run_commands(&err);
        assert_eq!(
            commands,
            [expected("001-stop")[1].clone()],
            "signal {signal}: {err}"
        );
        assert_continues(&repo, "001-stop", &commands[0]);
    }
}

#[test]
fn the_hint_of_ctrl_c_names_the_spec_that_was_interrupted_among_several() {
    // Two interrupted specs: 002 (stopped last) is continued first, then 001, stopped there.
    let repo = repo_with_fixture_plan("002-b");
    repo.add_spec("001-a");
    repo.write_plan(
        "001-a",
        r#"{"feature": "A", "phases": [{"id": "p1", "name": "P", "depends_on": [],
            "subtasks": [{"id": "only", "description": "one", "status": "pending"}]}]}"#,
    );
    stopped_at(&repo, "001-a", "only", libc::SIGINT);
    stopped_by(&repo, "002-b", libc::SIGINT);
    std::fs::remove_file(repo.tmp.path().join("agent-log")).unwrap();
    repo.script("only 2 slow 30\n* * done\n");
    let child = repo
        .cmd(&["run", "--auto-continue", "--agent-command", &agent()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the second spec's session", || {
        repo.agent_log()
            .iter()
            .any(|l| l.starts_with("coder only 2"))
    });
    // SAFETY: a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let commands = run_commands(&stderr(&out));
    assert_eq!(commands, [expected("001-a")[1].clone()], "{}", stderr(&out));
}

#[test]
fn status_and_resume_print_the_one_command_and_it_continues_an_interrupted_spec() {
    let repo = repo_with_fixture_plan("001-stop");
    stopped_by(&repo, "001-stop", libc::SIGINT);
    let status = stdout(&repo.runner(&["status"]));
    let resume = stdout(&repo.runner(&["resume", "--no-run"]));
    let json = stdout(&repo.runner(&["resume", "--no-run", "--json"]));
    let json: Value = serde_json::from_str(&json).unwrap();
    let steps: Vec<String> = json["summary"]["next_steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["command"].as_str())
        .filter(|c| c.starts_with("runner run "))
        .map(str::to_string)
        .collect();
    let [bare, _] = expected("001-stop");
    for (screen, found) in [
        ("status", run_commands(&status)),
        ("resume", run_commands(&resume)),
        ("resume --json", steps),
    ] {
        assert_eq!(found, [bare.as_str()], "{screen}:\n{status}\n{resume}");
    }
    assert_eq!(
        status_json(&repo, "001-stop")["continue_command"],
        bare.as_str()
    );
    // The spec remembers its agent: the command needs no agent flag.
    assert_continues(&repo, "001-stop", &bare);
}

#[test]
fn a_paused_spec_says_the_one_command_and_it_continues_after_the_pause() {
    let repo = repo_with_fixture_plan("001-p");
    // One session, so the spec has run (and remembers its agent), then a usage limit's pause
    // that ends in a second.
    repo.write_config("[run]\nmax_sessions = 1\n");
    let out = repo.run_spec("001-p", &[]);
    assert_exit(&out, 5);
    let budget = run_commands(&stderr(&out));
    std::fs::remove_file(repo.path(".auto-claude/config.toml")).unwrap();
    let until = chrono::Utc::now() + chrono::Duration::seconds(1);
    repo.write(
        ".auto-claude/pauses/001-p.json",
        &serde_json::json!({
            "until": until.to_rfc3339(),
            "reason": "the agent hit its usage limit",
            "preset": "command",
            "set_at": chrono::Utc::now().to_rfc3339(),
        })
        .to_string(),
    );
    let status = stdout(&repo.runner(&["status"]));
    let refused = repo.run_spec("001-p", &[]);
    assert_exit(&refused, 6);
    let [bare, with_agent] = expected("001-p");
    assert_eq!(budget, [with_agent.as_str()], "the budget's hint");
    assert_eq!(run_commands(&status), [bare.as_str()], "{status}");
    assert_eq!(
        run_commands(&stderr(&refused)),
        [with_agent.as_str()],
        "{}",
        stderr(&refused)
    );
    // After the pause (and runner's margin after it).
    std::thread::sleep(std::time::Duration::from_millis(3500));
    assert_continues(&repo, "001-p", &bare);
}

#[test]
fn the_existing_work_refusal_and_the_retry_hint_continue_as_printed() {
    let repo = repo_with_fixture_plan("001-w");
    repo.write_config("[run]\nmax_attempts = 1\n");
    repo.script("core-b * fail not today\n");
    let out = repo.run_spec("001-w", &[]);
    assert_exit(&out, 3);
    let retry = run_commands(&stderr(&out));
    let [_, with_agent] = expected("001-w");
    assert_eq!(retry, [with_agent.as_str()], "{}", stderr(&out));
    assert_exit(
        &repo.runner(&["recover", "--spec", "001-w", "--retry-failed"]),
        0,
    );
    // `run` without --auto-continue and without a terminal: a refusal naming each choice.
    let refused = runner_command()
        .args(["run", "--spec", "001-w", "--agent-command", &agent()])
        .current_dir(&repo.root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&refused, 2);
    let commands = run_commands(&stderr(&refused));
    assert_eq!(commands.first(), Some(&with_agent), "{}", stderr(&refused));
    assert_continues(&repo, "001-w", &retry[0]);
}

#[test]
fn new_prints_the_one_command_for_the_spec_it_chose_and_for_the_one_it_created() {
    let repo = repo_with_fixture_plan("001-build-the-demo-thing");
    stopped_by(&repo, "001-build-the-demo-thing", libc::SIGINT);
    let out = repo.runner(&["new", "Build the demo thing", "--choice", "1"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    // Nothing was resumed: the words say so.
    assert!(!text.contains("Resuming"), "{text}");
    let [bare, _] = expected("001-build-the-demo-thing");
    assert_eq!(run_commands(&text), [bare.as_str()], "{text}");
    let json = repo.runner(&["new", "Build the demo thing", "--choice", "1", "--json"]);
    let json: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(json["next_command"], bare.as_str());
    assert_eq!(json["candidates"][0]["continue_command"], bare.as_str());
    assert_continues(&repo, "001-build-the-demo-thing", &bare);

    // A spec created with an agent given: the Next line carries it, and runs as printed.
    let out = repo.runner(&[
        "new",
        "Something else entirely",
        "--new-spec",
        "--agent-command",
        &agent(),
    ]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let next = run_commands(&text);
    assert_eq!(next.len(), 1, "{text}");
    assert!(next[0].contains("--agent-command"), "{text}");
    let spec = text
        .lines()
        .find_map(|l| l.strip_prefix("Created spec "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no spec created: {text}"));
    std::fs::copy(fixture("plans/two-phases.json"), repo.plan_path(spec)).unwrap();
    assert_continues(&repo, spec, &next[0]);
}

#[test]
fn resume_no_run_says_it_started_nothing() {
    let repo = repo_with_fixture_plan("001-stop");
    stopped_by(&repo, "001-stop", libc::SIGINT);
    let text = stdout(&repo.runner(&["resume", "--no-run"]));
    assert!(!text.contains("Resuming"), "{text}");
    assert!(text.contains("nothing was started"), "{text}");
}

#[test]
fn status_says_interrupted_whatever_stopped_the_last_run() {
    for signal in [libc::SIGINT, libc::SIGHUP, libc::SIGKILL] {
        let repo = repo_with_fixture_plan("001-i");
        stopped_by(&repo, "001-i", signal);
        let s = status_json(&repo, "001-i");
        assert_eq!(s["status"], "interrupted", "signal {signal}: {s}");
        let text = stdout(&repo.runner(&["status"]));
        assert!(text.contains("interrupted"), "signal {signal}: {text}");
        // A run that ends well afterwards ends it.
        assert_continues(&repo, "001-i", &expected("001-i")[0]);
        assert_eq!(status_json(&repo, "001-i")["status"], "complete");
    }
}

#[test]
fn the_mcp_tools_give_the_one_command_and_it_continues_the_spec() {
    use crate::mcp::{block_on, call, ok, start};
    use serde_json::json;
    let repo = repo_with_fixture_plan("001-build-the-demo-thing");
    stopped_by(&repo, "001-build-the-demo-thing", libc::SIGINT);
    let [bare, _] = expected("001-build-the-demo-thing");
    let (status, summary, created) = block_on(async {
        let client = start(&repo, &[]).await;
        let status = ok(call(&client, "status", json!({})).await);
        let summary = ok(call(&client, "summarize_interrupted_run", json!({})).await);
        let created = ok(call(
            &client,
            "create_spec",
            json!({"description": "Build the demo thing", "choice": 1}),
        )
        .await);
        client.cancel().await.unwrap();
        (status, summary, created)
    });
    assert_eq!(
        status["specs"][0]["continue_command"],
        bare.as_str(),
        "{status}"
    );
    let steps: Vec<&str> = summary["summary"]["summary"]["next_steps"]
        .as_array()
        .unwrap_or_else(|| panic!("{summary}"))
        .iter()
        .filter_map(|s| s["command"].as_str())
        .filter(|c| c.starts_with("runner run "))
        .collect();
    assert_eq!(steps, [bare.as_str()], "{summary}");
    assert_eq!(created["next_command"], bare.as_str(), "{created}");
    assert_eq!(
        created["candidates"][0]["continue_command"],
        bare.as_str(),
        "{created}"
    );
    assert_continues(&repo, "001-build-the-demo-thing", &bare);
}

#[test]
fn a_run_that_did_nothing_leaves_the_status_as_it_was() {
    let repo = repo_with_fixture_plan("001-q");
    repo.write_config("[run]\nmax_sessions = 1\n");
    repo.script("* * done\n");
    assert_exit(&repo.run_spec("001-q", &[]), 5);
    std::fs::remove_file(repo.path(".auto-claude/config.toml")).unwrap();
    assert_eq!(status_json(&repo, "001-q")["status"], "in_progress");
    let refused = || {
        let out = runner_command()
            .args(["run", "--spec", "001-q", "--agent-command", &agent()])
            .current_dir(&repo.root)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_exit(&out, 2);
    };
    // Refused without a terminal, or the question cancelled: nothing was done.
    refused();
    assert_eq!(status_json(&repo, "001-q")["status"], "in_progress");
    {
        use expectrl::Expect;
        let mut cmd = runner_command();
        cmd.args(["run", "--spec", "001-q", "--agent-command", &agent()])
            .current_dir(&repo.root)
            .env("TERM", "xterm");
        let mut s = expectrl::session::OsSession::spawn(cmd).unwrap();
        s.set_expect_timeout(Some(std::time::Duration::from_secs(20)));
        s.expect("What now?").unwrap();
        s.send("\x1b").unwrap();
        s.expect("nothing was changed").unwrap();
        let _ = s.expect(expectrl::Eof);
    }
    assert_eq!(status_json(&repo, "001-q")["status"], "in_progress");
    // Interrupted, then a run that did nothing: still interrupted.
    stopped_at(&repo, "001-q", "core-b", libc::SIGINT);
    refused();
    assert_eq!(status_json(&repo, "001-q")["status"], "interrupted");
}
