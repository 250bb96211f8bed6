//! What the listings show by default and what they offer: merged and discarded specs left out
//! of `status` and the pickers unless `--all`; `runs` lists agent runs (lifecycle records with
//! `--all`), `--limit N`; `show` alone shows the latest run; columns fit long names; an empty
//! repository points at `runner new`; a complete spec offers review and merge, never
//! "Continue"; attempt numbers count failed attempts against `run.max_attempts`.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::common::*;

fn agent() -> String {
    fixture("fake-agent").display().to_string()
}

fn json(out: &std::process::Output) -> Value {
    assert_exit(out, 0);
    serde_json::from_str(&stdout(out)).unwrap()
}

fn names(v: &Value, list: &str, field: &str) -> Vec<String> {
    v[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[field].as_str().unwrap().to_string())
        .collect()
}

/// 001 built and merged, 002 built and discarded, 003 planned.
fn three_specs() -> TestRepo {
    let repo = repo_with_fixture_plan("001-merged");
    add_fixture_spec(&repo, "002-discarded");
    add_fixture_spec(&repo, "003-open");
    repo.script("* * done\n");
    assert_exit(&repo.run_spec("001-merged", &[]), 0);
    assert_exit(&repo.runner(&["merge", "--spec", "001-merged", "--yes"]), 0);
    assert_exit(&repo.run_spec("002-discarded", &[]), 0);
    assert_exit(
        &repo.runner(&["discard", "--spec", "002-discarded", "--yes"]),
        0,
    );
    repo
}

#[test]
fn merged_and_discarded_specs_are_hidden_unless_all() {
    let repo = three_specs();
    let shown = json(&repo.runner(&["status", "--json"]));
    assert_eq!(names(&shown, "specs", "spec"), ["003-open"], "{shown}");
    let text = stdout(&repo.runner(&["status"]));
    assert!(
        !text.contains("001-merged") && !text.contains("002-discarded"),
        "{text}"
    );
    assert!(
        text.contains("--all"),
        "the hidden ones are mentioned: {text}"
    );
    let all = json(&repo.runner(&["status", "--all", "--json"]));
    let statuses: Vec<(String, String)> = all["specs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["spec"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("001-merged".to_string(), "merged".to_string()),
            ("002-discarded".to_string(), "discarded".to_string()),
            ("003-open".to_string(), "planned".to_string()),
        ]
    );
    // Named, a hidden spec is shown.
    let one = json(&repo.runner(&["status", "--spec", "001", "--json"]));
    assert_eq!(names(&one, "specs", "spec"), ["001-merged"]);
    // A picker's list (no --spec, several specs, nobody to ask) leaves them out too.
    let out = runner_command()
        .args(["review"])
        .current_dir(&repo.root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(err.contains("003-open"), "{err}");
    assert!(
        !err.contains("001-merged") && !err.contains("002-discarded"),
        "{err}"
    );
}

#[test]
fn runs_lists_agent_runs_unless_all_and_show_alone_shows_the_latest() {
    let repo = three_specs();
    let runs = json(&repo.runner(&["runs", "--json"]));
    let kinds = names(&runs, "runs", "kind");
    assert_eq!(kinds, ["run", "run"], "{runs}");
    let all = json(&repo.runner(&["runs", "--all", "--json"]));
    let mut kinds = names(&all, "runs", "kind");
    kinds.sort();
    assert_eq!(kinds, ["discard", "merge", "run", "run"], "{all}");
    let limited = json(&repo.runner(&["runs", "--all", "--limit", "1", "--json"]));
    assert_eq!(names(&limited, "runs", "kind"), ["discard"], "{limited}");
    let text = stdout(&repo.runner(&["runs"]));
    assert!(
        text.lines()
            .skip(1)
            .all(|l| l.ends_with(" run") && !l.contains(" merged ")),
        "{text}"
    );
    // `show` alone: the latest run `runs` lists.
    let latest = json(&repo.runner(&["show", "--json"]));
    assert_eq!(latest["run_id"], runs["runs"][0]["run_id"], "{latest}");
    let text = stdout(&repo.runner(&["show"]));
    assert!(
        text.starts_with(&format!(
            "Run {} (run) of spec 002-discarded",
            runs["runs"][0]["run_id"].as_str().unwrap()
        )),
        "{text}"
    );
}

#[test]
fn status_columns_fit_a_long_spec_name() {
    let long = format!(
        "001-{}",
        "a-very-long-name-".repeat(4).trim_end_matches('-')
    );
    assert!(long.len() >= 60, "{}", long.len());
    let repo = repo_with_fixture_plan(&long);
    add_fixture_spec(&repo, "002-b");
    let text = stdout(&repo.runner(&["status"]));
    let column = |spec: &str| {
        let line = text
            .lines()
            .find(|l| l.starts_with(spec))
            .unwrap_or_else(|| panic!("{spec}: {text}"));
        line.find("planned").unwrap()
    };
    assert_eq!(column(&long), column("002-b"), "{text}");
    assert!(column(&long) > long.len(), "{text}");
}

