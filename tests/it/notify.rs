//! `[notify]`: the command told of each run's end and of a run resuming interrupted work (its
//! JSON on stdin, the same facts in `RUNNER_*` variables), bounded in time and never changing
//! the run's outcome; the desktop notification (a stand-in `notify-send`); the terminal bell.

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

const SPEC: &str = "001-note";

/// Appends one JSON line per call to the file it is given: the payload it read on stdin, its
/// `RUNNER_*` variables and its folder; then writes marks on stdout and stderr, which must not
/// reach runner's own output.
const RECORDER: &str = r#"import json, os, sys
data = sys.stdin.read()
record = {
    "stdin": json.loads(data) if data else None,
    "env": {k: v for k, v in os.environ.items() if k.startswith("RUNNER_")},
    "cwd": os.getcwd(),
}
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(record) + "\n")
print("NOTIFY-STDOUT-MARK")
print("NOTIFY-STDERR-MARK", file=sys.stderr)
"#;

fn agent() -> String {
    fixture("fake-agent").display().to_string()
}

fn notified_file(repo: &TestRepo) -> PathBuf {
    repo.tmp.path().join("notified.jsonl")
}

/// The recorder's command line, its paths quoted for the shell.
fn recorder(repo: &TestRepo) -> String {
    let script = repo.tmp.path().join("record.py");
    std::fs::write(&script, RECORDER).unwrap();
    format!(
        "python3 {} {}",
        shell_words::quote(&script.display().to_string()),
        shell_words::quote(&notified_file(repo).display().to_string())
    )
}

/// A `[notify]` table whose command is `command`, with `extra` keys.
fn notify_table(command: &str, extra: &str) -> String {
    format!(
        "[notify]\ncommand = {}\n{extra}",
        serde_json::to_string(command).unwrap()
    )
}

/// The repository's config: the recorder as the notify command, then `extra` (more keys and
/// tables; a `[run]` table must come after `[notify]` keys, so `extra` starts its own table).
fn with_recorder(repo: &TestRepo, notify_keys: &str, extra: &str) {
    repo.write_config(&format!(
        "{}{extra}",
        notify_table(&recorder(repo), notify_keys)
    ));
}

/// Every call of the recorder so far.
fn notified(repo: &TestRepo) -> Vec<Value> {
    std::fs::read_to_string(notified_file(repo))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn events(repo: &TestRepo) -> Vec<String> {
    notified(repo)
        .iter()
        .map(|n| n["stdin"]["event"].as_str().unwrap().to_string())
        .collect()
}

/// The one call of the recorder, which must have been for `event`.
#[track_caller]
fn only(repo: &TestRepo, event: &str) -> Value {
    let all = notified(repo);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0]["stdin"]["event"], event, "{:#}", all[0]);
    all[0].clone()
}

/// The lines of runner's stderr that warn of the notify command or the desktop notifier.
fn warnings(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| l.contains("warning") && l.contains("notif"))
        .map(str::to_string)
        .collect()
}

/// The payload's env twin: each fact in its variable.
#[track_caller]
fn env_matches_payload(n: &Value) {
    let (p, env) = (&n["stdin"], &n["env"]);
    let text = |v: &Value| match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for (var, field) in [
        ("RUNNER_NOTIFY_EVENT", &p["event"]),
        ("RUNNER_SPEC", &p["spec"]),
        ("RUNNER_RUN_ID", &p["run_id"]),
        ("RUNNER_OUTCOME", &p["outcome"]),
        ("RUNNER_EXIT_CODE", &p["exit_code"]),
        ("RUNNER_MESSAGE", &p["message"]),
        ("RUNNER_DONE", &p["progress"]["done"]),
        ("RUNNER_TOTAL", &p["progress"]["total"]),
        ("RUNNER_COST_USD", &p["cost_usd"]),
        ("RUNNER_NEXT_COMMAND", &p["next_command"]),
        ("RUNNER_CHUNK_ID", &p["chunk"]),
    ] {
        assert_eq!(
            env[var].as_str(),
            Some(text(field).as_str()),
            "{var}: {n:#}"
        );
    }
}

