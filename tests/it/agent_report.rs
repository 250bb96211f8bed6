//! The fake agent CLIs (`fixtures/fake-claude`, `fake-codex`, `fake-gemini`, `fake-aider`) run
//! directly, their real output fed to the parsers of `runner::agent::output`: the report must
//! be the one the fake's script asked for. That proves the fakes and the parsers agree (the
//! parsers are checked against the CLIs' documented shapes by their unit tests).

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use chrono::{DateTime, Local, Utc};
use runner::agent::output::{self, CostSource, SessionFacts, Tokens};

use crate::common::fixture;

/// A worktree-like folder and the environment fake-agent and the fakes read.
struct Bench {
    tmp: tempfile::TempDir,
}

impl Bench {
    fn new(preset_rules: &str) -> Bench {
        let tmp = tempfile::tempdir().unwrap();
        for dir in ["wt", "spec", "sessions"] {
            std::fs::create_dir_all(tmp.path().join(dir)).unwrap();
        }
        std::fs::write(tmp.path().join("agent-script"), "* * uncommitted\n").unwrap();
        std::fs::write(tmp.path().join("preset-script"), preset_rules).unwrap();
        Bench { tmp }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    fn worktree(&self) -> PathBuf {
        self.path("wt").canonicalize().unwrap()
    }

    /// Run `fixtures/<program>` with `args` in the worktree, `stdin` on its standard input.
    fn run(&self, program: &str, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = crate::common::isolated(fixture(program))
            .args(args)
            .current_dir(self.worktree())
            .env("RUNNER_ROLE", "coder")
            .env("RUNNER_CHUNK_ID", "c1")
            .env("RUNNER_ATTEMPT", "1")
            .env("RUNNER_SPEC", "001-x")
            .env("RUNNER_SPEC_DIR", self.path("spec"))
            .env(
                "RUNNER_PLAN_FILE",
                self.path("spec/implementation_plan.json"),
            )
            .env("RUNNER_WORKTREE", self.worktree())
            .env("RUNNER_SESSION_ID", "s1")
            .env("FAKE_AGENT_SCRIPT", self.path("agent-script"))
            .env("FAKE_AGENT_PROMPTS", self.path("prompts"))
            .env("FAKE_PRESET_SCRIPT", self.path("preset-script"))
            .env("FAKE_SESSIONS_DIR", self.path("sessions"))
            .env("FAKE_ARGV_LOG", self.path("argv.log"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    fn worked(&self) -> bool {
        self.worktree().join("work/c1.txt").is_file()
    }

    /// The prompt fake-agent was given.
    fn prompt_seen(&self) -> String {
        std::fs::read_to_string(self.path("prompts/s1.md")).unwrap_or_default()
    }

    fn argv_log(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(self.path("argv.log"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn resets(r: &SessionFacts) -> Option<DateTime<Utc>> {
    r.usage_limit.expect("a usage limit").resets_at
}

/// A reset time on a whole minute, some hours ahead (codex prints minutes only).
fn reset_epoch() -> i64 {
    (Utc::now().timestamp() / 60 + 200) * 60
}

const CLAUDE: [&str; 4] = ["-p", "--output-format", "stream-json", "--verbose"];
const SID: &str = "3f0c2a8e-6b1d-4c51-9a57-1b2f8d9e0c11";

fn claude(bench: &Bench, extra: &[&str]) -> (Output, SessionFacts) {
    let mut args: Vec<&str> = CLAUDE.to_vec();
    args.extend_from_slice(extra);
    let out = bench.run("fake-claude", &args, "the prompt\n");
    let r = output::claude::parse(&out.stdout);
    (out, r)
}

#[test]
fn fake_claude_success_then_resume_of_its_session() {
    let bench = Bench::new("c1 * ok 0.37\n");
    let (out, r) = claude(
        &bench,
        &["--session-id", SID, "--permission-mode", "acceptEdits"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(bench.worked());
    assert_eq!(bench.prompt_seen().trim(), "the prompt");
    assert_eq!(r.agent_session_id.as_deref(), Some(SID));
    assert_eq!(
        (r.cost_usd, r.cost_source),
        (Some(0.37), CostSource::Reported)
    );
    assert_eq!(
        r.tokens,
        Tokens {
            input: 1000,
            output: 200,
            cache_read: 5000,
            cache_write: 300
        }
    );
    assert!(!r.failed(), "{r:?}");
    // The same id again is refused; a resume of it works.
    let (again, _) = claude(&bench, &["--session-id", SID]);
    assert!(!again.status.success());
    assert!(stderr(&again).contains("already in use"));
    let (resumed, r) = claude(&bench, &["--resume", SID]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(r.agent_session_id.as_deref(), Some(SID));
    assert!(!r.failed());
    let argv = bench.argv_log();
    assert_eq!(argv.len(), 3);
    assert_eq!(argv[0][0], "claude");
    assert!(argv[0].iter().any(|a| a == "acceptEdits"));
    assert_eq!(argv[2][5..], ["--resume".to_string(), SID.to_string()]);
}

#[test]
fn fake_claude_usage_limit_in_seconds_and_milliseconds() {
    let at = reset_epoch();
    for written in [at, at * 1000] {
        let bench = Bench::new(&format!("* * limit {written}\n"));
        let (out, r) = claude(&bench, &[]);
        assert_eq!(out.status.code(), Some(1));
        assert!(!bench.worked(), "a limited session does no work");
        assert_eq!(resets(&r), DateTime::from_timestamp(at, 0));
        assert!(r.error.is_some());
    }
}

#[test]
fn fake_claude_is_error_after_the_work_is_a_failure() {
    let bench = Bench::new("c1 1 is-error\n");
    let (out, r) = claude(&bench, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(bench.worked());
    assert!(r.error.as_deref().unwrap().starts_with("API Error"));
    assert_eq!(r.usage_limit, None);
}

#[test]
fn fake_claude_budget_below_the_cost_stops_it() {
    let bench = Bench::new("* * ok 2.5\n");
    let (out, r) = claude(&bench, &["--max-budget-usd", "1.25"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!bench.worked());
    assert_eq!(r.cost_usd, Some(1.25));
    assert!(r.error.as_deref().unwrap().contains("budget"));
}

#[test]
fn fake_claude_unknown_resume_fails_at_once() {
    let bench = Bench::new("");
    let (made, _) = claude(&bench, &["--session-id", SID]);
    assert!(made.status.success());
    std::fs::remove_file(bench.worktree().join("work/c1.txt")).unwrap();
    // An id it never made, and a known one the script says is gone.
    for (id, rules) in [("never-made", ""), (SID, "* * no-session\n")] {
        std::fs::write(bench.path("preset-script"), rules).unwrap();
        let (out, r) = claude(&bench, &["--resume", id]);
        assert_eq!(out.status.code(), Some(1));
        assert!(!bench.worked());
        assert_eq!(
            r.error,
            Some(format!("No conversation found with session ID: {id}"))
        );
        assert!(stderr(&out).contains("No conversation found"));
    }
}

#[test]
fn fake_claude_refuses_a_wrong_invocation() {
    let bench = Bench::new("");
    let out = bench.run("fake-claude", &["-p", "--output-format", "stream-json"], "");
    assert!(stderr(&out).contains("requires --verbose"));
    let out = bench.run("fake-claude", &["-p", "--bogus"], "");
    assert_eq!(out.status.code(), Some(2));
}

fn codex(bench: &Bench, resume: Option<&str>) -> Output {
    let wt = bench.worktree().display().to_string();
    let spec = bench.path("spec").display().to_string();
    let mut args = vec![
        "exec",
        "--json",
        "--sandbox",
        "workspace-write",
        "-C",
        &wt,
        "--add-dir",
        &spec,
    ];
    if let Some(id) = resume {
        args.extend(["resume", id]);
    }
    args.push("-");
    bench.run("fake-codex", &args, "the prompt\n")
}

#[test]
fn fake_codex_success_then_resumed_thread_counts_its_own_tokens() {
    let bench = Bench::new("");
    let out = codex(&bench, None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(bench.worked());
    let first = output::codex::parse(&out.stdout, None, &Local::now());
    let step = Tokens {
        input: 600,
        output: 200,
        cache_read: 400,
        cache_write: 0,
    };
    assert_eq!(first.tokens, step);
    let thread = first.agent_session_id.clone().unwrap();
    let out = codex(&bench, Some(&thread));
    assert!(out.status.success(), "{}", stderr(&out));
    let second = output::codex::parse(&out.stdout, first.thread_total, &Local::now());
    assert_eq!(second.agent_session_id.as_deref(), Some(thread.as_str()));
    assert_eq!(second.tokens, step, "only this session's tokens");
    assert_eq!(second.thread_total.unwrap().input, 1200);
    assert!(!second.failed());
}

#[test]
fn fake_codex_usage_limit_gives_the_reset_time() {
    // Today's and another day's forms: a few hours ahead, and two days ahead.
    for at in [reset_epoch(), reset_epoch() + 2 * 86_400] {
        let bench = Bench::new(&format!("c1 1 limit {at}\n"));
        let out = codex(&bench, None);
        assert_eq!(out.status.code(), Some(1));
        assert!(!bench.worked());
        let r = output::codex::parse(&out.stdout, None, &Local::now());
        // codex prints the minute (`at` is on one): the limit surely lifted at its end.
        assert_eq!(resets(&r), DateTime::from_timestamp(at + 60, 0), "{r:?}");
    }
}

#[test]
fn fake_codex_unknown_thread_fails_at_once() {
    let bench = Bench::new("");
    let out = codex(&bench, Some("0199a213-0000-7000-8000-000000000000"));
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("no rollout found for thread id"));
    assert!(!bench.worked());
}

fn gemini(bench: &Bench, resume: Option<&str>) -> (Output, SessionFacts) {
    let mut args = vec!["--output-format", "stream-json", "--approval-mode", "yolo"];
    if let Some(id) = resume {
        args.extend(["--resume", id]);
    }
    let out = bench.run("fake-gemini", &args, "the prompt\n");
    let r = output::gemini::parse(&out.stdout);
    (out, r)
}

#[test]
fn fake_gemini_success_then_resume() {
    let bench = Bench::new("");
    let (out, r) = gemini(&bench, None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(bench.worked());
    assert_eq!(
        r.tokens,
        Tokens {
            input: 1500,
            output: 300,
            cache_read: 500,
            cache_write: 0
        }
    );
    assert_eq!(r.model.as_deref(), Some("gemini-2.5-pro"));
    let id = r.agent_session_id.unwrap();
    let (out, r) = gemini(&bench, Some(&id));
    assert!(out.status.success());
    assert_eq!(r.agent_session_id.as_deref(), Some(id.as_str()));
    let (out, _) = gemini(&bench, Some("not-a-session"));
    assert_eq!(out.status.code(), Some(42));
    assert!(stderr(&out).contains("Invalid session identifier"));
}

#[test]
fn fake_gemini_quota_errors_are_usage_limits() {
    // A daily quota: its delay is only in the error gemini prints on stderr, which runner's
    // session log holds with stdout.
    let at = reset_epoch();
    let bench = Bench::new(&format!("* * limit {at}\n"));
    let (out, r) = gemini(&bench, None);
    assert_eq!(out.status.code(), Some(173), "exit 429, as the OS says it");
    assert!(!bench.worked());
    assert_eq!(resets(&r), None, "stdout alone has no delay");
    let mut log = out.stdout.clone();
    log.extend_from_slice(&out.stderr);
    assert_eq!(
        resets(&output::gemini::parse(&log)),
        DateTime::from_timestamp(at, 0)
    );
    // A per-minute quota: the delay is in the result.
    let bench = Bench::new("* * quota 30\n");
    let before = Utc::now().timestamp();
    let (_, r) = gemini(&bench, None);
    let reset = resets(&r).unwrap().timestamp();
    assert!(
        (before + 29..=Utc::now().timestamp() + 31).contains(&reset),
        "{reset}"
    );
}

fn aider(bench: &Bench) -> (Output, SessionFacts) {
    std::fs::write(bench.path("prompt.md"), "the prompt\n").unwrap();
    let message = bench.path("prompt.md").display().to_string();
    let log = bench.path("aider.jsonl").display().to_string();
    let args = [
        "--message-file",
        &message,
        "--yes-always",
        "--no-analytics",
        "--analytics-log",
        &log,
        "--no-dirty-commits",
    ];
    let out = bench.run("fake-aider", &args, "");
    let analytics = std::fs::read(bench.path("aider.jsonl")).unwrap_or_default();
    let r = output::aider::parse(&out.stdout, &analytics);
    (out, r)
}

#[test]
fn fake_aider_success_and_failed_calls_that_exit_0() {
    let bench = Bench::new("* * ok 0.12\n");
    let (out, r) = aider(&bench);
    assert!(out.status.success());
    assert!(bench.worked());
    assert_eq!(bench.prompt_seen().trim(), "the prompt");
    assert_eq!((r.cost_usd, r.turns), (Some(0.12), Some(1)));
    assert_eq!((r.tokens.input, r.tokens.output), (1000, 200));
    assert!(!r.failed());

    let bench = Bench::new("* * model-fail\n");
    let (out, r) = aider(&bench);
    assert!(out.status.success(), "aider exits 0 after a failed call");
    assert!(!bench.worked());
    assert!(r.error.as_deref().unwrap().contains("AuthenticationError"));
    assert_eq!(r.usage_limit, None);

    // OpenAI's rate limit says when it lifts, as a delay (whole seconds: a second is added).
    let at = reset_epoch();
    let bench = Bench::new(&format!("* * limit {at}\n"));
    let (out, r) = aider(&bench);
    assert!(out.status.success());
    assert!(!bench.worked());
    let reset = resets(&r).unwrap().timestamp();
    assert!((at + 1..=at + 3).contains(&reset), "{reset} vs {at}");
    assert!(r.error.as_deref().unwrap().contains("RateLimitError"));
    // An exhausted quota does not.
    let bench = Bench::new("* * quota\n");
    let (out, r) = aider(&bench);
    assert!(out.status.success());
    assert_eq!(resets(&r), None);
}

#[test]
fn every_fake_logs_its_command_line() {
    let bench = Bench::new("");
    claude(&bench, &[]);
    codex(&bench, None);
    gemini(&bench, None);
    aider(&bench);
    let names: Vec<String> = bench.argv_log().into_iter().map(|a| a[0].clone()).collect();
    assert_eq!(names, ["claude", "codex", "gemini", "aider"]);
    assert!(Path::new(&bench.path("sessions/codex")).is_dir());
}
