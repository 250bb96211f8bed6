//! Detection of unfinished work for `runner new` (issue 13, `ops::detect`), over real
//! repositories with specs in every state: only unfinished specs are candidates, with the
//! status `runner status` gives them; keywords stored or computed (from `task_description` or
//! `spec.md`); identical descriptions; the time bound; hostile files; and the command each
//! candidate gives really continues it.

use std::path::Path;
use std::time::{Duration, SystemTime};

use chrono::Utc;
use runner::ops::detect::{Candidate, ContinueWith, DETECTION_BOUND, Detection, detect};
use runner::store::Workspace;
use serde_json::Value;

use crate::common::*;

/// The two-phase fixture plan with its three chunks' statuses set (and `extra` top-level
/// keys).
fn plan_with(statuses: [&str; 3], extra: &[(&str, Value)]) -> String {
    let text = std::fs::read_to_string(fixture("plans/two-phases.json")).unwrap();
    let mut plan: Value = serde_json::from_str(&text).unwrap();
    let mut i = 0;
    for phase in plan["phases"].as_array_mut().unwrap() {
        for chunk in phase["subtasks"].as_array_mut().unwrap() {
            chunk["status"] = statuses[i].into();
            i += 1;
        }
    }
    for (k, v) in extra {
        plan[*k] = v.clone();
    }
    serde_json::to_string_pretty(&plan).unwrap()
}

/// A spec made as `runner new` makes it: `spec.md` and `requirements.json` with the
/// description and its keywords.
fn new_spec(repo: &TestRepo, name: &str, description: &str) {
    repo.write(&format!(".auto-claude/specs/{name}/spec.md"), description);
    let keywords = runner::policy::similar::keywords(description);
    let req = serde_json::json!({
        "task_description": description,
        "created_at": "2026-11-01T00:00:00Z",
        "runner_keywords": keywords,
    });
    repo.write(
        &format!(".auto-claude/specs/{name}/requirements.json"),
        &req.to_string(),
    );
}

/// Every file and folder of the spec (and the folder itself) last modified `days` ago.
fn age(repo: &TestRepo, name: &str, days: u64) {
    age_at(
        repo,
        name,
        SystemTime::now() - Duration::from_secs(days * 86_400),
    );
}

/// Every file and folder of the spec (and the folder itself) last modified at `t`.
fn age_at(repo: &TestRepo, name: &str, t: SystemTime) {
    fn walk(p: &Path, t: SystemTime) {
        if p.is_dir() {
            for e in std::fs::read_dir(p).unwrap() {
                walk(&e.unwrap().path(), t);
            }
            std::fs::File::open(p).unwrap().set_modified(t).unwrap();
        } else {
            let f = std::fs::File::options().write(true).open(p).unwrap();
            f.set_modified(t).unwrap();
        }
    }
    walk(&repo.spec_dir(name), t);
}

fn detect_in(repo: &TestRepo, description: &str) -> Detection {
    let ws = Workspace::open(&repo.root).unwrap();
    detect(&ws, description, Utc::now(), Duration::from_secs(30))
}

fn names(d: &Detection) -> Vec<&str> {
    d.candidates.iter().map(|c| c.spec.as_str()).collect()
}

