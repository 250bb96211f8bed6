//! The light read against the full parser, plan by plan: it answers only where it agrees.

use std::path::Path;

use super::*;
use crate::plan::parse_plan;

/// The light read either says "not sure" or agrees with the full parser, which must then have
/// read the plan without error or warning. Returns whether the light read answered.
fn agrees(text: &str) -> bool {
    let full = parse_plan(Path::new("p.json"), text.as_bytes());
    match summarize(text.as_bytes()) {
        None => false,
        Some(light) => {
            let full =
                full.unwrap_or_else(|e| panic!("light read took a broken plan: {e}\n{text}"));
            let diff = differences(&light, &full);
            assert!(diff.is_empty(), "{diff:?}\n{text}");
            true
        }
    }
}

fn plan_with_chunk(chunk: &str) -> String {
    format!(r#"{{"phases": [{{"id": "p1", "subtasks": [{chunk}]}}]}}"#)
}

const GOOD: &str = r#"{
  "feature": "x",
  "phases": [
    {"id": "phase-1", "phase": 1, "name": "One", "depends_on": [], "subtasks": [
      {"id": "a", "description": "A", "status": "completed",
       "attempts": [{"n": 1, "outcome": "failed", "commit": null},
                    {"n": 2, "outcome": "completed", "commit": "abc", "extra": [1]}],
       "verification": {"type": "command", "command": "true", "expected": "ok"}},
      {"id": "b", "title": "B", "status": "in_progress", "verification": "look"}
    ]},
    {"id": "phase-2", "depends_on": ["phase-1"], "chunks": [
      {"id": 7, "description": "C", "status": "todo", "files_to_modify": ["x"]}
    ]},
    {"phase": 3, "depends_on": [1, "phase-2"], "subtasks": [{"id": "d", "description": "D"}],
     "chunks": [{"id": "d", "description": "D"}]}
  ]
}"#;

