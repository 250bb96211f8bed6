//! Chunks kept as the file's text (issue 10): through the real binary, a change of one chunk
//! writes exactly what reading every chunk into values and writing them back wrote before —
//! serde_json's pretty form of the plan — and leaves every other chunk's text as it was.

use crate::common::*;
use serde_json::{Value, json};

/// A plan with what long runs leave: attempt records, verification objects, unknown fields,
/// exact number texts (and one serde_json rewrites: `1e3`), strings with escapes.
fn long_plan() -> Value {
    let chunks: Vec<Value> = (1..=30)
        .map(|i| {
            let mut chunk = json!({
                "id": format!("c{i:02}"),
                "description": format!("Part {i}: \"quoted\", tab\t, newline\n, é, 😀, \u{1}"),
                "status": if i <= 20 { "completed" } else { "pending" },
                "verification": {"type": "command", "command": format!("test {i} -gt 0")},
                "x_unknown": serde_json::from_str::<Value>(r#"{"keep": [1e3, 0.10, -0, true, null]}"#).unwrap(),
            });
            if i <= 20 {
                chunk["attempts"] = json!([{"n": 1, "outcome": "completed", "x_cost": 1.50}]);
            }
            chunk
        })
        .collect();
    json!({"feature": "speed", "x_top": 12345678901234567890u64, "phases": [
        {"id": "p1", "subtasks": chunks[..15].to_vec(), "chunks": chunks[..15].to_vec()},
        {"id": "p2", "depends_on": ["p1"], "subtasks": chunks[15..].to_vec()},
    ]})
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap() + "\n"
}

/// Each chunk object's text in `file` (pretty, at the chunks' depth), by id.
fn chunk_texts(file: &str) -> Vec<String> {
    let plan: Value = serde_json::from_str(file).unwrap();
    let mut texts = Vec::new();
    for phase in plan["phases"].as_array().unwrap() {
        for chunk in phase["subtasks"].as_array().unwrap() {
            let text = serde_json::to_string_pretty(chunk).unwrap();
            texts.push(text.replace('\n', &format!("\n{}", " ".repeat(8))));
        }
    }
    texts
}

#[test]
fn a_change_to_one_chunk_writes_the_plan_exactly_as_before_and_keeps_the_others_text() {
    for compact in [false, true] {
        let repo = TestRepo::new();
        repo.add_spec("001-speed");
        let plan = long_plan();
        // In runner's form but for the exponents, written as serde_json would not (`1e3`).
        let input = if compact {
            plan.to_string()
        } else {
            pretty(&plan).replace("1e+3", "1e3")
        };
        assert!(compact || input.contains("1e3,"));
        repo.write_plan("001-speed", &input);
        let out = repo.runner(&["chunk", "done", "c25", "--spec", "001"]);
        assert_exit(&out, 0);
        let written = std::fs::read_to_string(repo.plan_path("001-speed")).unwrap();
        let value: Value = serde_json::from_str(&written).unwrap();
        // The bytes are serde_json's pretty form of what they hold: what the value-based
        // writer wrote for the same plan.
        assert_eq!(written, pretty(&value), "compact input: {compact}");
        // Only c25 changed; every other chunk is the same value, and the same text.
        let before = chunk_texts(&pretty(&plan));
        for (i, (was, now)) in before.iter().zip(chunk_texts(&written)).enumerate() {
            if i == 24 {
                assert_ne!(*was, now);
                assert!(written.contains(&now));
            } else {
                assert_eq!(*was, now, "chunk {i}");
                assert!(written.contains(was.as_str()));
            }
        }
        assert_eq!(repo.chunk("001-speed", "c25")["status"], "completed");
        // Fields outside the chunks are untouched, numbers with their exact text.
        assert!(written.contains("\"x_top\": 12345678901234567890,"));
        assert!(written.contains("\"keep\": [\n"));
        assert!(written.contains("0.10,"));
        // (serde_json writes an exponent with its sign: `1e3` is `1e+3`, as before.)
        assert!(written.contains("1e+3,"));
        assert_eq!(value["phases"][0]["subtasks"], value["phases"][0]["chunks"]);
    }
}

/// A chunk an agent broke in the file is found however it is written, with the same problem.
#[test]
fn a_broken_chunk_is_refused_the_same_in_runners_form_and_in_another() {
    let mut plan = long_plan();
    plan["phases"][1]["subtasks"][3]["attempts"] = json!([{"n": "two"}]);
    let mut messages = Vec::new();
    for text in [pretty(&plan), plan.to_string()] {
        let repo = TestRepo::new();
        repo.add_spec("001-speed");
        repo.write_plan("001-speed", &text);
        let out = repo.runner(&["chunk", "done", "c25", "--spec", "001"]);
        assert_ne!(out.status.code(), Some(0));
        let err = stderr(&out);
        assert!(
            err.contains("phases[1].subtasks[3] (c19).attempts"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(repo.plan_path("001-speed")).unwrap(),
            text
        );
        messages.push(err.replace(&repo.path("").display().to_string(), "REPO"));
    }
    assert_eq!(messages[0], messages[1]);
}

/// How many durable replaces of a file (`write_atomic`) `runner run` itself makes for a plan of
/// `chunks` pending chunks whose agent reports each done.
fn durable_writes_of_a_run(chunks: usize) -> usize {
    let repo = TestRepo::new();
    let spec = "001-writes";
    repo.add_spec(spec);
    let subtasks: Vec<Value> = (1..=chunks)
        .map(|i| json!({"id": format!("c{i}"), "description": format!("Part {i}"), "status": "pending"}))
        .collect();
    repo.write_plan(
        spec,
        &pretty(&json!({"feature": "w", "phases": [{"id": "p1", "subtasks": subtasks}]})),
    );
    let log = repo.tmp.path().join("failpoints.log");
    let agent = fixture("fake-agent").display().to_string();
    let child = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent])
        .env("RUNNER_FAILPOINT_LOG", &log)
        .output()
        .unwrap();
    assert_exit(&child, 0);
    // The run's own lines: the agents' `runner chunk done` are other processes, each with one
    // write of its own. The run is the process that reached the most points.
    let text = std::fs::read_to_string(&log).unwrap();
    let mut by_pid: std::collections::HashMap<&str, Vec<&str>> = Default::default();
    for line in text.lines() {
        let (pid, name) = line.split_once(' ').unwrap();
        by_pid.entry(pid).or_default().push(name);
    }
    let run = by_pid.values().max_by_key(|names| names.len()).unwrap();
    run.iter().filter(|n| **n == "atomic_before_rename").count()
}

