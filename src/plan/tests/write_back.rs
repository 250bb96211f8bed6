//! Writing a plan back: the lossless round trip (values, key order, unknown fields, exact
//! numbers), the canonical bytes, changes written through in place, and attempt records.

use super::*;

#[test]
fn round_trip_subtasks_era() {
    assert_round_trip(SUBTASKS_ERA);
}

#[test]
fn round_trip_chunks_era() {
    assert_round_trip(CHUNKS_ERA);
}

#[test]
fn round_trip_mixed_keys() {
    assert_round_trip(MIXED_KEYS);
}

#[test]
fn unknown_fields_stay_in_place_in_the_written_bytes() {
    let plan = parse(SUBTASKS_ERA);
    let text = String::from_utf8(plan_to_bytes(&plan)).unwrap();
    let pos = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle} missing from:\n{text}"))
    };
    // Plan level: x_plan_extra sits between workflow_type and phases; the tail keeps its order.
    assert!(pos("\"feature\"") < pos("\"workflow_type\""));
    assert!(pos("\"workflow_type\"") < pos("\"x_plan_extra\""));
    assert!(pos("\"x_plan_extra\"") < pos("\"phases\""));
    assert!(pos("\"phases\"") < pos("\"qa_signoff\""));
    assert!(pos("\"qa_signoff\"") < pos("\"recoveryNote\""));
    // Nested object keys are not sorted.
    assert!(pos("\"z\": 1") < pos("\"a\": 2"));
    // Phase level: subtasks written where they were, before parallel_safe.
    assert!(pos("\"x_phase_extra\"") < pos("\"subtasks\""));
    assert!(pos("\"subtask-1-1\"") < pos("\"parallel_safe\""));
    // Chunk and verification level.
    assert!(pos("\"x_verification_extra\"") < pos("\"status\": \"completed\""));
    assert!(pos("\"status\": \"completed\"") < pos("\"x_chunk_extra\": null"));
    // The missing status stays missing; the description before the id stays first.
    let last = &text[pos("\"No status at all\"")..];
    assert!(last.find("\"id\"").is_some());
    assert!(!last[..last.find('}').unwrap()].contains("\"status\""));

    // Serialized key order of the top-level object, compared as a whole.
    let written = to_value(&plan);
    let keys: Vec<&str> = written
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "feature",
            "workflow_type",
            "x_plan_extra",
            "phases",
            "qa_signoff",
            "status",
            "recoveryNote"
        ]
    );
}

#[test]
fn canonical_bytes_are_pretty_with_a_final_newline() {
    let compact = value_of(CHUNKS_ERA).to_string();
    let plan = parse(&compact);
    let bytes = plan_to_bytes(&plan);
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.ends_with("}\n") && !text.ends_with("\n\n"));
    assert!(text.starts_with("{\n  \"feature\": \"Refactor\",\n"));
    let mut want = serde_json::to_vec_pretty(&value_of(CHUNKS_ERA)).unwrap();
    want.push(b'\n');
    assert_eq!(bytes, want, "two-space pretty JSON of the original value");
}

#[test]
fn changes_are_written_through_in_place() {
    let mut plan = parse(SUBTASKS_ERA);
    let pos = plan.find_chunk("subtask-2-1").unwrap();
    assert_eq!(pos, ChunkPos { phase: 1, chunk: 0 });
    {
        let c = plan.chunk_mut(pos);
        c.set_status(Status::InProgress);
        c.set_str("session_id", "sess-9");
        c.remove("verification");
    }
    let pos3 = plan.find_chunk("subtask-2-3").unwrap();
    plan.chunk_mut(pos3).set_status(Status::Completed);
    plan.set_field("status", json!("in_progress"));
    plan.set_field("new_top_level", json!(1));

    let v = to_value(&plan);
    let c = v["phases"][1]["subtasks"][0].as_object().unwrap();
    let keys: Vec<&str> = c.keys().map(String::as_str).collect();
    assert_eq!(keys, ["id", "title", "status", "session_id"]);
    assert_eq!(c["status"], "in_progress");
    assert_eq!(c["session_id"], "sess-9");
    // A status that was missing is appended.
    let c3 = v["phases"][1]["subtasks"][2].as_object().unwrap();
    let keys: Vec<&str> = c3.keys().map(String::as_str).collect();
    assert_eq!(keys, ["description", "id", "status"]);
    // Plan fields: an existing key keeps its place, a new one goes last.
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "feature",
            "workflow_type",
            "x_plan_extra",
            "phases",
            "qa_signoff",
            "status",
            "recoveryNote",
            "new_top_level"
        ]
    );
    assert_eq!(v["status"], "in_progress");

    // And it reads back the same.
    let again = parse(std::str::from_utf8(&plan_to_bytes(&plan)).unwrap());
    assert_eq!(again, plan);
    assert_eq!(again.chunk(pos).status, Status::InProgress);
    assert_eq!(again.chunk(pos).description(), "Render previews");
    assert!(!again.chunk(pos).raw().contains_key("verification"));
}

