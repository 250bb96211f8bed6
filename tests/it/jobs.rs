//! `runner run --auto-continue --jobs N`: interrupted specs resumed side by side, each by a run
//! of its own in a slot of its own; Ctrl-C drains them all; no spec runs twice.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

const SPECS: [&str; 3] = ["010-a", "011-b", "012-c"];

fn agent() -> String {
    fixture("fake-agent").display().to_string()
}

/// Specs with the two-phase plan (core-a, core-b, polish), each run killed after its first
/// coder session (core-a), one after the other in the default slot (each run switches it to
/// its spec: only the last, 012-c, is still checked out there). Most recent last.
pub(crate) fn interrupted(repo: &TestRepo, specs: &[&str]) {
    interrupted_with(repo, specs, |_, plan| plan.to_string())
}

/// As [`interrupted`], each spec's plan made by `plan(spec, two-phase plan)`.
fn interrupted_with(repo: &TestRepo, specs: &[&str], plan: impl Fn(&str, &str) -> String) {
    repo.script("* * done\n");
    let two_phases = std::fs::read_to_string(fixture("plans/two-phases.json")).unwrap();
    for spec in specs {
        repo.add_spec(spec);
        repo.write_plan(spec, &plan(spec, &two_phases));
        run_killed_at(repo, spec, "after_coder_session");
        // Journal modification times order the specs (most recent first).
        std::thread::sleep(Duration::from_millis(1100));
    }
    // The agent log and pid files from here on are the jobs' only.
    let _ = std::fs::remove_file(repo.tmp.path().join("agent-log"));
    for spec in specs {
        let _ = std::fs::remove_file(repo.spec_dir(spec).join("fake-agent.pid"));
    }
}

fn jobs_cmd(repo: &TestRepo, extra: &[&str]) -> Command {
    let agent = agent();
    let mut args = vec!["run", "--auto-continue", "--agent-command", agent.as_str()];
    args.extend_from_slice(extra);
    let mut cmd = repo.cmd(&args);
    cmd.env("FAKE_AGENT_MEET", repo.tmp.path().join("meet"));
    cmd
}

/// The spec each line of the agent log (in the order the sessions started) belongs to.
fn sessions_by_spec(repo: &TestRepo, specs: &[&str]) -> Vec<String> {
    repo.agent_log()
        .iter()
        .map(|line| {
            let session = line.split(' ').nth(3).unwrap();
            specs
                .iter()
                .find(|s| repo.spec_dir(s).join("sessions").join(session).is_dir())
                .unwrap_or_else(|| panic!("session {session} of no spec"))
                .to_string()
        })
        .collect()
}

fn run_starts(repo: &TestRepo, spec: &str) -> usize {
    repo.events(spec)
        .iter()
        .filter(|e| e["event"] == "run_start")
        .count()
}

fn runs(out: &std::process::Output) -> Vec<Value> {
    let json: Value = serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(out), stderr(out)));
    assert_eq!(json["schema"], 1);
    json["runs"].as_array().unwrap().clone()
}

fn all_completed(repo: &TestRepo, spec: &str) -> bool {
    repo.statuses(spec).iter().all(|(_, s)| s == "completed")
}

