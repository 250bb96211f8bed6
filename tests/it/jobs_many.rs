//! `runner run --jobs N [SPEC…]`: new, planned and interrupted specs built side by side, each
//! in a slot of its own, never more than N at once (by the clock of the agents' own
//! timestamps); the specs named or every spec with work to do; Ctrl-C drains them all; a usage
//! limit holds back the other specs of its agent account; a job stopped at once.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::fake_cli::FakeCli;
use serde_json::Value;

const SPECS: [&str; 3] = ["010-a", "011-b", "012-c"];

/// `runner run --agent-command fake-agent ARGS` in `repo`, without `--auto-continue` (the
/// harness's `cmd` adds it), the agents' timestamps going to `times`.
fn jobs_cmd(repo: &TestRepo, extra: &[&str]) -> Command {
    let agent = fixture("fake-agent").display().to_string();
    let mut cmd = runner_command();
    cmd.args(["run", "--agent-command", agent.as_str()])
        .args(extra)
        .current_dir(&repo.root)
        .env("FAKE_AGENT_SCRIPT", repo.tmp.path().join("agent-script"))
        .env("FAKE_AGENT_LOG", repo.tmp.path().join("agent-log"))
        .env("FAKE_AGENT_PLAN", fixture("plans/two-phases.json"))
        .env("FAKE_AGENT_TIMES", times_file(repo))
        .env_remove("RUNNER_SPEC_DIR")
        .env_remove("RUNNER_CHUNK_ID")
        .env_remove("RUNNER_SESSION_ID")
        .stdin(Stdio::null());
    cmd
}

fn times_file(repo: &TestRepo) -> std::path::PathBuf {
    repo.tmp.path().join("agent-times")
}

/// One agent session as its fake wrote it: spec, role, chunk, start and end (nanoseconds).
#[derive(Debug, Clone)]
struct Session {
    spec: String,
    chunk: String,
    start: u128,
    end: u128,
}

/// Every session the fake agents timed, in the order they started. A spec's sessions run one
/// after the other, so each `end` line closes that spec's open session.
fn sessions(path: &std::path::Path) -> Vec<Session> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut done: Vec<Session> = Vec::new();
    let mut open: Vec<Session> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let (what, spec, chunk, at) = (f[0], f[1], f[3], f[4].parse::<u128>().unwrap());
        if what == "start" {
            open.push(Session {
                spec: spec.into(),
                chunk: chunk.into(),
                start: at,
                end: u128::MAX,
            });
        } else if let Some(i) = open.iter().position(|s| s.spec == spec) {
            let mut s = open.remove(i);
            s.end = at;
            done.push(s);
        }
    }
    done.extend(open);
    done.sort_by_key(|s| s.start);
    done
}

/// Each spec's time at work: from its first session's start to its last one's end.
fn spans(sessions: &[Session]) -> Vec<(String, u128, u128)> {
    let specs: BTreeSet<&str> = sessions.iter().map(|s| s.spec.as_str()).collect();
    specs
        .into_iter()
        .map(|spec| {
            let own = sessions.iter().filter(|s| s.spec == spec);
            let start = own.clone().map(|s| s.start).min().unwrap();
            let end = own.map(|s| s.end).max().unwrap();
            (spec.to_string(), start, end)
        })
        .collect()
}

/// The most spans open at one instant.
fn most_at_once(spans: &[(String, u128, u128)]) -> usize {
    spans
        .iter()
        .map(|(_, at, _)| spans.iter().filter(|(_, s, e)| s <= at && at < e).count())
        .max()
        .unwrap_or(0)
}

fn runs(out: &std::process::Output) -> Vec<Value> {
    let json: Value = serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(out), stderr(out)));
    json["runs"].as_array().unwrap().clone()
}

fn names(runs: &[Value]) -> Vec<String> {
    runs.iter()
        .map(|r| r["spec"].as_str().unwrap().to_string())
        .collect()
}

fn run_starts(repo: &TestRepo, spec: &str) -> usize {
    if !repo.spec_dir(spec).join("events.jsonl").exists() {
        return 0;
    }
    repo.events(spec)
        .iter()
        .filter(|e| e["event"] == "run_start")
        .count()
}

