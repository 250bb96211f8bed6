//! A phase with both `subtasks` and `chunks` (current Auto-Claude saves both): read as one when
//! they agree, `subtasks` read with a warning naming both when they differ, both written back.

use super::*;

/// Auto-Claude's `update_subtask_status` edits `subtasks` alone, leaving `chunks` stale, and
/// Auto-Claude reads `subtasks` first: so does runner, with a warning naming both lists, and
/// the next save writes the list read to both.
#[test]
fn chunks_and_subtasks_that_differ_read_subtasks_with_a_warning_naming_both() {
    let plan = parse(
        r#"{"phases": [{"id": "p",
        "chunks": [{"id": "a", "description": "x"}],
        "subtasks": [{"id": "b", "description": "y"}]}]}"#,
    );
    assert_eq!(
        plan.chunks().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["b"]
    );
    assert_warning(
        &plan,
        &[
            "phases[0].subtasks and phases[0].chunks differ",
            "phases[0].subtasks[0].id is \"b\", phases[0].chunks[0].id is \"a\"",
            "runner reads phases[0].subtasks",
        ],
    );
    let saved = to_value(&plan);
    assert_eq!(saved["phases"][0]["chunks"], saved["phases"][0]["subtasks"]);
    assert_eq!(saved["phases"][0]["chunks"][0]["id"], "b");
    // The key order of the file stays.
    let keys: Vec<&String> = saved["phases"][0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["id", "chunks", "subtasks"]);

    // A list longer than the other, and a status that differs in meaning.
    let plan = parse(
        r#"{"phases": [{"id": "p",
        "subtasks": [{"id": "a", "description": "x"}, {"id": "b", "description": "y"}],
        "chunks": [{"id": "a", "description": "x"}]}]}"#,
    );
    assert_eq!(plan.total(), 2);
    assert_warning(
        &plan,
        &["phases[0].subtasks has 2 chunks, phases[0].chunks has 1"],
    );
    let plan = parse(
        r#"{"phases": [{"id": "p",
        "subtasks": [{"id": "a", "description": "x", "status": "completed"}],
        "chunks": [{"id": "a", "description": "x", "status": "pending"}]}]}"#,
    );
    assert_eq!(plan.count(Status::Completed), 1);
    assert_warning(
        &plan,
        &[
            "phases[0].subtasks[0].status is \"completed\", phases[0].chunks[0].status is \"pending\"",
        ],
    );
    // Equal lists warn of nothing.
    let plan = parse(
        r#"{"phases": [{"id": "p",
        "subtasks": [{"id": "a", "description": "x", "status": "done"}],
        "chunks": [{"id": "a", "description": "x", "status": "completed"}]}]}"#,
    );
    assert!(plan.warnings.is_empty(), "{:#?}", plan.warnings);
}

/// Auto-Claude's auto-fix reads `chunks` when `subtasks` is empty.
#[test]
fn empty_subtasks_beside_chunks_read_the_chunks() {
    let plan = parse(
        r#"{"phases": [{"id": "p", "subtasks": [],
        "chunks": [{"id": "a", "description": "x"}]}]}"#,
    );
    assert_eq!(plan.total(), 1);
    assert_eq!(plan.phases[0].chunks_key, Some("chunks"));
    assert_warning(&plan, &["runner reads phases[0].chunks"]);
    let saved = to_value(&plan);
    assert_eq!(saved["phases"][0]["subtasks"], saved["phases"][0]["chunks"]);
    assert_eq!(saved["phases"][0]["subtasks"][0]["id"], "a");
}

/// The list not read is not the plan's: a stale `chunks` that does not read is a warning.
#[test]
fn a_stale_list_that_does_not_read_is_only_a_warning() {
    let plan = parse(
        r#"{"phases": [{"id": "p",
        "subtasks": [{"id": "a", "description": "x"}],
        "chunks": [{"id": "a", "description": "x", "status": "bogus"}]}]}"#,
    );
    assert_warning(
        &plan,
        &["phases[0].chunks does not read as chunks", "bogus"],
    );
    // The list read is the plan's: its problems are problems.
    let err = parse_err(
        r#"{"phases": [{"id": "p",
        "subtasks": [{"id": "a", "description": "x", "status": "bogus"}],
        "chunks": [{"id": "a", "description": "x"}]}]}"#,
    );
    assert_problem(&err, &["phases[0].subtasks[0] (a).status: unknown status"]);
}