#[test]
fn a_complete_run_sends_its_payload_on_stdin_and_in_the_environment() {
    let repo = repo_with_fixture_plan(SPEC);
    with_recorder(&repo, "", "");
    let out = repo.run_spec(SPEC, &[]);
    assert_exit(&out, 0);
    let n = only(&repo, "complete");
    let p = &n["stdin"];
    assert_eq!(p["spec"], SPEC);
    assert_eq!(p["run_id"], run_ids(&repo, SPEC)[0].as_str());
    assert_eq!(p["outcome"], "complete");
    assert_eq!(p["exit_code"], 0);
    assert_eq!(p["progress"]["done"], 3);
    assert_eq!(p["progress"]["total"], 3);
    assert_eq!(p["next_command"], "runner merge --spec 001-note");
    assert_eq!(p["message"], "spec 001-note is complete: 3/3 chunks done");
    assert!(
        p["cost_usd"].is_null(),
        "the fake agent reports no dollars: {p}"
    );
    assert!(
        chrono::DateTime::parse_from_rfc3339(p["time"].as_str().unwrap()).is_ok(),
        "{p}"
    );
    env_matches_payload(&n);
    // Its folder is the repository's root; its output is not runner's.
    assert_eq!(n["cwd"], repo.root.display().to_string());
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!all.contains("NOTIFY-"), "{all}");
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn a_chunk_that_fails_its_verification_to_the_last_attempt_is_failed() {
    let repo = repo_with_fixture_plan(SPEC);
    with_recorder(&repo, "", "[run]\nmax_attempts = 2\n");
    // core-b reports done without its file: its verification fails, twice.
    repo.script("core-b * empty-done\n");
    let out = repo.run_spec(SPEC, &[]);
    assert_exit(&out, 3);
    let n = only(&repo, "failed");
    let p = &n["stdin"];
    assert_eq!(p["outcome"], "needs_human");
    assert_eq!(p["exit_code"], 3);
    assert_eq!(p["progress"]["done"], 1);
    assert_eq!(
        p["next_command"],
        format!(
            "runner run --spec 001-note --auto-continue --agent-command {}",
            shell_words::quote(&agent())
        )
    );
    assert!(
        p["message"]
            .as_str()
            .unwrap()
            .starts_with("spec 001-note failed"),
        "{p}"
    );
    assert!(p["reason"].as_str().unwrap().contains("core-b"), "{p}");
    env_matches_payload(&n);
}

#[test]
fn a_blocked_chunk_needs_a_person() {
    let repo = repo_with_fixture_plan(SPEC);
    let plan = std::fs::read_to_string(repo.plan_path(SPEC)).unwrap();
    repo.write_plan(
        SPEC,
        &plan.replacen(
            r#""status": "pending""#,
            r#""status": "blocked", "blocked_reason": "needs a key""#,
            1,
        ),
    );
    with_recorder(&repo, "", "");
    assert_exit(&repo.run_spec(SPEC, &[]), 3);
    let n = only(&repo, "needs_human");
    assert_eq!(n["stdin"]["outcome"], "needs_human");
    assert_eq!(n["stdin"]["exit_code"], 3);
    assert_eq!(
        n["stdin"]["message"],
        "spec 001-note needs a person: 0/3 chunks done"
    );
}

#[test]
fn a_spent_budget_is_budget_exhausted() {
    let repo = repo_with_fixture_plan(SPEC);
    with_recorder(&repo, "", "[run]\nmax_sessions = 1\n");
    assert_exit(&repo.run_spec(SPEC, &[]), 5);
    let n = only(&repo, "budget_exhausted");
    assert_eq!(n["stdin"]["outcome"], "budget_spent");
    assert_eq!(n["stdin"]["exit_code"], 5);
    assert_eq!(n["stdin"]["progress"]["done"], 1);
}

#[test]
fn a_usage_limit_is_usage_limited() {
    let repo_config = |cli: &crate::fake_cli::FakeCli| {
        format!(
            "[run]\nmax_attempts = 1\n{}",
            notify_table(&recorder(&cli.repo), "")
        )
    };
    let cli = crate::fake_cli::FakeCli::new("claude", "");
    let program = fixture("fake-claude").display().to_string();
    cli.repo.write_config(&format!(
        "[agent]\npreset = \"claude\"\nprogram = \"{program}\"\n{}",
        repo_config(&cli)
    ));
    let at = (chrono::Utc::now().timestamp() / 60 + 61) * 60;
    cli.preset_script(&format!("core-a 1 limit {at}\n"));
    assert_exit(&cli.run(&[]), 6);
    let n = only(&cli.repo, "usage_limited");
    assert_eq!(n["stdin"]["outcome"], "usage_limited");
    assert_eq!(n["stdin"]["exit_code"], 6);
    assert_eq!(n["stdin"]["spec"], "001-p");
    assert_eq!(
        n["stdin"]["next_command"],
        "runner run --spec 001-p --auto-continue"
    );
    env_matches_payload(&n);
}