/// `runner status --json`'s line for `spec`.
fn status_of(repo: &TestRepo, spec: &str) -> Value {
    let out = repo.runner(&["status", "--all", "--json"]);
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    v["specs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["spec"] == spec)
        .unwrap_or_else(|| panic!("{spec} not in status"))
        .clone()
}

const LOGIN: &str = "Add JWT login to the REST API";

#[test]
fn only_unfinished_specs_are_candidates_with_the_status_runner_status_gives() {
    let repo = TestRepo::new();
    // The same feature in many states, and an unrelated one.
    let states: [(&str, Option<String>); 10] = [
        ("001-planned", Some(plan_with(["pending"; 3], &[]))),
        (
            "002-interrupted",
            Some(plan_with(["completed", "in_progress", "pending"], &[])),
        ),
        ("003-complete", Some(plan_with(["completed"; 3], &[]))),
        (
            "004-merged",
            Some(plan_with(
                ["completed", "pending", "pending"],
                &[("merged", Value::Bool(true))],
            )),
        ),
        ("005-invalid", Some("{not a plan".to_string())),
        ("006-not-planned", None),
        (
            "007-failed",
            Some(plan_with(["completed", "failed", "pending"], &[])),
        ),
        (
            "008-exhausted",
            Some(plan_with(
                ["completed", "pending", "pending"],
                &[("budget_exhausted", Value::Bool(true))],
            )),
        ),
        ("009-running", Some(plan_with(["pending"; 3], &[]))),
        (
            "010-in-progress",
            Some(plan_with(["completed", "pending", "pending"], &[])),
        ),
    ];
    for (name, plan) in &states {
        new_spec(&repo, name, "Implement JWT login for the REST API");
        if let Some(plan) = plan {
            repo.write_plan(name, plan);
        }
    }
    new_spec(&repo, "011-css", "Restyle the billing page");
    // Paused by a usage limit for two more hours.
    new_spec(&repo, "012-paused", "Implement JWT login for the REST API");
    repo.write_plan("012-paused", &plan_with(["pending"; 3], &[]));
    let until = Utc::now() + chrono::Duration::hours(2);
    repo.write(
        ".auto-claude/pauses/012-paused.json",
        &serde_json::json!({
            "until": until.to_rfc3339(),
            "reason": "usage limit",
            "preset": "claude",
            "set_at": Utc::now().to_rfc3339(),
        })
        .to_string(),
    );
    let mut held = hold_lock(&repo.spec_dir("009-running").join("run.lock"));

    // Every spec scores the same (Jaccard 1, one hour old): ties go to the most recent, then
    // the name; the finished, broken and running ones are never candidates.
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    for name in states.iter().map(|(n, _)| *n).chain(["012-paused"]) {
        age_at(&repo, name, hour_ago);
    }
    let d = detect_in(&repo, LOGIN);
    assert!(!d.timed_out);
    assert_eq!(d.scanned, 12);
    assert!(d.identical.is_none());
    assert_eq!(
        names(&d),
        ["001-planned", "002-interrupted", "006-not-planned"],
        "{d:#?}"
    );
    let words: Vec<&str> = d.candidates.iter().map(|c| c.status.as_str()).collect();
    assert_eq!(words, ["planned", "interrupted", "not_planned"]);
    for c in &d.candidates {
        // The status, chunks and cost are `runner status`'s.
        let s = status_of(&repo, &c.spec);
        assert_eq!(c.status, s["status"], "{}", c.spec);
        assert_eq!(c.chunks.completed, s["chunks"]["completed"]);
        assert_eq!(c.chunks.total, s["chunks"]["total"]);
        assert_eq!(c.spent_usd, s["spent"]["usd"]);
        assert_eq!(c.description, "Implement JWT login for the REST API");
        assert_eq!(c.score, 1.0);
        let at = chrono::DateTime::parse_from_rfc3339(&c.last_activity).unwrap();
        assert_eq!(
            at.timestamp(),
            chrono::DateTime::<Utc>::from(hour_ago).timestamp()
        );
        assert!(c.last_activity.ends_with('Z'), "{}", c.last_activity);
    }

    // Each other unfinished kind is a candidate when it is the recent one (the others, 20
    // days old, score 0.2).
    let unfinished = [
        "001-planned",
        "002-interrupted",
        "006-not-planned",
        "007-failed",
        "008-exhausted",
        "010-in-progress",
        "012-paused",
    ];
    for (name, word) in [
        ("007-failed", "failed"),
        ("008-exhausted", "budget_exhausted"),
        ("010-in-progress", "in_progress"),
        ("012-paused", "paused"),
    ] {
        for other in unfinished.iter().filter(|n| **n != name) {
            age(&repo, other, 20);
        }
        age(&repo, name, 0);
        let d = detect_in(&repo, LOGIN);
        assert_eq!(names(&d), [name], "{d:#?}");
        assert_eq!(d.candidates[0].status, word);
        assert_eq!(word, status_of(&repo, name)["status"]);
    }
    // Fresh but held by a live run, complete, merged or invalid: never a candidate.
    for name in &unfinished {
        age(&repo, name, 20);
    }
    for name in ["003-complete", "004-merged", "005-invalid", "009-running"] {
        age(&repo, name, 0);
    }
    let d = detect_in(&repo, LOGIN);
    assert!(d.candidates.is_empty(), "{d:#?}");
    assert_eq!(status_of(&repo, "009-running")["status"], "running");
    age(&repo, "012-paused", 0);
    // Best first: two days old scores 0.85, below the fresh one.
    age(&repo, "001-planned", 2);
    let d = detect_in(&repo, LOGIN);
    assert_eq!(names(&d), ["012-paused", "001-planned"], "{d:#?}");
    assert_eq!(d.candidates[1].score, 0.85);
    held.kill().unwrap();
    held.wait().unwrap();
}

#[test]
fn specs_without_stored_keywords_get_them_from_their_description_or_spec_md() {
    let repo = TestRepo::new();
    // Auto-Claude's requirements.json: a description, no runner keywords.
    repo.write(
        ".auto-claude/specs/001-auto-claude/requirements.json",
        r#"{"task_description": "JWT login for the api", "workflow_type": "feature", "services_involved": ["backend"]}"#,
    );
    // A hand-made spec: spec.md only.
    repo.write(
        ".auto-claude/specs/002-by-hand/spec.md",
        "# OAuth login\n\nLogin with JWT sessions on the REST endpoint.\n",
    );
    // Stored keywords win over the text: this one's text matches, its keywords do not.
    repo.write(
        ".auto-claude/specs/003-stored/requirements.json",
        r#"{"task_description": "JWT login for the api", "runner_keywords": ["billing", "invoice"]}"#,
    );
    let d = detect_in(&repo, LOGIN);
    let mut found = names(&d);
    found.sort();
    assert_eq!(found, ["001-auto-claude", "002-by-hand"], "{d:#?}");
    let by_hand = d
        .candidates
        .iter()
        .find(|c| c.spec == "002-by-hand")
        .unwrap();
    assert_eq!(by_hand.description, "# OAuth login");
    assert_eq!(by_hand.status, "not_planned");
    // Nothing like it: nothing.
    assert!(
        detect_in(&repo, "Export invoices as PDF")
            .candidates
            .is_empty()
    );
    assert!(detect_in(&repo, "").candidates.is_empty());
}

#[test]
fn an_identical_description_is_found_whatever_its_score() {
    let repo = TestRepo::new();
    new_spec(&repo, "001-old", "Add JWT login to the REST API");
    repo.write_plan(
        "001-old",
        &plan_with(["completed", "in_progress", "pending"], &[]),
    );
    new_spec(&repo, "002-older", "add jwt login to the rest api");
    new_spec(&repo, "003-done", "Add JWT login to the REST API");
    repo.write_plan("003-done", &plan_with(["completed"; 3], &[]));
    age(&repo, "001-old", 30);
    age(&repo, "002-older", 60);
    // Trimmed and case-insensitive; the finished one is never it; of two, the most recent.
    let d = detect_in(&repo, "  ADD JWT LOGIN TO THE REST API \n");
    assert!(d.candidates.is_empty(), "old: below the threshold: {d:#?}");
    let identical = d.identical.expect("identical");
    assert_eq!(identical.spec, "001-old");
    assert_eq!(identical.status, "interrupted");
    assert_eq!(identical.score, 0.2);
    assert_eq!(identical.chunks.completed, 1);
    assert_eq!(identical.chunks.total, 3);
    // Not identical: another word.
    assert!(
        detect_in(&repo, "Add JWT login to the REST APIs")
            .identical
            .is_none()
    );
    // The most recent identical one is unfinished: it is both a candidate and identical.
    age(&repo, "002-older", 0);
    let d = detect_in(&repo, LOGIN);
    assert_eq!(names(&d), ["002-older"]);
    assert_eq!(d.identical.map(|c| c.spec), Some("002-older".into()));
}

#[test]
fn detection_past_its_bound_gives_nothing_and_says_so() {
    let repo = TestRepo::new();
    for i in 0..20 {
        new_spec(&repo, &format!("{i:03}-login"), LOGIN);
    }
    let ws = Workspace::open(&repo.root).unwrap();
    let d = detect(&ws, LOGIN, Utc::now(), Duration::ZERO);
    assert!(d.timed_out);
    assert!(d.candidates.is_empty());
    assert!(d.identical.is_none());
    // Within the bound: found.
    let d = detect(&ws, LOGIN, Utc::now(), DETECTION_BOUND * 50);
    assert!(!d.timed_out);
    assert_eq!(d.candidates.len(), 3);
    assert!(d.identical.is_some());
}

#[test]
fn hostile_spec_files_are_read_bounded_and_links_out_of_the_repository_are_not_followed() {
    let repo = TestRepo::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("spec.md"), LOGIN).unwrap();
    std::fs::write(
        outside.path().join("requirements.json"),
        format!(r#"{{"task_description": "{LOGIN}"}}"#),
    )
    .unwrap();
    // A spec.md and a requirements.json linked outside: not read.
    let linked = repo.spec_dir("001-linked-files");
    std::fs::create_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink(outside.path().join("spec.md"), linked.join("spec.md")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("requirements.json"),
        linked.join("requirements.json"),
    )
    .unwrap();
    // A spec folder linked outside the repository: refused, not read.
    std::os::unix::fs::symlink(outside.path(), repo.spec_dir("002-linked-folder")).unwrap();
    // Not UTF-8, and huge: read lossily, its beginning only.
    let mut text = b"JWT login \xff\xfe REST API\n".to_vec();
    text.extend(std::iter::repeat_n(b'y', 50_000_000));
    repo.write(".auto-claude/specs/003-huge/spec.md", "");
    std::fs::write(repo.spec_dir("003-huge").join("spec.md"), &text).unwrap();
    // A FIFO where requirements.json belongs: never waited on.
    repo.write(".auto-claude/specs/004-fifo/spec.md", LOGIN);
    let fifo = repo.spec_dir("004-fifo").join("requirements.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let started = std::time::Instant::now();
    let d = detect_in(&repo, LOGIN);
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut found = names(&d);
    found.sort();
    assert_eq!(found, ["003-huge", "004-fifo"], "{d:#?}");
    assert_eq!(d.identical.map(|c| c.spec), Some("004-fifo".into()));
    let huge = d.candidates.iter().find(|c| c.spec == "003-huge").unwrap();
    assert_eq!(huge.description, "JWT login \u{FFFD}\u{FFFD} REST API");
}

/// Run the candidate's command (with the fake agent) and check the spec is complete.
fn continue_with(repo: &TestRepo, c: &Candidate) {
    let words = shell_words::split(&c.continue_command).unwrap();
    assert_eq!(words[0], "runner");
    let agent = fixture("fake-agent").display().to_string();
    let mut args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    args.extend(["--agent-command", agent.as_str()]);
    let out = repo.runner(&args);
    assert_exit(&out, 0);
    assert!(
        repo.statuses(&c.spec).iter().all(|(_, s)| s == "completed"),
        "{}: {:?}\n{}",
        c.continue_command,
        repo.statuses(&c.spec),
        stderr(&out)
    );
}

#[test]
fn each_candidates_command_continues_it() {
    let repo = TestRepo::new();
    new_spec(&repo, "001-not-planned", LOGIN);
    new_spec(&repo, "002-planned", LOGIN);
    repo.write_plan("002-planned", &plan_with(["pending"; 3], &[]));
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "specs"]);
    // A run killed mid-way: interrupted.
    new_spec(&repo, "003-killed", LOGIN);
    repo.write_plan("003-killed", &plan_with(["pending"; 3], &[]));
    run_killed_at(&repo, "003-killed", "after_commit@2");
    let d = detect_in(&repo, LOGIN);
    assert_eq!(d.candidates.len(), 3, "{d:#?}");
    let by = |name: &str| {
        d.candidates
            .iter()
            .find(|c| c.spec == name)
            .unwrap()
            .clone()
    };
    let (fresh, planned, killed) = (by("001-not-planned"), by("002-planned"), by("003-killed"));
    // The one continue command for each; how `--run` continues it is `continue_with`.
    assert_eq!(
        fresh.continue_command,
        "runner run --spec 001-not-planned --auto-continue"
    );
    // Planned but never run: resume would have nothing to rebuild from.
    assert_eq!(
        planned.continue_command,
        "runner run --spec 002-planned --auto-continue"
    );
    assert_eq!(
        killed.continue_command,
        "runner run --spec 003-killed --auto-continue"
    );
    assert_eq!(killed.status, "interrupted");
    assert_eq!(
        [
            fresh.continue_with,
            planned.continue_with,
            killed.continue_with
        ],
        [ContinueWith::Run, ContinueWith::Run, ContinueWith::Resume]
    );
    for c in [&killed, &planned, &fresh] {
        continue_with(&repo, c);
    }
    // Finished now: no candidate left.
    let d = detect_in(&repo, LOGIN);
    assert!(d.candidates.is_empty() && d.identical.is_none(), "{d:#?}");
}

