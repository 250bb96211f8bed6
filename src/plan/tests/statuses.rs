//! Chunk statuses: synonyms normalised on save, missing ones pending, unknown ones named, and
//! what a status change clears.

use super::*;

#[test]
fn status_synonyms_are_normalised_on_save() {
    let cases = [
        ("done", "completed"),
        ("Complete", "completed"),
        ("finished", "completed"),
        ("not_started", "pending"),
        ("todo", "pending"),
        ("TODO", "pending"),
        ("in-progress", "in_progress"),
        ("In Progress", "in_progress"),
        ("wip", "in_progress"),
        ("error", "failed"),
        ("needs_human", "blocked"),
        ("pending", "pending"),
        ("completed", "completed"),
    ];
    let chunks: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, (raw, _))| json!({ "id": format!("c{i}"), "description": "x", "status": raw }))
        .collect();
    let plan = parse(&one_phase(Value::Array(chunks)));
    let v = to_value(&plan);
    for (i, (raw, want)) in cases.iter().enumerate() {
        assert_eq!(v["phases"][0]["chunks"][i]["status"], *want, "{raw}");
        assert_eq!(plan.phases[0].chunks[i].status.as_str(), *want, "{raw}");
    }
}

#[test]
fn missing_or_null_status_reads_as_pending() {
    let plan = parse(&one_phase(json!([
        { "id": "a", "description": "no status" },
        { "id": "b", "description": "null status", "status": null }
    ])));
    assert_eq!(plan.phases[0].chunks[0].status, Status::Pending);
    assert_eq!(plan.phases[0].chunks[1].status, Status::Pending);
    assert_eq!(plan.count(Status::Pending), 2);
    assert_eq!(next_id(&plan), Some("a"));
}

#[test]
fn unknown_status_names_the_value_and_the_chunk() {
    let err = parse_err(&one_phase(json!([
        { "id": "fine", "description": "x", "status": "pending" },
        { "id": "chunk-maybe", "description": "x", "status": "maybe" }
    ])));
    assert_eq!(err.line, None);
    assert_eq!(err.column, None);
    assert_problem(
        &err,
        &["phases[0].chunks[1] (chunk-maybe).status", "\"maybe\""],
    );
    let shown = err.to_string();
    assert!(
        shown.contains("maybe") && shown.contains("chunk-maybe"),
        "{shown}"
    );
}

#[test]
fn non_string_status_is_an_error() {
    let err = parse_err(&one_phase(json!([
        { "id": "c", "description": "x", "status": 1 }
    ])));
    assert_problem(&err, &["(c).status", "expected a string"]);
}

#[test]
fn set_status_clears_completed_at_unless_completed() {
    let mut plan = parse(&one_phase(json!([
        { "id": "a", "description": "x", "status": "completed", "completed_at": "2026-01-01T00:00:00Z", "notes": "n" }
    ])));
    let pos = plan.find_chunk("a").unwrap();
    plan.chunk_mut(pos).set_status(Status::Completed);
    assert!(plan.chunk(pos).raw().contains_key("completed_at"));
    for status in [
        Status::Failed,
        Status::Pending,
        Status::InProgress,
        Status::Blocked,
    ] {
        let mut p = plan.clone();
        p.chunk_mut(pos).set_status(status);
        assert!(!p.chunk(pos).raw().contains_key("completed_at"), "{status}");
        assert_eq!(p.chunk(pos).str_field("notes"), Some("n"));
    }
}