/// One durable plan write per chunk (issue 10): a chunk's completion and the next chunk's take
/// are one write. Four more chunks, four more writes.
#[test]
fn a_run_writes_the_plan_durably_once_per_chunk() {
    let (short, long) = (durable_writes_of_a_run(2), durable_writes_of_a_run(6));
    assert_eq!(long - short, 4, "{short} writes for 2 chunks, {long} for 6");
}

/// The copy of the plan as a session starts has a fixed name an agent can plant a link at: it is
/// never written through, and the run goes on (the copy is advisory).
#[test]
fn a_link_planted_at_the_session_copy_neither_stops_the_run_nor_is_written_through() {
    let repo = TestRepo::new();
    let spec = "001-link";
    repo.add_spec(spec);
    let subtasks: Vec<Value> = (1..=3)
        .map(|i| json!({"id": format!("c{i}"), "description": format!("Part {i}"), "status": "pending"}))
        .collect();
    repo.write_plan(
        spec,
        &pretty(&json!({"feature": "l", "phases": [{"id": "p1", "subtasks": subtasks}]})),
    );
    let target = repo.tmp.path().join("elsewhere.txt");
    std::fs::write(&target, "untouched\n").unwrap();
    let script = repo.tmp.path().join("agent.sh");
    std::fs::write(
        &script,
        format!(
            "ln -sf {} \"$RUNNER_SPEC_DIR/implementation_plan.json.before-session\"\necho \"$RUNNER_CHUNK_ID\" > \"$RUNNER_CHUNK_ID.txt\"\nrunner chunk done \"$RUNNER_CHUNK_ID\"\n",
            target.display()
        ),
    )
    .unwrap();
    let agent = format!("sh {}", script.display());
    let out = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("could not keep the plan as the session starts"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched\n");
    assert_eq!(repo.branch_log(&format!("auto-claude/{spec}")).len(), 3);
}
