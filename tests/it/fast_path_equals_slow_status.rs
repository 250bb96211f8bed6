//! The fast `status` and the quiet `recover --all` (issue 10) give exactly the slow paths'
//! answers: the light plan read agrees with the full parser on every plan we know (or leaves
//! the plan to it), `status` keeps its order and its error texts, and `recover --all` writes
//! nothing where nothing is to be done while still recovering the spec that needs it.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use runner::plan::summary::{differences, summarize};
use runner::plan::{Status, parse_plan};
use serde_json::Value;

use crate::common::*;

/// The light read says "not sure" or agrees with the full parser; `true` if it answered.
#[track_caller]
fn light_agrees(path: &Path, bytes: &[u8]) -> bool {
    let full = parse_plan(path, bytes);
    let Some(light) = summarize(bytes) else {
        return false;
    };
    let full = full.unwrap_or_else(|e| panic!("the light read took a broken plan: {e}"));
    let diff = differences(&light, &full);
    assert!(diff.is_empty(), "{}: {diff:?}", path.display());
    true
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            json_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "json") {
            out.push(path);
        }
    }
}

/// Plans written by real runs: attempt records, recorded commits, a chunk in progress.
fn plans_from_runs() -> Vec<(PathBuf, Vec<u8>)> {
    let spec = "001-done";
    let repo = repo_with_fixture_plan(spec);
    assert_exit(&repo.run_spec(spec, &[]), 0);
    let done = repo.plan_path(spec);
    let killed = "002-killed";
    let repo2 = repo_with_fixture_plan(killed);
    run_killed_at(&repo2, killed, "after_coder_session");
    let mut out = Vec::new();
    for path in [done, repo2.plan_path(killed)] {
        let bytes = std::fs::read(&path).unwrap();
        out.push((path, bytes));
    }
    out
}

/// Every plan under the reference folder and `fixtures/`, and the plans real runs write: the
/// light read agrees with the full parser, and answers for each one the full parser reads
/// without a warning (so `status` takes the fast path on them).
#[test]
fn the_light_read_agrees_with_the_full_parser_on_every_known_plan() {
    let mut files = Vec::new();
    // Without the corpus (it says so), the fixtures and the written plans are still compared.
    if let Some(dir) = reference_plans_dir() {
        json_files(&dir, &mut files);
    }
    json_files(&fixture("plans"), &mut files);
    let mut plans: Vec<(PathBuf, Vec<u8>)> = files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    plans.extend(plans_from_runs());
    let mut answered = 0;
    for (path, bytes) in &plans {
        let plan_like = serde_json::from_slice::<Value>(bytes)
            .is_ok_and(|v| v.get("phases").is_some() || v.get("subtasks").is_some());
        if !plan_like {
            continue; // the memory examples beside the reference plans
        }
        let full = parse_plan(path, bytes);
        let fast = light_agrees(path, bytes);
        if full.is_ok_and(|p| p.warnings.is_empty()) {
            assert!(fast, "the light read did not answer for {}", path.display());
            answered += 1;
        }
    }
    assert!(answered >= 5, "only {answered} plans read");
    // A recorded commit is read from the attempts of a real run.
    let (path, bytes) = &plans[plans.len() - 2];
    let light = summarize(bytes).unwrap();
    let completed = light
        .plan()
        .chunks()
        .filter(|c| c.status == Status::Completed)
        .count();
    assert_eq!(completed, 3, "{}", path.display());
}