#[test]
fn set_attempts_round_trips() {
    let mut plan = parse(CHUNKS_ERA);
    let pos = plan.find_chunk("migrate").unwrap();
    assert!(plan.chunk(pos).attempts().is_empty());
    assert_eq!(plan.chunk(pos).last_attempt(), None);

    let mut second = attempt(2);
    second.extra.insert("x_future".into(), json!({"k": [1, 2]}));
    let attempts = vec![attempt(1), second];
    plan.chunk_mut(pos).set_attempts(&attempts);
    assert_eq!(plan.chunk(pos).attempts(), attempts);
    assert_eq!(plan.chunk(pos).last_attempt(), Some(attempts[1].clone()));

    // Through the bytes and back.
    let bytes = plan_to_bytes(&plan);
    let again = parse(std::str::from_utf8(&bytes).unwrap());
    assert_eq!(again.chunk(pos).attempts(), attempts);
    assert_eq!(again, plan);
    assert_eq!(plan_to_bytes(&again), bytes);

    // Unset optional fields are not written.
    let v = to_value(&plan);
    let first = v["phases"][1]["chunks"][0]["attempts"][0]
        .as_object()
        .unwrap();
    assert!(!first.contains_key("outcome") && !first.contains_key("ended_at"));
    assert_eq!(first["n"], 1);
}

#[test]
fn update_last_attempt_changes_only_the_last() {
    let mut plan = parse(CHUNKS_ERA);
    let pos = plan.find_chunk("migrate").unwrap();
    plan.chunk_mut(pos).set_attempts(&[attempt(1), attempt(2)]);
    plan.chunk_mut(pos).update_last_attempt(|a| {
        a.ended_at = Some("2025-01-01T01:00:00Z".into());
        a.reported = Some("done".into());
        a.outcome = Some("completed".into());
        a.commit = Some("def456".into());
    });
    let got = plan.chunk(pos).attempts();
    assert_eq!(got[0], attempt(1));
    assert_eq!(got[1].n, 2);
    assert_eq!(got[1].outcome.as_deref(), Some("completed"));
    assert_eq!(got[1].commit.as_deref(), Some("def456"));
    assert_eq!(got[1].session_id.as_deref(), Some("s2"));
}

#[test]
fn update_last_attempt_without_attempts_does_nothing() {
    let mut plan = parse(CHUNKS_ERA);
    let before = plan.clone();
    let pos = plan.find_chunk("migrate").unwrap();
    plan.chunk_mut(pos)
        .update_last_attempt(|a| a.outcome = Some("failed".into()));
    assert_eq!(plan, before);
    assert!(!plan.chunk(pos).raw().contains_key("attempts"));
}

#[test]
fn unknown_attempt_fields_are_kept() {
    let text = one_phase(json!([{
        "id": "c",
        "description": "x",
        "status": "in_progress",
        "attempts": [
            { "n": 1, "outcome": "interrupted", "x_by_a_person": "looked at it" },
            { "n": 2, "session_id": "s2", "x_future": { "tokens": 1234 }, "run_id": "r" }
        ],
        "after_attempts": true
    }]));
    // Parsing and saving without touching the attempts changes nothing.
    assert_round_trip(&text);

    let mut plan = parse(&text);
    let pos = ChunkPos { phase: 0, chunk: 0 };
    let attempts = plan.chunk(pos).attempts();
    assert_eq!(
        attempts[0].extra.get("x_by_a_person"),
        Some(&json!("looked at it"))
    );
    assert_eq!(
        attempts[1].extra.get("x_future"),
        Some(&json!({"tokens": 1234}))
    );
    assert_eq!(attempts[1].run_id.as_deref(), Some("r"));

    plan.chunk_mut(pos)
        .update_last_attempt(|a| a.outcome = Some("completed".into()));
    let v = to_value(&plan);
    let chunk = v["phases"][0]["chunks"][0].as_object().unwrap();
    // The attempts list stays where it was in the chunk.
    let keys: Vec<&str> = chunk.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["id", "description", "status", "attempts", "after_attempts"]
    );
    let a = &chunk["attempts"];
    assert_eq!(
        a[0],
        json!({ "n": 1, "outcome": "interrupted", "x_by_a_person": "looked at it" })
    );
    assert_eq!(
        a[1],
        json!({ "n": 2, "session_id": "s2", "run_id": "r", "outcome": "completed",
                "x_future": { "tokens": 1234 } })
    );
}