#[test]
fn a_usual_plan_is_read_light_and_agrees() {
    parse_plan(Path::new("p.json"), GOOD.as_bytes()).unwrap();
    assert!(agrees(GOOD));
    let light = summarize(GOOD.as_bytes()).unwrap();
    assert_eq!(light.plan().total(), 4);
    assert_eq!(super::super::next_chunk_id(light.plan()), None);
    let merged = GOOD.replacen("\"feature\"", "\"merged\": null, \"feature\"", 1);
    assert!(agrees(&merged));
    assert!(
        summarize(merged.as_bytes())
            .unwrap()
            .plan()
            .raw
            .contains_key("merged")
    );
    // A byte-order mark, escapes in ids and statuses.
    assert!(agrees(&format!(
        "\u{feff}{}",
        plan_with_chunk(r#"{"id": "a\u0062", "description": "x", "status": "in\u005fprogress"}"#)
    )));
}

/// Every kind of problem `parse.rs` and `validate.rs` report, and the unusual shapes: the
/// light read never answers for a broken plan, and agrees wherever it answers.
#[test]
fn broken_and_unusual_plans_go_to_the_full_parser() {
    let chunk = |c: &str| plan_with_chunk(c);
    let broken = [
        "{".to_string(),
        "[]".into(),
        r#"{"phases": {}}"#.into(),
        r#"{"feature": "x"}"#.into(),
        r#"{"phases": [[]]}"#.into(),
        r#"{"phases": [["p", 1, [], []]]}"#.into(),
        r#"{"phases": [{"id": true, "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": "a\u0007", "subtasks": []}]}"#.into(),
        format!(r#"{{"phases": [{{"id": "{}", "subtasks": []}}]}}"#, "x".repeat(201)),
        r#"{"phases": [{"phase": 1.5, "subtasks": []}]}"#.into(),
        r#"{"phases": [{"phase": "x", "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": "a", "depends_on": [true], "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": "a", "depends_on": {}, "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": 3, "depends_on": 3.0, "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": "a", "subtasks": {}}]}"#.into(),
        r#"{"phases": [{"id": "a", "subtasks": [1]}]}"#.into(),
        chunk(r#"{"description": "x"}"#),
        chunk(r#"{"id": true, "description": "x"}"#),
        chunk(r#"{"id": "a\u202e", "description": "x"}"#),
        chunk(r#"{"id": "a"}"#),
        chunk(r#"{"id": "a", "description": "  "}"#),
        chunk(r#"{"id": "a", "description": 3}"#),
        chunk(r#"{"id": "a", "description": "x", "status": "someday"}"#),
        chunk(r#"{"id": "a", "description": "x", "status": 1}"#),
        chunk(r#"{"id": "a", "description": "x", "attempts": {}}"#),
        chunk(r#"{"id": "a", "description": "x", "attempts": null}"#),
        chunk(r#"{"id": "a", "description": "x", "attempts": [{"outcome": "completed"}]}"#),
        chunk(r#"{"id": "a", "description": "x", "attempts": [{"n": -1}]}"#),
        chunk(r#"{"id": "a", "description": "x", "attempts": [{"n": 1, "commit": 5}]}"#),
        chunk(r#"{"id": "a", "description": "x", "attempts": [1]}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": []}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": 1}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"type": "command"}}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"type": "command", "command": "  "}}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"command": "x", "run": 1}}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"type": "odd", "command": "x"}}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"command": "x", "expect_status": "0"}}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"command": "x", "expect_status": 1e10}}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"command": ["x"]}}"#),
        chunk(r#"{"id": "a", "description": "x"}, {"id": "a", "description": "y"}"#),
        r#"{"phases": [{"id": "a", "subtasks": []}, {"id": "a", "subtasks": []}]}"#.into(),
        r#"{"phases": [{"phase": 1, "subtasks": []}, {"phase": 1, "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": "a", "depends_on": ["b"], "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": "1", "subtasks": []}, {"phase": 1, "subtasks": []}, {"id": "c", "depends_on": [1], "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": "a", "depends_on": ["b"], "subtasks": []}, {"id": "b", "depends_on": "a", "subtasks": []}]}"#.into(),
    ];
    for text in &broken {
        assert!(
            parse_plan(Path::new("p.json"), text.as_bytes()).is_err(),
            "meant to be broken: {text}"
        );
        assert!(
            summarize(text.as_bytes()).is_none(),
            "light read took: {text}"
        );
    }
    // Valid, but unusual: the full parser reads them (and may warn); the light read does not
    // answer, or agrees.
    let unusual = [
        chunk(r#"{"id": " ", "subtask_id": " s1 ", "description": "x"}"#),
        chunk(r#"{"subtask_id": "s1", "description": "x"}"#),
        chunk(r#"{"id": 1.5, "description": "x"}"#),
        r#"{"subtasks": [{"id": "a", "description": "x"}]}"#.into(),
        r#"{"phases": [], "chunks": [{"id": "a", "description": "x"}]}"#.into(),
        r#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x"}], "chunks": [{"id": "a", "description": "x", "status": "done"}]}]}"#.into(),
        r#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x"}], "chunks": [{"id": "a",  "description": "x"}]}]}"#.into(),
        r#"{"phases": [{"id": "p", "subtasks": [], "chunks": [{"id": "a", "description": "x"}]}]}"#.into(),
        r#"{"phases": [{"phase": " 2 ", "subtasks": []}]}"#.into(),
        r#"{"phases": [{"id": "a", "subtasks": null, "chunks": null}]}"#.into(),
        r#"{"phases": [{"id": "a", "subtasks": []}], "phases": [{"id": "b", "subtasks": []}]}"#.into(),
        chunk(r#"{"id": "a", "description": "x", "status": "x", "status": "Done"}"#),
        chunk(r#"{"id": "a", "description": "x", "status": "completed", "attempts": [{"n": 1, "outcome": "completed", "commit": "c1"}, {"n": 2, "outcome": "completed"}]}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"type": "Browser ", "url": 1}}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"run": "x", "expected_exit_code": 2}}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"type": " COMMAND ", "command": "x", "expect_status": null}}"#),
        chunk(r#"{"id": "a", "description": "x", "verification": {"type": "manual", "command": "x"}}"#),
    ];
    for text in &unusual {
        parse_plan(Path::new("p.json"), text.as_bytes())
            .unwrap_or_else(|e| panic!("meant to be valid: {text}\n{e}"));
        agrees(text);
    }
}
