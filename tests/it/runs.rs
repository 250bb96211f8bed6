//! Run records (`specs/<spec>/runs/<run-id>.json`), the checkpoint (`specs/<spec>/checkpoint.json`),
//! `runner runs` and `runner show`: the real binary, real git repositories, the fake agent.

use crate::common::*;
use serde_json::Value;

/// The run records of `spec`, as JSON, in no particular order.
fn records(repo: &TestRepo, spec: &str) -> Vec<Value> {
    let dir = repo.spec_dir(spec).join("runs");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .map(|e| serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap())
        .collect()
}

fn checkpoint(repo: &TestRepo, spec: &str) -> Value {
    serde_json::from_slice(&std::fs::read(repo.spec_dir(spec).join("checkpoint.json")).unwrap())
        .unwrap()
}

/// The checkpoint's chunks: (id, status, commit).
fn checkpoint_chunks(c: &Value) -> Vec<(String, String, Option<String>)> {
    c["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
                s["commit"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn checkpoint_statuses(c: &Value) -> Vec<(String, String)> {
    checkpoint_chunks(c)
        .into_iter()
        .map(|(id, status, _)| (id, status))
        .collect()
}

fn checkpoint_commits(c: &Value) -> Vec<(String, Option<String>)> {
    checkpoint_chunks(c)
        .into_iter()
        .map(|(id, _, commit)| (id, commit))
        .collect()
}

/// Each completed chunk's commit as the plan's attempts record it.
fn plan_commits(repo: &TestRepo, spec: &str) -> Vec<(String, Option<String>)> {
    repo.statuses(spec)
        .into_iter()
        .map(|(id, status)| {
            let commit = (status == "completed").then(|| {
                let chunk = repo.chunk(spec, &id);
                let attempts = chunk["attempts"].as_array().unwrap().clone();
                attempts.last().unwrap()["commit"]
                    .as_str()
                    .unwrap()
                    .to_string()
            });
            (id, commit)
        })
        .collect()
}

fn branch_tip(repo: &TestRepo, spec: &str) -> String {
    repo.git(&["rev-parse", &format!("auto-claude/{spec}")])
        .trim()
        .to_string()
}

#[test]
fn a_completed_run_leaves_an_ended_record_and_a_checkpoint_equal_to_the_plan() {
    let repo = TestRepo::new();
    repo.add_spec("001-add-login");
    let out = repo.run_spec("001", &["--json"]);
    assert_exit(&out, 0);
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let recs = records(&repo, "001-add-login");
    assert_eq!(recs.len(), 1, "{recs:?}");
    let r = &recs[0];
    assert_eq!(r["run_id"], summary["run_id"]);
    assert_eq!(r["kind"], "run");
    assert_eq!(r["outcome"], "complete");
    assert!(r["ended"].is_string(), "{r}");
    assert_eq!(r["agent"], "command");
    assert_eq!(r["slot"], "auto-claude");
    assert_eq!(r["chunk"], "polish");
    assert_eq!(r["resumed_from"], Value::Null);
    assert!(r["pid"].as_u64().unwrap() > 0);

    let c = checkpoint(&repo, "001-add-login");
    assert_eq!(c["trigger"], "run_end");
    assert_eq!(c["run_id"], summary["run_id"]);
    assert_eq!(checkpoint_statuses(&c), repo.statuses("001-add-login"));
    assert_eq!(c["tip"], branch_tip(&repo, "001-add-login"));
    assert_eq!(c["branch"], "auto-claude/001-add-login");
    assert_eq!(c["base"], "main");
    assert_eq!(c["slot"], "auto-claude");
    let commits = checkpoint_commits(&c);
    assert_eq!(commits, plan_commits(&repo, "001-add-login"));
    // Each commit is the one whose subject names the chunk, on the branch.
    for (id, commit) in commits {
        let subject = repo.git(&["log", "-1", "--format=%s", &commit.unwrap()]);
        assert!(
            subject.contains(&format!("auto-claude: {id} ")),
            "{subject}"
        );
    }
}

#[test]
fn a_failed_chunk_writes_the_checkpoint_with_the_plans_statuses_and_ends_the_record() {
    let repo = TestRepo::new();
    repo.add_spec("003-fail");
    repo.write_config("[run]\nmax_attempts = 2\n");
    repo.script("core-b * fail the database is down\n");
    let out = repo.run_spec("003", &[]);
    assert_exit(&out, 3);
    let c = checkpoint(&repo, "003-fail");
    assert_eq!(checkpoint_statuses(&c), repo.statuses("003-fail"));
    assert_eq!(
        checkpoint_statuses(&c)[1],
        ("core-b".to_string(), "failed".to_string())
    );
    assert_eq!(c["tip"], branch_tip(&repo, "003-fail"));
    assert_eq!(checkpoint_commits(&c), plan_commits(&repo, "003-fail"));
    assert_eq!(c["current_chunk"], "core-b");
    let recs = records(&repo, "003-fail");
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["outcome"], "needs_human");
    assert_eq!(recs[0]["chunk"], "core-b");
}

/// The records of `spec` of one kind.
fn records_of(repo: &TestRepo, spec: &str, kind: &str) -> Vec<Value> {
    records(repo, spec)
        .into_iter()
        .filter(|r| r["kind"] == kind)
        .collect()
}

fn assert_ended(r: &Value, outcome: &str) {
    assert_eq!(r["outcome"], outcome, "{r}");
    let (started, ended) = (r["started"].as_str().unwrap(), r["ended"].as_str().unwrap());
    assert!(started <= ended, "{r}");
    assert!(r["pid"].as_u64().is_some());
}

#[test]
fn merge_undo_and_discard_each_leave_a_record_of_their_kind() {
    let repo = TestRepo::new();
    repo.add_spec("001-feature");
    assert_exit(&repo.run_spec("001", &[]), 0);
    assert_exit(
        &repo.runner(&["merge", "--spec", "001-feature", "--yes"]),
        0,
    );
    let merges = records_of(&repo, "001-feature", "merge");
    assert_eq!(merges.len(), 1);
    assert_ended(&merges[0], "merged");
    // The merge's id is the one its journal lines carry.
    let id = merges[0]["run_id"].as_str().unwrap();
    assert!(
        repo.events("001-feature")
            .iter()
            .any(|e| e["run_id"] == id && e["event"] == "merged"),
        "no merged event of {id}"
    );
    assert_exit(&repo.runner(&["undo", "--spec", "001-feature"]), 0);
    assert_ended(&records_of(&repo, "001-feature", "undo")[0], "undone");
    assert_exit(
        &repo.runner(&["discard", "--spec", "001-feature", "--yes"]),
        0,
    );
    assert_ended(&records_of(&repo, "001-feature", "discard")[0], "discarded");
    // The run's record is still the run's.
    assert_ended(&records_of(&repo, "001-feature", "run")[0], "complete");
    assert_eq!(records(&repo, "001-feature").len(), 4);

    // A refused merge (nothing to merge) leaves no record.
    let before = records(&repo, "001-feature").len();
    assert_exit(
        &repo.runner(&["merge", "--spec", "001-feature", "--yes"]),
        2,
    );
    assert_eq!(records(&repo, "001-feature").len(), before);
}

#[test]
fn recover_leaves_a_record_only_when_it_changed_something() {
    let repo = TestRepo::new();
    repo.add_spec("001-feature");
    repo.add_spec("002-other");
    assert_exit(&repo.run_spec("002", &[]), 0);
    run_killed_at(&repo, "001-feature", "after_coder_session");
    let before = records(&repo, "001-feature");
    assert_eq!(before.len(), 1, "the killed run's own record");
    assert_eq!(before[0]["ended"], Value::Null);

    // A dry run changes nothing and writes nothing.
    assert_exit(&repo.runner(&["recover", "--all", "--dry-run"]), 0);
    assert_eq!(records(&repo, "001-feature").len(), 1);

    let out = repo.runner(&["recover", "--all"]);
    assert_exit(&out, 0);
    let recovers = records_of(&repo, "001-feature", "recover");
    assert_eq!(recovers.len(), 1, "{}", stderr(&out));
    assert_ended(&recovers[0], "recovered");
    // The spec that was clean has no recover record.
    assert!(records_of(&repo, "002-other", "recover").is_empty());

    // Nothing left to do: no record, no file at all.
    let listing = |spec: &str| {
        let mut names: Vec<String> = std::fs::read_dir(repo.spec_dir(spec).join("runs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let (one, two) = (listing("001-feature"), listing("002-other"));
    assert_exit(&repo.runner(&["recover", "--all"]), 0);
    assert_eq!(listing("001-feature"), one);
    assert_eq!(listing("002-other"), two);
}