fn start_run(repo: &TestRepo, extra: &[&str]) -> Child {
    let agent = agent();
    let mut args = vec!["run", "--spec", SPEC, "--agent-command", agent.as_str()];
    args.extend_from_slice(extra);
    repo.cmd(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: a signal to a process this test started.
    unsafe { libc::kill(pid as i32, sig) };
}

#[test]
fn ctrl_c_is_interrupted_and_the_next_run_resumes() {
    let repo = repo_with_fixture_plan(SPEC);
    with_recorder(&repo, "", "");
    repo.script("core-a 1 graceful 30\n");
    let child = start_run(&repo, &["--drain-timeout", "20"]);
    wait_for("the agent", || {
        repo.spec_dir(SPEC).join("fake-agent.pid").exists()
    });
    signal(child.id(), libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 130);
    let n = only(&repo, "interrupted");
    assert_eq!(n["stdin"]["outcome"], "interrupted");
    assert_eq!(n["stdin"]["exit_code"], 130);
    assert_eq!(
        n["stdin"]["message"],
        "spec 001-note was interrupted: 1/3 chunks done"
    );
    // The run that goes on from there resumes interrupted work, and says so once.
    assert_exit(&repo.run_spec(SPEC, &[]), 0);
    assert_eq!(events(&repo), ["interrupted", "resuming", "complete"]);
}

#[test]
fn a_killed_run_is_resumed_with_one_resuming_event_naming_its_chunk() {
    let repo = repo_with_fixture_plan(SPEC);
    with_recorder(&repo, "", "");
    run_killed_at(&repo, SPEC, "after_coder_session");
    assert!(notified(&repo).is_empty(), "a killed run says nothing");
    let out = repo.run_spec(SPEC, &[]);
    assert_exit(&out, 0);
    assert_eq!(events(&repo), ["resuming", "complete"]);
    let n = &notified(&repo)[0];
    let p = &n["stdin"];
    assert_eq!(
        p["message"],
        "resuming interrupted work on 001-note: core-a"
    );
    assert_eq!(p["chunk"], "core-a");
    assert_eq!(p["spec"], SPEC);
    assert!(p["outcome"].is_null() && p["exit_code"].is_null(), "{p}");
    env_matches_payload(n);
    // Both events are of the run that resumed; a run after a clean end resumes nothing.
    let ids = run_ids(&repo, SPEC);
    assert!(ids.contains(&p["run_id"].as_str().unwrap().to_string()));
    assert_eq!(p["run_id"], notified(&repo)[1]["stdin"]["run_id"]);
    assert_exit(&repo.run_spec(SPEC, &[]), 0);
    assert_eq!(events(&repo), ["resuming", "complete", "complete"]);
}

/// Whether process `pid` is still running (a zombie counts as gone).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn pid_in(path: &Path) -> i32 {
    wait_for("the pid file", || {
        std::fs::read_to_string(path).is_ok_and(|s| s.trim().parse::<i32>().is_ok())
    });
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_command_that_never_ends_is_killed_with_its_group_after_the_timeout() {
    let repo = repo_with_fixture_plan(SPEC);
    let pid_file = repo.tmp.path().join("sleep.pid");
    // A shell that waits on a child of its own: the whole group must go.
    let command = format!(
        "sleep 1000 & echo $! > {}; wait",
        shell_words::quote(&pid_file.display().to_string())
    );
    repo.write_config(&notify_table(&command, "timeout_secs = 2\n"));
    let started = Instant::now();
    let out = repo.run_spec(SPEC, &[]);
    let took = started.elapsed();
    assert_exit(&out, 0);
    assert!(took < Duration::from_secs(25), "took {took:?}");
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{}", stderr(&out));
    assert!(w[0].contains("stopped after 2 s"), "{w:?}");
    let pid = pid_in(&pid_file);
    wait_for("the notify command's child to be killed", || !alive(pid));
}

#[test]
fn a_ctrl_c_while_the_command_runs_stops_it_at_once_and_keeps_the_exit_code() {
    let repo = repo_with_fixture_plan(SPEC);
    let pid_file = repo.tmp.path().join("notify.pid");
    let command = format!(
        "echo $$ > {}; sleep 1000",
        shell_words::quote(&pid_file.display().to_string())
    );
    repo.write_config(&notify_table(&command, "timeout_secs = 300\n"));
    let child = start_run(&repo, &[]);
    let pid = pid_in(&pid_file);
    // The command's own process group: a Ctrl-C on the terminal would not reach it.
    let group = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = group
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        fields[2],
        pid.to_string(),
        "it leads its own group: {group}"
    );
    let started = Instant::now();
    signal(child.id(), libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // The run had completed: its exit code stays 0.
    assert_exit(&out, 0);
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{}", stderr(&out));
    assert!(w[0].contains("stopped by a signal"), "{w:?}");
    wait_for("the notify command to be gone", || !alive(pid));
}

#[test]
fn a_failing_or_missing_command_warns_once_and_changes_no_exit_code() {
    for (command, says) in [
        ("echo out; echo err >&2; exit 7", "exited with 7"),
        ("/no/such/notifier --flag", "exited with 127"),
    ] {
        // A run that completes (0), and one that fails (3): each keeps its code.
        for (script, code) in [("", 0), ("core-b * empty-done\n", 3)] {
            let repo = repo_with_fixture_plan(SPEC);
            repo.write_config(&format!(
                "{}[run]\nmax_attempts = 1\n",
                notify_table(command, "")
            ));
            repo.script(script);
            let out = repo.run_spec(SPEC, &[]);
            assert_exit(&out, code);
            let w = warnings(&out);
            assert_eq!(w.len(), 1, "{command}: {}", stderr(&out));
            assert!(w[0].contains(says), "{w:?}");
            // Its output is kept where the warning says, not shown.
            let log = repo.spec_dir(SPEC).join("notify.log");
            assert!(w[0].contains(&log.display().to_string()), "{w:?}");
            assert!(!stdout(&out).contains("out\n"));
            if command.starts_with("echo") {
                assert!(std::fs::read_to_string(&log).unwrap().contains("err"));
            }
        }
    }
}

#[test]
fn a_command_that_ignores_a_huge_payload_or_leaves_a_daemon_does_not_hold_the_run() {
    let repo = repo_with_fixture_plan(SPEC);
    // A failure reason of 100 KB: the payload is bigger than a pipe holds.
    let reason = "r".repeat(100_000);
    repo.script(&format!("core-b * fail {reason}\n"));
    let pid_file = repo.tmp.path().join("daemon.pid");
    // Never reads its stdin; leaves a process of its own session holding its output.
    let command = format!(
        "setsid sleep 30 & echo $! > {}; exit 0",
        shell_words::quote(&pid_file.display().to_string())
    );
    repo.write_config(&format!(
        "{}[run]\nmax_attempts = 1\n",
        notify_table(&command, "timeout_secs = 20\n")
    ));
    let started = Instant::now();
    let out = repo.run_spec(SPEC, &[]);
    assert_exit(&out, 3);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
    signal(pid_in(&pid_file) as u32, libc::SIGKILL);
    // The same payload read whole by a command that reads it.
    let repo = repo_with_fixture_plan(SPEC);
    repo.script(&format!("core-b * fail {reason}\n"));
    with_recorder(&repo, "", "[run]\nmax_attempts = 1\n");
    assert_exit(&repo.run_spec(SPEC, &[]), 3);
    let n = only(&repo, "failed");
    assert!(n["stdin"]["reason"].as_str().unwrap().contains(&reason));
    assert!(n["stdin"]["message"].as_str().unwrap().len() < 300);
}

#[test]
fn jobs_notify_once_per_spec_from_each_spec_s_own_run() {
    let repo = TestRepo::new();
    let specs = ["010-a", "011-b"];
    repo.script("* * done\n");
    for spec in specs {
        add_fixture_spec(&repo, spec);
        run_killed_at(&repo, spec, "after_coder_session");
        std::thread::sleep(Duration::from_millis(1100));
    }
    with_recorder(&repo, "", "");
    let agent = agent();
    let out = repo.runner(&[
        "run",
        "--auto-continue",
        "--jobs",
        "2",
        "--agent-command",
        &agent,
    ]);
    assert_exit(&out, 0);
    let mut seen: Vec<(String, String)> = notified(&repo)
        .iter()
        .map(|n| {
            (
                n["stdin"]["spec"].as_str().unwrap().to_string(),
                n["stdin"]["event"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    seen.sort();
    let pair = |s: &str, e: &str| (s.to_string(), e.to_string());
    assert_eq!(
        seen,
        [
            pair("010-a", "complete"),
            pair("010-a", "resuming"),
            pair("011-b", "complete"),
            pair("011-b", "resuming"),
        ]
    );
}

/// A folder holding a stand-in `notify-send` that appends its argv (JSON) to `argv.jsonl`
/// beside it, and the PATH with it first.
fn stand_in_notify_send(repo: &TestRepo) -> (PathBuf, String) {
    let bin = repo.tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("notify-send");
    std::fs::write(
        &script,
        format!(
            "#!/usr/bin/env python3\nimport json, sys\nopen({:?}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n",
            bin.join("argv.jsonl").display().to_string()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    (bin.join("argv.jsonl"), path)
}

fn argv_calls(file: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn hostile_spec_names_reach_the_command_and_notify_send_as_data() {
    let spec = "001-x'\";`touch$IFS'pwned'`|&>$(touch$IFS'pwned2')";
    assert!(!spec.contains(' '));
    let repo = TestRepo::new();
    add_fixture_spec(&repo, spec);
    let (argv_file, path) = stand_in_notify_send(&repo);
    with_recorder(&repo, "desktop = true\n", "");
    let agent = agent();
    let out = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent])
        .env("PATH", &path)
        .env("DISPLAY", ":99")
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let n = only(&repo, "complete");
    assert_eq!(n["stdin"]["spec"], spec);
    assert_eq!(n["env"]["RUNNER_SPEC"], spec);
    env_matches_payload(&n);
    let calls = argv_calls(&argv_file);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0][..2], ["--app-name=runner", "--"]);
    assert_eq!(calls[0][2], format!("runner: {spec}"));
    assert_eq!(
        calls[0][3],
        format!("spec {spec} is complete: 3/3 chunks done")
    );
    assert!(!repo.path("pwned").exists() && !repo.path("pwned2").exists());
}

#[test]
fn desktop_notifications_go_to_notify_send_only_where_a_desktop_session_is() {
    let repo = repo_with_fixture_plan(SPEC);
    let (argv_file, path) = stand_in_notify_send(&repo);
    repo.write_config("[notify]\ndesktop = true\n");
    let run = |display: Option<&str>| {
        let agent = agent();
        let mut cmd = repo.cmd(&["run", "--spec", SPEC, "--agent-command", &agent]);
        cmd.env("PATH", &path)
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("DBUS_SESSION_BUS_ADDRESS");
        if let Some(d) = display {
            cmd.env("WAYLAND_DISPLAY", d);
        }
        cmd.output().unwrap()
    };
    // No session to show it in: nothing, and nothing said.
    let out = run(None);
    assert_exit(&out, 0);
    assert!(argv_calls(&argv_file).is_empty());
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
    let out = run(Some("wayland-0"));
    assert_exit(&out, 0);
    let calls = argv_calls(&argv_file);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        calls[0],
        [
            "--app-name=runner",
            "--",
            "runner: 001-note",
            "spec 001-note is complete: 3/3 chunks done"
        ]
    );
    // Without notify-send on PATH: nothing, silently.
    std::fs::remove_file(argv_file.with_file_name("notify-send")).unwrap();
    let out = run(Some("wayland-0"));
    assert_exit(&out, 0);
    assert!(warnings(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn events_choose_what_is_sent() {
    let repo = repo_with_fixture_plan(SPEC);
    with_recorder(&repo, "events = [\"failed\", \"needs_human\"]\n", "");
    assert_exit(&repo.run_spec(SPEC, &[]), 0);
    assert!(notified(&repo).is_empty(), "complete is not chosen");
    let repo = repo_with_fixture_plan(SPEC);
    with_recorder(
        &repo,
        "events = [\"failed\", \"needs_human\"]\n",
        "[run]\nmax_attempts = 1\n",
    );
    repo.script("core-b * empty-done\n");
    assert_exit(&repo.run_spec(SPEC, &[]), 3);
    only(&repo, "failed");
}

#[test]
fn bad_notify_settings_are_refused_with_the_key_named() {
    for (keys, says) in [
        ("timeout_secs = 0\n", "notify.timeout_secs"),
        ("timeout_secs = 100000\n", "notify.timeout_secs"),
        ("events = [\"done\"]\n", "done"),
        ("command = \"\"\n", "notify.command"),
        ("bell = \"yes\"\n", "bell"),
    ] {
        let repo = repo_with_fixture_plan(SPEC);
        repo.write_config(&format!("[notify]\n{keys}"));
        let out = repo.run_spec(SPEC, &[]);
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(says), "{keys}: {}", stderr(&out));
    }
    // `runner config` shows the keys and where they came from.
    let repo = repo_with_fixture_plan(SPEC);
    repo.write_config("[notify]\nbell = true\n");
    let out = repo.runner(&["config", "--json"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for key in [
        "notify.command",
        "notify.desktop",
        "notify.bell",
        "notify.timeout_secs",
        "notify.events",
    ] {
        assert!(text.contains(key), "{key}: {text}");
    }
}

/// `runner run` on a pseudo-terminal, to its end: everything it wrote.
fn on_a_terminal(repo: &TestRepo) -> String {
    use expectrl::Expect;
    let agent = agent();
    let mut cmd = repo.cmd(&["run", "--spec", SPEC, "--agent-command", &agent]);
    cmd.env("TERM", "xterm").env("NO_COLOR", "1");
    let mut s = expectrl::session::OsSession::spawn(cmd).unwrap();
    s.set_expect_timeout(Some(Duration::from_secs(60)));
    let found = s.expect(expectrl::Eof).unwrap();
    let mut text = String::from_utf8_lossy(found.before()).into_owned();
    for m in found.matches() {
        text.push_str(&String::from_utf8_lossy(m));
    }
    text
}

#[test]
fn the_bell_rings_on_a_terminal_and_never_into_a_pipe() {
    let repo = repo_with_fixture_plan(SPEC);
    repo.write_config("[notify]\nbell = true\n");
    let shown = on_a_terminal(&repo);
    assert!(shown.contains("completed on branch"), "{shown}");
    assert!(shown.contains('\u{7}'), "no bell: {shown:?}");
    // Not configured: no bell on the same screen.
    let repo = repo_with_fixture_plan(SPEC);
    let shown = on_a_terminal(&repo);
    assert!(shown.contains("completed on branch"), "{shown}");
    assert!(!shown.contains('\u{7}'), "{shown:?}");
    // Into a pipe: never.
    let repo = repo_with_fixture_plan(SPEC);
    repo.write_config("[notify]\nbell = true\n");
    let out = repo.run_spec(SPEC, &[]);
    assert_exit(&out, 0);
    assert!(!stderr(&out).contains('\u{7}') && !stdout(&out).contains('\u{7}'));
}

#[test]
fn a_plan_only_run_is_planned() {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    with_recorder(&repo, "", "");
    assert_exit(&repo.run_spec(SPEC, &["--plan-only"]), 0);
    let n = only(&repo, "planned");
    let p = &n["stdin"];
    assert_eq!(p["outcome"], "planned");
    assert_eq!(
        (
            p["progress"]["done"].clone(),
            p["progress"]["total"].clone()
        ),
        (0.into(), 3.into())
    );
    assert_eq!(p["message"], "spec 001-note is planned: 0/3 chunks done");
    assert!(
        p["next_command"]
            .as_str()
            .unwrap()
            .starts_with("runner run --spec 001-note --auto-continue")
    );
}

#[test]
fn merging_the_work_at_the_question_is_complete_as_merged() {
    use expectrl::Expect;
    let repo = repo_with_fixture_plan(SPEC);
    with_recorder(&repo, "", "");
    assert_exit(&repo.run_spec(SPEC, &[]), 0);
    // A run on a terminal, without --auto-continue: asked what now, the person merges.
    let agent = agent();
    let mut cmd = runner_command();
    cmd.args(["run", "--spec", SPEC, "--agent-command", &agent])
        .current_dir(&repo.root)
        .env("TERM", "xterm")
        .env("NO_COLOR", "1");
    let mut s = expectrl::session::OsSession::spawn(cmd).unwrap();
    s.set_expect_timeout(Some(Duration::from_secs(30)));
    s.expect("What now?").unwrap();
    // Review, Merge, Discard: the second.
    s.send("\u{1b}[B").unwrap();
    s.send("\r").unwrap();
    s.expect(expectrl::Eof).unwrap();
    assert_eq!(events(&repo), ["complete", "complete"]);
    let p = &notified(&repo)[1]["stdin"];
    assert_eq!(p["outcome"], "merged");
    assert_eq!(p["exit_code"], 0);
    assert!(p["next_command"].is_null(), "{p}");
    assert_eq!(p["message"], "spec 001-note was merged: 3/3 chunks done");
    assert_ne!(p["run_id"], notified(&repo)[0]["stdin"]["run_id"]);
}
