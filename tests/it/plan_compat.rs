//! Real Auto-Claude files as Auto-Claude writes them, and hostile or broken plans and specs,
//! through the real binary (issue 8, §3 and §4).
//!
//! The reference plans are read from `../shared/reference/auto-claude-plans/` and transformed
//! here; their text is never copied into the project.

use std::path::{Path, PathBuf};

use crate::common::*;
use runner::plan::Status;
use serde_json::{Map, Value, json};

/// Every reference plan, sorted by file name.
fn reference_plans() -> Option<Vec<PathBuf>> {
    crate::corpus::plans()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The plan as current Auto-Claude saves it (`Phase.to_dict`): each phase's chunk list under
/// both `subtasks` and `chunks`, in that order, where the file had its one list.
fn with_both_lists(plan: &Value) -> Value {
    let mut plan = plan.clone();
    for phase in plan["phases"].as_array_mut().unwrap() {
        let old = std::mem::take(phase.as_object_mut().unwrap());
        let list = old
            .get("subtasks")
            .or_else(|| old.get("chunks"))
            .cloned()
            .expect("every reference phase has a chunk list");
        let mut new = Map::new();
        for (key, value) in old {
            if key == "subtasks" || key == "chunks" {
                if !new.contains_key("subtasks") {
                    new.insert("subtasks".into(), list.clone());
                    new.insert("chunks".into(), list.clone());
                }
            } else {
                new.insert(key, value);
            }
        }
        *phase = Value::Object(new);
    }
    plan
}

/// (completed, total) counted from the file's own data, one list per phase.
fn counts(plan: &Value) -> (usize, usize) {
    let chunks: Vec<&Value> = plan["phases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| {
            p.get("subtasks")
                .or_else(|| p.get("chunks"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .collect();
    let done = chunks
        .iter()
        .filter(|c| {
            c["status"]
                .as_str()
                .and_then(Status::parse)
                .is_some_and(|s| s == Status::Completed)
        })
        .count();
    (done, chunks.len())
}

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

pub fn spec_status(repo: &TestRepo, spec: &str) -> Value {
    // --all: a merged or discarded spec too.
    let out = repo.runner(&["status", "--all", "--json"]);
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    v["specs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["spec"] == spec)
        .cloned()
        .unwrap_or_else(|| panic!("no spec {spec} in {v}"))
}

/// Asserts that `runner run` refused with exit 2 before any session, leaving the plan as it was.
fn assert_refused_untouched(repo: &TestRepo, spec: &str, before: &[u8], wanted: &[&str]) {
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    for w in wanted {
        assert!(err.contains(w), "stderr lacks {w:?}:\n{err}");
    }
    assert_eq!(
        std::fs::read(repo.plan_path(spec)).unwrap(),
        before,
        "the plan must be left untouched"
    );
    assert!(
        repo.agent_log().is_empty(),
        "no session may start: {:?}",
        repo.agent_log()
    );
}

#[test]
fn real_plans_saved_with_both_lists_are_read_counted_once_and_written_back_equal() {
    let Some(plans) = reference_plans() else {
        return;
    };
    for path in plans {
        let name = path.file_stem().unwrap().to_str().unwrap();
        let spec = format!("001-{}", &name[..2]);
        let repo = TestRepo::new();
        let dir = repo.add_spec(&spec);
        let original = read_json(&path);
        let both = with_both_lists(&original);
        write_json(&dir.join("implementation_plan.json"), &both);

        let status = spec_status(&repo, &spec);
        let (done, total) = counts(&original);
        assert_ne!(status["status"], "invalid_plan", "{name}: {status}");
        assert_eq!(status["chunks"]["total"], total, "{name}: counted once");
        assert_eq!(status["chunks"]["completed"], done, "{name}");

        // A write through the binary (a person's override) reaches both lists.
        let next = status["next_chunk"]
            .as_str()
            .expect("a next chunk")
            .to_string();
        let out = repo.runner(&["chunk", "done", &next, "--spec", &spec]);
        assert_exit(&out, 0);
        let saved = repo.plan(&spec);
        for (i, phase) in saved["phases"].as_array().unwrap().iter().enumerate() {
            assert_eq!(phase["subtasks"], phase["chunks"], "{name}: phases[{i}]");
            let keys: Vec<&String> = phase.as_object().unwrap().keys().collect();
            let want: Vec<&String> = both["phases"][i].as_object().unwrap().keys().collect();
            assert_eq!(keys, want, "{name}: phases[{i}] keeps its keys in place");
        }
        assert_eq!(repo.chunk(&spec, &next)["status"], "completed");
        assert_eq!(spec_status(&repo, &spec)["chunks"]["completed"], done + 1);
    }
}

#[test]
fn a_real_chunks_era_plan_with_both_lists_runs_to_the_end() {
    // The chunks-era reference plan: its pending chunks have no command to check, so the fake
    // agent can finish them.
    let Some(dir) = reference_plans_dir() else {
        return;
    };
    let path = dir.join("01-chunks-era-refactor-midflight.json");
    let original = read_json(&path);
    let both = with_both_lists(&original);
    let repo = TestRepo::new();
    let dir = repo.add_spec("001-both");
    write_json(&dir.join("implementation_plan.json"), &both);

    let out = repo.run_spec("001-both", &[]);
    assert_exit(&out, 0);
    let (done, total) = counts(&original);
    let ran: Vec<String> = repo.agent_log();
    assert_eq!(
        ran.len(),
        total - done,
        "one session per pending chunk: {ran:?}"
    );

    let saved = repo.plan("001-both");
    for (i, phase) in saved["phases"].as_array().unwrap().iter().enumerate() {
        assert_eq!(phase["subtasks"], phase["chunks"], "phases[{i}]");
        let was = both["phases"][i]["chunks"].as_array().unwrap();
        let now = phase["chunks"].as_array().unwrap();
        assert_eq!(now.len(), was.len());
        for (c, w) in now.iter().zip(was) {
            assert_eq!(c["status"], "completed", "{c}");
            // Every field the chunk had is still there (runner only adds its own).
            for (k, v) in w.as_object().unwrap() {
                if k != "status" {
                    assert_eq!(&c[k], v, "{}.{k}", w["id"]);
                }
            }
        }
    }
    for (k, v) in both.as_object().unwrap() {
        if k != "phases" {
            assert_eq!(&saved[k], v, "top-level {k} kept");
        }
    }
    // One commit per chunk that ran, named by its id.
    let log = repo.branch_log("auto-claude/001-both");
    assert_eq!(log.len(), total - done, "{log:?}");
    assert!(log[0].starts_with("auto-claude: cleanup - "), "{log:?}");
}

/// The reference subtasks-era plan as Auto-Claude leaves it mid-run: saved with both lists
/// (`Phase.to_dict`), then one subtask updated by Auto-Claude's `update_subtask_status`, which
/// edits `subtasks` alone (status, notes, updated_at) and leaves `chunks` stale.
fn midflight_with_stale_chunks() -> Option<(Value, String)> {
    let path = reference_plans_dir()?.join("03-subtasks-era-feature-midflight.json");
    let mut plan = with_both_lists(&read_json(&path));
    let (p, c) = plan["phases"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .find_map(|(p, phase)| {
            phase["subtasks"]
                .as_array()
                .unwrap()
                .iter()
                .position(|c| c["status"] == "pending")
                .map(|c| (p, c))
        })
        .expect("a pending subtask");
    let subtask = &mut plan["phases"][p]["subtasks"][c];
    subtask["status"] = json!("completed");
    subtask["notes"] = json!("done by Auto-Claude");
    subtask["updated_at"] = json!("2026-01-01T00:00:00+00:00");
    let id = subtask["id"].as_str().unwrap().to_string();
    Some((plan, id))
}

#[test]
fn lists_that_differ_read_subtasks_as_auto_claude_does_warn_and_are_written_back_equal() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("001-differ");
    let Some((plan, edited)) = midflight_with_stale_chunks() else {
        return;
    };
    write_json(&dir.join("implementation_plan.json"), &plan);
    let (done, total) = counts(&plan);

    // `status` reads `subtasks` (the edited one counts as completed) and reports the difference.
    let out = repo.runner(&["status", "--json"]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains("subtasks and phases[3].chunks differ")
            && err.contains("phases[3].subtasks[1].status is \"completed\""),
        "a warning naming both lists and the first difference:\n{err}"
    );
    let status = spec_status(&repo, "001-differ");
    assert_eq!(status["status"], "in_progress", "{status}");
    assert_eq!(status["chunks"]["total"], total);
    assert_eq!(status["chunks"]["completed"], done, "{status}");
    let warnings = status["warnings"].as_array().expect("a warnings list");
    assert!(
        warnings.len() == 1
            && warnings[0]
                .as_str()
                .unwrap()
                .contains("phases[3].subtasks and phases[3].chunks differ"),
        "{warnings:?}"
    );
    assert_eq!(status["next_chunk"], "subtask-4-3");
    assert_eq!(edited, "subtask-4-2");

    // `run` works from there, and leaves both lists equal.
    let out = repo.run_spec("001-differ", &[]);
    assert_exit(&out, 0);
    assert_eq!(
        repo.agent_log().len(),
        total - done,
        "{:?}",
        repo.agent_log()
    );
    let saved = repo.plan("001-differ");
    for (i, phase) in saved["phases"].as_array().unwrap().iter().enumerate() {
        assert_eq!(phase["subtasks"], phase["chunks"], "phases[{i}]");
    }
    let chunk = repo.chunk("001-differ", &edited);
    assert_eq!(chunk["notes"], "done by Auto-Claude");
    assert_eq!(chunk["status"], "completed");
    let status = spec_status(&repo, "001-differ");
    assert_eq!(status["status"], "complete", "{status}");
    assert_eq!(status["warnings"], json!([]));
}

/// An agent that edits the plan Auto-Claude's way (another chunk's status in `subtasks` only)
/// has edited the plan: the edit is undone like any other, not taken for a broken plan.
#[test]
fn an_agent_editing_only_subtasks_is_undone_like_any_other_edit() {
    let Some(reference) = reference_plans_dir() else {
        return;
    };
    let repo = TestRepo::new();
    let dir = repo.add_spec("001-edit");
    let plan = with_both_lists(&read_json(
        &reference.join("03-subtasks-era-feature-midflight.json"),
    ));
    write_json(&dir.join("implementation_plan.json"), &plan);
    repo.script("subtask-4-2 * update-subtask subtask-4-4 completed\n");
    let out = repo.run_spec("001-edit", &[]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains("The agent edited the plan directly; undone: subtask-4-4 completed → pending"),
        "{err}\n{:#?}",
        repo.events("001-edit")
    );
    assert!(!err.contains("broken"), "not a broken plan: {err}");
    let saved = repo.plan("001-edit");
    for (i, phase) in saved["phases"].as_array().unwrap().iter().enumerate() {
        assert_eq!(phase["subtasks"], phase["chunks"], "phases[{i}]");
    }
    // subtask-4-4 was put back to pending, so it got its own session.
    let ran: Vec<String> = repo.agent_log();
    assert_eq!(ran.len(), 3, "{ran:?}");
    assert!(ran[2].contains("subtask-4-4"), "{ran:?}");
    let other = repo.chunk("001-edit", "subtask-4-4");
    assert_eq!(other["status"], "completed");
    assert_ne!(other["notes"], "set by the agent", "{other}");
    assert!(
        repo.events("001-edit")
            .iter()
            .any(|e| e["event"] == "plan_edit_undone")
    );
}

#[test]
fn auto_claude_aliases_run_and_the_file_keeps_its_keys() {
    let repo = TestRepo::new();
    repo.add_spec("001-alias");
    let plan = json!({"feature": "aliases", "phases": [{"phase": 1, "subtasks": [
        {"subtask_id": "s-1", "title": "First by title", "status": "pending"},
        {"id": null, "subtask_id": "s-2", "description": "Second", "status": "pending"}
    ]}]});
    write_json(&repo.plan_path("001-alias"), &plan);
    let out = repo.run_spec("001-alias", &[]);
    assert_exit(&out, 0);
    assert_eq!(
        repo.branch_log("auto-claude/001-alias"),
        [
            "auto-claude: s-1 - First by title",
            "auto-claude: s-2 - Second"
        ]
    );
    let saved = repo.plan("001-alias");
    let chunks = saved["phases"][0]["subtasks"].as_array().unwrap();
    assert!(chunks[0].get("id").is_none(), "no id added: {}", chunks[0]);
    assert!(chunks[0].get("description").is_none(), "{}", chunks[0]);
    assert_eq!(chunks[1]["id"], Value::Null, "null id kept as it was");
    assert!(chunks.iter().all(|c| c["status"] == "completed"));
    // The agent saw the alias as the chunk id.
    let ran: Vec<String> = repo.agent_log();
    assert!(ran[0].starts_with("coder s-1 1 "), "{ran:?}");
}

#[test]
fn a_top_level_subtasks_plan_runs_and_keeps_its_shape() {
    let repo = TestRepo::new();
    repo.add_spec("001-flat");
    let plan = json!({
        "feature": "QA fixes",
        "subtasks": [
            {"id": "fix-1", "description": "Fix one", "status": "completed"},
            {"id": "fix-2", "description": "Fix two", "status": "pending"}
        ],
        "qa_signoff": {"status": "rejected", "issues": ["x"]}
    });
    write_json(&repo.plan_path("001-flat"), &plan);
    let status = spec_status(&repo, "001-flat");
    assert_eq!(status["chunks"]["total"], 2, "{status}");
    assert_eq!(status["next_chunk"], "fix-2");

    let out = repo.run_spec("001-flat", &[]);
    assert_exit(&out, 0);
    let saved = repo.plan("001-flat");
    let keys: Vec<&String> = saved.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["feature", "subtasks", "qa_signoff", "base_branch"],
        "no phases added; runner's base_branch pinned at the end"
    );
    assert_eq!(saved["subtasks"][1]["status"], "completed");
    assert_eq!(saved["qa_signoff"], plan["qa_signoff"]);
    assert_eq!(
        repo.branch_log("auto-claude/001-flat"),
        ["auto-claude: fix-2 - Fix two"]
    );
}

#[test]
fn malformed_verifications_stop_the_run_with_their_path() {
    let cases = [
        (
            json!({"type": "command", "command": ["make", "test"]}),
            "phases[0].subtasks[0] (c1).verification.command: expected the command as one string (run with sh -c), found a list",
        ),
        (
            json!({"type": "command", "run": "make test", "expect_status": "0"}),
            "phases[0].subtasks[0] (c1).verification.expect_status: expected the exit status as a whole number, found a string",
        ),
        (
            json!({"type": "command", "command": "make", "expect_output": ["ok"]}),
            "phases[0].subtasks[0] (c1).verification.expect_output: expected a string",
        ),
        (
            json!({"type": ["command"], "command": "make"}),
            "phases[0].subtasks[0] (c1).verification.type: expected a string",
        ),
    ];
    for (i, (verification, wanted)) in cases.into_iter().enumerate() {
        let repo = TestRepo::new();
        let spec = format!("00{i}-verify");
        repo.add_spec(&spec);
        let plan = json!({"phases": [{"id": "p", "subtasks": [
            {"id": "c1", "description": "x", "verification": verification}
        ]}]});
        let bytes = serde_json::to_vec_pretty(&plan).unwrap();
        std::fs::write(repo.plan_path(&spec), &bytes).unwrap();
        assert_refused_untouched(&repo, &spec, &bytes, &[wanted]);
    }
}

#[test]
fn chunk_ids_with_control_characters_or_too_long_are_refused() {
    let long = "x".repeat(201);
    let cases: [(&str, &str); 4] = [
        // JSON escapes, as an agent would write them into the file.
        (r#""a\u0000b""#, "contains a control character (U+0000)"),
        (r#""line\nbreak""#, "contains a control character (U+000A)"),
        (
            r#""\u001b[2Jclear""#,
            "contains a control character (U+001B)",
        ),
        (&format!("\"{long}\""), "is 201 bytes long; at most 200"),
    ];
    for (i, (id_json, wanted)) in cases.into_iter().enumerate() {
        let repo = TestRepo::new();
        let spec = format!("00{i}-ids");
        repo.add_spec(&spec);
        let text = format!(
            r#"{{"phases": [{{"id": "p", "subtasks": [{{"id": "ok", "description": "x"}}, {{"id": {id_json}, "description": "y"}}]}}]}}"#
        );
        std::fs::write(repo.plan_path(&spec), &text).unwrap();
        assert_refused_untouched(
            &repo,
            &spec,
            text.as_bytes(),
            &["phases[0].subtasks[1].id: chunk id", wanted],
        );
    }
}

#[test]
fn an_empty_plan_is_not_complete_for_run() {
    for (i, plan) in [
        json!({"feature": "f", "phases": []}),
        json!({"phases": [{"id": "p1", "subtasks": []}, {"id": "p2", "chunks": null}]}),
        json!({"subtasks": []}),
    ]
    .into_iter()
    .enumerate()
    {
        let repo = TestRepo::new();
        let spec = format!("00{i}-empty");
        repo.add_spec(&spec);
        let bytes = serde_json::to_vec_pretty(&plan).unwrap();
        std::fs::write(repo.plan_path(&spec), &bytes).unwrap();
        assert_refused_untouched(&repo, &spec, &bytes, &["the plan has no chunks"]);
    }
    // A planner that writes a plan without chunks is sent back with the problem.
    let repo = TestRepo::new();
    repo.add_spec("009-planner");
    let empty = repo.tmp.path().join("empty-plan.json");
    std::fs::write(&empty, r#"{"phases": [{"id": "p", "subtasks": []}]}"#).unwrap();
    repo.script(&format!("planner * plan {}\n", empty.display()));
    repo.write_config("[run]\nmax_attempts = 2\n");
    let out = repo.run_spec("009-planner", &[]);
    assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("the plan has no chunks"),
        "{}",
        stderr(&out)
    );
    assert_eq!(repo.agent_log().len(), 2, "two planner attempts, no coder");
}

#[test]
fn a_missing_unreadable_or_empty_spec_md_stops_run_before_any_session() {
    let plan = json!({"phases": [{"id": "p", "subtasks": [{"id": "c1", "description": "x"}]}]});
    let bytes = serde_json::to_vec_pretty(&plan).unwrap();
    type Breaker = fn(&Path);
    let breakers: [(&str, Breaker, &str); 9] = [
        (
            "missing",
            |p| std::fs::remove_file(p).unwrap(),
            "is missing",
        ),
        (
            "dangling-link",
            |p| {
                std::fs::remove_file(p).unwrap();
                std::os::unix::fs::symlink("nowhere.md", p).unwrap();
            },
            "is missing",
        ),
        (
            "a-folder",
            |p| {
                std::fs::remove_file(p).unwrap();
                std::fs::create_dir(p).unwrap();
            },
            "cannot read",
        ),
        (
            "blank",
            |p| std::fs::write(p, " \n\t\n").unwrap(),
            "is empty",
        ),
        // Nothing visible is blank too: a byte-order mark alone, zero-width characters, NULs,
        // bytes that are not UTF-8.
        (
            "bom",
            |p| std::fs::write(p, "\u{FEFF}\n").unwrap(),
            "is empty",
        ),
        (
            "zero-width",
            |p| std::fs::write(p, "\u{200B}\u{2060}\u{FEFF}\u{3164}").unwrap(),
            "is empty",
        ),
        (
            "nuls",
            |p| std::fs::write(p, [0u8; 64]).unwrap(),
            "is empty",
        ),
        (
            "invalid-bytes",
            |p| std::fs::write(p, [0xFFu8, 0xFE, 0x80, b'\n']).unwrap(),
            "is empty",
        ),
        (
            "too-big",
            |p| {
                let f = std::fs::File::create(p).unwrap();
                f.set_len(10 * 1024 * 1024 + 1).unwrap();
            },
            "is bigger than 10 MB",
        ),
    ];
    for (i, (what, breaker, wanted)) in breakers.into_iter().enumerate() {
        let repo = TestRepo::new();
        let spec = format!("00{i}-{what}");
        let dir = repo.add_spec(&spec);
        std::fs::write(repo.plan_path(&spec), &bytes).unwrap();
        breaker(&dir.join("spec.md"));
        assert_refused_untouched(&repo, &spec, &bytes, &["spec.md", wanted]);
        // Nothing was set up for the run either.
        assert!(!repo.worktree().exists(), "{what}: no worktree");
    }
    // Without a plan too: no planner starts.
    let repo = TestRepo::new();
    let dir = repo.add_spec("019-noplan");
    std::fs::remove_file(dir.join("spec.md")).unwrap();
    let out = repo.run_spec("019-noplan", &[]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("is missing"), "{}", stderr(&out));
    assert!(repo.agent_log().is_empty());
}

/// A FIFO at spec.md (nobody writing) made `run` wait forever on the read.
#[test]
fn a_fifo_at_spec_md_stops_run_at_once() {
    let plan = json!({"phases": [{"id": "p", "subtasks": [{"id": "c1", "description": "x"}]}]});
    let repo = TestRepo::new();
    let dir = repo.add_spec("001-fifo");
    write_json(&repo.plan_path("001-fifo"), &plan);
    let spec_md = dir.join("spec.md");
    std::fs::remove_file(&spec_md).unwrap();
    let fifo = std::ffi::CString::new(spec_md.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let agent = fixture("fake-agent").display().to_string();
    let mut child = repo
        .cmd(&["run", "--spec", "001-fifo", "--agent-command", &agent])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("runner run hung on a FIFO at spec.md");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("spec.md") && err.contains("a FIFO (named pipe), not a regular file"),
        "{err}"
    );
    assert!(repo.agent_log().is_empty());
}

#[test]
fn a_spec_md_with_invalid_utf8_still_reaches_planner_and_coder() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("001-latin1");
    // "café" in Latin-1: one byte that is not UTF-8, between text that must survive.
    let mut spec =
        b"# Menu\n\nThe caf\xe9 page lists the DAILY-SPECIALS from the kitchen.\n".to_vec();
    spec.extend_from_slice(b"Keep the ORDER-BUTTON.\n");
    std::fs::write(dir.join("spec.md"), &spec).unwrap();
    let out = repo.run_spec("001-latin1", &[]);
    assert_exit(&out, 0);
    let prompts_dir = repo.tmp.path().join("prompts");
    let mut prompts: Vec<(String, String)> = std::fs::read_dir(&prompts_dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect();
    prompts.sort();
    assert!(
        prompts.iter().any(|(n, _)| n.contains("-planner-")),
        "{prompts:?}"
    );
    assert!(
        prompts.iter().any(|(n, _)| n.contains("-coder-")),
        "{prompts:?}"
    );
    for (name, text) in &prompts {
        assert!(
            text.contains("The caf\u{FFFD} page lists the DAILY-SPECIALS")
                && text.contains("Keep the ORDER-BUTTON."),
            "{name} lacks the feature:\n{text}"
        );
    }
}

#[test]
fn chunk_fail_on_a_completed_chunk_clears_completed_at() {
    let repo = TestRepo::new();
    repo.add_spec("001-fail");
    // One list here, so that only `completed_at` is under test (the first test of this file
    // covers writes to both lists).
    let plan = json!({"phases": [{"id": "p", "subtasks": [
        {"id": "a", "description": "x", "status": "completed",
         "completed_at": "2026-01-10T10:12:00Z", "notes": "kept"}
    ]}]});
    write_json(&repo.plan_path("001-fail"), &plan);
    let out = repo.runner(&[
        "chunk",
        "fail",
        "a",
        "--reason",
        "regressed",
        "--spec",
        "001-fail",
    ]);
    assert_exit(&out, 0);
    let chunk = repo.chunk("001-fail", "a");
    assert_eq!(chunk["status"], "failed");
    assert!(chunk.get("completed_at").is_none(), "{chunk}");
    assert_eq!(chunk["failure_reason"], "regressed");
    assert_eq!(chunk["notes"], "kept");
    // And back: done sets it again.
    let out = repo.runner(&["chunk", "done", "a", "--spec", "001-fail"]);
    assert_exit(&out, 0);
    assert!(repo.chunk("001-fail", "a")["completed_at"].is_string());
}

#[test]
fn a_spec_md_deleted_during_the_run_stops_it_before_the_next_session() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("001-gone");
    let plan = json!({"phases": [{"id": "p", "subtasks": [
        {"id": "c1", "description": "first"},
        {"id": "c2", "description": "second"}
    ]}]});
    write_json(&repo.plan_path("001-gone"), &plan);
    repo.script("c1 * slow 1\n");
    let agent = fixture("fake-agent").display().to_string();
    let child = repo
        .cmd(&["run", "--spec", "001-gone", "--agent-command", &agent])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("c1's session", || {
        repo.agent_log().iter().any(|l| l.starts_with("coder c1 "))
    });
    std::fs::remove_file(dir.join("spec.md")).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("is missing"), "{}", stderr(&out));
    assert_eq!(
        repo.agent_log().len(),
        1,
        "no session for c2: {:?}",
        repo.agent_log()
    );
    assert_eq!(repo.chunk("001-gone", "c1")["status"], "completed");
    // c2 was taken, but its agent never ran: it is pending again, not left in progress.
    let c2 = repo.chunk("001-gone", "c2");
    assert_eq!(c2["status"], "pending", "{c2}");
    assert_eq!(c2["attempts"][0]["outcome"], "not_started", "{c2}");
}

/// A description, a phase name or an agent's reason with escape sequences cannot forge
/// runner's progress lines: the terminal text shows them escaped; JSON stays exact.
#[test]
fn plan_and_agent_text_cannot_forge_progress_lines() {
    let forged = "\u{1b}[2K\r  ✓ a completed, committed 0000000000";
    let repo = TestRepo::new();
    repo.add_spec("001-forge");
    let plan = json!({"phases": [{"id": "p", "name": format!("phase{forged}"), "subtasks": [
        {"id": "a", "description": format!("build{forged}")},
        {"id": "b", "description": "second"}
    ]}]});
    write_json(&repo.plan_path("001-forge"), &plan);
    repo.script("b * fail broken\n");
    let out = repo.run_spec("001-forge", &[]);
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}') && !err.contains('\r'), "{err:?}");
    assert!(
        err.contains("build\\u{1b}[2K\\u{d}  ✓ a completed"),
        "{err}"
    );

    // A reason given through `runner chunk fail`, shown back by status and the command.
    let out = repo.runner(&[
        "chunk",
        "fail",
        "a",
        "--spec",
        "001-forge",
        "--reason",
        forged,
    ]);
    assert!(!stdout(&out).contains('\u{1b}'), "{:?}", stdout(&out));
    let out = repo.runner(&["status"]);
    assert!(!stdout(&out).contains('\u{1b}'), "{:?}", stdout(&out));
    // JSON keeps the text exact.
    assert_eq!(
        repo.chunk("001-forge", "a")["description"],
        format!("build{forged}")
    );
}

/// Where Auto-Claude is strict, runner is lenient, and says so in docs/state.md: a status in
/// any case and with spaces around it ("Completed ", "PENDING") reads as its status, and a
/// UTF-8 byte-order mark before the plan is skipped. runner's next write of the plan spells
/// the statuses its own way and drops the mark.
#[test]
fn statuses_in_any_case_and_a_byte_order_mark_are_read_and_written_back_plain() {
    let repo = TestRepo::new();
    repo.add_spec("001-lenient");
    let text = "\u{feff}{\"phases\": [{\"id\": \"p\", \"subtasks\": [\
        {\"id\": \"a\", \"description\": \"x\", \"status\": \"Completed \"},\
        {\"id\": \"b\", \"description\": \"y\", \"status\": \" PENDING\"},\
        {\"id\": \"c\", \"description\": \"z\", \"status\": \"In Progress\"}]}]}";
    std::fs::write(repo.plan_path("001-lenient"), text).unwrap();
    let status = spec_status(&repo, "001-lenient");
    let chunks = &status["chunks"];
    assert_eq!(
        [
            &chunks["completed"],
            &chunks["pending"],
            &chunks["in_progress"]
        ],
        [1, 1, 1],
        "{status}"
    );
    let out = repo.runner(&["chunk", "done", "b", "--spec", "001-lenient"]);
    assert_exit(&out, 0);
    let bytes = std::fs::read(repo.plan_path("001-lenient")).unwrap();
    assert!(
        bytes.starts_with(b"{"),
        "the mark is dropped: {:?}",
        &bytes[..8]
    );
    let statuses: Vec<String> = repo
        .statuses("001-lenient")
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    assert_eq!(statuses, ["completed", "completed", "in_progress"]);
    // What docs/state.md promises.
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/state.md"))
        .unwrap();
    for promise in ["byte-order mark", "case", "Auto-Claude"] {
        assert!(
            doc.contains("**Statuses in any case") && doc.contains(promise),
            "docs/state.md does not say how statuses and a byte-order mark are read ({promise})"
        );
    }
}

/// A phase number past the 64-bit limit is refused as too large, naming the field and the
/// limit (it said "expected a whole number, found a number").
#[test]
fn a_phase_number_too_large_is_refused_as_too_large() {
    let repo = TestRepo::new();
    repo.add_spec("001-huge");
    let text = r#"{"phases": [{"phase": 100000000000000000000, "subtasks": [{"id": "a", "description": "x"}]}]}"#;
    std::fs::write(repo.plan_path("001-huge"), text).unwrap();
    assert_refused_untouched(
        &repo,
        "001-huge",
        text.as_bytes(),
        &[
            "phases[0].phase: 100000000000000000000 is too large",
            "at most 9223372036854775807",
        ],
    );
}