#[test]
fn null_chunks_stay_null_on_save() {
    let text = r#"{"phases": [{"id": "a", "chunks": null}, {"id": "b", "chunks": [{"id": "c", "description": "d"}]}]}"#;
    let plan = parse(text);
    let saved: Value = serde_json::from_slice(&plan_to_bytes(&plan)).unwrap();
    assert_eq!(saved["phases"][0]["chunks"], Value::Null);
    assert!(plan.phases[0].is_complete());
}

#[test]
fn a_byte_order_mark_is_accepted_and_not_written_back() {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(one_phase(json!([{ "id": "a", "description": "x" }])).as_bytes());
    let plan = parse_plan(Path::new(PATH), &bytes).expect("a BOM is not an error");
    assert!(!plan_to_bytes(&plan).starts_with(b"\xEF\xBB\xBF"));
}

/// Numbers runner does not read keep their exact text through a write (serde_json's
/// `arbitrary_precision`): big integers, exponents, trailing zeros.
#[test]
fn unknown_numbers_keep_their_exact_text_through_a_write() {
    let text = r#"{"x_big": 123456789012345678901234567890, "x_u64_plus_one": 18446744073709551616,
        "x_exp": 1E2, "x_float": 1.50, "x_neg": -0.0,
        "phases": [{"id": "p", "x_n": 99999999999999999999,
            "subtasks": [{"id": "a", "description": "x", "x_c": 3.14159265358979323846264338}]}]}"#;
    let mut plan = parse(text);
    let pos = plan.find_chunk("a").unwrap();
    plan.chunk_mut(pos).set_status(Status::Completed);
    let bytes = String::from_utf8(plan_to_bytes(&plan)).unwrap();
    for number in [
        "123456789012345678901234567890",
        "18446744073709551616",
        "1.50",
        "-0.0",
        "99999999999999999999",
        "3.14159265358979323846264338",
    ] {
        assert!(
            bytes.contains(&format!(": {number}")),
            "{number} lost:\n{bytes}"
        );
    }
    // serde_json spells an exponent its own way; the value stays exact (not 100.0).
    assert!(bytes.contains("\"x_exp\": 1e+2,"), "{bytes}");
}

/// An attempt record runner updates keeps its key order, its nulls and the keys runner does
/// not know (they went through a struct that dropped nulls and reordered keys).
#[test]
fn an_updated_attempt_keeps_its_order_nulls_and_unknown_keys() {
    let text = one_phase(json!([{
        "id": "c", "description": "x", "status": "in_progress",
        "attempts": [
            { "x_first": 1, "reason": null, "n": 1, "outcome": "interrupted", "x_big": 1 },
            { "started_at": "t0", "x_null": null, "n": 2, "session_id": "s2", "ended_at": null }
        ]
    }]))
    // (compact JSON text: put a number in it that no f64 holds)
    .replace("\"x_big\":1", "\"x_big\":123456789012345678901234567890");
    let mut plan = parse(&text);
    let pos = ChunkPos { phase: 0, chunk: 0 };
    plan.chunk_mut(pos).update_last_attempt(|a| {
        a.outcome = Some("completed".into());
        a.extra.insert("x_added".into(), json!(true));
    });
    let bytes = String::from_utf8(plan_to_bytes(&plan)).unwrap();
    let v: Value = serde_json::from_str(&bytes).unwrap();
    let records = v["phases"][0]["chunks"][0]["attempts"].as_array().unwrap();
    let keys =
        |i: usize| -> Vec<String> { records[i].as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(0), ["x_first", "reason", "n", "outcome", "x_big"]);
    assert_eq!(records[0]["reason"], Value::Null);
    assert!(
        bytes.contains("\"x_big\": 123456789012345678901234567890"),
        "{bytes}"
    );
    assert_eq!(
        keys(1),
        [
            "started_at",
            "x_null",
            "n",
            "session_id",
            "ended_at",
            "outcome",
            "x_added"
        ]
    );
    assert_eq!(records[1]["x_null"], Value::Null);
    assert_eq!(records[1]["ended_at"], Value::Null);
    assert_eq!(records[1]["outcome"], "completed");
}