fn all_completed(repo: &TestRepo, spec: &str) -> bool {
    let statuses = repo.statuses(spec);
    !statuses.is_empty() && statuses.iter().all(|(_, s)| s == "completed")
}

#[test]
fn three_new_specs_with_two_jobs_are_built_each_in_its_own_slot_never_more_than_two_at_once() {
    let repo = TestRepo::new();
    for spec in SPECS {
        repo.add_spec(spec);
    }
    repo.script("* * slow 1\n");
    let head = repo.git(&["rev-parse", "HEAD"]);
    let out = jobs_cmd(&repo, &["--jobs", "2", "--json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let runs = runs(&out);
    assert_eq!(names(&runs), SPECS, "in name order: {}", stderr(&out));
    for run in &runs {
        assert_eq!(run["outcome"], "complete", "{run}");
        assert_eq!(
            (run["completed"].as_u64(), run["total"].as_u64()),
            (Some(3), Some(3))
        );
    }
    // Each in a slot of its own, a new numbered one, holding its branch.
    let worktrees: BTreeSet<String> = runs
        .iter()
        .map(|r| r["worktree"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(worktrees.len(), 3, "{worktrees:?}");
    for run in &runs {
        let worktree = std::path::Path::new(run["worktree"].as_str().unwrap());
        assert!(
            worktree.starts_with(repo.path(".worktrees")) && worktree != repo.worktree(),
            "{worktree:?}"
        );
        let branch = git_in(worktree, &["rev-parse", "--abbrev-ref", "HEAD"]);
        assert_eq!(branch.trim(), run["branch"].as_str().unwrap());
    }
    // The main checkout untouched: its branch, its commit, nothing changed in it.
    assert_eq!(
        repo.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), head);
    assert_eq!(repo.git(&["status", "--porcelain"]).trim(), "");
    // By the agents' clocks: two specs at work at once, never three.
    let sessions = sessions(&times_file(&repo));
    assert_eq!(
        sessions.len(),
        12,
        "a planner and three chunks each: {sessions:?}"
    );
    let spans = spans(&sessions);
    assert_eq!(most_at_once(&spans), 2, "{spans:?}");
    let err = stderr(&out);
    for spec in SPECS {
        assert!(err.contains(&format!("Starting spec {spec} in ")), "{err}");
    }
}

#[test]
fn the_specs_named_are_built_once_each_and_a_bad_name_starts_nothing() {
    let repo = TestRepo::new();
    for spec in ["010-a", "011-b", "012-c", "013-d"] {
        repo.add_spec(spec);
    }
    repo.script("* * done\n");
    // A name that matches no spec: exit 2 before anything starts.
    let out = jobs_cmd(&repo, &["--jobs", "2", "011-b", "nothing-like-it"])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(repo.agent_log().is_empty());
    // Without --jobs, SPECs are refused (one spec is --spec).
    let out = jobs_cmd(&repo, &["011-b"]).output().unwrap();
    assert_exit(&out, 2);
    // By name and by number; named twice, built once.
    let out = jobs_cmd(&repo, &["--jobs", "2", "--json", "013", "011-b", "011"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(names(&runs(&out)), ["013-d", "011-b"], "{}", stderr(&out));
    for spec in ["011-b", "013-d"] {
        assert!(all_completed(&repo, spec), "{spec}");
        assert_eq!(run_starts(&repo, spec), 1, "{spec}");
    }
    for spec in ["010-a", "012-c"] {
        assert_eq!(run_starts(&repo, spec), 0, "{spec} was not named");
        assert!(!repo.plan_path(spec).exists());
    }
}

#[test]
fn one_job_builds_new_specs_one_after_the_other_in_the_default_slot() {
    let repo = TestRepo::new();
    for spec in ["010-a", "011-b"] {
        repo.add_spec(spec);
    }
    repo.script("* * done\n");
    let out = jobs_cmd(&repo, &["--jobs", "1", "--json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let runs = runs(&out);
    assert_eq!(names(&runs), ["010-a", "011-b"], "{}", stderr(&out));
    let slot = repo.worktree().display().to_string();
    assert!(
        runs.iter().all(|r| r["worktree"] == slot.as_str()),
        "{runs:?}"
    );
    assert_eq!(most_at_once(&spans(&sessions(&times_file(&repo)))), 1);
}

/// A plan with every chunk of the two-phase plan in `status`.
fn plan_with(status: &str) -> String {
    std::fs::read_to_string(fixture("plans/two-phases.json"))
        .unwrap()
        .replace(
            "\"status\": \"pending\"",
            &format!("\"status\": \"{status}\""),
        )
}

#[test]
fn every_spec_with_work_is_taken_interrupted_first_and_a_failed_one_is_skipped_with_why() {
    let repo = TestRepo::new();
    let agent = fixture("fake-agent").display().to_string();
    // 020-int: interrupted (killed after its first session); 011-new: no plan; 012-planned:
    // a plan, nothing done; 013-done: complete; 014-failed: a chunk failed for good.
    repo.script("* * done\n");
    repo.add_spec("020-int");
    repo.write_plan("020-int", &plan_with("pending"));
    let killed = repo
        .cmd(&["run", "--spec", "020-int", "--agent-command", &agent])
        .env("RUNNER_FAILPOINTS", "after_coder_session")
        .output()
        .unwrap();
    assert!(!killed.status.success());
    repo.add_spec("011-new");
    repo.add_spec("012-planned");
    repo.write_plan("012-planned", &plan_with("pending"));
    repo.add_spec("013-done");
    repo.write_plan("013-done", &plan_with("completed"));
    repo.add_spec("014-failed");
    repo.write_plan(
        "014-failed",
        &plan_with("pending").replacen("\"status\": \"pending\"", "\"status\": \"failed\"", 1),
    );
    let done_before = std::fs::read(repo.plan_path("013-done")).unwrap();
    let out = jobs_cmd(&repo, &["--jobs", "2", "--json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(
        names(&runs(&out)),
        ["020-int", "011-new", "012-planned"],
        "interrupted first, then in name order: {}",
        stderr(&out)
    );
    for spec in ["020-int", "011-new", "012-planned"] {
        assert!(all_completed(&repo, spec), "{spec}: {}", stderr(&out));
    }
    let err = stderr(&out);
    assert!(
        err.contains("Resuming interrupted spec 020-int in "),
        "{err}"
    );
    assert!(
        err.contains("Skipped spec 014-failed: a chunk of it failed")
            && err.contains("runner status --spec 014-failed"),
        "{err}"
    );
    assert!(
        !err.contains("013-done"),
        "a complete spec is not mentioned: {err}"
    );
    assert_eq!(
        std::fs::read(repo.plan_path("013-done")).unwrap(),
        done_before
    );
    assert_eq!(
        run_starts(&repo, "013-done") + run_starts(&repo, "014-failed"),
        0
    );
}

#[test]
fn ctrl_c_drains_every_job_and_the_next_run_finishes_them() {
    let repo = TestRepo::new();
    for spec in SPECS {
        repo.add_spec(spec);
    }
    repo.script("* * graceful 30\n");
    let child = jobs_cmd(&repo, &["--jobs", "2", "--drain-timeout", "20"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let working = || -> Vec<&str> {
        SPECS
            .iter()
            .copied()
            .filter(|s| repo.spec_dir(s).join("fake-agent.pid").exists())
            .collect()
    };
    wait_for("two agents at work", || working().len() == 2);
    let drained = working();
    // SAFETY: a signal to the runner this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 130);
    for spec in &drained {
        // Drained: the agent finished its chunk when told, the run ended interrupted.
        assert_eq!(
            repo.chunk(spec, "core-a")["status"],
            "completed",
            "{}",
            stderr(&out)
        );
        let end = repo
            .events(spec)
            .into_iter()
            .rfind(|e| e["event"] == "run_end")
            .unwrap();
        assert_eq!(end["outcome"], "interrupted", "{end}");
    }
    let third = SPECS.iter().find(|s| !drained.contains(s)).unwrap();
    assert_eq!(run_starts(&repo, third), 0, "started after the Ctrl-C");
    // Nothing lost: the next run finishes all three.
    repo.script("* * done\n");
    let out = jobs_cmd(&repo, &["--jobs", "2", "--json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(runs(&out).len(), 3);
    for spec in SPECS {
        assert!(all_completed(&repo, spec), "{spec}");
        assert_eq!(
            repo.chunk(spec, "core-a")["attempts"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }
}

/// A job stopped at once (as a worker stops a spec whose lease it lost: `StopJob::Stop`,
/// here by the test failpoint) ends at once though its agent ignores every signal; the other
/// job goes on to its end.
#[test]
fn a_job_stopped_at_once_ends_though_its_agent_ignores_signals() {
    let repo = TestRepo::new();
    for spec in ["010-a", "011-b"] {
        repo.add_spec(spec);
        repo.write_plan(spec, &plan_with("pending"));
    }
    repo.write_plan("010-a", &plan_with("pending").replace("core-a", "deaf-a"));
    repo.script("deaf-a * deaf\n* * done\n");
    let started = Instant::now();
    // Stopped once its agent is at work (its pid file written, its traps set).
    let pid_file = repo.spec_dir("010-a").join("fake-agent.pid");
    let out = jobs_cmd(&repo, &["--jobs", "2", "--json", "--drain-timeout", "300"])
        .env(
            "RUNNER_FAILPOINT_STOP_JOB",
            format!("010-a:{}", pid_file.display()),
        )
        .output()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "not the 300 s drain"
    );
    // The stopped job ended interrupted: the whole ends so.
    assert_exit(&out, 130);
    assert!(all_completed(&repo, "011-b"), "{}", stderr(&out));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signal 0 only asks whether the process is there.
    assert_ne!(
        unsafe { libc::kill(pid, 0) },
        0,
        "the agent was killed: {}",
        stderr(&out)
    );
    let end = repo
        .events("010-a")
        .into_iter()
        .rfind(|e| e["event"] == "run_end")
        .unwrap();
    assert_eq!(end["outcome"], "interrupted", "{end}");
    // Nobody pressed Ctrl-C: the run tells its stop as its parent's, in no words of a
    // person's Ctrl-C.
    let err = stderr(&out);
    assert!(
        !err.lines()
            .any(|l| l.starts_with("[010-a] ") && l.contains("Ctrl-C")),
        "{err}"
    );
    assert!(
        err.lines().any(|l| l.starts_with("[010-a] ")
            && l.contains("the runner that started this run stopped it")),
        "{err}"
    );
}

/// Specs 020-a (its first chunk `lim-a`), 021-b (`b-1`, `b-2`) and 022-c in a repository whose
/// agent is fake claude (one account: `claude`), each with a one-phase plan of its own.
fn one_account(extra_config: &str) -> FakeCli {
    let cli = FakeCli::new("claude", extra_config);
    let plan = |ids: &[&str]| {
        let chunks: Vec<Value> = ids
            .iter()
            .map(|id| serde_json::json!({"id": id, "description": id, "status": "pending"}))
            .collect();
        serde_json::json!({"feature": "f", "phases": [{"id": "p", "name": "p", "subtasks": chunks}]})
            .to_string()
    };
    for (spec, ids) in [
        ("020-a", &["lim-a", "a-2"][..]),
        ("021-b", &["b-1", "b-2"][..]),
        ("022-c", &["c-1"][..]),
    ] {
        cli.repo.add_spec(spec);
        cli.repo.write_plan(spec, &plan(ids));
    }
    cli
}

fn account_jobs(cli: &FakeCli, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", "--jobs", "2", "--json"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["020-a", "021-b", "022-c"]);
    cli.cmd(&args)
        .env("FAKE_AGENT_TIMES", times_file(&cli.repo))
        .output()
        .unwrap()
}

#[test]
fn a_usage_limit_holds_back_the_other_specs_of_its_account_and_ends_with_exit_6() {
    let cli = one_account("");
    let at = chrono::Utc::now().timestamp() + 3600;
    cli.preset_script(&format!("lim-a 1 limit {at}\n"));
    // 021-b's first session goes on only once 020-a's limit paused it: 022-c would start
    // when 021-b ends, after the limit.
    let pause = cli.repo.path(".auto-claude/pauses/020-a.json");
    cli.repo
        .script(&format!("b-1 * await {}\n* * done\n", pause.display()));
    let out = account_jobs(&cli, &[]);
    assert_exit(&out, 6);
    assert!(all_completed(&cli.repo, "021-b"), "{}", stderr(&out));
    assert_eq!(run_starts(&cli.repo, "022-c"), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(
        err.matches("Account claude hit its usage limit (spec 020-a)")
            .count(),
        1,
        "said once: {err}"
    );
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["error"]["kind"], "usage_limited", "{json}");
    let message = json["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("022-c") && message.contains("account claude"),
        "{message}"
    );
}

/// A limit is the account's, whichever run met it: a spec an earlier run left paused holds
/// back the other specs of its account as a limit met in this run would.
#[test]
fn a_pause_left_by_an_earlier_run_holds_back_the_other_specs_of_its_account() {
    let cli = one_account("");
    let at = chrono::Utc::now().timestamp() + 3600;
    cli.preset_script(&format!("lim-a 1 limit {at}\n"));
    let first = cli.cmd(&["run", "--spec", "020-a"]).output().unwrap();
    assert_exit(&first, 6);
    let out = cli
        .cmd(&["run", "--jobs", "2", "--json", "020-a", "021-b", "022-c"])
        .env("FAKE_AGENT_TIMES", times_file(&cli.repo))
        .output()
        .unwrap();
    assert_exit(&out, 6);
    for spec in ["021-b", "022-c"] {
        assert_eq!(run_starts(&cli.repo, spec), 0, "{spec}: {}", stderr(&out));
    }
    let err = stderr(&out);
    assert!(
        err.contains(
            "Account claude is paused by the usage limit spec 020-a hit in an earlier run"
        ),
        "{err}"
    );
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let message = json["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("021-b") && message.contains("022-c"),
        "{message}"
    );
}

/// `run.max_wait` bounds `--wait` here too: a pause that outlasts it from the start is not
/// waited out for the specs held back; they are left (exit 6, named) as without `--wait`.
#[test]
fn with_wait_a_pause_past_max_wait_leaves_the_held_back_specs_for_a_later_run() {
    let cli = one_account("[run]\nmax_wait = 5\n");
    cli.preset_script("lim-a 1 limit +40\n");
    let pause = cli.repo.path(".auto-claude/pauses/020-a.json");
    cli.repo
        .script(&format!("b-1 * await {}\n* * done\n", pause.display()));
    let started = std::time::Instant::now();
    let out = account_jobs(&cli, &["--wait"]);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the 40 s pause was waited out: {}",
        stderr(&out)
    );
    assert_exit(&out, 6);
    assert!(all_completed(&cli.repo, "021-b"), "{}", stderr(&out));
    assert_eq!(run_starts(&cli.repo, "022-c"), 0, "{}", stderr(&out));
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let message = json["error"]["message"].as_str().unwrap();
    assert!(message.contains("022-c"), "{message}");
}

#[test]
fn with_wait_the_account_is_checked_by_one_session_after_its_reset_before_the_others_start() {
    let cli = one_account("");
    // The limit resets 3 s after 020-a's first session starts; 020-a waits it out (--wait).
    cli.preset_script("lim-a 1 limit +3\n");
    let pause = cli.repo.path(".auto-claude/pauses/020-a.json");
    cli.repo
        .script(&format!("b-1 * await {}\n* * done\n", pause.display()));
    let out = account_jobs(&cli, &["--wait"]);
    assert_exit(&out, 0);
    for spec in ["020-a", "021-b", "022-c"] {
        assert!(all_completed(&cli.repo, spec), "{spec}: {}", stderr(&out));
    }
    let err = stderr(&out);
    assert_eq!(
        err.matches("Account claude hit its usage limit (spec 020-a)")
            .count(),
        1,
        "{err}"
    );
    // By the agents' clocks: 022-c's first session started only after 020-a's session that
    // checked the account (lim-a again, after the reset) had ended.
    let sessions = sessions(&times_file(&cli.repo));
    let check = sessions
        .iter()
        .find(|s| s.spec == "020-a" && s.chunk == "lim-a")
        .unwrap_or_else(|| panic!("{sessions:?}"));
    let c = sessions.iter().find(|s| s.spec == "022-c").unwrap();
    assert!(c.start > check.end, "{sessions:?}");
    let b_end = sessions
        .iter()
        .filter(|s| s.spec == "021-b")
        .map(|s| s.end)
        .max()
        .unwrap();
    assert!(
        b_end < check.start,
        "021-b ended during the pause: {sessions:?}"
    );
}