/// Broken plans, one per kind of problem `parse.rs` and `validate.rs` report: the light read
/// never answers, so every error text comes from the full parser.
#[test]
fn the_light_read_never_answers_for_a_broken_plan() {
    let chunk = |c: &str| format!(r#"{{"phases": [{{"id": "p", "subtasks": [{c}]}}]}}"#);
    let broken = [
        "{\"phases\": [".to_string(),
        "[1]".into(),
        r#"{"phases": 3}"#.into(),
        r#"{"title": "no phases"}"#.into(),
        r#"{"phases": ["p"]}"#.into(),
        r#"{"phases": [{"id": ["x"], "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": "tab\there", "subtasks": []}]}"#.into(),
        r#"{"phases": [{"phase": 2.5, "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": "a", "depends_on": [null], "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": "a", "chunks": "x"}]}"#.into(),
        chunk(r#""not an object""#),
        chunk(r#"{"description": "no id"}"#),
        chunk(r#"{"id": "a\nb", "description": "x"}"#),
        chunk(r#"{"id": "a", "status": "pending"}"#),
        chunk(r#"{"id": "a", "description": "x", "status": "maybe"}"#),
        chunk(r#"{"id": "a", "description": "x", "attempts": [{"n": "1"}]}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"type": "command"}}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"command": 1}}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"command": "x", "expect_status": 1.5}}"#),
        chunk(r#"{"id": "a", "description": "x"}, {"id": "a", "description": "x"}"#),
        r#"{"phases": [{"id": "a", "subtasks": []}, {"id": "a", "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": "a", "depends_on": ["zz"], "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": "a", "depends_on": ["b"], "subtasks": []}, {"id": "b", "depends_on": ["a"], "subtasks": []}]}"#.into(),
    ];
    for text in &broken {
        let path = Path::new("p.json");
        assert!(parse_plan(path, text.as_bytes()).is_err(), "{text}");
        assert!(summarize(text.as_bytes()).is_none(), "{text}");
    }
}

/// `status --json` of one spec, alone (`--spec`: one thread, no split).
fn status_one(repo: &TestRepo, spec: &str) -> Value {
    let out = repo.runner(&["status", "--spec", spec, "--json"]);
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    v["specs"][0].clone()
}

/// Many specs (split over the cores) keep their order, and each line is the one `status`
/// gives for that spec alone; a broken plan is reported with the full parser's own text, a plan
/// whose lists differ with its warning.
#[test]
fn status_over_many_specs_keeps_order_and_the_full_parsers_errors() {
    let repo = TestRepo::new();
    let good = std::fs::read_to_string(fixture("plans/two-phases.json")).unwrap();
    let rule_broken = good.replace("\"core-b\"", "\"core-a\"");
    let lists_differ = r#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "status": "completed"}], "chunks": [{"id": "a", "description": "x"}]}]}"#;
    let mut names = Vec::new();
    for i in 0..40 {
        let name = format!("{:03}-spec", 40 - i);
        repo.add_spec(&name);
        match i % 5 {
            0 => repo.write_plan(&name, &good),
            1 => repo.write_plan(&name, &good.replace("\"pending\"", "\"done\"")),
            2 => repo.write_plan(&name, &rule_broken),
            3 => repo.write_plan(&name, lists_differ),
            _ => repo.write_plan(&name, "{\"phases\": ["),
        }
        names.push(name);
    }
    repo.add_spec("041-unplanned");
    names.push("041-unplanned".into());
    names.sort();
    let out = repo.runner(&["status", "--json"]);
    assert_exit(&out, 0);
    let all: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let listed: Vec<&str> = all["specs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["spec"].as_str().unwrap())
        .collect();
    assert_eq!(listed, names);
    for (i, spec) in all["specs"].as_array().unwrap().iter().enumerate() {
        let name = &names[i];
        assert_eq!(spec, &status_one(&repo, name), "{name}");
        let path = repo.plan_path(name);
        let Ok(bytes) = std::fs::read(&path) else {
            assert_eq!(spec["status"], "not_planned");
            continue;
        };
        match parse_plan(&path, &bytes) {
            Ok(plan) => {
                assert_eq!(spec["warnings"], serde_json::json!(plan.warnings), "{name}");
                assert_eq!(spec["chunks"]["total"], plan.total(), "{name}");
                assert_eq!(
                    spec["chunks"]["completed"],
                    plan.count(Status::Completed),
                    "{name}"
                );
            }
            Err(e) => {
                assert_eq!(spec["status"], "invalid_plan", "{name}");
                let error = spec["error"].as_str().unwrap();
                for problem in &e.problems {
                    assert!(error.contains(problem.as_str()), "{error}\n{problem}");
                }
            }
        }
    }
    assert!(
        all["specs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| !s["warnings"].as_array().unwrap().is_empty()),
        "a warning is shown"
    );
}

/// Every file under `.auto-claude/` and `.git/`: size, mtime and a hash of the contents.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime, u64)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.join(".auto-claude"), root.join(".git")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            let path = entry.path();
            let mut h = std::collections::hash_map::DefaultHasher::new();
            if meta.is_dir() {
                stack.push(path.clone());
            } else {
                std::fs::read(&path).unwrap().hash(&mut h);
            }
            out.insert(path, (meta.len(), meta.modified().unwrap(), h.finish()));
        }
    }
    out
}

#[track_caller]
fn recover_all(repo: &TestRepo) -> Value {
    let out = repo.runner(&["recover", "--all", "--json"]);
    serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(&out), stderr(&out)))
}

fn outcomes(report: &Value) -> Vec<(String, String)> {
    report["specs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["spec"].as_str().unwrap().to_string(),
                s["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Quiet specs of every kind (run to the end with a worktree, a branch and a journal; planned
/// and never run; not planned; a failed chunk) are reported clean and nothing under
/// `.auto-claude/` or `.git/` changes; a spec whose run was killed among them is recovered; one
/// whose branch lost its work needs a person; one a run holds is busy.
#[test]
fn recover_all_with_nothing_to_do_writes_nothing_and_still_recovers_what_needs_it() {
    let repo = repo_with_fixture_plan("001-done");
    assert_exit(&repo.run_spec("001-done", &[]), 0);
    let good = std::fs::read_to_string(fixture("plans/two-phases.json")).unwrap();
    for name in ["002-planned", "003-planned", "004-planned"] {
        repo.add_spec(name);
        repo.write_plan(name, &good);
    }
    repo.add_spec("005-unplanned");
    repo.add_spec("006-failed");
    repo.write_plan("006-failed", &good.replacen("\"pending\"", "\"failed\"", 1));
    // Once, so that every lock file recover may create exists (as after any earlier command).
    recover_all(&repo);

    let before = snapshot(&repo.root);
    let report = recover_all(&repo);
    assert!(
        outcomes(&report).iter().all(|(_, o)| o == "clean"),
        "{report}"
    );
    assert_eq!(outcomes(&report).len(), 6);
    let human = repo.runner(&["recover", "--all"]);
    assert_exit(&human, 0);
    assert_eq!(stdout(&human), "Nothing to recover.\n");
    assert!(snapshot(&repo.root) == before, "recover --all wrote a file");

    // A run killed among the quiet specs: that one is recovered, the others stay clean.
    repo.add_spec("007-killed");
    repo.write_plan("007-killed", &good);
    run_killed_at(&repo, "007-killed", "after_coder_session");
    assert_eq!(repo.chunk("007-killed", "core-a")["status"], "in_progress");
    let report = recover_all(&repo);
    for (spec, outcome) in outcomes(&report) {
        let wanted = if spec == "007-killed" {
            "recovered"
        } else {
            "clean"
        };
        assert_eq!(outcome, wanted, "{spec}: {report}");
    }
    assert_ne!(repo.chunk("007-killed", "core-a")["status"], "in_progress");

    // A run holding a quiet spec: busy, as before.
    let holder = hold_lock(&repo.spec_dir("002-planned").join("run.lock"));
    let report = recover_all(&repo);
    let busy: Vec<_> = outcomes(&report)
        .into_iter()
        .filter(|(_, o)| o == "busy")
        .collect();
    assert_eq!(
        busy,
        vec![("002-planned".into(), "busy".into())],
        "{report}"
    );
    drop_holder(holder);

    // Temp files of dead writers, in a spec's folder or in its runs folder: that spec takes
    // the full path and they are removed; a live writer's temp file leaves its spec clean.
    let dead: Vec<PathBuf> = [("003-planned", ""), ("004-planned", "runs")]
        .into_iter()
        .map(|(spec, sub)| {
            let dir = repo.spec_dir(spec).join(sub);
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join(".implementation_plan.json.tmp-999999999-0");
            std::fs::write(&file, "{\"half").unwrap();
            file
        })
        .collect();
    let live = repo.spec_dir("005-unplanned").join(format!(
        ".implementation_plan.json.tmp-{}-0",
        std::process::id()
    ));
    std::fs::write(&live, "{\"being written").unwrap();
    let report = recover_all(&repo);
    for (spec, outcome) in outcomes(&report) {
        let wanted = match spec.as_str() {
            "003-planned" | "004-planned" => "recovered",
            _ => "clean",
        };
        assert_eq!(outcome, wanted, "{spec}: {report}");
    }
    assert!(dead.iter().all(|f| !f.exists()), "{report}");
    assert!(live.exists(), "a live writer's temp file was removed");
    std::fs::remove_file(&live).unwrap();

    // Completed work gone from the branch of a spec with nothing in progress: a person.
    let branch = "auto-claude/001-done";
    repo.git(&["branch", "-f", branch, "main"]);
    let report = recover_all(&repo);
    let done = outcomes(&report)
        .into_iter()
        .find(|(s, _)| s == "001-done")
        .unwrap();
    assert_eq!(done.1, "needs_human", "{report}");

    // Failed chunks are retried only when asked.
    let out = repo.runner(&["recover", "--all", "--retry-failed", "--json"]);
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let failed = outcomes(&report)
        .into_iter()
        .find(|(s, _)| s == "006-failed")
        .unwrap();
    assert_eq!(failed.1, "recovered", "{report}");
}

fn drop_holder(mut holder: std::process::Child) {
    let _ = holder.kill();
    let _ = holder.wait();
}

/// A spec that changes after `recover --all` looked at it read-only and before it reports (a
/// run takes its lock; a writer dies leaving a temp file; a chunk is set in progress): it is
/// reported as the locked path sees it then (busy; recovered), not clean from the stale look.
/// The pause at `recover_all_looked` (after the look, before the first spec is reported) holds
/// the window open; were the look slower than the wait, the changes would come before it and
/// the answers would be the same.
#[test]
fn recover_all_does_not_report_clean_what_changed_after_its_look() {
    let good = std::fs::read_to_string(fixture("plans/two-phases.json")).unwrap();
    let repo = repo_with_fixture_plan("001-held");
    for name in ["002-temp", "003-taken"] {
        repo.add_spec(name);
        repo.write_plan(name, &good);
    }
    recover_all(&repo);

    // Killed right after the look: nothing was written.
    let before = snapshot(&repo.root);
    let out = repo
        .cmd(&["recover", "--all"])
        .env("RUNNER_FAILPOINTS", "recover_all_looked")
        .output()
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(libc::SIGKILL)
    );
    assert!(snapshot(&repo.root) == before, "recover --all wrote a file");

    let recover = repo
        .cmd(&["recover", "--all", "--json"])
        .env("RUNNER_FAILPOINTS", "recover_all_looked~4000")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let holder = hold_lock(&repo.spec_dir("001-held").join("run.lock"));
    std::fs::write(
        repo.spec_dir("002-temp")
            .join(".implementation_plan.json.tmp-999999999-0"),
        "{\"half",
    )
    .unwrap();
    repo.write_plan(
        "003-taken",
        &good.replacen("\"pending\"", "\"in_progress\"", 1),
    );
    let out = recover.wait_with_output().unwrap();
    drop_holder(holder);
    let report: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(&out), stderr(&out)));
    assert_eq!(
        outcomes(&report),
        vec![
            ("001-held".to_string(), "busy".to_string()),
            ("002-temp".into(), "recovered".into()),
            ("003-taken".into(), "recovered".into()),
        ],
        "{report}"
    );
    assert_ne!(repo.chunk("003-taken", "core-a")["status"], "in_progress");
}

/// A folder where a spec's run lock file belongs: `status` and `recover --all` report that
/// spec, with what to do, and go on with the others (they failed whole, exit 1).
#[test]
fn a_folder_in_place_of_a_run_lock_is_reported_for_its_spec_and_the_others_go_on() {
    let repo = repo_with_fixture_plan("001-done");
    let good = std::fs::read_to_string(fixture("plans/two-phases.json")).unwrap();
    repo.add_spec("002-locked");
    repo.write_plan("002-locked", &good);
    std::fs::create_dir(repo.spec_dir("002-locked").join("run.lock")).unwrap();
    let before = snapshot(&repo.root);

    let out = repo.runner(&["status", "--json"]);
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let specs = v["specs"].as_array().unwrap();
    assert_eq!(specs.len(), 2, "{v}");
    assert_eq!(specs[0]["status"], "planned", "{v}");
    assert_eq!(specs[1]["status"], "refused", "{v}");
    let error = specs[1]["error"].as_str().unwrap();
    assert!(
        error.contains("is a folder") && error.contains("move it away"),
        "{error}"
    );

    let report = recover_all(&repo);
    assert_eq!(
        outcomes(&report),
        vec![
            ("001-done".to_string(), "clean".to_string()),
            ("002-locked".into(), "refused".into())
        ],
        "{report}"
    );
    assert!(snapshot(&repo.root) == before, "a file was changed");
    assert!(repo.spec_dir("002-locked").join("run.lock").is_dir());
}
