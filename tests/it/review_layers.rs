//! Review of the layering (issue 9): the places where a rule held in letter only.

use crate::common::*;
use crate::recover::partial_run;
use crate::transitions::{expect_statuses, rebuild_from_the_journal};

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
        if ALLOWED.contains(&rel.as_str()) || rel.ends_with("tests.rs") {
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
