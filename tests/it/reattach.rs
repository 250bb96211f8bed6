//! Reattaching the agent's own session (`agent.resume_sessions`): a chunk whose attempt was cut off
//! (a drain that ran out, runner killed) continues that agent session on the next run, through
//! each fake CLI, with the short prompt; a resume the CLI refuses falls back to a fresh session
//! with the full prompt in the same attempt.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;

use serde_json::Value;

use crate::common::*;
use crate::fake_cli::FakeCli;

const RESUMABLE: [&str; 3] = ["claude", "codex", "gemini"];

/// Run until core-a's first session is working (fake-agent `stubborn`: it did some work and
/// ignores SIGTERM), then stop runner with `sig`: SIGINT with a 1 s drain that runs out, or
/// SIGKILL. core-a's attempt 1 is left interrupted.
fn interrupt(cli: &FakeCli, sig: i32) {
    cli.repo.script("core-a 1 stubborn\n");
    let child = cli
        .cmd(&["run", "--spec", "001-p", "--drain-timeout", "1"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = cli.repo.spec_dir("001-p").join("fake-agent.pid");
    wait_for("the agent", || pid_file.exists());
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let out = child.wait_with_output().unwrap();
    if sig == libc::SIGINT {
        assert_exit(&out, 130);
    }
    std::fs::remove_file(&pid_file).unwrap();
}

/// After a second run: core-a's first attempt (interrupted, settled by recovery) and its
/// agent session id (recorded at the take for claude, read from its output for the others).
fn first_attempt(cli: &FakeCli) -> (Value, String) {
    let a = cli.attempts("core-a")[0].clone();
    assert_eq!(a["outcome"], "interrupted", "{a}");
    let id = a["agent_session_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!id.is_empty(), "{a}");
    // It is the id that session printed, not another one.
    let log = cli
        .repo
        .spec_dir("001-p")
        .join("sessions")
        .join(a["session_id"].as_str().unwrap())
        .join("output.log");
    assert!(std::fs::read_to_string(log).unwrap().contains(&id));
    (a, id)
}

/// Set `key` of core-a's first attempt record in the plan, as a person or an agent could.
fn set_first_attempt(cli: &FakeCli, key: &str, value: Value) {
    let mut plan = cli.repo.plan("001-p");
    let chunk = plan["phases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|p| p["subtasks"].as_array_mut().unwrap().iter_mut())
        .find(|c| c["id"] == "core-a")
        .unwrap();
    chunk["attempts"][0][key] = value;
    cli.repo
        .write_plan("001-p", &serde_json::to_string_pretty(&plan).unwrap());
}

fn resumes(preset: &str, argv: &[String], id: &str) -> bool {
    let pairs = |flag: &str| argv.windows(2).any(|w| w[0] == flag && w[1] == id);
    match preset {
        "codex" => argv.ends_with(&["resume".to_string(), id.to_string(), "-".to_string()]),
        _ => pairs("--resume"),
    }
}

fn has_resume_flag(argv: &[String]) -> bool {
    argv.iter().any(|w| w == "--resume" || w == "resume")
}

fn env_log(cli: &FakeCli) -> Vec<Value> {
    std::fs::read_to_string(cli.repo.tmp.path().join("env.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The prompt fake-agent was given in runner session `session`.
fn prompt_of(cli: &FakeCli, session: &Value) -> String {
    let name = format!("{}.md", session.as_str().unwrap());
    std::fs::read_to_string(cli.repo.tmp.path().join("prompts").join(name)).unwrap()
}

fn session_starts(cli: &FakeCli, attempt: u64) -> Vec<Value> {
    cli.repo
        .events("001-p")
        .into_iter()
        .filter(|e| e["event"] == "session_start" && e["chunk"] == "core-a")
        .filter(|e| e["attempt"] == attempt)
        .collect()
}

fn all_completed(cli: &FakeCli) -> bool {
    cli.repo
        .statuses("001-p")
        .iter()
        .all(|(_, s)| s == "completed")
}

#[test]
fn an_interrupted_session_is_resumed_with_the_short_prompt_for_each_preset() {
    for preset in RESUMABLE {
        let cli = FakeCli::new(preset, "");
        interrupt(&cli, libc::SIGINT);
        // The take wrote what a resume needs before the session started.
        let a = &cli.attempts("core-a")[0];
        assert_eq!(a["agent_preset"], preset, "{a}");
        assert_eq!(a["agent_spec"], "001-p", "{a}");
        if preset == "claude" {
            assert!(
                a["agent_session_id"].is_string(),
                "claude's id is runner's: {a}"
            );
        }

        let out = cli.run(&[]);
        assert_exit(&out, 0);
        assert!(all_completed(&cli), "{preset}: {}", stderr(&out));
        let (_, id) = first_attempt(&cli);
        let attempts = cli.attempts("core-a");
        assert_eq!(attempts.len(), 2, "{preset}: {attempts:?}");
        let second = &attempts[1];
        assert_eq!(second["outcome"], "completed", "{preset}: {second}");
        assert_eq!(second["resumed_from"], id.as_str(), "{preset}: {second}");
        assert_eq!(
            second["agent_session_id"],
            id.as_str(),
            "{preset}: {second}"
        );

        // planner, core-a 1, then core-a 2 resumed, core-b and polish fresh.
        let argv = cli.argv_log();
        assert_eq!(argv.len(), 5, "{preset}: {argv:?}");
        assert!(resumes(preset, &argv[2], &id), "{preset}: {:?}", argv[2]);
        for other in [&argv[0], &argv[1], &argv[3], &argv[4]] {
            assert!(!has_resume_flag(other), "{preset}: {other:?}");
        }
        let env = env_log(&cli);
        assert_eq!(env[2]["RUNNER_AGENT_SESSION_ID"], id.as_str(), "{preset}");
        assert!(
            [0, 1, 3, 4]
                .iter()
                .all(|&i| env[i]["RUNNER_AGENT_SESSION_ID"].is_null()),
            "{preset}: {env:?}"
        );

        // The short prompt, not the coder prompt again.
        let prompt = prompt_of(&cli, &second["session_id"]);
        assert!(prompt.contains("your session was interrupted"), "{prompt}");
        assert!(prompt.contains("runner chunk done"), "{prompt}");
        assert!(!prompt.contains("You are a coder session"), "{prompt}");

        // The journal says it was a resume, of which id.
        let starts = session_starts(&cli, 2);
        assert_eq!(starts.len(), 1, "{preset}: {starts:?}");
        assert_eq!(starts[0]["resumed"], true);
        assert_eq!(starts[0]["agent_session_id"], id.as_str());
        assert!(session_starts(&cli, 1)[0].get("resumed").is_none());
    }
}

/// runner killed outright (SIGKILL): recovery settles the attempt at the next start, and codex's
/// thread id, which only its output says, is read from the cut-off session's log.
#[test]
fn a_session_cut_off_by_a_killed_runner_is_resumed() {
    for preset in ["codex", "claude"] {
        let cli = FakeCli::new(preset, "");
        interrupt(&cli, libc::SIGKILL);
        let out = cli.run(&[]);
        assert_exit(&out, 0);
        assert!(all_completed(&cli), "{preset}: {}", stderr(&out));
        let (_, id) = first_attempt(&cli);
        let argv = cli.argv_log();
        assert!(resumes(preset, &argv[2], &id), "{preset}: {argv:?}");
        assert_eq!(cli.attempts("core-a")[1]["outcome"], "completed");
    }
}

/// The CLI refuses the resume (the fake's `no-session` rule, or an id it never made): the same
/// attempt goes on with a fresh session and the full prompt, and completes; no failed attempt.
#[test]
fn a_resume_the_cli_refuses_falls_back_to_a_fresh_session() {
    for (preset, forget) in [("claude", false), ("codex", true), ("gemini", false)] {
        let cli = FakeCli::new(preset, "[run]\nmax_attempts = 2\n");
        interrupt(&cli, libc::SIGINT);
        if forget {
            std::fs::remove_dir_all(cli.repo.tmp.path().join("fake-sessions").join(preset))
                .unwrap();
        } else {
            cli.preset_script("core-a 2 no-session\n");
        }
        let out = cli.run(&[]);
        assert_exit(&out, 0);
        assert!(all_completed(&cli), "{preset}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("could not be resumed"),
            "{}",
            stderr(&out)
        );
        let (_, id) = first_attempt(&cli);
        let attempts = cli.attempts("core-a");
        assert_eq!(
            attempts.len(),
            2,
            "{preset}: not a failed attempt: {attempts:?}"
        );
        let second = &attempts[1];
        assert_eq!(second["outcome"], "completed", "{second}");
        assert!(second.get("resumed_from").is_none(), "{second}");
        let failed = &second["resume_failed"];
        assert_eq!(failed["agent_session_id"], id.as_str(), "{second}");
        assert_ne!(failed["session_id"], second["session_id"], "{second}");
        assert_ne!(second["agent_session_id"], id.as_str(), "{second}");

        // A resume, then a fresh session, then the other chunks.
        let argv = cli.argv_log();
        assert_eq!(argv.len(), 6, "{preset}: {argv:?}");
        assert!(resumes(preset, &argv[2], &id), "{preset}: {:?}", argv[2]);
        assert!(!has_resume_flag(&argv[3]), "{preset}: {:?}", argv[3]);
        assert!(env_log(&cli)[3]["RUNNER_AGENT_SESSION_ID"].is_null());
        let prompt = prompt_of(&cli, &second["session_id"]);
        assert!(prompt.contains("You are a coder session"), "{prompt}");

        let events = cli.repo.events("001-p");
        let journaled: Vec<&Value> = events
            .iter()
            .filter(|e| e["event"] == "resume_failed")
            .collect();
        assert_eq!(journaled.len(), 1, "{preset}");
        assert_eq!(journaled[0]["agent_session_id"], id.as_str());
        assert_eq!(journaled[0]["fresh_session_id"], second["session_id"]);
        assert!(!events.iter().any(|e| e["event"] == "attempt_failed"));
        let starts = session_starts(&cli, 2);
        assert_eq!(starts.len(), 2, "{starts:?}");
        assert_eq!(starts[0]["resumed"], true);
        assert!(starts[1].get("resumed").is_none());
    }
}

#[test]
fn with_resume_disabled_or_aider_the_next_session_is_fresh() {
    for (preset, config) in [("claude", "resume_sessions = false\n"), ("aider", "")] {
        let cli = FakeCli::new(preset, config);
        interrupt(&cli, libc::SIGINT);
        let out = cli.run(&[]);
        assert_exit(&out, 0);
        assert!(all_completed(&cli), "{preset}: {}", stderr(&out));
        let argv = cli.argv_log();
        assert_eq!(argv.len(), 5, "{preset}: {argv:?}");
        assert!(
            argv.iter().all(|a| !has_resume_flag(a)),
            "{preset}: {argv:?}"
        );
        assert!(
            env_log(&cli)
                .iter()
                .all(|e| e["RUNNER_AGENT_SESSION_ID"].is_null())
        );
        let second = &cli.attempts("core-a")[1];
        assert!(second.get("resumed_from").is_none(), "{second}");
        let prompt = prompt_of(&cli, &second["session_id"]);
        assert!(prompt.contains("You are a coder session"), "{prompt}");
        if preset == "claude" {
            assert_eq!(second["not_resumed"], "agent.resume_sessions is false");
        }
    }
}

/// What a plan may say cannot make runner resume what it should not: an id that is not a
/// UUID (an option, shell words), an attempt recorded by another preset or for another spec.
#[test]
fn a_tampered_attempt_record_is_never_resumed() {
    let cases: [(&str, Value); 4] = [
        (
            "agent_session_id",
            Value::from("--dangerously-skip-permissions"),
        ),
        ("agent_session_id", Value::from("x; touch /tmp/pwned")),
        ("agent_preset", Value::from("codex")),
        ("agent_spec", Value::from("002-other")),
    ];
    for (key, value) in cases {
        let cli = FakeCli::new("claude", "");
        interrupt(&cli, libc::SIGINT);
        set_first_attempt(&cli, key, value.clone());
        let out = cli.run(&[]);
        assert_exit(&out, 0);
        let argv = cli.argv_log();
        assert!(
            argv.iter().all(|a| !has_resume_flag(a)),
            "{key}={value}: {argv:?}"
        );
        assert!(
            argv.iter()
                .flatten()
                .all(|w| !w.contains("touch") && !w.starts_with("--dangerously")),
            "{argv:?}"
        );
        let second = &cli.attempts("core-a")[1];
        assert!(second["not_resumed"].is_string(), "{second}");
        assert_eq!(second["outcome"], "completed");
    }
}

/// codex counts a thread's tokens from its start: the resumed session's tokens are its total
/// minus the total the thread's previous session ended with (`thread_total`, kept on attempts).
#[test]
fn codex_tokens_of_a_resumed_thread_are_the_difference() {
    let cli = FakeCli::new("codex", "");
    interrupt(&cli, libc::SIGINT);
    // Say the cut-off session had finished turns: the thread stood at this total (the fake's
    // memory and runner's record agree).
    let sessions = cli.repo.tmp.path().join("fake-sessions").join("codex");
    let log = cli
        .repo
        .spec_dir("001-p")
        .join("sessions")
        .join(cli.attempts("core-a")[0]["session_id"].as_str().unwrap())
        .join("output.log");
    let text = std::fs::read_to_string(log).unwrap();
    let started: Value =
        serde_json::from_str(text.lines().find(|l| l.contains("thread.started")).unwrap()).unwrap();
    let tid = started["thread_id"].as_str().unwrap().to_string();
    let total = serde_json::json!({"input_tokens": 5000, "cached_input_tokens": 2000, "output_tokens": 1000});
    std::fs::write(
        sessions.join(format!("{tid}.json")),
        serde_json::json!({"total": total}).to_string(),
    )
    .unwrap();
    set_first_attempt(
        &cli,
        "thread_total",
        serde_json::json!({"input": 3000, "output": 1000, "cache_read": 2000, "cache_write": 0}),
    );

    assert_exit(&cli.run(&[]), 0);
    let second = &cli.attempts("core-a")[1];
    assert_eq!(second["resumed_from"], tid.as_str(), "{second}");
    // One session's step (input 1000 of which 400 cached, output 200), not the thread's total.
    assert_eq!(
        second["tokens"],
        serde_json::json!({"input": 600, "output": 200, "cache_read": 400, "cache_write": 0}),
        "{second}"
    );
    assert_eq!(
        second["thread_total"],
        serde_json::json!({"input": 3600, "output": 1200, "cache_read": 2400, "cache_write": 0})
    );
}

#[test]
fn a_resumed_session_that_worked_is_not_a_failed_resume_whatever_its_output_says() {
    // The resumed session works (claude bills it), prints the words of an unknown session
    // (here from the agent's own tool, as a grep or a log would), and exits 1 unreported. It
    // is a failed attempt like any other, with its cost on the record; not a failed resume
    // whose fresh session silently runs again inside the same attempt and drops that cost.
    let cli = FakeCli::new("claude", "");
    interrupt(&cli, libc::SIGKILL);
    cli.repo
        .script("core-a 2 exit 1 Error: thread not found\ncore-a * done\n* * done\n");
    let out = cli.run(&[]);
    assert_exit(&out, 0);
    let attempts = cli.attempts("core-a");
    let second = &attempts[1];
    assert!(second["resumed_from"].is_string(), "{second}");
    assert!(second.get("resume_failed").is_none(), "{second}");
    assert_eq!(second["outcome"], "failed", "{second}");
    assert_eq!(second["cost_usd"].as_f64(), Some(0.05), "{second}");
    assert_eq!(session_starts(&cli, 2).len(), 1, "one session in attempt 2");
}

#[test]
fn the_plan_edits_of_a_failed_resume_are_undone_before_its_fresh_session() {
    // The resumed session's tools ran (the agent edited the plan: every other chunk marked
    // completed, described anew, its records deleted), then the CLI died: no result, exit 1,
    // nothing reported. That is a resume that failed at once; its fresh session must start
    // from the plan as runner wrote it, not from the agent's edits.
    let cli = FakeCli::new("claude", "");
    interrupt(&cli, libc::SIGKILL);
    cli.preset_script("core-a 2 crash\n");
    cli.repo
        .script("core-a 2 edit-plan 0 silent\ncore-a * done\n* * done\n");
    let out = cli.run(&[]);
    assert_exit(&out, 0);
    let second = &cli.attempts("core-a")[1];
    assert!(second["resume_failed"].is_object(), "{second}");
    let plan = std::fs::read_to_string(cli.repo.plan_path("001-p")).unwrap();
    assert!(!plan.contains("edited by the agent"), "{plan}");
    for id in ["core-b", "polish"] {
        let attempts = cli.attempts(id);
        assert!(
            attempts.iter().any(|a| a["outcome"] == "completed"),
            "{id} was never worked on: {attempts:?}"
        );
    }
}

#[test]
fn an_attempt_cut_off_before_its_session_started_is_not_resumed() {
    // runner killed right after the take: the attempt records the claude session id runner
    // chose, but no session of that id was ever started. The next attempt starts afresh
    // instead of spawning the CLI for a resume that can only fail.
    let cli = FakeCli::new("claude", "");
    let out = cli
        .cmd(&["run", "--spec", "001-p"])
        .env("RUNNER_FAILPOINTS", "after_take@1")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{out:?}");
    let out = cli.run(&[]);
    assert_exit(&out, 0);
    assert!(all_completed(&cli), "{}", stderr(&out));
    assert!(
        !cli.argv_log().iter().any(|argv| has_resume_flag(argv)),
        "{:?}",
        cli.argv_log()
    );
    let attempts = cli.attempts("core-a");
    assert_eq!(attempts[0]["outcome"], "interrupted", "{attempts:?}");
    assert!(attempts[1].get("resume_failed").is_none(), "{attempts:?}");
    assert_eq!(
        attempts[1]["not_resumed"], "the interrupted attempt's session never started",
        "{attempts:?}"
    );
}
