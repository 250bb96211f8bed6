//! Usage limits pause a spec; they do not fail it. Every preset end to end against its fake
//! CLI (`limit RESETS_AT` in the fake's script): the attempt is `usage_limited` and does not
//! count toward `run.max_attempts`, the chunk goes back to `pending`, the spec is paused until
//! the reset (`.auto-claude/pauses/<spec>.json`, shown by `status`), and `run` exits 6 until
//! then; `--wait` sleeps through it.

use std::time::{Duration, Instant};

// (`limit +N` in a fake's script: N seconds after that session starts, see fixtures/fake_cli.py.)

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::common::*;
use crate::fake_cli::{FakeCli, PRESETS};

/// An hour or so ahead, on a whole minute (codex prints minutes only).
fn an_hour_ahead() -> i64 {
    (Utc::now().timestamp() / 60 + 61) * 60
}

fn pause_file(cli: &FakeCli, spec: &str) -> std::path::PathBuf {
    cli.repo.path(&format!(".auto-claude/pauses/{spec}.json"))
}

/// Time passes: the stored pause of `spec` ended a second ago.
fn expire(cli: &FakeCli, spec: &str) {
    let path = pause_file(cli, spec);
    let mut pause: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    pause["until"] = Value::String((Utc::now() - chrono::Duration::seconds(1)).to_rfc3339());
    std::fs::write(&path, serde_json::to_vec(&pause).unwrap()).unwrap();
}

fn status_of(cli: &FakeCli, spec: &str) -> Value {
    crate::plan_compat::spec_status(&cli.repo, spec)
}

fn paused_until(cli: &FakeCli, spec: &str) -> i64 {
    let s = status_of(cli, spec);
    assert_eq!(s["status"], "paused", "{s}");
    DateTime::parse_from_rfc3339(s["paused_until"].as_str().unwrap())
        .unwrap()
        .timestamp()
}