#[test]
fn status_in_a_repository_with_no_specs_suggests_runner_new() {
    let repo = TestRepo::new();
    let out = repo.runner(&["status"]);
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("runner new"), "{}", stdout(&out));
}

#[test]
fn a_complete_spec_offers_review_and_merge_never_continue() {
    let repo = repo_with_fixture_plan("001-done");
    repo.script("* * done\n");
    assert_exit(&repo.run_spec("001-done", &[]), 0);
    // No terminal: the refusal names review, merge and discard, not continue.
    let out = runner_command()
        .args(["run", "--spec", "001-done", "--agent-command", &agent()])
        .current_dir(&repo.root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        !err.contains("continue:") && !err.contains("--auto-continue"),
        "{err}"
    );
    let first_hint = err.lines().find(|l| l.contains("hint:")).unwrap_or("");
    assert!(
        first_hint.contains("runner review --spec 001-done"),
        "{err}"
    );
    assert!(err.contains("runner merge --spec 001-done"), "{err}");
    // On a terminal: the choices, Review first.
    use expectrl::Expect;
    use expectrl::session::OsSession;
    let mut cmd = runner_command();
    cmd.args(["run", "--spec", "001-done", "--agent-command", &agent()])
        .current_dir(&repo.root)
        .env("TERM", "xterm");
    let mut s = OsSession::spawn(cmd).unwrap();
    s.set_expect_timeout(Some(Duration::from_secs(20)));
    let found = s.expect("Discard").unwrap();
    let screen = plain(&String::from_utf8_lossy(found.before()));
    assert!(!screen.contains("Continue"), "{screen}");
    assert!(
        screen.contains("> Review"),
        "Review is the default: {screen}"
    );
    s.send("\x1b").unwrap();
    let _ = s.expect(expectrl::Eof);
    // status says what to do with it.
    let text = stdout(&repo.runner(&["status"]));
    assert!(text.contains("runner review --spec 001-done"), "{text}");
    assert!(text.contains("runner merge --spec 001-done"), "{text}");
}

/// `text` without its terminal escapes (`ESC [ … letter`).
fn plain(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn attempt_numbers_count_failed_attempts_against_the_maximum() {
    let repo = repo_with_fixture_plan("001-att");
    repo.write_config("[run]\nmax_attempts = 2\n");
    // Attempt 1 interrupted (Ctrl-C), then two failures: "attempt 1 of 2", "attempt 2 of 2".
    crate::continue_command::stopped_by(&repo, "001-att", libc::SIGINT);
    repo.script("core-a * fail nope\n");
    let out = repo.run_spec("001-att", &[]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains("core-a: Build part A (attempt 1 of 2; 1 interrupted, not counted)"),
        "{err}"
    );
    assert!(
        err.contains("core-a attempt 1 of 2 failed (1 interrupted, not counted): "),
        "{err}"
    );
    assert!(
        err.contains("core-a attempt 2 of 2 failed (1 interrupted, not counted): "),
        "{err}"
    );
    assert!(!err.contains("attempt 3"), "{err}");
    assert!(
        err.contains("failed 2 times (run.max_attempts = 2)"),
        "{err}"
    );
}

#[test]
fn a_discarded_spec_is_not_shown_as_the_only_spec_nor_continued_by_auto_continue() {
    let repo = repo_with_fixture_plan("001-gone");
    crate::continue_command::stopped_by(&repo, "001-gone", libc::SIGINT);
    assert_exit(&repo.runner(&["discard", "--spec", "001-gone", "--yes"]), 0);
    let shown = json(&repo.runner(&["status", "--json"]));
    assert_eq!(shown["specs"], serde_json::json!([]), "{shown}");
    assert_eq!(shown["hidden"], 1, "{shown}");
    let text = stdout(&repo.runner(&["status"]));
    assert!(
        text.contains("1 merged or discarded spec not shown"),
        "{text}"
    );
    // `run --auto-continue` without --spec resumes interrupted specs, not a discarded one.
    let out = repo.runner(&["run", "--auto-continue", "--agent-command", &agent()]);
    assert_exit(&out, 0);
    assert!(
        repo.statuses("001-gone")
            .iter()
            .all(|(_, s)| s == "pending"),
        "{:?}\n{}",
        repo.statuses("001-gone"),
        stderr(&out)
    );
    // Named, it is shown.
    let named = json(&repo.runner(&["status", "--spec", "001", "--json"]));
    assert_eq!(named["specs"][0]["status"], "discarded", "{named}");
}