#[test]
fn a_discarded_spec_is_not_a_candidate_until_it_runs_again() {
    let repo = TestRepo::new();
    new_spec(&repo, "001-login", LOGIN);
    repo.write_plan("001-login", &plan_with(["pending"; 3], &[]));
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "spec"]);
    run_killed_at(&repo, "001-login", "after_commit@2");
    assert_eq!(names(&detect_in(&repo, LOGIN)), ["001-login"]);
    assert_exit(
        &repo.runner(&["discard", "--spec", "001-login", "--yes"]),
        0,
    );
    // Its plan is all pending again, and its work was thrown away: `status` says discarded.
    assert_eq!(status_of(&repo, "001-login")["status"], "discarded");
    let d = detect_in(&repo, LOGIN);
    assert!(d.candidates.is_empty() && d.identical.is_none(), "{d:#?}");
    // Run again (and killed): a candidate again.
    run_killed_at(&repo, "001-login", "after_commit@1");
    assert_eq!(names(&detect_in(&repo, LOGIN)), ["001-login"]);
}

#[test]
fn a_spec_whose_status_cannot_be_read_hides_no_other() {
    let repo = TestRepo::new();
    new_spec(&repo, "001-good", LOGIN);
    new_spec(&repo, "002-broken", LOGIN);
    // Its run lock is a folder: its status cannot be judged (an I/O error).
    std::fs::create_dir_all(repo.spec_dir("002-broken").join("run.lock")).unwrap();
    let d = detect_in(&repo, LOGIN);
    assert_eq!(names(&d), ["001-good"], "{d:#?}");
    assert_eq!(d.identical.map(|c| c.spec), Some("001-good".into()));
}