fn outcomes(cli: &FakeCli, id: &str) -> Vec<String> {
    cli.attempts(id)
        .iter()
        .map(|a| a["outcome"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn every_preset_pauses_on_a_usage_limit_exits_6_and_goes_on_after_it() {
    for preset in PRESETS {
        // max_attempts = 1: a limit that counted as an attempt would fail the chunk for good.
        let cli = FakeCli::new(
            preset,
            "[run]\nmax_attempts = 1\nlimit_wait_default = 600\n",
        );
        let at = an_hour_ahead();
        cli.preset_script(&format!("core-a 1 limit {at}\n"));
        let out = cli.run(&[]);
        assert_exit(&out, 6);
        let err = stderr(&out);
        assert!(
            err.contains("paused by a usage limit until") && err.contains("--wait"),
            "{preset}: {err}"
        );
        assert_eq!(outcomes(&cli, "core-a"), ["usage_limited"], "{preset}");
        let a = &cli.attempts("core-a")[0];
        assert!(a["reason"].as_str().unwrap().contains("usage limit"), "{a}");
        assert_eq!(cli.repo.chunk("001-p", "core-a")["status"], "pending");
        let until = paused_until(&cli, "001-p");
        match preset {
            // aider prints OpenAI's "Please try again in XhYmZs": from the end of the session,
            // plus the second OpenAI rounds off.
            "aider" => assert!((at + 1..=at + 3).contains(&until), "{until} vs {at}"),
            // gemini's daily quota: the delay its stderr gives from its result's time.
            "gemini" => assert_eq!(until, at, "{preset}"),
            // codex prints the minute only (its exact reset rounded down): the limit surely
            // lifted when that minute ends.
            "codex" => assert_eq!(until, at + 60, "{preset}"),
            _ => assert_eq!(until, at, "{preset}"),
        }
        let json: Value =
            serde_json::from_slice(&cli.runner(&["run", "--spec", "001-p", "--json"]).stdout)
                .unwrap();
        assert_eq!(json["error"]["kind"], "usage_limited", "{json}");
        assert_eq!(json["error"]["code"], 6, "{json}");
        // Before the reset: exit 6 at once, no session started (planner and core-a only).
        let out = cli.run(&[]);
        assert_exit(&out, 6);
        assert_eq!(cli.argv_log().len(), 2, "{preset}");
        let text = stdout(&cli.runner(&["status"]));
        assert!(
            text.contains("paused") && text.contains("by a usage limit until"),
            "{text}"
        );
        // After it: the spec goes on and completes; the pause is gone.
        expire(&cli, "001-p");
        let out = cli.run(&[]);
        assert_exit(&out, 0);
        assert_eq!(
            outcomes(&cli, "core-a"),
            ["usage_limited", "completed"],
            "{preset}"
        );
        assert!(!pause_file(&cli, "001-p").exists());
        let s = status_of(&cli, "001-p");
        assert_eq!(
            (s["status"].as_str(), &s["paused_until"]),
            (Some("complete"), &Value::Null)
        );
        // The status change was journaled as every other.
        assert!(
            cli.repo
                .events("001-p")
                .iter()
                .any(|e| e["event"] == "chunk_status"
                    && e["chunk"] == "core-a"
                    && e["from"] == "in_progress"
                    && e["to"] == "pending"
                    && e["why"] == "usage_limited"),
            "{preset}"
        );
    }
}

#[test]
fn a_limit_that_says_no_reset_pauses_for_limit_wait_default() {
    // aider on OpenAI's `insufficient_quota`: a usage limit with no time.
    let cli = FakeCli::new(
        "aider",
        "[run]\nmax_attempts = 1\nlimit_wait_default = 600\n",
    );
    cli.preset_script("core-a 1 quota\n");
    let started = Utc::now().timestamp();
    let out = cli.run(&[]);
    assert_exit(&out, 6);
    assert_eq!(outcomes(&cli, "core-a"), ["usage_limited"]);
    // run.limit_wait_default, to the next whole second.
    let until = paused_until(&cli, "001-p");
    assert!(
        (started + 600..=Utc::now().timestamp() + 601).contains(&until),
        "{until}"
    );
}

fn at(a: &Value, key: &str) -> i64 {
    DateTime::parse_from_rfc3339(a[key].as_str().unwrap_or_else(|| panic!("{key}: {a}")))
        .unwrap()
        .timestamp()
}

/// Each attempt after a usage-limited one started after the limit's reset (a limit that says
/// none: `wait` seconds after the limited one ended).
fn started_after_each_reset(cli: &FakeCli, id: &str, wait: i64) {
    let attempts = cli.attempts(id);
    for pair in attempts.windows(2) {
        let (limited, next) = (&pair[0], &pair[1]);
        assert_eq!(limited["outcome"], "usage_limited", "{limited}");
        let reset = match limited.get("usage_limit_resets_at") {
            Some(Value::String(_)) => at(limited, "usage_limit_resets_at"),
            _ => at(limited, "ended_at") + wait,
        };
        assert!(at(next, "started_at") >= reset, "{limited}\n{next}");
    }
}

#[test]
fn wait_sleeps_until_the_reset_then_completes_the_spec() {
    // codex prints minutes only: a reset seconds ahead is the end of its minute, up to a
    // minute's wait. (A limit that says no reset waits limit_wait_default, 2 s here.)
    for preset in ["claude", "gemini", "aider"] {
        let cli = FakeCli::new(preset, "[run]\nmax_attempts = 1\nlimit_wait_default = 2\n");
        cli.preset_script("core-a 1 limit +3\n");
        let out = cli.run(&["--wait"]);
        assert_exit(&out, 0);
        let err = stderr(&out);
        // No terminal: one line says until when, no countdown.
        assert!(err.contains("waiting (--wait)"), "{preset}: {err}");
        assert!(!err.contains("left (until"), "{err}");
        assert_eq!(
            outcomes(&cli, "core-a"),
            ["usage_limited", "completed"],
            "{preset}"
        );
        started_after_each_reset(&cli, "core-a", 2);
        assert!(
            cli.repo
                .statuses("001-p")
                .iter()
                .all(|(_, s)| s == "completed")
        );
        assert!(!pause_file(&cli, "001-p").exists());
    }
}

#[test]
fn still_limited_after_the_wait_waits_again() {
    let cli = FakeCli::new("claude", "[run]\nmax_attempts = 1\n");
    cli.preset_script("core-a 1 limit +2\ncore-a 2 limit +3\n");
    let out = cli.run(&["--wait"]);
    assert_exit(&out, 0);
    assert_eq!(
        outcomes(&cli, "core-a"),
        ["usage_limited", "usage_limited", "completed"]
    );
    started_after_each_reset(&cli, "core-a", 0);
    assert_eq!(
        stderr(&out).matches("waiting (--wait)").count(),
        2,
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_wait_past_max_wait_stops_with_exit_6_at_once() {
    // run.wait_for_limits = true is --wait from the config.
    let cli = FakeCli::new("claude", "[run]\nwait_for_limits = true\nmax_wait = 5\n");
    cli.preset_script(&format!("core-a 1 limit {}\n", an_hour_ahead()));
    let start = Instant::now();
    let out = cli.run(&[]);
    assert_exit(&out, 6);
    assert!(start.elapsed() < Duration::from_secs(20));
    assert!(stderr(&out).contains("run.max_wait"), "{}", stderr(&out));
    assert_eq!(outcomes(&cli, "core-a"), ["usage_limited"]);
    // A wait within max_wait that then meets a second limit beyond it stops too.
    let cli = FakeCli::new("claude", "[run]\nmax_wait = 5\n");
    cli.preset_script("core-a 1 limit +2\ncore-a 2 limit +3600\n");
    let out = cli.run(&["--wait"]);
    assert_exit(&out, 6);
    assert_eq!(
        outcomes(&cli, "core-a"),
        ["usage_limited", "usage_limited"],
        "{}",
        stderr(&out)
    );
}

#[test]
fn auto_continue_skips_a_paused_spec_and_resumes_one_whose_pause_is_over() {
    let cli = FakeCli::new("claude", "");
    cli.repo.add_spec("002-q");
    cli.preset_script(&format!("core-a 1 limit {}\n", an_hour_ahead()));
    assert_exit(&cli.run(&[]), 6);
    assert_exit(&cli.runner(&["run", "--spec", "002-q"]), 6);
    expire(&cli, "002-q");
    let sessions = cli.argv_log().len();
    let out = cli.runner(&["run", "--auto-continue"]);
    // 002-q completed; 001-p skipped, still paused: exit 6 says come back later.
    assert_exit(&out, 6);
    assert!(
        stderr(&out).contains("spec 001-p is paused by a usage limit until"),
        "{}",
        stderr(&out)
    );
    assert!(
        cli.repo
            .statuses("002-q")
            .iter()
            .all(|(_, s)| s == "completed")
    );
    // Three sessions, all 002-q's (core-a again, core-b, polish); none of 001-p.
    assert_eq!(cli.argv_log().len(), sessions + 3);
    assert_eq!(outcomes(&cli, "core-a"), ["usage_limited"]);
    assert_eq!(status_of(&cli, "001-p")["status"], "paused");
}

#[test]
fn ctrl_c_during_the_wait_stops_with_130_and_loses_nothing() {
    let cli = FakeCli::new("claude", "");
    cli.preset_script(&format!(
        "core-a 1 limit {}\n",
        Utc::now().timestamp() + 120
    ));
    let child = cli
        .cmd(&["run", "--spec", "001-p", "--wait"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the pause", || pause_file(&cli, "001-p").exists());
    // While it waits it holds the spec: a second run is busy.
    std::thread::sleep(Duration::from_millis(500));
    assert_exit(&cli.run(&[]), 4);
    let start = Instant::now();
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 130);
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(outcomes(&cli, "core-a"), ["usage_limited"]);
    assert_eq!(cli.repo.chunk("001-p", "core-a")["status"], "pending");
    assert_eq!(status_of(&cli, "001-p")["status"], "paused");
}

#[test]
fn a_planner_that_hits_the_limit_pauses_before_any_plan_exists() {
    let cli = FakeCli::new("claude", "[run]\nmax_attempts = 1\n");
    let at = an_hour_ahead();
    cli.preset_script(&format!("planner 1 limit {at}\n"));
    assert_exit(&cli.run(&[]), 6);
    assert!(!cli.repo.plan_path("001-p").exists());
    assert_eq!(paused_until(&cli, "001-p"), at);
    expire(&cli, "001-p");
    // The limit lifted. The limited planner session was not an attempt: with
    // max_attempts = 1 it plans again.
    cli.preset_script("");
    assert_exit(&cli.run(&[]), 0);
    assert!(
        cli.repo
            .statuses("001-p")
            .iter()
            .all(|(_, s)| s == "completed")
    );
}

#[test]
fn a_pause_file_that_is_not_usable_is_reported_and_ignored() {
    let cli = FakeCli::new("claude", "");
    let path = pause_file(&cli, "001-p");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let far = (Utc::now() + chrono::Duration::days(365)).to_rfc3339();
    let forged = format!(
        r#"{{"until":"{far}","reason":"x","preset":"claude","session_id":null,"set_at":"{far}"}}"#
    );
    let elsewhere = cli.repo.tmp.path().join("elsewhere.json");
    std::fs::write(&elsewhere, &forged).unwrap();
    for case in ["corrupt", "far", "link"] {
        match case {
            "corrupt" => std::fs::write(&path, b"{not json\xff").unwrap(),
            "far" => std::fs::write(&path, &forged).unwrap(),
            _ => std::os::unix::fs::symlink(&elsewhere, &path).unwrap(),
        }
        assert_eq!(
            status_of(&cli, "001-p")["paused_until"],
            Value::Null,
            "{case}"
        );
        let out = cli.run(&[]);
        assert_exit(&out, 0);
        assert!(
            stderr(&out).contains("a pause is ignored"),
            "{case}: {}",
            stderr(&out)
        );
        // Removed (the link itself, not what it points to).
        assert!(std::fs::symlink_metadata(&path).is_err(), "{case}");
        assert!(elsewhere.exists());
        assert_exit(&cli.runner(&["discard", "--spec", "001-p", "--yes"]), 0);
    }
}

/// A pause runner cannot remove (a folder planted in its place, a FIFO) is ignored as any other
/// unusable pause: the run goes on instead of failing on the removal at every run.
#[test]
fn a_pause_that_cannot_be_removed_does_not_stop_the_run() {
    for case in ["folder", "fifo"] {
        let cli = FakeCli::new("claude", "");
        let path = pause_file(&cli, "001-p");
        match case {
            "folder" => std::fs::create_dir_all(path.join("inside")).unwrap(),
            _ => {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                let made = std::process::Command::new("mkfifo")
                    .arg(&path)
                    .status()
                    .unwrap();
                assert!(made.success());
            }
        }
        assert_eq!(
            status_of(&cli, "001-p")["paused_until"],
            Value::Null,
            "{case}"
        );
        let out = cli.run(&[]);
        assert_exit(&out, 0);
        assert!(
            stderr(&out).contains("a pause is ignored"),
            "{case}: {}",
            stderr(&out)
        );
        assert_eq!(status_of(&cli, "001-p")["status"], "complete", "{case}");
    }
}

#[test]
fn the_new_config_keys_are_validated_and_listed() {
    for (bad, words) in [
        ("max_wait = 99999999999", "run.max_wait"),
        ("limit_wait_default = 0", "run.limit_wait_default"),
        ("limit_wait_default = 999999999", "run.limit_wait_default"),
        ("wait_for_limits = \"yes\"", "wait_for_limits"),
    ] {
        let cli = FakeCli::new("claude", &format!("[run]\n{bad}\n"));
        let out = cli.run(&[]);
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(words), "{bad}: {}", stderr(&out));
        assert!(cli.argv_log().is_empty());
    }
    let cli = FakeCli::new("claude", "");
    let out = cli.runner(&["config", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let value = |key: &str| {
        v["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == key)
            .map(|s| s["value"].clone())
    };
    assert_eq!(value("run.wait_for_limits"), Some(Value::Bool(false)));
    assert_eq!(value("run.max_wait"), Some(86_400.into()));
    assert_eq!(value("run.limit_wait_default"), Some(900.into()));
}

#[test]
fn a_crash_after_the_pause_is_stored_loses_neither_the_pause_nor_an_attempt() {
    use std::os::unix::process::ExitStatusExt;
    let cli = FakeCli::new("claude", "[run]\nmax_attempts = 1\n");
    let at = an_hour_ahead();
    cli.preset_script(&format!("core-a 1 limit {at}\n"));
    let out = cli
        .cmd(&["run", "--spec", "001-p"])
        .env("RUNNER_FAILPOINTS", "after_limit_paused")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{}", stderr(&out));
    assert_eq!(paused_until(&cli, "001-p"), at);
    // The next run recovers the chunk left in progress and stops on the pause: no session.
    let out = cli.run(&[]);
    assert_exit(&out, 6);
    assert_eq!(cli.argv_log().len(), 2);
    assert_eq!(cli.repo.chunk("001-p", "core-a")["status"], "pending");
    expire(&cli, "001-p");
    let out = cli.run(&[]);
    assert_exit(&out, 0);
    assert!(
        cli.repo
            .statuses("001-p")
            .iter()
            .all(|(_, s)| s == "completed")
    );
}

#[test]
fn a_spec_with_nothing_left_to_do_is_not_stopped_by_its_pause() {
    let cli = FakeCli::new("claude", "");
    assert_exit(&cli.run(&[]), 0);
    let path = pause_file(&cli, "001-p");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let until = (Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let now = Utc::now().to_rfc3339();
    std::fs::write(
        &path,
        format!(r#"{{"until":"{until}","reason":"r","preset":"claude","set_at":"{now}"}}"#),
    )
    .unwrap();
    // Paused, but every chunk is completed: status says complete, and run ends as before.
    let s = status_of(&cli, "001-p");
    assert_eq!(s["status"], "complete", "{s}");
    assert!(s["paused_until"].is_string(), "{s}");
    let out = cli.run(&[]);
    assert_exit(&out, 0);
    assert_eq!(cli.argv_log().len(), 4);
}
