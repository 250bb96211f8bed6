//! The light read against the full parser, plan by plan: it answers only where it agrees.

use std::path::Path;

use super::*;
use crate::plan::parse_plan;

/// The light read either says "not sure" or agrees with the full parser, which must then have
/// read the plan without error or warning. Returns whether the light read answered.
fn agrees(text: &str) -> bool {
    let full = parse_plan(Path::new("p.json"), text.as_bytes());
    same_as_text(text.as_bytes());
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

/// The light read with every chunk list kept as text first (as before lists were read in
/// place, and still for a phase with both lists).
fn as_text(bytes: &[u8]) -> Option<PlanSummary> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    skeleton(serde_json::from_slice::<Top<AS_TEXT>>(bytes).ok()?)
}

/// The light read (lists read in place where it can) answers only where the read as text
/// does, and the same. (It may leave to the full parser a plan the read as text takes: see
/// `summarize`; `agrees` holds whatever it answers to the full parser.)
fn same_as_text(bytes: &[u8]) {
    let shown = String::from_utf8_lossy(bytes);
    if let Some(light) = summarize(bytes) {
        assert_eq!(Some(light), as_text(bytes), "{shown}");
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
        same_as_text(text.as_bytes());
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

/// What serde_json skips without reading it (`IgnoredAny`, a raw value): nesting deeper than
/// its recursion limit, a lone surrogate escape, a byte that is not UTF-8, in any field the
/// light read does not look at, or looks at only in part. The full parser reads those fields
/// and rejects the plan; the light read must not answer for it.
#[test]
fn text_the_full_parser_rejects_is_never_taken_light() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let cases: Vec<Vec<u8>> = vec![
        format!(r#"{{"x": {}, "phases": [{{"id": "p", "subtasks": [{{"id": "a", "description": "x"}}]}}]}}"#, deep(200)).into_bytes(),
        format!(r#"{{"phases": [{{"id": "p", "x": {}, "subtasks": [{{"id": "a", "description": "x"}}]}}]}}"#, deep(200)).into_bytes(),
        plan_with_chunk(&format!(r#"{{"id": "a", "description": "x", "notes": {}}}"#, deep(200))).into_bytes(),
        plan_with_chunk(&format!(r#"{{"id": "a", "description": "x", "notes": {}}}"#, deep(126))).into_bytes(),
        format!(r#"{{"x": {}, "phases": []}}"#, deep(127)).into_bytes(),
        br#"{"x": "\ud800", "phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x"}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "x": "\ud800", "subtasks": [{"id": "a", "description": "x"}]}]}"#.to_vec(),
        plan_with_chunk(r#"{"id": "a", "description": "x", "notes": "\ud800"}"#).into_bytes(),
        b"{\"x\": \"\xff\", \"phases\": [{\"id\": \"p\", \"subtasks\": [{\"id\": \"a\", \"description\": \"x\"}]}]}".to_vec(),
        b"{\"phases\": [{\"id\": \"p\", \"x\": \"\xff\", \"subtasks\": [{\"id\": \"a\", \"description\": \"x\"}]}]}".to_vec(),
        b"{\"x\xff\": 1, \"phases\": []}".to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "x": 1e999}]}]}"#.to_vec(),
        br#"{"x": 1e999, "phases": []}"#.to_vec(),
        br#"{"phases": [{"id": "p", "x": 1e999, "subtasks": []}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "verification": {"command": "x", "x": 1e999}}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "attempts": [{"n": 1, "x": 1e999}]}]}]}"#.to_vec(),
        br#"{"phases": [{"id": 1.0, "subtasks": []}]}"#.to_vec(),
        br#"{"phases": [{"id": 10000000000000000000, "subtasks": []}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": 10000000000000000000, "description": "x"}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": -0, "description": "x"}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": " a", "description": "x"}]}]}"#.to_vec(),
        br#"{"phases": [{"id": " ", "subtasks": []}]}"#.to_vec(),
        br#"{"phases": [{"id": "", "subtasks": []}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "status": " Done "}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "status": ""}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "title": 3}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": null, "title": "t"}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "subtask_id": "b"}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "subtask_id": 5}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "attempts": []}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "attempts": [{"n": 1, "session_id": 3}]}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "attempts": [{"n": 1, "extra_field": {"a": 1}}]}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "attempts": [{"n": 1.0}]}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "attempts": [{"n": 4294967296}]}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "status": "completed", "attempts": [{"n": 1, "outcome": "completed", "commit": "abc"}, {"n": 2, "outcome": "completed", "commit": null}]}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "verification": {"type": null, "command": "x"}}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "verification": {"type": "command", "command": "x", "run": "y"}}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "verification": {"command": "x", "expected": 5}}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "verification": {"type": "command", "run": "x"}}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "verification": {"type": "command", "command": "x", "command": ""}}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "verification": {"type": "command", "command": "", "command": "x"}}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "id": "b"}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x"}], "subtasks": [{"id": "b", "description": "x"}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x"}], "subtasks": null}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [], "chunks": []}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "depends_on": "p", "subtasks": []}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "depends_on": 1, "phase": 1, "subtasks": []}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "depends_on": [], "phase": -5, "subtasks": []}]}"#.to_vec(),
        br#"{"phases": [{"id": "1", "subtasks": []}, {"id": "b", "depends_on": [1], "subtasks": []}]}"#.to_vec(),
        br#"{"phases": [{"phase": 1, "subtasks": []}, {"id": "b", "depends_on": ["1"], "subtasks": []}]}"#.to_vec(),
        br#"{"merged": false, "phases": []}"#.to_vec(),
        br#"{"merged": null, "merged": null, "phases": []}"#.to_vec(),
        br#"{"phases": [], "subtasks": null}"#.to_vec(),
        br#"{"phases": null}"#.to_vec(),
        br#"{"phases": []} x"#.to_vec(),
        b"\xEF\xBB\xBF\xEF\xBB\xBF{\"phases\": []}".to_vec(),
        br#"  {"phases": []}  "#.to_vec(),
        br#"{"ph\u0061ses": [{"id": "p", "subtasks": [{"id": "a", "description": "x"}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "sub\u0074asks": [{"id": "a", "description": "x"}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"i\u0064": "a", "description": "x"}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "st\u0061tus": "completed"}]}]}"#.to_vec(),
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "x", "status": "completed"}]}, {"id": "q", "depends_on": ["p"], "subtasks": [{"id": "b", "description": "x", "status": "blocked"}]}]}"#.to_vec(),
    ];
    let more = [
        r#"{"id": "a", "description": "x", "title": "\ud800"}"#,
        r#"{"id": "a", "description": "x", "attempts": [{"n": 1, "session_id": "\ud800"}]}"#,
        r#"{"id": "a", "description": "x", "verification": {"command": "x", "run": "\ud800"}}"#,
        r#"{"id": "a", "description": "x", "verification": {"command": "x", "expect_status": null, "expect_output": "\udc00"}}"#,
    ];
    let deep_in = |at: &str| {
        plan_with_chunk(&format!(r#"{{"id": "a", "description": "x", {at}}}"#)).into_bytes()
    };
    let cases = cases
        .into_iter()
        .chain(more.iter().map(|c| plan_with_chunk(c).into_bytes()))
        .chain([
            deep_in(&format!(r#""attempts": [{{"n": 1, "x": {}}}]"#, deep(125))),
            deep_in(&format!(
                r#""verification": {{"command": "x", "x": {}}}"#,
                deep(126)
            )),
            deep_in(&format!(
                r#""verification": {{"command": "x", "run": {}}}"#,
                deep(126)
            )),
            deep_in(&format!(r#""title": {}"#, deep(127))),
        ]);
    let mut rejected = 0;
    for text in cases {
        same_as_text(&text);
        let full = parse_plan(Path::new("p.json"), &text);
        let shown = String::from_utf8_lossy(&text);
        match summarize(&text) {
            None => {}
            Some(light) => {
                let full =
                    full.unwrap_or_else(|e| panic!("light read took a broken plan: {e}\n{shown}"));
                let diff = differences(&light, &full);
                assert!(diff.is_empty(), "{diff:?}\n{shown}");
                continue;
            }
        }
        rejected += usize::from(full.is_err());
    }
    // The cases meant to be broken are broken (the test would prove nothing otherwise).
    assert!(
        rejected >= 20,
        "only {rejected} cases rejected by the full parser"
    );
}

/// A phase's chunk lists: one list is read in place; with both (current Auto-Claude writes
/// both, equal), the plan is read again with the lists as text, compared as before.
#[test]
fn a_phase_with_both_lists_is_compared_and_one_list_read_in_place() {
    let a = r#"{"id": "a", "description": "x", "status": "completed", "attempts": [{"n": 1, "outcome": "completed", "commit": "c1"}]}"#;
    let b = r#"{"id": "b", "description": "y"}"#;
    let phase = |lists: &str| format!(r#"{{"phases": [{{"id": "p", "phase": 1, {lists}}}]}}"#);
    let mirror_key = |text: &str| summarize(text.as_bytes()).map(|s| s.plan.phases[0].mirror_key);
    // Both, the same bytes, in either order: one list, the other its mirror.
    for text in [
        phase(&format!(r#""subtasks": [{a}, {b}], "chunks": [{a}, {b}]"#)),
        phase(&format!(r#""chunks": [{a}, {b}], "subtasks": [{a}, {b}]"#)),
    ] {
        assert!(agrees(&text), "{text}");
        assert_eq!(mirror_key(&text), Some(Some("chunks")));
    }
    // One list (the other missing or null, the last of a repeated key counting).
    for text in [
        phase(&format!(r#""subtasks": [{a}, {b}]"#)),
        phase(&format!(r#""chunks": [{a}, {b}]"#)),
        phase(&format!(r#""subtasks": [{a}, {b}], "chunks": null"#)),
        phase(&format!(
            r#""subtasks": [{a}, {b}], "chunks": [{a}, {b}], "chunks": null"#
        )),
        phase(&format!(
            r#""subtasks": [{b}], "chunks": null, "subtasks": [{a}, {b}]"#
        )),
        phase(&format!(r#""chunks": [{b}], "chunks": [{a}, {b}]"#)),
    ] {
        assert!(agrees(&text), "{text}");
        assert_eq!(mirror_key(&text), Some(None), "{text}");
        assert_eq!(
            summarize(text.as_bytes()).unwrap().plan.total(),
            2,
            "{text}"
        );
    }
    // Both, not the same bytes (even when equal once read): the full parser compares them.
    for text in [
        phase(&format!(r#""subtasks": [{a}, {b}], "chunks": [{a}]"#)),
        phase(&format!(r#""subtasks": [{a}, {b}], "chunks": [{a},{b}]"#)),
        phase(&format!(r#""subtasks": [], "chunks": [{a}, {b}]"#)),
        phase(&format!(
            r#""subtasks": [{a}], "chunks": [{a}], "subtasks": [{a}, {b}]"#
        )),
    ] {
        assert!(!agrees(&text), "{text}");
    }
    // What the full parser rejects, in a kept or a skipped field, in one list or in both.
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let bad = [
        r#""notes": "\ud800""#.to_string(),
        r#""title": "\udc00""#.to_string(),
        r#""title": "\x""#.to_string(),
        r#""notes": "<FF>""#.to_string(),
        r#""title": "<FF>""#.to_string(),
        format!(r#""notes": {}"#, deep(200)),
        format!(r#""attempts": [{{"n": 1, "x": {}}}]"#, deep(130)),
    ];
    let mut rejected = 0;
    for field in &bad {
        let c = format!(r#"{{"id": "c", "description": "x", {field}}}"#);
        for lists in [
            format!(r#""subtasks": [{b}, {c}]"#),
            format!(r#""subtasks": [{b}, {c}], "chunks": [{b}, {c}]"#),
            // An earlier value of a repeated key is read too.
            format!(r#""subtasks": [{c}], "subtasks": [{b}]"#),
            format!(r#""subtasks": [{c}], "chunks": [{c}], "chunks": null"#),
        ] {
            // `<FF>`: a byte that is not UTF-8.
            let text: Vec<u8> = phase(&lists)
                .split("<FF>")
                .collect::<Vec<_>>()
                .join("\u{1}")
                .bytes()
                .map(|b| if b == 1 { 0xFF } else { b })
                .collect();
            same_as_text(&text);
            if parse_plan(Path::new("p.json"), &text).is_err() {
                rejected += 1;
                assert!(
                    summarize(&text).is_none(),
                    "{}",
                    String::from_utf8_lossy(&text)
                );
            }
        }
    }
    assert!(rejected >= 20, "only {rejected} rejected");
    // Nesting near serde_json's limit in a chunk of a list read in place (its depth counts
    // from the top of the file, as in the full parser).
    let mut taken = 0;
    for n in 110..132 {
        let c = format!(r#"{{"id": "c", "description": "x", "notes": {}}}"#, deep(n));
        let text = phase(&format!(r#""subtasks": [{c}]"#));
        taken += usize::from(agrees(&text));
    }
    assert!(taken > 0 && taken < 22, "{taken} taken");
}

#[test]
fn a_plain_text_is_read_by_what_it_says_and_anything_else_by_serde_json() {
    for (json, plain) in [
        (r#""subtask-1""#, Some("subtask-1")),
        (r#""é 😀 ok""#, Some("é 😀 ok")),
        (r#""""#, Some("")),
        (r#""a\nb""#, None),
        (r#""\ud800""#, None),
        ("\"tab\there\"", None),
        ("12", None),
        ("null", None),
        (r#"["a"]"#, None),
    ] {
        assert_eq!(de::plain_text(json), plain, "{json}");
        if let Some(text) = plain {
            // What serde_json reads from it.
            assert_eq!(serde_json::from_str::<String>(json).unwrap(), text);
        }
    }
    // The quick way to say a kept value is sound agrees with reading it (a raw control
    // character never gets this far: taking raw JSON refuses it).
    let deep = format!("{}1{}", "[".repeat(17), "]".repeat(17));
    for (json, sound) in [
        (r#""plain""#, true),
        (r#""\ud800""#, false),
        (r#""a\"b""#, true),
        ("1e5", true),
        ("-0", true),
        ("true", true),
        ("null", true),
        (r#"{"a": [1, "\udc00"]}"#, false),
        (r#"{"a": [1, "ok"]}"#, true),
        (deep.as_str(), false),
    ] {
        let raw: &RawValue = serde_json::from_str(json).unwrap();
        assert_eq!(de::sound(raw), sound, "{json}");
    }
}

/// The ledger: attempts are counted and their costs summed as the full reader sums them
/// (`differences` holds every plan to it), garbage counting as nothing; the budget mark is read
/// like `merged`.
#[test]
fn the_light_read_sums_the_ledger_as_the_full_reader_does() {
    let plan = |attempt: &str, top: &str| {
        format!(
            r#"{{{top}"phases": [{{"id": "p", "subtasks": [
                {{"id": "a", "description": "A", "status": "completed",
                  "attempts": [{{"n": 1, "outcome": "failed"}}, {attempt}]}},
                {{"id": "b", "description": "B", "status": "pending"}}]}}]}}"#
        )
    };
    let plain = plan(r#"{"n": 2, "outcome": "completed", "commit": "abc"}"#, "");
    assert!(agrees(&plain));
    assert_eq!(summarize(plain.as_bytes()).unwrap().spent().sessions, 2);
    for (cost, usd, tokens) in [
        (r#""cost_usd": 0.05"#, 0.05, 0),
        (
            r#""cost_usd": 1e2, "tokens": {"input": 3, "output": 4}"#,
            100.0,
            7,
        ),
        (r#""cost_usd": "lots", "tokens": {"input": -3}"#, 0.0, 0),
        (
            r#""cost_usd": -7, "tokens": {"input": 1.5, "output": 2}"#,
            0.0,
            0,
        ),
        (
            r#""cost_usd": null, "tokens": {"input": 2, "input": 5, "extra": 1}"#,
            0.0,
            5,
        ),
        // (serde reads a struct from a list too: the full reader counts [1, 2] as 3 tokens.)
        (
            r#""tokens": [1, 2], "cost_usd": 0.1, "cost_usd": 0.2"#,
            0.2,
            3,
        ),
    ] {
        let text = plan(
            &format!(r#"{{"n": 2, "outcome": "completed", {cost}}}"#),
            "",
        );
        assert!(agrees(&text), "{text}");
        let spent = summarize(text.as_bytes()).unwrap().spent();
        assert_eq!(
            (spent.usd, spent.tokens, spent.sessions),
            (usd, tokens, 2),
            "{text}"
        );
    }
    let marked = plan(
        r#"{"n": 2, "outcome": "completed"}"#,
        r#""budget_exhausted": {"at": "now"}, "#,
    );
    assert!(agrees(&marked));
    let light = summarize(marked.as_bytes()).unwrap();
    assert!(light.plan().raw.contains_key("budget_exhausted"));
}

/// The keys agent reports and session resume add to attempt records (cost, tokens, model,
/// the agent's session id, what a resume chose), well-formed or of any other type, are keys
/// the full parser keeps as they are: the light read agrees either way.
#[test]
fn attempt_records_with_report_and_resume_keys_agree() {
    let well_formed = r#"{"n": 1, "session_id": "s1", "outcome": "interrupted",
        "agent_preset": "claude", "agent_spec": "001-a",
        "agent_session_id": "0b0e6c2a-4d1f-4a8e-9c3b-7f2d1e5a6b90", "cost_usd": 0.25,
        "cost_source": "reported", "tokens": {"input": 1, "output": 2, "cache_read": 3,
        "cache_write": 4}, "model": "m", "turns": 3, "agent_error": "x",
        "usage_limit_resets_at": null, "thread_total": {"input": 9},
        "not_resumed": "why"},
        {"n": 2, "outcome": "completed", "commit": "abc", "resumed_from": "x",
         "resume_failed": {"agent_session_id": "x", "session_id": "s", "reason": "r"}}"#;
    let odd = r#"{"n": 1, "outcome": "completed", "commit": "abc", "agent_session_id": 7,
        "cost_usd": "lots", "tokens": [1], "model": {"a": null}, "turns": -1,
        "resumed_from": false, "resume_failed": "yes", "thread_total": 1e999999}"#;
    for attempts in [well_formed, odd] {
        for status in ["completed", "pending"] {
            let chunk = format!(
                r#"{{"id": "a", "description": "x", "status": "{status}", "attempts": [{attempts}]}}"#
            );
            agrees(&plan_with_chunk(&chunk));
        }
    }
    assert!(agrees(&plan_with_chunk(&format!(
        r#"{{"id": "a", "description": "x", "status": "completed", "attempts": [{well_formed}]}}"#
    ))));
}