#[test]
fn one_shared_common_word_is_not_similar_work_but_a_synonym_of_the_feature_is() {
    // Issue 27: "test" pulled in its whole synonym group on both sides, so a description that
    // shares only that word with three unrelated specs scored 0.60 against each, and `runner
    // new` without a terminal stopped a script with exit 2. A group counts once.
    let repo = TestRepo::new();
    for unrelated in [
        "Fix the flaky test",
        "Pytest fixtures cleanup",
        "Serializer unittest rewrite",
    ] {
        assert_exit(&repo.runner(&["new", unrelated, "-N"]), 0);
    }
    let out = repo.runner(&["new", "Verbose output test", "--json"]);
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["created"], "004-verbose-output-test", "{v}");
    assert_eq!(v["candidates"], serde_json::json!([]), "{v}");

    // The same feature in other words (through the auth and api groups) still matches: exit 2,
    // the earlier spec its candidate, nothing created.
    let first = "Add JWT auth to the FastAPI app";
    assert_exit(&repo.runner(&["new", first, "-N"]), 0);
    let out = repo.runner(&[
        "new",
        "Implement login for the REST endpoints of the app",
        "--json",
    ]);
    assert_exit(&out, 2);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["created"], Value::Null, "{v}");
    let specs: Vec<&str> = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["spec"].as_str().unwrap())
        .collect();
    assert_eq!(specs, ["005-add-jwt-auth-to-the-fastapi-app"], "{v}");
}
