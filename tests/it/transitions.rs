//! Every chunk status change is journaled as the `chunk_status` event `policy::transition`
//! yields, so a plan rebuilt from the journal has them all; journal lines runner does not know
//! are kept and skipped.

use crate::common::*;
use crate::recover::partial_run;
use serde_json::Value;

/// The statuses core-a, core-b and polish are expected to have.
pub(crate) fn expect_statuses(repo: &TestRepo, spec: &str, [a, b, polish]: [&str; 3]) {
    let want: Vec<(String, String)> = [("core-a", a), ("core-b", b), ("polish", polish)]
        .iter()
        .map(|(id, s)| (id.to_string(), s.to_string()))
        .collect();
    assert_eq!(repo.statuses(spec), want);
}

fn status_of(repo: &TestRepo, spec: &str, chunk: &str) -> String {
    repo.chunk(spec, chunk)["status"]
        .as_str()
        .unwrap()
        .to_string()
}

fn status_events(repo: &TestRepo, spec: &str, chunk: &str) -> Vec<Value> {
    repo.events(spec)
        .into_iter()
        .filter(|e| e["event"] == "chunk_status" && e["chunk"] == chunk)
        .collect()
}

/// Break the plan and remove runner's last-good copy: `runner recover` can only rebuild it
/// from the journal. Returns recover's report of the spec.
pub(crate) fn rebuild_from_the_journal(repo: &TestRepo, spec: &str) -> Value {
    let last_good = repo
        .spec_dir(spec)
        .join("implementation_plan.json.last-good");
    std::fs::remove_file(&last_good).unwrap();
    std::fs::write(repo.plan_path(spec), b"not a plan at all").unwrap();
    let out = repo.runner(&["recover", "--json"]);
    assert_exit(&out, 0);
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    report["specs"][0].clone()
}

#[test]
fn a_persons_chunk_done_and_fail_are_journaled_and_survive_a_rebuild_from_the_journal() {
    let spec = "090-person";
    let repo = partial_run(spec);
    // A person marks the pending chunk done and a completed one failed (no run active).
    let done = repo.runner(&["chunk", "done", "polish", "--spec", spec]);
    assert_exit(&done, 0);
    let fail = repo.runner(&["chunk", "fail", "core-b", "--spec", spec, "--reason", "bad"]);
    assert_exit(&fail, 0);
    assert_eq!(status_of(&repo, spec, "polish"), "completed");
    assert_eq!(status_of(&repo, spec, "core-b"), "failed");

    // Each is a status change in the journal, not only a report.
    let polish = status_events(&repo, spec, "polish");
    let last = polish.last().expect("no chunk_status for polish");
    assert_eq!(
        (&last["from"], &last["to"]),
        (&"pending".into(), &"completed".into())
    );
    let core_b = status_events(&repo, spec, "core-b");
    let last = core_b.last().unwrap();
    assert_eq!(
        (&last["from"], &last["to"]),
        (&"completed".into(), &"failed".into())
    );

    let s = rebuild_from_the_journal(&repo, spec);
    assert_eq!(s["plan_source"], "journal", "{s}");
    expect_statuses(&repo, spec, ["completed", "failed", "completed"]);
}

#[test]
fn an_unknown_journal_line_is_kept_and_skipped() {
    let spec = "091-unknown";
    let repo = partial_run(spec);
    let journal = repo.spec_dir(spec).join("events.jsonl");
    // A newer runner's event, and a status line with a status this runner does not know:
    // neither may change the rebuilt plan, and neither is an error.
    let unknown = r#"{"time":"2030-01-01T00:00:00Z","run_id":"future","event":"chunk_archived","chunk":"core-a","to":"pending"}"#;
    let odd_status = r#"{"time":"2030-01-01T00:00:01Z","run_id":"future","event":"chunk_status","chunk":"core-b","from":"completed","to":"archived"}"#;
    let mut text = std::fs::read_to_string(&journal).unwrap();
    text.push_str(&format!("{unknown}\n{odd_status}\n"));
    std::fs::write(&journal, text).unwrap();

    let status = repo.runner(&["status", "--json"]);
    assert_exit(&status, 0);
    let s = rebuild_from_the_journal(&repo, spec);
    assert_eq!(s["plan_source"], "journal", "{s}");
    expect_statuses(&repo, spec, ["completed", "completed", "pending"]);
    // The run goes on to the end, and the lines are still there, as they were.
    assert_exit(&repo.run_spec(spec, &[]), 0);
    assert_eq!(status_of(&repo, spec, "polish"), "completed");
    let after = std::fs::read_to_string(&journal).unwrap();
    assert!(after.lines().any(|l| l == unknown), "{after}");
    assert!(after.lines().any(|l| l == odd_status), "{after}");
}

#[test]
fn a_discards_reset_is_journaled_so_a_rebuilt_plan_does_not_bring_back_discarded_progress() {
    let spec = "092-discard";
    let repo = partial_run(spec);
    assert_exit(&repo.runner(&["discard", "--spec", spec, "--yes"]), 0);
    expect_statuses(&repo, spec, ["pending", "pending", "pending"]);
    for chunk in ["core-a", "core-b"] {
        let last = status_events(&repo, spec, chunk).pop().unwrap();
        assert_eq!(
            (&last["from"], &last["to"]),
            (&"completed".into(), &"pending".into())
        );
        assert_eq!(last["why"], "discard");
    }
    // polish was pending already: no change, no line.
    assert!(status_events(&repo, spec, "polish").is_empty());

    let s = rebuild_from_the_journal(&repo, spec);
    assert_eq!(s["plan_source"], "journal", "{s}");
    expect_statuses(&repo, spec, ["pending", "pending", "pending"]);
}