/// A phase as current Auto-Claude saves it: `subtasks` and `chunks`, equal.
fn both_lists_phase(id: &str, chunks: Value) -> Value {
    json!({ "id": id, "subtasks": chunks.clone(), "chunks": chunks })
}

#[test]
fn both_lists_equal_read_as_one_and_write_back_equal() {
    let chunks = json!([
        { "id": "a", "description": "x", "status": "done", "extra": {"kept": true} },
        { "id": "b", "description": "y" }
    ]);
    let text = json!({
        "feature": "f",
        "phases": [both_lists_phase("p1", chunks)],
        "qa_signoff": null
    })
    .to_string();
    // Round trip: both lists kept, in place, statuses normalised in both.
    assert_round_trip(&text);
    let mut plan = parse(&text);
    assert_eq!(plan.total(), 2, "the two lists are one, not four chunks");
    assert_eq!(plan.phases[0].chunks_key, Some("subtasks"));
    assert_eq!(plan.phases[0].mirror_key, Some("chunks"));
    // A change reaches both lists.
    let pos = plan.find_chunk("b").unwrap();
    plan.chunk_mut(pos).set_status(Status::InProgress);
    plan.chunk_mut(pos).set_attempts(&[attempt(1)]);
    let saved = to_value(&plan);
    let phase = &saved["phases"][0];
    assert_eq!(phase["subtasks"], phase["chunks"]);
    assert_eq!(phase["chunks"][1]["status"], "in_progress");
    assert_eq!(phase["chunks"][1]["attempts"][0]["n"], 1);
    assert_eq!(phase["subtasks"][0]["extra"], json!({"kept": true}));
    // What was written reads back the same.
    let again = parse(&String::from_utf8(plan_to_bytes(&plan)).unwrap());
    assert_eq!(again, plan);
}

#[test]
fn both_lists_equal_in_meaning_are_accepted() {
    // Auto-Claude's auto-fix normalises the spelling of statuses in `subtasks` only.
    let text = r#"{"phases": [{"phase": 1,
        "subtasks": [{"id": "a", "description": "x", "status": "completed"}],
        "chunks": [{"id": "a", "description": "x", "status": "done"}]}]}"#;
    let plan = parse(text);
    assert_eq!(plan.total(), 1);
    let saved = to_value(&plan);
    assert_eq!(saved["phases"][0]["chunks"][0]["status"], "completed");
    assert_eq!(saved["phases"][0]["subtasks"], saved["phases"][0]["chunks"]);
}

#[test]
fn a_null_second_list_is_no_list() {
    let text = r#"{"phases": [{"id": "p", "chunks": null,
        "subtasks": [{"id": "a", "description": "x"}]}]}"#;
    let plan = parse(text);
    assert_eq!(plan.phases[0].chunks_key, Some("subtasks"));
    assert_eq!(plan.phases[0].mirror_key, None);
    assert_eq!(to_value(&plan)["phases"][0]["chunks"], Value::Null);
}

#[test]
fn problems_inside_both_lists_are_reported_once() {
    let chunks = json!([{ "id": "a", "description": "x", "status": "maybe" }]);
    let err = parse_err(&json!({ "phases": [both_lists_phase("p", chunks)] }).to_string());
    assert_eq!(err.problems.len(), 1, "{:#?}", err.problems);
    assert_problem(&err, &["phases[0].subtasks[0] (a).status", "\"maybe\""]);
}

#[test]
fn the_difference_named_is_one_of_meaning_not_of_status_spelling() {
    let plan = parse(
        r#"{"phases": [{"id": "p",
        "subtasks": [{"id": "a", "description": "x", "status": "done"},
                     {"id": "b", "description": "y", "files_to_modify": ["one.rs"]}],
        "chunks": [{"id": "a", "description": "x", "status": "completed"},
                   {"id": "b", "description": "y", "files_to_modify": ["two.rs"]}]}]}"#,
    );
    assert_warning(
        &plan,
        &[
            "phases[0].subtasks[1].files_to_modify is [\"one.rs\"], phases[0].chunks[1].files_to_modify is [\"two.rs\"]",
        ],
    );
}