#[test]
fn three_interrupted_specs_with_two_jobs_complete_side_by_side_each_in_its_own_slot() {
    let repo = TestRepo::new();
    interrupted(&repo, &SPECS);
    // Every session waits until sessions of two specs are alive at once (60 s, then it fails):
    // run one after the other, the first spec's session would fail.
    repo.script("* * meet 2\n");
    let out = jobs_cmd(&repo, &["--jobs", "2", "--json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let runs = runs(&out);
    let names: Vec<&str> = runs.iter().map(|r| r["spec"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["012-c", "011-b", "010-a"], "most recent first");
    for run in &runs {
        assert_eq!(run["outcome"], "complete", "{run}");
        assert_eq!(
            (run["completed"].as_u64(), run["total"].as_u64()),
            (Some(3), Some(3))
        );
    }
    for spec in SPECS {
        assert!(
            all_completed(&repo, spec),
            "{spec}: {:?}",
            repo.statuses(spec)
        );
        // Each session met another spec's at its first try.
        for (id, _) in repo.statuses(spec) {
            let attempts = repo.chunk(spec, &id)["attempts"].as_array().unwrap().len();
            assert_eq!(attempts, 1, "{spec} {id}: {}", stderr(&out));
        }
    }
    // Each spec in its own slot: 012-c where its branch was checked out, the others in new
    // numbered slots, each holding the spec's branch.
    let worktrees: Vec<String> = runs
        .iter()
        .map(|r| r["worktree"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        worktrees.iter().collect::<BTreeSet<_>>().len(),
        3,
        "{worktrees:?}"
    );
    assert_eq!(
        worktrees[0],
        repo.path(".worktrees/auto-claude").display().to_string()
    );
    for (run, worktree) in runs.iter().zip(&worktrees) {
        let branch = git_in(
            std::path::Path::new(worktree),
            &["rev-parse", "--abbrev-ref", "HEAD"],
        );
        assert_eq!(branch.trim(), run["branch"].as_str().unwrap());
    }
    let numbered: BTreeSet<String> = worktrees[1..].iter().cloned().collect();
    let expected: BTreeSet<String> = ["auto-claude-1", "auto-claude-2"]
        .iter()
        .map(|s| repo.path(&format!(".worktrees/{s}")).display().to_string())
        .collect();
    assert_eq!(numbered, expected);
    // At most two at once: the third spec's sessions all started after the last session of
    // one of the first two (its run started only once that one had ended).
    let order = sessions_by_spec(&repo, &SPECS);
    let first_of = |s: &str| order.iter().position(|x| x == s).unwrap();
    let last_of = |s: &str| order.iter().rposition(|x| x == s).unwrap();
    let third = SPECS.iter().max_by_key(|s| first_of(s)).unwrap();
    assert!(
        SPECS
            .iter()
            .filter(|s| *s != third)
            .any(|s| last_of(s) < first_of(third)),
        "{order:?}"
    );
    // One line stream per job, named by its spec.
    let err = stderr(&out);
    for spec in SPECS {
        assert!(err.contains(&format!("[{spec}] ")), "{err}");
        assert!(
            err.contains(&format!("Resuming interrupted spec {spec} in ")),
            "{err}"
        );
    }
}

#[test]
fn one_job_resumes_the_specs_one_after_the_other_as_before() {
    let repo = TestRepo::new();
    interrupted(&repo, &SPECS);
    let out = jobs_cmd(&repo, &["--jobs", "1", "--json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let runs = runs(&out);
    let names: Vec<&str> = runs.iter().map(|r| r["spec"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["012-c", "011-b", "010-a"]);
    // In this process, in the one slot (switched from spec to spec), never side by side.
    let slot = repo.path(".worktrees/auto-claude").display().to_string();
    assert!(
        runs.iter().all(|r| r["worktree"] == slot.as_str()),
        "{runs:?}"
    );
    let order = sessions_by_spec(&repo, &SPECS);
    let mut blocks = order.clone();
    blocks.dedup();
    assert_eq!(blocks, vec!["012-c", "011-b", "010-a"], "{order:?}");
    assert!(!stderr(&out).contains("[012-c] "), "{}", stderr(&out));
    assert!(!repo.path(".worktrees/auto-claude-1").exists());
}

#[test]
fn ctrl_c_drains_every_job_and_the_next_run_resumes_them() {
    let repo = TestRepo::new();
    interrupted(&repo, &SPECS);
    let starts: BTreeMap<&str, usize> = SPECS.iter().map(|s| (*s, run_starts(&repo, s))).collect();
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
    // Each job was given the Ctrl-C once (a drain, not a kill): its agent finished core-b and
    // the run ended, interrupted, before runner did.
    for spec in &drained {
        assert_eq!(
            repo.chunk(spec, "core-b")["status"],
            "completed",
            "{}",
            stderr(&out)
        );
        assert_eq!(repo.chunk(spec, "polish")["status"], "pending");
        let end = repo
            .events(spec)
            .into_iter()
            .rfind(|e| e["event"] == "run_end")
            .unwrap();
        assert_eq!(end["outcome"], "interrupted", "{end}");
    }
    let waiting = SPECS.iter().find(|s| !drained.contains(s)).unwrap();
    assert_eq!(
        run_starts(&repo, waiting),
        starts[waiting],
        "started after the Ctrl-C"
    );
    assert!(
        !repo.path(".auto-claude/interrupted-sessions.json").exists(),
        "no session was cut off"
    );
    // Nothing lost: the next run picks every spec up where it stopped.
    repo.script("* * done\n");
    let out = jobs_cmd(&repo, &["--jobs", "2", "--json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(runs(&out).len(), 3);
    for spec in SPECS {
        assert!(all_completed(&repo, spec), "{spec}");
        let core_b = repo.chunk(spec, "core-b");
        assert_eq!(
            core_b["attempts"].as_array().unwrap().len(),
            1,
            "{spec}: {core_b}"
        );
    }
}

#[test]
fn a_spec_that_fails_does_not_stop_the_other() {
    let repo = TestRepo::new();
    // 011-b's second chunk has an id of its own, which the agent fails every time.
    interrupted_with(&repo, &["010-a", "011-b"], |spec, plan| match spec {
        "011-b" => plan.replace("core-b", "bad-b"),
        _ => plan.to_string(),
    });
    repo.script("bad-b * fail broken on purpose\n* * done\n");
    let out = jobs_cmd(&repo, &["--jobs", "2"]).output().unwrap();
    assert_exit(&out, 3);
    assert!(all_completed(&repo, "010-a"), "{}", stderr(&out));
    assert_eq!(repo.chunk("011-b", "bad-b")["status"], "failed");
    let err = stderr(&out);
    assert!(err.contains("[011-b] "), "{err}");
    assert!(
        err.contains("runner: spec 011-b: "),
        "the error names its spec: {err}"
    );
}

/// A dangling link where a job's new slot belongs (`.worktrees/auto-claude-1`): the job's run
/// moves it aside, says so and builds; nothing is written through it.
#[test]
fn a_dangling_link_where_a_jobs_slot_belongs_is_moved_aside() {
    let repo = TestRepo::new();
    interrupted(&repo, &["010-a", "011-b"]);
    let target = repo.tmp.path().join("nowhere");
    let slot = repo.path(".worktrees/auto-claude-1");
    std::os::unix::fs::symlink(&target, &slot).unwrap();
    let out = jobs_cmd(&repo, &["--jobs", "2"]).output().unwrap();
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(all_completed(&repo, "010-a"), "{err}");
    assert!(all_completed(&repo, "011-b"), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert!(std::fs::symlink_metadata(&target).is_err());
    assert!(std::fs::symlink_metadata(&slot).unwrap().is_dir());
}

#[test]
fn a_second_runner_with_jobs_never_runs_a_spec_twice() {
    let repo = TestRepo::new();
    interrupted(&repo, &SPECS);
    let starts: BTreeMap<&str, usize> = SPECS.iter().map(|s| (*s, run_starts(&repo, s))).collect();
    repo.script("* * slow 2\n");
    let first = jobs_cmd(&repo, &["--jobs", "2", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the first runner's two jobs at work", || {
        repo.agent_log().len() >= 2
    });
    let second = jobs_cmd(&repo, &["--jobs", "2", "--json"])
        .output()
        .unwrap();
    let first = first.wait_with_output().unwrap();
    assert_exit(&first, 0);
    assert_exit(&second, 0);
    let mut ran: Vec<String> = runs(&first)
        .iter()
        .chain(runs(&second).iter())
        .map(|r| r["spec"].as_str().unwrap().to_string())
        .collect();
    ran.sort();
    assert_eq!(ran, SPECS.to_vec(), "each spec run by one of the two, once");
    for spec in SPECS {
        assert!(all_completed(&repo, spec), "{spec}");
        assert_eq!(run_starts(&repo, spec), starts[spec] + 1, "{spec} ran once");
    }
    // The specs the first runner had at work were busy for the second: not even listed.
    assert!(runs(&second).len() <= 1, "{}", stdout(&second));
}

#[test]
fn jobs_needs_no_spec_no_slot_and_one_or_more() {
    let repo = TestRepo::new();
    interrupted(&repo, &["010-a"]);
    let before = repo.events("010-a").len();
    let agent = agent();
    let cases: [&[&str]; 4] = [
        &["--auto-continue", "--jobs", "0"],
        &["--jobs", "2", "--auto-continue", "--spec", "010-a"],
        &["--jobs", "2", "--auto-continue", "--slot", "x"],
        &["--jobs", "1", "--auto-continue", "--spec", "010-a"],
    ];
    for case in cases {
        let mut args = vec!["run", "--json", "--agent-command", agent.as_str()];
        args.extend_from_slice(case);
        let out = repo.runner(&args);
        assert_exit(&out, 2);
        assert!(
            stderr(&out).contains("--jobs"),
            "{case:?}: {}",
            stderr(&out)
        );
        let error: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(error["error"]["code"], 2);
    }
    // Inside a spec's slot (where --auto-continue means that spec).
    let out = repo
        .cmd(&[
            "run",
            "--auto-continue",
            "--jobs",
            "2",
            "--agent-command",
            agent.as_str(),
        ])
        .current_dir(repo.path(".worktrees/auto-claude"))
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("not inside a spec's slot"),
        "{}",
        stderr(&out)
    );
    assert_eq!(repo.events("010-a").len(), before, "nothing ran");
}

#[test]
fn a_spec_another_runner_took_after_the_list_was_made_is_skipped() {
    let repo = TestRepo::new();
    interrupted(&repo, &SPECS);
    let starts = run_starts(&repo, "010-a");
    repo.script("* * slow 2\n");
    let child = jobs_cmd(&repo, &["--jobs", "2", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // 012-c and 011-b are at work; 010-a (least recent) waits for a free job. Another runner
    // takes it now.
    wait_for("two jobs at work", || repo.agent_log().len() >= 2);
    let mut holder = hold_lock(&repo.spec_dir("010-a").join("run.lock"));
    let out = child.wait_with_output().unwrap();
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_exit(&out, 0);
    let names: Vec<String> = runs(&out)
        .iter()
        .map(|r| r["spec"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, vec!["012-c", "011-b"]);
    assert!(
        stderr(&out).contains("Skipped spec 010-a: another runner is running it"),
        "{}",
        stderr(&out)
    );
    assert_eq!(run_starts(&repo, "010-a"), starts, "010-a was not run");
    assert!(!all_completed(&repo, "010-a"));
}

#[test]
fn a_second_ctrl_c_stops_every_job_at_once() {
    let repo = TestRepo::new();
    interrupted(&repo, &SPECS[..2]);
    // Agents that ignore SIGTERM: only a second Ctrl-C (forwarded once more) ends them.
    repo.script("* * stubborn\n");
    let child = jobs_cmd(&repo, &["--jobs", "2", "--drain-timeout", "120"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("both agents at work", || {
        SPECS[..2]
            .iter()
            .all(|s| repo.spec_dir(s).join("fake-agent.pid").exists())
    });
    // SAFETY: signals to the runner this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    std::thread::sleep(Duration::from_millis(500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 130);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "not the 120 s drain"
    );
    let err = stderr(&out);
    for spec in &SPECS[..2] {
        let stopped = err
            .lines()
            .filter(|l| l.starts_with(&format!("[{spec}] ")))
            .filter(|l| l.contains("when you stopped it with a second Ctrl-C"))
            .count();
        assert_eq!(stopped, 1, "{spec}: {err}");
    }
    // Both cut-off sessions run again next time.
    let file: Value =
        serde_json::from_str(&repo.read(".auto-claude/interrupted-sessions.json")).unwrap();
    assert_eq!(file["sessions"].as_array().unwrap().len(), 2, "{file}");
}

#[test]
fn a_spec_a_usage_limit_still_pauses_is_skipped_with_exit_6_and_any_other_error_outranks_it() {
    let repo = TestRepo::new();
    interrupted_with(&repo, &SPECS, |spec, plan| match spec {
        "011-b" => plan.replace("core-b", "bad-b"),
        _ => plan.to_string(),
    });
    // The limit of another account (claude's: these specs run another agent), so the
    // others are not held back with it (jobs_many.rs has the account's own rule).
    let until = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let pause = serde_json::json!({"until": until, "reason": "limit", "preset": "claude",
        "set_at": chrono::Utc::now().to_rfc3339()});
    repo.write(".auto-claude/pauses/012-c.json", &pause.to_string());
    let starts = run_starts(&repo, "012-c");
    // Only 010-a to resume besides the paused one: exit 6, and the pause is said.
    repo.script("* * done\n");
    let mut hold = hold_lock(&repo.spec_dir("011-b").join("run.lock"));
    let out = jobs_cmd(&repo, &["--jobs", "2", "--json"])
        .output()
        .unwrap();
    hold.kill().unwrap();
    hold.wait().unwrap();
    assert_exit(&out, 6);
    assert!(
        stderr(&out).contains("spec 012-c is paused by a usage limit until"),
        "{}",
        stderr(&out)
    );
    assert!(all_completed(&repo, "010-a"));
    // 011-b fails for good (exit 3): that error outranks the pause.
    repo.script("bad-b * fail broken on purpose\n* * done\n");
    let out = jobs_cmd(&repo, &["--jobs", "2", "--json"])
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let error: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(error["error"]["kind"], "needs_human", "{error}");
    assert_eq!(
        run_starts(&repo, "012-c"),
        starts,
        "the paused spec never ran"
    );
}

#[test]
fn a_spec_another_runner_takes_between_the_check_and_the_jobs_lock_is_skipped_not_busy() {
    let repo = TestRepo::new();
    interrupted(&repo, &["010-a"]);
    let starts = run_starts(&repo, "010-a");
    let log = repo.tmp.path().join("failpoints.log");
    // The runner pauses after it found 010-a free and before its job takes the lock: another
    // runner takes it in that instant (two `run --jobs` started together do this by chance).
    let child = jobs_cmd(&repo, &["--jobs", "2", "--json"])
        .env("RUNNER_FAILPOINTS", "jobs_job_checked~3000")
        .env("RUNNER_FAILPOINT_LOG", &log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the check of 010-a done", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains(" jobs_job_checked"))
    });
    let mut holder = hold_lock(&repo.spec_dir("010-a").join("run.lock"));
    let out = child.wait_with_output().unwrap();
    holder.kill().unwrap();
    holder.wait().unwrap();
    // What a check a moment later would have said: skipped, not a busy error (exit 4).
    assert_exit(&out, 0);
    assert!(runs(&out).is_empty(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("Skipped spec 010-a: another runner is running it"),
        "{}",
        stderr(&out)
    );
    assert_eq!(run_starts(&repo, "010-a"), starts, "010-a was not run");
}

#[test]
fn verbose_reaches_each_job_as_it_reaches_a_single_run() {
    let repo = TestRepo::new();
    let specs = ["010-a", "011-b"];
    interrupted(&repo, &specs);
    let out = jobs_cmd(&repo, &["--jobs", "2", "--json"])
        .arg("-vv")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(runs(&out).len(), 2);
    // Each job's own debug lines (its agent sessions started), shown under its spec.
    let err = stderr(&out);
    for spec in specs {
        assert!(
            err.lines()
                .any(|l| l.contains(&format!("[{spec}]")) && l.contains("started child")),
            "{spec}: {err}"
        );
    }
}

#[test]
fn every_line_of_a_jobs_multi_line_progress_line_carries_its_spec() {
    let repo = TestRepo::new();
    let specs = ["010-a", "011-b"];
    interrupted(&repo, &specs);
    // core-b's first attempt reports done without its file: its check fails, and the line of
    // that failure goes on over more lines (what the check printed, where its log is).
    repo.script("core-b 1 empty-done\n* * done\n");
    let out = jobs_cmd(&repo, &["--jobs", "2", "--json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let err = stderr(&out);
    for spec in specs {
        let lines: Vec<&str> = err.lines().collect();
        let failed = lines
            .iter()
            .position(|l| l.starts_with(&format!("[{spec}]   ✗ core-b attempt 1 of 3 failed")))
            .unwrap_or_else(|| panic!("{spec}: no failure line in\n{err}"));
        // The line after it is the same event's: its own spec's, not left bare.
        assert!(
            lines[failed + 1].starts_with(&format!("[{spec}]     It printed nothing")),
            "{spec}: {err}"
        );
    }
    assert!(
        err.lines()
            .all(|l| l.starts_with('[') || l.starts_with("Resuming ")),
        "{err}"
    );
}