/// A person's `runner chunk done` whose journal cannot be written (a link where it should be)
/// still changes the plan, and says that the journal misses it: a plan rebuilt from the journal
/// would not have the change.
#[test]
fn a_mark_whose_journal_cannot_be_written_warns() {
    let repo = repo_with_fixture_plan("001-x");
    let outside = repo.tmp.path().join("elsewhere.jsonl");
    std::os::unix::fs::symlink(&outside, repo.spec_dir("001-x").join("events.jsonl")).unwrap();
    let out = repo.runner(&["chunk", "done", "core-a", "--spec", "001"]);
    assert_exit(&out, 0);
    assert_eq!(repo.chunk("001-x", "core-a")["status"], "completed");
    let err = stderr(&out);
    assert!(
        err.contains("warning: the journal") && err.contains("would miss it"),
        "{err}"
    );
    assert!(!outside.exists(), "nothing is written through the link");
}

/// `undo` of a discard puts the plan back with its completed chunks, after the discard had
/// journaled every chunk's reset to `pending`: the journal must say so too, or a plan rebuilt
/// from it would bring back the discard.
#[test]
fn a_plan_rebuilt_from_the_journal_after_discard_and_undo_keeps_the_restored_progress() {
    let spec = "093-undo";
    let repo = partial_run(spec);
    assert_exit(&repo.runner(&["discard", "--spec", spec, "--yes"]), 0);
    expect_statuses(&repo, spec, ["pending", "pending", "pending"]);
    assert_exit(&repo.runner(&["undo", "--spec", spec]), 0);
    expect_statuses(&repo, spec, ["completed", "completed", "pending"]);

    // From the restored plan's snapshot (with no status change since, the branch's commits
    // are checked against it too).
    let s = rebuild_from_the_journal(&repo, spec);
    assert!(
        s["plan_source"] == "journal" || s["plan_source"] == "commits",
        "{s}"
    );
    expect_statuses(&repo, spec, ["completed", "completed", "pending"]);
}

/// Every `.rs` file under `src/`, with its path relative to `src/` and its text.
fn sources() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    assert!(out.len() > 20, "found only {} source files", out.len());
    out
}

/// A chunk's status is set in two places only: `policy::transition::apply` (every change the
/// engine, recovery or a person makes) and the rebuild of a lost plan from the journal or the
/// branch (`engine::recovery::restore`, which replays outcomes the journal already holds).
/// Anything else that sets it by hand, or writes the raw `status` field, skips the table and
/// the journal.
#[test]
fn a_chunks_status_is_set_only_through_the_transition_table_or_a_rebuild() {
    const ALLOWED: [&str; 3] = [
        "policy/transition.rs",
        "engine/recovery/restore.rs",
        // The definition, and the parser that reads the file's own status.
        "plan/model.rs",
    ];
    let mut wrong = Vec::new();
    for (rel, text) in sources() {
        // Tests set statuses to build their cases: `tests.rs`, `*_tests.rs`, files in `tests/`.
        if ALLOWED.contains(&rel.as_str())
            || rel.ends_with("tests.rs")
            || rel.split('/').any(|part| part == "tests")
        {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap();
            if code.contains("set_status(")
                || code.contains("set_str(\"status\"")
                || code.contains("insert(\"status\"")
                || code.contains(".status = ")
            {
                wrong.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    // plan/parse.rs normalises the status it read into the raw field (no change of value).
    wrong.retain(|w| !w.starts_with("src/plan/parse.rs:"));
    assert!(
        wrong.is_empty(),
        "a chunk status set outside policy::transition:\n{}",
        wrong.join("\n")
    );
}

/// A status change the table refuses reaches the person as "needs a human" (exit 3) with a
/// hint, not as an internal error (exit 1): here the chunk's verification sets the chunk
/// `failed` in the plan behind runner's back, so the judgement's `Complete` finds a failed
/// chunk.
#[test]
fn a_refused_status_change_exits_3_with_a_hint() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("094-refused");
    let plan = dir.join("implementation_plan.json");
    let edit = format!(
        "python3 -c \"import json,sys; p=sys.argv[1]; d=json.load(open(p)); d['phases'][0]['subtasks'][0]['status']='failed'; json.dump(d, open(p, 'w'))\" {}",
        plan.display()
    );
    let text = serde_json::json!({"phases": [{"id": "p", "subtasks": [
        {"id": "v", "description": "d", "status": "pending",
         "verification": {"type": "command", "run": edit}}]}]});
    std::fs::write(&plan, text.to_string()).unwrap();
    let out = repo.run_spec("094", &[]);
    let err = stderr(&out);
    assert_exit(&out, 3);
    assert!(err.contains("a chunk that is failed cannot take"), "{err}");
    assert!(
        err.contains("hint: the chunk's status was left as it is"),
        "{err}"
    );
    assert_eq!(repo.chunk("094-refused", "v")["status"], "failed");
}
