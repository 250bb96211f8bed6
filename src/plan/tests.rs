//! Unit tests for the plan module: every Auto-Claude variant, the lossless round trip, the
//! errors a user can meet, choosing the next chunk, verification and attempt records.
//!
//! All plans here are written for these tests; the real Auto-Claude plans are exercised by
//! `tests/it/plan_reference.rs`.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::verification::{self, CommandCheck};
use super::*;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const PATH: &str = "specs/001-demo/implementation_plan.json";

fn parse(text: &str) -> Plan {
    match parse_plan(Path::new(PATH), text.as_bytes()) {
        Ok(plan) => plan,
        Err(e) => panic!("plan should parse, got:\n{e}\n--- input ---\n{text}"),
    }
}

fn parse_err(text: &str) -> PlanError {
    match parse_plan(Path::new(PATH), text.as_bytes()) {
        Ok(plan) => panic!("plan should be rejected, parsed as {plan:#?}"),
        Err(e) => e,
    }
}

/// Asserts that some problem contains every one of `parts`.
fn assert_problem(err: &PlanError, parts: &[&str]) {
    assert!(
        err.problems
            .iter()
            .any(|p| parts.iter().all(|part| p.contains(part))),
        "no problem contains all of {parts:?}; problems: {:#?}",
        err.problems
    );
}

fn to_value(plan: &Plan) -> Value {
    serde_json::from_slice(&plan_to_bytes(plan)).expect("plan_to_bytes writes valid JSON")
}

fn value_of(text: &str) -> Value {
    serde_json::from_str(text).expect("test input is valid JSON")
}

/// `serde_json::Value` equality ignores object key order (even with `preserve_order`), so the
/// order is compared here, at every level.
fn assert_same_key_order(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let kx: Vec<&String> = x.keys().collect();
            let ky: Vec<&String> = y.keys().collect();
            assert_eq!(kx, ky, "key order differs at {at}");
            for (k, v) in x {
                assert_same_key_order(v, &y[k], &format!("{at}.{k}"));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "list length differs at {at}");
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                assert_same_key_order(u, v, &format!("{at}[{i}]"));
            }
        }
        _ => assert_eq!(a, b, "value differs at {at}"),
    }
}

/// The original document as runner is expected to write it back: every chunk `status` in its
/// canonical spelling, nothing else changed.
fn normalise_statuses(mut v: Value) -> Value {
    if let Some(phases) = v.get_mut("phases").and_then(Value::as_array_mut) {
        for phase in phases {
            for key in ["chunks", "subtasks"] {
                if let Some(chunks) = phase.get_mut(key).and_then(Value::as_array_mut) {
                    for chunk in chunks {
                        if let Some(Value::String(s)) = chunk.get_mut("status") {
                            *s = Status::parse(s)
                                .expect("test status parses")
                                .as_str()
                                .into();
                        }
                    }
                }
            }
        }
    }
    v
}

/// The round trip every plan must survive: same value (statuses normalised), same key order,
/// and a second save byte-identical to the first.
fn assert_round_trip(text: &str) {
    let plan = parse(text);
    let first = plan_to_bytes(&plan);
    let written: Value = serde_json::from_slice(&first).unwrap();
    let want = normalise_statuses(value_of(text));
    assert_eq!(written, want);
    assert_same_key_order(&want, &written, "$");
    let second = plan_to_bytes(&parse(std::str::from_utf8(&first).unwrap()));
    assert_eq!(
        String::from_utf8(first).unwrap(),
        String::from_utf8(second).unwrap(),
        "a second save must be byte-identical"
    );
}

fn next_id(plan: &Plan) -> Option<&str> {
    next_chunk_id(plan)
}

/// A one-phase plan around the given chunk objects.
fn one_phase(chunks: Value) -> String {
    json!({ "phases": [{ "phase": 1, "chunks": chunks }] }).to_string()
}

fn chunk_with(verification: Value) -> Chunk {
    let plan = parse(&one_phase(json!([
        { "id": "c1", "description": "x", "verification": verification }
    ])));
    plan.phases[0].chunks[0].clone()
}

// ---------------------------------------------------------------------------------------------
// Fixtures: one of each era, and one with every phase-key and depends_on form.
// ---------------------------------------------------------------------------------------------

/// Subtasks era: string phase ids and string depends_on, planner.md-style chunk fields,
/// verification with `command` + `expected`, browser and manual verifications, unknown fields
/// at every level, and non-canonical statuses.
const SUBTASKS_ERA: &str = r#"{
  "feature": "Attachment upload",
  "workflow_type": "feature",
  "x_plan_extra": { "keep": [1, 2.5, "three"], "nested": { "z": 1, "a": 2 } },
  "phases": [
    {
      "id": "phase-1-model",
      "name": "Types",
      "type": "implementation",
      "x_phase_extra": true,
      "depends_on": [],
      "subtasks": [
        {
          "id": "subtask-1-1",
          "description": "Extend the message type",
          "service": "frontend",
          "files_to_modify": ["src/shared/types.ts"],
          "files_to_create": [],
          "patterns_from": ["src/shared/other.ts"],
          "verification": {
            "type": "command",
            "command": "cargo check --all-targets",
            "expected": "No errors",
            "x_verification_extra": [1, 2]
          },
          "status": "done",
          "started_at": "2025-01-01T10:00:00Z",
          "completed_at": "2025-01-01T10:30:00Z",
          "session_id": "sess-1",
          "notes": "typed",
          "x_chunk_extra": null
        }
      ],
      "parallel_safe": true
    },
    {
      "id": "phase-2-ui",
      "name": "UI",
      "depends_on": ["phase-1-model"],
      "subtasks": [
        {
          "id": "subtask-2-1",
          "title": "Render previews",
          "status": "not_started",
          "verification": {
            "type": "browser",
            "url": "http://localhost:3000",
            "checks": ["preview visible"]
          }
        },
        {
          "id": "subtask-2-2",
          "description": "Check by hand",
          "status": "in-progress",
          "verification": { "type": "manual", "instructions": "Look at it" }
        },
        {
          "description": "No status at all",
          "id": "subtask-2-3"
        }
      ]
    }
  ],
  "qa_signoff": null,
  "status": "backlog",
  "recoveryNote": "kept as is"
}"#;

/// Chunks era: numeric `phase`, numeric depends_on, `run`-style verification, `expect_status`.
const CHUNKS_ERA: &str = r#"{
  "feature": "Refactor",
  "workflow_type": "refactor",
  "services_involved": [],
  "phases": [
    {
      "phase": 1,
      "name": "Add new",
      "type": "implementation",
      "chunks": [
        {
          "id": "add-new",
          "description": "Add the new system",
          "status": "completed",
          "notes": "done already",
          "verification": { "type": "command", "run": "pytest -q" }
        }
      ]
    },
    {
      "phase": 2,
      "name": "Migrate",
      "chunks": [
        {
          "id": "migrate",
          "description": "Move the callers",
          "status": "pending",
          "verification": { "type": "command", "run": "./check.sh", "expect_status": 3 }
        },
        {
          "id": "migrate-2",
          "description": "Move the rest",
          "status": "pending"
        }
      ],
      "depends_on": [1]
    },
    {
      "phase": 3,
      "name": "Finish",
      "chunks": [
        {
          "id": "verify",
          "description": "Verify",
          "status": "pending",
          "verification": { "type": "browser", "scenario": "nothing regressed" }
        }
      ],
      "depends_on": [2]
    }
  ],
  "final_acceptance": ["works"],
  "created_at": "2024-03-01T09:00:00.000001",
  "status": "backlog",
  "planStatus": "pending"
}"#;

/// Every way a phase can be named and referred to.
const MIXED_KEYS: &str = r#"{
  "phases": [
    { "phase": 1, "chunks": [ { "id": "p1", "description": "numbered", "status": "completed" } ] },
    { "id": "2", "subtasks": [ { "id": "p2", "title": "string id two", "status": "completed" } ] },
    { "id": "both", "phase": 3, "depends_on": ["1", 2],
      "chunks": [ { "id": "p3", "description": "both keys", "status": "completed" } ] },
    { "id": "named", "depends_on": ["both", 1, "2", 3],
      "subtasks": [ { "id": "p4", "description": "mixed refs", "status": "pending" } ] }
  ]
}"#;

// ---------------------------------------------------------------------------------------------
// Parsing the variants
// ---------------------------------------------------------------------------------------------

#[test]
fn subtasks_era_parses_into_the_model() {
    let plan = parse(SUBTASKS_ERA);
    assert_eq!(plan.phases.len(), 2);
    assert_eq!(plan.total(), 4);
    assert_eq!(plan.str_field("feature"), Some("Attachment upload"));
    assert_eq!(plan.str_field("recoveryNote"), Some("kept as is"));
    assert_eq!(plan.str_field("qa_signoff"), None);

    let p0 = &plan.phases[0];
    assert_eq!(p0.chunks_key, Some("subtasks"));
    assert_eq!(
        p0.key,
        PhaseKey {
            id: Some("phase-1-model".into()),
            number: None
        }
    );
    assert!(p0.depends_on.is_empty());
    assert_eq!(p0.name(), Some("Types"));
    assert_eq!(p0.label(0), "phase-1-model");

    let c = &p0.chunks[0];
    assert_eq!(c.id, "subtask-1-1");
    assert_eq!(c.status, Status::Completed);
    assert_eq!(c.description(), "Extend the message type");
    assert_eq!(c.str_field("service"), Some("frontend"));
    assert_eq!(c.str_field("session_id"), Some("sess-1"));
    assert_eq!(c.str_field("started_at"), Some("2025-01-01T10:00:00Z"));
    assert_eq!(c.str_field("completed_at"), Some("2025-01-01T10:30:00Z"));
    assert_eq!(c.str_field("notes"), Some("typed"));
    assert_eq!(c.list_field("files_to_modify"), vec!["src/shared/types.ts"]);
    assert!(c.list_field("files_to_create").is_empty());
    assert_eq!(c.list_field("patterns_from"), vec!["src/shared/other.ts"]);
    assert_eq!(c.raw().get("x_chunk_extra"), Some(&Value::Null));

    let p1 = &plan.phases[1];
    assert_eq!(p1.depends_on, vec![PhaseRef::Name("phase-1-model".into())]);
    let statuses: Vec<Status> = p1.chunks.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        vec![Status::Pending, Status::InProgress, Status::Pending]
    );
    assert_eq!(
        p1.chunks[0].description(),
        "Render previews",
        "title is the fallback"
    );
    assert!(
        !p1.chunks[2].raw().contains_key("status"),
        "a missing status is not invented on read"
    );
}

#[test]
fn chunks_era_parses_into_the_model() {
    let plan = parse(CHUNKS_ERA);
    assert_eq!(plan.phases.len(), 3);
    for (i, phase) in plan.phases.iter().enumerate() {
        assert_eq!(phase.chunks_key, Some("chunks"));
        assert_eq!(phase.key.id, None);
        assert_eq!(phase.key.number, Some(i as i64 + 1));
        assert_eq!(phase.label(i), format!("phase {}", i + 1));
    }
    assert!(plan.phases[0].depends_on.is_empty());
    assert_eq!(plan.phases[1].depends_on, vec![PhaseRef::Number(1)]);
    assert_eq!(plan.phases[2].depends_on, vec![PhaseRef::Number(2)]);
    assert_eq!(plan.count(Status::Completed), 1);
    assert_eq!(plan.count(Status::Pending), 3);
    assert_eq!(plan.total(), 4);
    assert!(plan.phases[0].is_complete());
    assert!(!plan.phases[1].is_complete());
}

#[test]
fn phase_keys_and_mixed_dependencies_resolve() {
    let plan = parse(MIXED_KEYS);
    let keys: Vec<&PhaseKey> = plan.phases.iter().map(|p| &p.key).collect();
    assert_eq!(
        keys,
        vec![
            &PhaseKey {
                id: None,
                number: Some(1)
            },
            &PhaseKey {
                id: Some("2".into()),
                number: None
            },
            &PhaseKey {
                id: Some("both".into()),
                number: Some(3)
            },
            &PhaseKey {
                id: Some("named".into()),
                number: None
            },
        ]
    );
    assert_eq!(
        plan.phases[2].depends_on,
        vec![PhaseRef::Name("1".into()), PhaseRef::Number(2)]
    );
    assert_eq!(
        plan.phases[3].depends_on,
        vec![
            PhaseRef::Name("both".into()),
            PhaseRef::Number(1),
            PhaseRef::Name("2".into()),
            PhaseRef::Number(3),
        ]
    );
    assert_eq!(plan.phases[0].chunks_key, Some("chunks"));
    assert_eq!(plan.phases[1].chunks_key, Some("subtasks"));
    assert_eq!(
        plan.phases[2].label(2),
        "both",
        "the id wins over the number"
    );
    // Everything before the last phase is complete, so the last phase is ready.
    assert_eq!(next_id(&plan), Some("p4"));
}

#[test]
fn mixed_dependencies_gate_on_the_right_phase() {
    // Same shape, but the phase referred to by the string "1" is not done yet.
    let text = MIXED_KEYS.replacen(
        r#""id": "p1", "description": "numbered", "status": "completed""#,
        r#""id": "p1", "description": "numbered", "status": "pending""#,
        1,
    );
    let plan = parse(&text);
    assert_eq!(next_id(&plan), Some("p1"));
    // And if the phase with id "2" (referred to by the number 2) is the one left undone.
    let text = MIXED_KEYS.replacen(
        r#""id": "p2", "title": "string id two", "status": "completed""#,
        r#""id": "p2", "title": "string id two", "status": "pending""#,
        1,
    );
    let plan = parse(&text);
    assert_eq!(next_id(&plan), Some("p2"));
    let mut plan = plan;
    let pos = plan.find_chunk("p2").unwrap();
    plan.chunk_mut(pos).set_status(Status::Failed);
    // "both" is already complete, so only "named" (which also depends on 2) is reported.
    assert_eq!(
        next_step(&plan),
        NextStep::Stuck(vec![
            "chunk p2 is failed".into(),
            "named waits for 2".into(),
        ])
    );
}

#[test]
fn phase_ref_matching() {
    let numbered = PhaseKey {
        id: None,
        number: Some(1),
    };
    let string_two = PhaseKey {
        id: Some("2".into()),
        number: None,
    };
    let named = PhaseKey {
        id: Some("phase-1-model".into()),
        number: Some(7),
    };
    assert!(PhaseRef::Number(1).matches(&numbered));
    assert!(PhaseRef::Name("1".into()).matches(&numbered));
    assert!(!PhaseRef::Name("phase-1".into()).matches(&numbered));
    assert!(!PhaseRef::Number(2).matches(&numbered));

    assert!(PhaseRef::Number(2).matches(&string_two));
    assert!(PhaseRef::Name("2".into()).matches(&string_two));
    assert!(!PhaseRef::Number(1).matches(&string_two));

    assert!(PhaseRef::Name("phase-1-model".into()).matches(&named));
    assert!(PhaseRef::Number(7).matches(&named));
    assert!(PhaseRef::Name("7".into()).matches(&named));
    assert!(!PhaseRef::Number(1).matches(&named));
    assert!(!PhaseRef::Name("1".into()).matches(&PhaseKey::default()));

    assert_eq!(PhaseRef::Number(3).to_string(), "3");
    assert_eq!(PhaseRef::Name("a".into()).to_string(), "\"a\"");
}

#[test]
fn phase_number_and_id_in_other_json_types() {
    let plan = parse(
        r#"{"phases": [
            {"phase": " 4 ", "chunks": [{"id": "a", "description": "x"}]},
            {"id": 5, "chunks": [{"id": 6, "description": "numeric chunk id"}]},
            {"id": null, "phase": null, "depends_on": null, "chunks": []},
            {"id": "single", "depends_on": "4"},
            {"id": "single-number", "depends_on": 5}
        ]}"#,
    );
    assert_eq!(plan.phases[0].key.number, Some(4));
    assert_eq!(plan.phases[1].key.id.as_deref(), Some("5"));
    assert_eq!(plan.phases[1].chunks[0].id, "6");
    assert_eq!(plan.phases[2].key, PhaseKey::default());
    assert_eq!(plan.phases[2].label(2), "phase #3");
    assert!(plan.phases[2].depends_on.is_empty());
    assert_eq!(plan.phases[3].depends_on, vec![PhaseRef::Name("4".into())]);
    assert_eq!(plan.phases[3].chunks_key, None);
    assert_eq!(plan.phases[4].depends_on, vec![PhaseRef::Number(5)]);
    assert_eq!(plan.find_chunk("6"), Some(ChunkPos { phase: 1, chunk: 0 }));
    assert_round_trip(
        r#"{"phases": [
            {"phase": " 4 ", "chunks": [{"id": "a", "description": "x"}]},
            {"id": 5, "chunks": [{"id": 6, "description": "numeric chunk id"}]},
            {"id": "single", "depends_on": "4"}
        ]}"#,
    );
}

#[test]
fn a_phase_may_have_no_chunks_at_all() {
    let text = r#"{"phases": [
        {"id": "docs", "name": "nothing to do"},
        {"id": "empty", "subtasks": []},
        {"id": "work", "depends_on": ["docs", "empty"],
         "subtasks": [{"id": "w", "description": "work"}]}
    ]}"#;
    let plan = parse(text);
    assert_eq!(plan.phases[0].chunks_key, None);
    assert_eq!(plan.phases[1].chunks_key, Some("subtasks"));
    assert!(plan.phases[0].is_complete());
    assert!(plan.phases[1].is_complete());
    assert_eq!(next_id(&plan), Some("w"));
    assert_round_trip(text);
    // No chunks key is invented on save.
    let saved = to_value(&plan);
    let phase0 = saved["phases"][0].as_object().unwrap();
    assert!(!phase0.contains_key("chunks") && !phase0.contains_key("subtasks"));
}

#[test]
fn list_fields_accept_a_single_string() {
    let plan = parse(&one_phase(json!([{
        "id": "c",
        "description": "x",
        "files_to_modify": "src/one.rs",
        "files_to_create": "",
        "patterns_from": ["a.rs", 3, null],
        "service": ["not", "a", "string"]
    }])));
    let c = &plan.phases[0].chunks[0];
    assert_eq!(c.list_field("files_to_modify"), vec!["src/one.rs"]);
    assert!(c.list_field("files_to_create").is_empty());
    assert_eq!(c.list_field("patterns_from"), vec!["a.rs", "3", "null"]);
    assert!(c.list_field("missing").is_empty());
    assert_eq!(c.str_field("service"), None);
}

#[test]
fn description_falls_back_to_title() {
    let plan = parse(&one_phase(json!([
        { "id": "d", "description": "the description", "title": "the title" },
        { "id": "t", "title": "the title" }
    ])));
    let c = &plan.phases[0].chunks;
    assert_eq!(c[0].description(), "the description");
    assert_eq!(c[1].description(), "the title");
}

// ---------------------------------------------------------------------------------------------
// Round trip
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Statuses
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

#[test]
fn invalid_json_reports_line_and_column() {
    // The stray comma is on line 3, column 6 (the 6th character of `    {,`).
    let err = parse_err("{\n  \"phases\": [\n    {,\n  ]\n}\n");
    assert_eq!(err.path, Path::new(PATH));
    assert_eq!(err.line, Some(3));
    assert_eq!(err.column, Some(6));
    assert_eq!(err.problems.len(), 1);
    assert!(err.problems[0].starts_with("not valid JSON"), "{err:?}");
    let shown = err.to_string();
    assert!(
        shown.starts_with(&format!("invalid plan {PATH}:3:6")),
        "{shown}"
    );
    assert!(shown.contains("left untouched"), "{shown}");

    // A truncated file (an interrupted write) is reported too.
    let err = parse_err("{\n  \"phases\": [\n");
    assert_eq!(err.line, Some(3));
    assert!(err.problems[0].contains("EOF"), "{err:?}");
}

#[test]
fn shape_errors_carry_the_path_but_no_position() {
    let err = parse_err(r#"{"feature": "x"}"#);
    assert_eq!((err.line, err.column), (None, None));
    assert_problem(&err, &["phases: missing"]);
    let shown = err.to_string();
    assert!(
        shown.starts_with(&format!("invalid plan {PATH}\n")),
        "{shown}"
    );
    assert!(shown.contains("\n  - phases: missing"), "{shown}");

    assert_problem(
        &parse_err(r#"{"phases": {}}"#),
        &["phases: expected a list, found an object"],
    );
    assert_problem(
        &parse_err(r#"[]"#),
        &["must be a JSON object", "found a list"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [3]}"#),
        &["phases[0]: expected an object, found a number"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [{"phase": 1, "chunks": {}}]}"#),
        &["phases[0].chunks: expected a list, found an object"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [{"phase": 1, "chunks": ["x"]}]}"#),
        &["phases[0].chunks[0]: expected an object, found a string"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [{"id": true}]}"#),
        &["phases[0].id: expected a string, found a boolean"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [{"phase": 1.5}]}"#),
        &["phases[0].phase: expected a whole number"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [{"phase": 1}, {"phase": 2, "depends_on": [1, {"x": 1}]}]}"#),
        &["phases[1].depends_on[1]: expected a phase id or number, found an object"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [{"phase": 1, "depends_on": {"a": 1}}]}"#),
        &["phases[0].depends_on: expected a list of phase ids, found an object"],
    );
}

#[test]
fn chunk_without_id_is_an_error() {
    let err = parse_err(
        r#"{"phases": [{"id": "p", "subtasks": [
        {"id": "ok", "description": "x"},
        {"description": "who am I"}
    ]}]}"#,
    );
    assert_problem(&err, &["phases[0].subtasks[1].id: missing"]);
    for bad in [json!(""), json!("  "), json!(null), json!(["a"])] {
        let err = parse_err(&one_phase(json!([{ "id": bad, "description": "x" }])));
        assert_problem(
            &err,
            &["phases[0].chunks[0].id: expected a non-empty string"],
        );
    }
}

#[test]
fn chunk_without_description_or_title_is_an_error() {
    let err = parse_err(&one_phase(json!([{ "id": "bare", "status": "pending" }])));
    assert_problem(&err, &["phases[0].chunks[0] (bare)", "description"]);
    let err = parse_err(&one_phase(
        json!([{ "id": "blank", "description": " ", "title": "" }]),
    ));
    assert_problem(&err, &["(blank)", "description"]);
}

#[test]
fn duplicate_chunk_ids_are_an_error() {
    let err = parse_err(
        r#"{"phases": [
        {"id": "a", "chunks": [{"id": "same", "description": "x"}]},
        {"id": "b", "subtasks": [{"id": "same", "description": "y"}]}
    ]}"#,
    );
    assert_problem(&err, &["chunk id \"same\" is used more than once"]);
    // Within one phase, and a number and a string that read the same.
    let err = parse_err(&one_phase(json!([
        { "id": 7, "description": "x" },
        { "id": "7", "description": "y" }
    ])));
    assert_problem(&err, &["chunk id \"7\" is used more than once"]);
}

#[test]
fn duplicate_phase_keys_are_an_error() {
    let err = parse_err(r#"{"phases": [{"id": "a"}, {"id": "a"}]}"#);
    assert_problem(&err, &["phases[1]: phase id \"a\" is used more than once"]);
    let err = parse_err(r#"{"phases": [{"phase": 2}, {"phase": 2}]}"#);
    assert_problem(&err, &["phases[1]: phase number 2 is used more than once"]);
}

#[test]
fn depends_on_naming_no_phase_is_an_error() {
    let err = parse_err(
        r#"{"phases": [
        {"id": "a", "chunks": [{"id": "c1", "description": "x"}]},
        {"id": "b", "depends_on": ["a", "nope"], "chunks": [{"id": "c2", "description": "x"}]}
    ]}"#,
    );
    assert_problem(
        &err,
        &["phases[1] (b).depends_on: \"nope\" names no phase in this plan"],
    );
    let err = parse_err(r#"{"phases": [{"phase": 1}, {"phase": 2, "depends_on": [9]}]}"#);
    assert_problem(&err, &["phases[1] (phase 2).depends_on: 9 names no phase"]);
    // "1" cannot name a phase whose id is "phase-1".
    let err = parse_err(r#"{"phases": [{"id": "phase-1"}, {"id": "x", "depends_on": [1]}]}"#);
    assert_problem(&err, &["(x).depends_on: 1 names no phase"]);
}

#[test]
fn dependency_cycles_are_an_error() {
    let err = parse_err(
        r#"{"phases": [
        {"id": "a", "depends_on": ["b"], "chunks": [{"id": "c1", "description": "x"}]},
        {"id": "b", "depends_on": ["a"], "chunks": [{"id": "c2", "description": "x"}]}
    ]}"#,
    );
    assert_problem(&err, &["phase dependencies form a cycle: a -> b -> a"]);

    let err = parse_err(r#"{"phases": [{"phase": 1, "depends_on": [1]}]}"#);
    assert_problem(&err, &["cycle: phase 1 -> phase 1"]);

    // A longer cycle not starting at the first phase.
    let err = parse_err(
        r#"{"phases": [
        {"id": "root"},
        {"id": "x", "depends_on": ["root", "z"]},
        {"id": "y", "depends_on": ["x"]},
        {"id": "z", "depends_on": ["y"]}
    ]}"#,
    );
    assert_problem(&err, &["cycle: x -> z -> y -> x"]);

    // A diamond is not a cycle.
    parse(
        r#"{"phases": [
        {"id": "a"},
        {"id": "b", "depends_on": ["a"]},
        {"id": "c", "depends_on": ["a"]},
        {"id": "d", "depends_on": ["b", "c"]}
    ]}"#,
    );
}

/// Asserts that some warning contains every one of `parts`.
fn assert_warning(plan: &Plan, parts: &[&str]) {
    assert!(
        plan.warnings
            .iter()
            .any(|w| parts.iter().all(|part| w.contains(part))),
        "no warning contains all of {parts:?}; warnings: {:#?}",
        plan.warnings
    );
}

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

#[test]
fn bad_attempt_records_are_an_error() {
    let err = parse_err(&one_phase(json!([
        { "id": "c", "description": "x", "attempts": [{ "outcome": "failed" }] }
    ])));
    assert_problem(&err, &["(c).attempts"]);
    let err = parse_err(&one_phase(json!([
        { "id": "c", "description": "x", "attempts": "twice" }
    ])));
    assert_problem(&err, &["(c).attempts"]);
}

#[test]
fn every_problem_is_reported_at_once() {
    let err = parse_err(
        r#"{"phases": [
        {"id": "a", "chunks": [
            {"id": "dup", "description": "x", "status": "maybe"},
            {"description": "no id"},
            {"id": "dup", "description": "x"},
            {"id": "dup", "description": "x"}
        ]},
        {"id": "b", "depends_on": ["ghost"]}
    ]}"#,
    );
    assert_problem(&err, &["\"maybe\""]);
    assert_problem(&err, &["chunks[1].id: missing"]);
    assert_problem(&err, &["\"dup\" is used more than once"]);
    assert_problem(&err, &["\"ghost\" names no phase"]);
    let shown = err.to_string();
    assert_eq!(
        shown.matches("\n  - ").count(),
        err.problems.len(),
        "one line per problem:\n{shown}"
    );
}

#[test]
fn planner_output_needs_at_least_one_chunk() {
    let empty = parse(r#"{"phases": []}"#);
    assert_eq!(check_planner_output(&empty).len(), 1);
    let no_chunks = parse(r#"{"phases": [{"id": "a"}, {"id": "b", "chunks": []}]}"#);
    assert_eq!(check_planner_output(&no_chunks).len(), 1);
    assert!(check_planner_output(&parse(CHUNKS_ERA)).is_empty());
}

// ---------------------------------------------------------------------------------------------
// next_step
// ---------------------------------------------------------------------------------------------

#[test]
fn next_is_the_first_pending_chunk_in_file_order() {
    let plan = parse(&one_phase(json!([
        { "id": "a", "description": "x", "status": "completed" },
        { "id": "b", "description": "x", "status": "pending" },
        { "id": "c", "description": "x", "status": "pending" }
    ])));
    assert_eq!(
        next_step(&plan),
        NextStep::Chunk(ChunkPos { phase: 0, chunk: 1 })
    );
    assert_eq!(next_id(&plan), Some("b"));

    assert_eq!(next_id(&parse(CHUNKS_ERA)), Some("migrate"));
    assert_eq!(next_id(&parse(SUBTASKS_ERA)), Some("subtask-2-1"));
}

#[test]
fn next_waits_for_dependencies_not_file_order() {
    // The first phase in the file depends on the second.
    let plan = parse(
        r#"{"phases": [
        {"id": "later", "depends_on": ["first"], "chunks": [{"id": "l", "description": "x"}]},
        {"id": "first", "chunks": [
            {"id": "f1", "description": "x", "status": "completed"},
            {"id": "f2", "description": "x"}
        ]}
    ]}"#,
    );
    assert_eq!(next_id(&plan), Some("f2"));

    let mut plan = plan;
    let pos = plan.find_chunk("f2").unwrap();
    plan.chunk_mut(pos).set_status(Status::Completed);
    assert_eq!(next_id(&plan), Some("l"));
}

#[test]
fn next_is_never_a_chunk_whose_phase_waits() {
    // Phase 2 has a pending chunk but phase 1 is not complete: phase 1's chunk comes first.
    let plan = parse(CHUNKS_ERA);
    assert_eq!(plan.phases[2].chunks[0].status, Status::Pending);
    let mut plan = plan;
    for id in ["migrate", "migrate-2"] {
        let pos = plan.find_chunk(id).unwrap();
        assert_eq!(next_id(&plan), Some(id));
        plan.chunk_mut(pos).set_status(Status::Completed);
    }
    assert_eq!(next_id(&plan), Some("verify"));
}

#[test]
fn a_later_independent_phase_runs_when_an_earlier_one_is_blocked() {
    let plan = parse(
        r#"{"phases": [
        {"phase": 1, "chunks": [{"id": "broken", "description": "x", "status": "failed"}]},
        {"phase": 2, "depends_on": [1], "chunks": [{"id": "dependent", "description": "x"}]},
        {"phase": 3, "chunks": [{"id": "independent", "description": "x"}]}
    ]}"#,
    );
    assert_eq!(next_id(&plan), Some("independent"));
    assert_eq!(
        next_step(&plan),
        NextStep::Chunk(ChunkPos { phase: 2, chunk: 0 })
    );
}

#[test]
fn in_progress_chunks_are_not_picked() {
    let plan = parse(&one_phase(json!([
        { "id": "running", "description": "x", "status": "in_progress" },
        { "id": "waiting", "description": "x", "status": "pending" }
    ])));
    assert_eq!(next_id(&plan), Some("waiting"));

    let plan = parse(&one_phase(json!([
        { "id": "done", "description": "x", "status": "completed" },
        { "id": "running", "description": "x", "status": "in-progress" }
    ])));
    assert_eq!(
        next_step(&plan),
        NextStep::Stuck(vec!["chunk running is in_progress".into()])
    );
    assert_eq!(next_id(&plan), None);
}

#[test]
fn complete_when_every_chunk_is_done() {
    let plan = parse(
        r#"{"phases": [
        {"phase": 1, "chunks": [{"id": "a", "description": "x", "status": "done"}]},
        {"phase": 2, "depends_on": [1], "chunks": [{"id": "b", "description": "x", "status": "completed"}]},
        {"phase": 3, "depends_on": [2]}
    ]}"#,
    );
    assert_eq!(next_step(&plan), NextStep::Complete);
    assert_eq!(next_id(&plan), None);
    assert_eq!(next_step(&parse(r#"{"phases": []}"#)), NextStep::Complete);
}

#[test]
fn stuck_explains_failed_chunks_and_waiting_phases() {
    let plan = parse(
        r#"{"phases": [
        {"id": "base", "subtasks": [
            {"id": "ok", "description": "x", "status": "completed"},
            {"id": "bad", "description": "x", "status": "failed"}
        ]},
        {"id": "top", "depends_on": ["base"], "subtasks": [{"id": "t", "description": "x"}]},
        {"id": "side", "subtasks": [{"id": "s", "description": "x", "status": "blocked"}]},
        {"id": "finished", "depends_on": ["base"],
         "subtasks": [{"id": "f", "description": "x", "status": "completed"}]}
    ]}"#,
    );
    assert_eq!(
        next_step(&plan),
        NextStep::Stuck(vec![
            "chunk bad is failed".into(),
            "chunk s is blocked".into(),
            "top waits for base".into(),
        ])
    );
}

#[test]
fn stuck_reasons_for_numbered_phases() {
    let plan = parse(
        r#"{"phases": [
        {"phase": 1, "chunks": [{"id": "c1", "description": "x", "status": "failed"}]},
        {"phase": 2, "depends_on": [1], "chunks": [{"id": "c2", "description": "x"}]}
    ]}"#,
    );
    let NextStep::Stuck(reasons) = next_step(&plan) else {
        panic!("expected Stuck");
    };
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert_eq!(reasons[0], "chunk c1 is failed");
    assert!(
        reasons[1].contains("phase 2") && reasons[1].contains("waits for phase 1"),
        "{reasons:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Verification
// ---------------------------------------------------------------------------------------------

#[test]
fn command_check_subtasks_style() {
    let c = chunk_with(json!({
        "type": "command",
        "command": "cargo check --all-targets",
        "expected": "No errors"
    }));
    assert_eq!(
        verification::command_check(&c),
        Some(CommandCheck {
            command: "cargo check --all-targets".into(),
            expect_status: 0,
            expect_output: None,
        })
    );
}

#[test]
fn command_check_chunks_style() {
    let c = chunk_with(json!({ "type": "command", "run": "pytest tests/ -v" }));
    assert_eq!(
        verification::command_check(&c),
        Some(CommandCheck {
            command: "pytest tests/ -v".into(),
            expect_status: 0,
            expect_output: None,
        })
    );
}

#[test]
fn command_check_expect_status_and_output() {
    let check = |v: Value| verification::command_check(&chunk_with(v)).expect("a command check");
    assert_eq!(
        check(json!({"type": "command", "run": "false", "expect_status": 1})).expect_status,
        1
    );
    assert_eq!(
        check(json!({"type": "command", "command": "x", "expected_status": 2})).expect_status,
        2
    );
    assert_eq!(
        check(json!({"type": "command", "command": "x", "expected_exit_code": 3})).expect_status,
        3
    );
    assert_eq!(
        check(json!({"command": "x", "expect_output": "ok"}))
            .expect_output
            .as_deref(),
        Some("ok"),
        "a missing type means command"
    );
    assert_eq!(
        check(json!({"type": "Command", "run": "x", "expect_stdout": "passed"}))
            .expect_output
            .as_deref(),
        Some("passed")
    );
    // `command` wins over `run` when both are given.
    assert_eq!(
        check(json!({"type": "command", "command": "a", "run": "b"})).command,
        "a"
    );
}

#[test]
fn non_command_verifications_are_not_checks() {
    for v in [
        json!({"type": "browser", "url": "http://localhost", "checks": ["x"]}),
        json!({"type": "browser", "scenario": "works"}),
        json!({"type": "manual", "instructions": "look", "command": "not run"}),
        json!({"type": "e2e", "steps": ["a"]}),
        json!({"type": "none"}),
        json!({"type": "api", "endpoint": "/health"}),
        json!({"type": "Unknown-Thing", "steps": ["no command: instructions"]}),
        json!("run the tests"),
        Value::Null,
    ] {
        assert_eq!(
            verification::command_check(&chunk_with(v.clone())),
            None,
            "{v}"
        );
    }
    let plan = parse(&one_phase(json!([{ "id": "c", "description": "x" }])));
    assert_eq!(verification::command_check(&plan.phases[0].chunks[0]), None);
    assert_eq!(verification::describe(&plan.phases[0].chunks[0]), None);
}

/// A command verification is never silently skipped: the type is read trimmed and in any case,
/// an empty `command` does not hide `run`, and what cannot be run is a plan error.
#[test]
fn command_verifications_are_never_silently_skipped() {
    let exit7 = |v: Value| verification::command_check(&chunk_with(v)).map(|c| c.command);
    assert_eq!(
        exit7(json!({"type": "command ", "command": "exit 7"})).as_deref(),
        Some("exit 7")
    );
    assert_eq!(
        exit7(json!({"type": " COMMAND", "command": "exit 7"})).as_deref(),
        Some("exit 7")
    );
    assert_eq!(
        exit7(json!({"type": "command", "command": "", "run": "exit 7"})).as_deref(),
        Some("exit 7")
    );
    assert_eq!(
        exit7(json!({"command": "  ", "run": "exit 7"})).as_deref(),
        Some("exit 7")
    );
    for (v, wanted) in [
        (
            json!({"type": "command"}),
            "verification: a command verification without a command",
        ),
        (
            json!({"type": "Command", "command": "   ", "run": ""}),
            "verification: a command verification without a command",
        ),
        (
            json!({"type": "shell", "command": "exit 7"}),
            "verification.type: unknown verification type \"shell\" with a command",
        ),
        (
            json!({"type": "cmd", "run": "exit 7"}),
            "verification.type: unknown verification type \"cmd\" with a command",
        ),
    ] {
        let err = parse_err(&one_phase(json!([
            { "id": "c1", "description": "x", "verification": v }
        ])));
        assert_problem(&err, &["phases[0].chunks[0] (c1).", wanted]);
    }
}

#[test]
fn describe_shows_the_verification() {
    let c = chunk_with(json!("run the tests"));
    assert_eq!(verification::describe(&c).as_deref(), Some("run the tests"));
    let v = json!({"type": "manual", "instructions": "look"});
    let c = chunk_with(v.clone());
    let shown = verification::describe(&c).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&shown).unwrap(), v);
    assert!(shown.contains('\n'), "pretty: {shown}");
}

#[test]
fn verification_is_read_from_the_fixtures() {
    let plan = parse(SUBTASKS_ERA);
    let c = |id: &str| plan.chunk(plan.find_chunk(id).unwrap());
    assert_eq!(
        verification::command_check(c("subtask-1-1")).map(|c| c.command),
        Some("cargo check --all-targets".into())
    );
    assert_eq!(verification::command_check(c("subtask-2-1")), None);
    assert_eq!(verification::command_check(c("subtask-2-2")), None);

    let plan = parse(CHUNKS_ERA);
    let c = |id: &str| plan.chunk(plan.find_chunk(id).unwrap());
    assert_eq!(
        verification::command_check(c("migrate")),
        Some(CommandCheck {
            command: "./check.sh".into(),
            expect_status: 3,
            expect_output: None
        })
    );
    assert_eq!(verification::command_check(c("verify")), None);
}

// ---------------------------------------------------------------------------------------------
// Attempts
// ---------------------------------------------------------------------------------------------

fn attempt(n: u32) -> Attempt {
    Attempt {
        n,
        session_id: Some(format!("s{n}")),
        run_id: Some("run-1".into()),
        started_at: Some("2025-01-01T00:00:00Z".into()),
        start_commit: Some("abc123".into()),
        ..Attempt::default()
    }
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

// ---------------------------------------------------------------------------------------------
// The model's small helpers
// ---------------------------------------------------------------------------------------------

#[test]
fn positions_and_lookup_follow_file_order() {
    let plan = parse(SUBTASKS_ERA);
    let ids: Vec<&str> = plan
        .positions()
        .map(|p| plan.chunk(p).id.as_str())
        .collect();
    assert_eq!(
        ids,
        ["subtask-1-1", "subtask-2-1", "subtask-2-2", "subtask-2-3"]
    );
    let ids2: Vec<&str> = plan.chunks().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ids2);
    assert_eq!(
        plan.find_chunk("subtask-2-2"),
        Some(ChunkPos { phase: 1, chunk: 1 })
    );
    assert_eq!(plan.find_chunk("nope"), None);
    let counts: Vec<usize> = Status::ALL.iter().map(|&s| plan.count(s)).collect();
    assert_eq!(counts, [2, 1, 1, 0, 0]);
    assert_eq!(counts.iter().sum::<usize>(), plan.total());
}

#[test]
fn plan_raw_keeps_everything_but_the_phases() {
    let plan = parse(SUBTASKS_ERA);
    let want: Map<String, Value> = value_of(SUBTASKS_ERA).as_object().unwrap().clone();
    for (k, v) in &want {
        if k != "phases" {
            assert_eq!(plan.raw.get(k), Some(v), "{k}");
        }
    }
    let phase_raw = &plan.phases[0].raw;
    assert_eq!(phase_raw.get("x_phase_extra"), Some(&json!(true)));
    assert_eq!(phase_raw.get("parallel_safe"), Some(&json!(true)));
}

// ---------------------------------------------------------------------------------------------
// Regressions found in review
// ---------------------------------------------------------------------------------------------

#[test]
fn a_phase_that_cannot_be_read_does_not_shift_the_positions_of_the_others() {
    let err = parse_err(r#"{"phases":[7,{"id":"b","depends_on":["nope"]},{"id":"b"}]}"#);
    assert_problem(&err, &["phases[0]: expected an object, found a number"]);
    // Validation, which names phases by position, waits until every phase reads.
    assert!(
        err.problems.iter().all(|p| !p.contains("phases[1]")),
        "{:#?}",
        err.problems
    );
}

#[test]
fn a_blank_description_falls_back_to_the_title() {
    let plan = parse(&one_phase(json!([
        { "id": "e", "description": "", "title": "The title", "status": "pending" }
    ])));
    assert_eq!(plan.chunks().next().unwrap().description(), "The title");
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
fn a_dependency_that_could_mean_two_phases_is_an_error() {
    let err = parse_err(
        r#"{"phases": [
            {"id": "2", "chunks": [{"id": "a", "description": "x"}]},
            {"phase": 2, "chunks": [{"id": "b", "description": "x"}]},
            {"id": "c", "depends_on": [2], "chunks": [{"id": "c1", "description": "x"}]}
        ]}"#,
    );
    assert_problem(&err, &["depends_on: 2 could mean any of"]);
}

/// A key used by thousands of phases, each depending on it: each problem names a few of the
/// phases and only the first problems are listed (every match for every reference was
/// quadratic: 10 s and a 96 MB message for 4,000 phases).
#[test]
fn a_key_shared_by_thousands_of_phases_gives_a_short_message() {
    let n = 4000;
    let phases: Vec<Value> = (0..n)
        .map(|_| json!({"id": "same", "depends_on": ["same"], "chunks": []}))
        .collect();
    let err = parse_err(&json!({ "phases": phases }).to_string());
    let could_mean: Vec<&String> = err
        .problems
        .iter()
        .filter(|p| p.contains("could mean any of"))
        .collect();
    assert_eq!(could_mean.len(), 20, "{:#?}", &err.problems[..30]);
    assert!(
        could_mean[0].contains("could mean any of same, same, same, same, same, …;"),
        "{}",
        could_mean[0]
    );
    assert_problem(
        &err,
        &["… and 3980 more depends_on entries that name no phase, or several"],
    );
    let dependency_text: usize = err
        .problems
        .iter()
        .filter(|p| p.contains("depends_on"))
        .map(String::len)
        .sum();
    assert!(dependency_text < 10_000, "{dependency_text} bytes");
}

#[test]
fn a_byte_order_mark_is_accepted_and_not_written_back() {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(one_phase(json!([{ "id": "a", "description": "x" }])).as_bytes());
    let plan = parse_plan(Path::new(PATH), &bytes).expect("a BOM is not an error");
    assert!(!plan_to_bytes(&plan).starts_with(b"\xEF\xBB\xBF"));
}

// ---------------------------------------------------------------------------------------------
// Issue 8: hostile input and real Auto-Claude files
// ---------------------------------------------------------------------------------------------

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
fn a_top_level_subtasks_list_is_one_implicit_phase() {
    let text = r#"{"feature": "qa fixes", "subtasks": [
        {"id": "fix-1", "description": "x", "status": "completed"},
        {"id": "fix-2", "description": "y", "status": "todo"}
    ], "qa_signoff": {"status": "rejected"}}"#;
    assert_round_trip_top_level(text);
    let mut plan = parse(text);
    assert_eq!(plan.shape, PlanShape::TopLevelChunks);
    assert_eq!(plan.phases.len(), 1);
    assert_eq!(plan.total(), 2);
    assert_eq!(next_id(&plan), Some("fix-2"));
    let pos = plan.find_chunk("fix-2").unwrap();
    plan.chunk_mut(pos).set_status(Status::Completed);
    let saved = to_value(&plan);
    assert!(saved.get("phases").is_none(), "no phases added: {saved}");
    assert_eq!(saved["subtasks"][1]["status"], "completed");
    let keys: Vec<&String> = saved.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["feature", "subtasks", "qa_signoff"]);
    assert_eq!(next_step(&plan), NextStep::Complete);

    // `chunks` too, and both, kept equal.
    let plan = parse(r#"{"chunks": [{"id": "a", "description": "x"}]}"#);
    assert_eq!(plan.shape, PlanShape::TopLevelChunks);
    assert_eq!(plan.phases[0].chunks_key, Some("chunks"));
    let mut plan = parse(
        r#"{"subtasks": [{"id": "a", "description": "x"}], "chunks": [{"id": "a", "description": "x"}]}"#,
    );
    let pos = plan.find_chunk("a").unwrap();
    plan.chunk_mut(pos).set_status(Status::Failed);
    let saved = to_value(&plan);
    assert_eq!(saved["subtasks"], saved["chunks"]);
    assert_eq!(saved["chunks"][0]["status"], "failed");

    // Problems name the top-level path.
    let err = parse_err(r#"{"subtasks": [{"description": "no id"}]}"#);
    assert_problem(&err, &["subtasks[0].id: missing"]);
    assert!(
        !err.problems[0].starts_with("phases"),
        "{:#?}",
        err.problems
    );
    let plan = parse(
        r#"{"subtasks": [{"id": "a", "description": "x"}], "chunks": [{"id": "b", "description": "x"}]}"#,
    );
    assert_warning(
        &plan,
        &["subtasks and chunks differ", "subtasks[0].id is \"a\""],
    );
    assert!(
        !plan.warnings[0].starts_with("phases"),
        "{:#?}",
        plan.warnings
    );
}

/// `assert_round_trip` for a plan without `phases`.
fn assert_round_trip_top_level(text: &str) {
    let plan = parse(text);
    let written = to_value(&plan);
    let mut want = value_of(text);
    for chunk in want["subtasks"].as_array_mut().unwrap() {
        if let Some(Value::String(s)) = chunk.get_mut("status") {
            *s = Status::parse(s).unwrap().as_str().into();
        }
    }
    assert_eq!(written, want);
    assert_same_key_order(&want, &written, "$");
}

#[test]
fn phases_win_over_a_top_level_list() {
    // As in Auto-Claude: a top-level list beside `phases` is not read (and is kept).
    let text = r#"{"phases": [{"id": "p", "chunks": [{"id": "a", "description": "x"}]}],
        "subtasks": [{"id": "stray", "description": "y"}]}"#;
    let plan = parse(text);
    assert_eq!(plan.shape, PlanShape::Phases);
    assert_eq!(plan.total(), 1);
    assert_eq!(to_value(&plan)["subtasks"][0]["id"], "stray");
    // Without either, the message names both ways.
    let err = parse_err(r#"{"feature": "x"}"#);
    assert_problem(&err, &["phases: missing", "top-level \"subtasks\""]);
}

#[test]
fn auto_claude_aliases_subtask_id_and_title() {
    let text = one_phase(json!([
        { "subtask_id": "s-1", "title": "From the title" },
        { "id": null, "subtask_id": 7, "description": "", "title": "Numbered" },
        { "id": "  ", "subtask_id": "s-3", "description": "d" },
        { "id": "real", "subtask_id": "ignored", "description": "d" }
    ]));
    let plan = parse(&text);
    let ids: Vec<&str> = plan.chunks().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["s-1", "7", "s-3", "real"]);
    assert_eq!(
        plan.chunks().next().unwrap().description(),
        "From the title"
    );
    // The file keeps its own keys: no `id` or `description` is added.
    assert_round_trip(&text);
    let saved = to_value(&plan);
    assert!(saved["phases"][0]["chunks"][0].get("id").is_none());
    assert!(saved["phases"][0]["chunks"][0].get("description").is_none());
    // Aliases take part in the rules: unique ids, `runner chunk` lookups.
    let err = parse_err(&one_phase(json!([
        { "subtask_id": "dup", "description": "x" },
        { "id": "dup", "description": "y" }
    ])));
    assert_problem(&err, &["chunk id \"dup\" is used more than once"]);
    // A broken alias is named by its own key.
    let err = parse_err(&one_phase(
        json!([{ "subtask_id": ["x"], "description": "x" }]),
    ));
    assert_problem(
        &err,
        &["phases[0].chunks[0].subtask_id: expected a non-empty string"],
    );
    let err = parse_err(&one_phase(
        json!([{ "subtask_id": "", "description": "x" }]),
    ));
    assert_problem(&err, &["phases[0].chunks[0].id: missing"]);
}

#[test]
fn chunk_ids_must_be_printable_and_short() {
    let bad = [
        ("nul\u{0}byte", "U+0000"),
        ("bell\u{7}", "U+0007"),
        ("two\nlines", "U+000A"),
        ("tab\there", "U+0009"),
        ("\u{1b}[31mred", "U+001B"),
        ("del\u{7f}", "U+007F"),
        ("c1\u{85}next", "U+0085"),
        ("evil\u{202e}txt", "U+202E"),
        ("zero\u{200b}width", "U+200B"),
        ("line\u{2028}sep", "U+2028"),
    ];
    for (id, code) in bad {
        let err = parse_err(&one_phase(json!([{ "id": id, "description": "x" }])));
        assert_problem(&err, &["phases[0].chunks[0].id: chunk id", code]);
        // The message itself is printable: the id is shown escaped.
        assert!(
            err.problems
                .iter()
                .all(|p| p.chars().all(|c| !c.is_control())),
            "{:#?}",
            err.problems
        );
        let err = parse_err(&one_phase(
            json!([{ "subtask_id": id, "description": "x" }]),
        ));
        assert_problem(&err, &["phases[0].chunks[0].subtask_id: chunk id", code]);
    }
    // Length is counted in bytes.
    let at_limit = "x".repeat(MAX_ID_BYTES);
    parse(&one_phase(json!([{ "id": at_limit, "description": "x" }])));
    let over = "x".repeat(MAX_ID_BYTES + 1);
    let err = parse_err(&one_phase(json!([{ "id": over, "description": "x" }])));
    assert_problem(
        &err,
        &["phases[0].chunks[0].id", "201 bytes long", "at most 200"],
    );
    let wide = "é".repeat(101); // 202 bytes, 101 characters
    let err = parse_err(&one_phase(json!([{ "id": wide, "description": "x" }])));
    assert_problem(&err, &["202 bytes long"]);
    // Printable ids of any alphabet, with characters git refuses in refs, are fine: refs are
    // built from an escaped form (`git::refs::ref_component`).
    let fine = [
        "subtask-1-1",
        "with space",
        "a~b^c:d",
        "dots..here",
        "ünïcødé-日本",
        "x/../y",
    ];
    for id in fine {
        let plan = parse(&one_phase(json!([{ "id": id, "description": "x" }])));
        assert_eq!(plan.chunks().next().unwrap().id, id);
    }
}

#[test]
fn phase_ids_must_be_printable_and_short() {
    let err = parse_err(r#"{"phases": [{"id": "p\u0000", "chunks": []}]}"#);
    assert_problem(&err, &["phases[0].id: phase id", "U+0000"]);
    let long = "p".repeat(MAX_ID_BYTES + 1);
    let err = parse_err(&json!({"phases": [{"id": long}]}).to_string());
    assert_problem(&err, &["phases[0].id: phase id", "201 bytes long"]);
}

#[test]
fn malformed_verifications_are_errors_with_their_path() {
    let cases = [
        (
            json!({"type": "command", "command": ["make", "test"]}),
            "verification.command: expected the command as one string",
            "a list",
        ),
        (
            json!({"type": "command", "run": 42}),
            "verification.run: expected the command as one string",
            "a number",
        ),
        (
            json!({"type": "command", "command": "x", "expect_status": "1"}),
            "verification.expect_status: expected the exit status as a whole number",
            "a string",
        ),
        (
            json!({"type": "command", "command": "x", "expect_status": 1.5}),
            "verification.expect_status",
            "1.5",
        ),
        (
            json!({"type": "command", "command": "x", "expected_status": 4294967296_u64}),
            "verification.expected_status",
            "4294967296",
        ),
        (
            json!({"type": "command", "command": "x", "expected_exit_code": true}),
            "verification.expected_exit_code",
            "a boolean",
        ),
        (
            json!({"type": "command", "command": "x", "expect_output": {"contains": "ok"}}),
            "verification.expect_output: expected a string",
            "an object",
        ),
        (
            json!({"type": "command", "command": "x", "expect_stdout": 1}),
            "verification.expect_stdout",
            "a number",
        ),
        (
            json!({"type": 1, "command": "x"}),
            "verification.type: expected a string",
            "a number",
        ),
        (
            json!(["make test"]),
            "verification: expected an object",
            "a list",
        ),
        (json!(3), "verification: expected an object", "a number"),
    ];
    for (v, path, found) in cases {
        let text = json!({"phases": [{"id": "p", "subtasks": [
            {"id": "ok", "description": "x"},
            {"id": "c", "description": "x", "verification": v}
        ]}]})
        .to_string();
        let err = parse_err(&text);
        assert_problem(&err, &[&format!("phases[0].subtasks[1] (c).{path}"), found]);
    }
    // Also in a type runner does not run: the field is still malformed.
    let err = parse_err(&one_phase(json!([
        { "id": "c", "description": "x", "verification": {"type": "api", "expect_status": "200"} }
    ])));
    assert_problem(&err, &["(c).verification.expect_status"]);
}

#[test]
fn null_verification_fields_count_as_absent() {
    let check = verification::command_check(&chunk_with(json!({
        "type": null, "command": null, "run": "make test",
        "expect_status": null, "expected_status": 2, "expect_output": null
    })))
    .expect("a command check");
    assert_eq!(
        check,
        CommandCheck {
            command: "make test".into(),
            expect_status: 2,
            expect_output: None
        }
    );
    // Prose and null verifications are fine.
    chunk_with(json!("run the tests by hand"));
    chunk_with(Value::Null);
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

#[test]
fn dependency_index_agrees_with_phase_ref_matching() {
    // Phases keyed every way a reference can name them, including look-alikes ("01", "+1").
    let phases = json!([
        {"id": "1"}, {"phase": 1}, {"id": "01"}, {"phase": 2, "id": "two"}, {"id": "+3"},
        {"phase": 3}, {"id": "x", "phase": 4}, {"phase": -5}, {"id": "-5"}, {"id": "a b"}
    ]);
    let plan = parse(&json!({"phases": phases}).to_string());
    let refs = [
        PhaseRef::Name("1".into()),
        PhaseRef::Number(1),
        PhaseRef::Name("01".into()),
        PhaseRef::Name("two".into()),
        PhaseRef::Name("2".into()),
        PhaseRef::Number(2),
        PhaseRef::Name("+3".into()),
        PhaseRef::Name("3".into()),
        PhaseRef::Number(3),
        PhaseRef::Name("4".into()),
        PhaseRef::Name("x".into()),
        PhaseRef::Number(-5),
        PhaseRef::Name("-5".into()),
        PhaseRef::Name("a b".into()),
        PhaseRef::Name("nothing".into()),
        PhaseRef::Number(99),
    ];
    for dep in refs {
        let by_scan: Vec<usize> = (0..plan.phases.len())
            .filter(|&j| dep.matches(&plan.phases[j].key))
            .collect();
        let mut one = plan.clone();
        one.phases.push(Phase {
            raw: Map::new(),
            key: PhaseKey {
                id: Some("probe".into()),
                number: None,
            },
            depends_on: vec![dep.clone()],
            chunks_key: None,
            mirror_key: None,
            chunks: Vec::new().into(),
        });
        let mut problems = Vec::new();
        let resolved = super::validate::resolve_dependencies(&one, &mut problems);
        match by_scan.as_slice() {
            [j] => assert_eq!(resolved.unwrap().last().unwrap(), &vec![*j], "{dep}"),
            [] => assert!(
                problems[0].contains("names no phase"),
                "{dep}: {problems:?}"
            ),
            _ => assert!(
                problems[0].contains("could mean any of"),
                "{dep}: {problems:?}"
            ),
        }
    }
}

/// `n` one-chunk phases, each depending on the one before (by id), as JSON text; `extra` adds
/// one more dependency to one phase.
fn chain(n: usize, extra: Option<(usize, &str)>) -> String {
    let phases: Vec<Value> = (0..n)
        .map(|i| {
            let mut deps: Vec<String> =
                (i > 0).then(|| format!("p{}", i - 1)).into_iter().collect();
            if let Some((at, dep)) = extra
                && at == i
            {
                deps.push(dep.to_string());
            }
            json!({"id": format!("p{i}"), "depends_on": deps,
                   "chunks": [{"id": format!("c{i}"), "description": "x"}]})
        })
        .collect();
    json!({ "phases": phases }).to_string()
}

#[test]
fn a_long_dependency_chain_loads_and_a_cycle_through_it_is_found() {
    // Deep enough to overflow the stack of a test thread with a recursive search.
    let n = 50_000;
    let plan = parse(&chain(n, None));
    assert_eq!(plan.total(), n);
    assert_eq!(next_id(&plan), Some("c0"));
    let last = format!("p{}", n - 1);
    let err = parse_err(&chain(n, Some((3, &last))));
    assert_problem(
        &err,
        &[&format!(
            "phase dependencies form a cycle: p3 -> {last} -> p{} -> ",
            n - 2
        )],
    );
    let cycle = err.problems.iter().find(|p| p.contains("cycle")).unwrap();
    assert!(
        cycle.ends_with("p5 -> p4 -> p3"),
        "{}",
        &cycle[cycle.len() - 40..]
    );
    let err = parse_err(&chain(n, Some((n - 1, "ghost"))));
    assert_problem(
        &err,
        &[&format!(
            "phases[{}] ({last}).depends_on: \"ghost\" names no phase",
            n - 1
        )],
    );
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

#[test]
fn a_commit_is_matched_to_the_chunk_whose_id_holds_the_separator() {
    let plan = parse(&one_phase(json!([
        {"id": "x", "description": "second"},
        {"id": "x - y", "description": "first"},
        {"id": "a", "description": "b - c"},
        {"id": "a - b", "description": "c"},
        {"id": "solo", "description": "alone"},
    ])));
    let id_of = |message: &str| {
        plan.chunk_of_commit(message)
            .map(|p| plan.chunk(p).id.clone())
    };
    // The old parse read "x" here, and would have marked the wrong chunk completed.
    assert_eq!(id_of("auto-claude: x - y - first"), Some("x - y".into()));
    assert_eq!(id_of("auto-claude: x - second"), Some("x".into()));
    assert_eq!(id_of("auto-claude: x - second\n"), Some("x".into()));
    // Truly ambiguous (both chunks' messages are this one): neither is claimed.
    assert_eq!(id_of("auto-claude: a - b - c"), None);
    // Matching no chunk's id, or not runner's subject at all.
    assert_eq!(id_of("auto-claude: z - first"), None);
    assert_eq!(id_of("x - y - first"), None);
    // Only one id starts the subject: it is that chunk, whatever its description is now.
    assert_eq!(
        id_of("auto-claude: solo - edited later"),
        Some("solo".into())
    );
    // Two do, and neither message is the commit's: neither is claimed.
    assert_eq!(id_of("auto-claude: x - y - edited later"), None);
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

/// Every Default_Ignorable_Code_Point and bidi control is refused in an id, not only the
/// common zero-width and direction characters.
#[test]
fn ids_with_any_invisible_or_direction_changing_character_are_refused() {
    let bad = [
        '\u{34F}',
        '\u{61C}',
        '\u{115F}',
        '\u{1160}',
        '\u{17B4}',
        '\u{180E}',
        '\u{2065}',
        '\u{206A}',
        '\u{206F}',
        '\u{2800}',
        '\u{3164}',
        '\u{FE00}',
        '\u{FE0F}',
        '\u{FFA0}',
        '\u{1BCA0}',
        '\u{1D173}',
        '\u{E0001}',
        '\u{E007F}',
        '\u{E0100}',
        '\u{E01EF}',
    ];
    for c in bad {
        let id = format!("a{c}b");
        let err = parse_err(&one_phase(json!([{ "id": id, "description": "x" }])));
        assert_problem(
            &err,
            &[
                "an invisible or direction-changing character",
                &format!("U+{:04X}", c as u32),
            ],
        );
        let err = parse_err(&json!({"phases": [{"id": id, "chunks": []}]}).to_string());
        assert_problem(&err, &["phases[0].id: phase id"]);
    }
    // Printable neighbours stay allowed.
    for ok in ["a\u{2801}b", "日本語", "a b", "é", "a\u{3000}b"] {
        parse(&one_phase(json!([{ "id": ok, "description": "x" }])));
    }
}

/// Auto-Claude strips `subtask_id` when it takes it as the id; the file keeps it as written.
#[test]
fn a_subtask_id_alias_is_trimmed() {
    let text = one_phase(json!([{ "subtask_id": "  s-9\t", "description": "d" }]));
    let plan = parse(&text);
    assert_eq!(plan.chunks().next().unwrap().id, "s-9");
    assert!(plan.find_chunk("s-9").is_some());
    assert_eq!(
        to_value(&plan)["phases"][0]["chunks"][0]["subtask_id"],
        "  s-9\t"
    );
}

// ---------------------------------------------------------------------------------------------
// Chunks kept as text: the fast path must give exactly the slow path's answer
// ---------------------------------------------------------------------------------------------

/// `value` as runner writes it `level` levels down: serde_json's pretty form, indented (every
/// line break in pretty JSON is between tokens: strings escape theirs).
fn pretty_at(value: &Value, level: usize) -> String {
    let text = serde_json::to_string_pretty(value).unwrap();
    text.replace('\n', &format!("\n{}", "  ".repeat(level)))
}

/// Strings with every character serde_json escapes, and some it does not.
fn tricky_strings() -> Vec<String> {
    let mut all: String = (0u8..0x20).map(char::from).collect();
    all.push_str("\"\\/\u{7f}é€😀\u{202e}\u{feff}");
    vec![
        all,
        String::new(),
        "plain".into(),
        "\\n is not a newline".into(),
    ]
}

#[test]
fn canonical_text_is_exactly_what_serde_json_writes() {
    let strings = tricky_strings();
    let values = vec![
        json!({}),
        json!([]),
        json!({"a": {}, "b": [], "c": [[]], "d": [{}], "e": null, "f": true, "g": false}),
        json!({ strings[0].clone(): strings[0].clone(), "list": strings.clone() }),
        value_of(r#"{"n": [1, -0, 1.0e+5, 1E-7, 2e3, 123456789012345678901234567890, 0.1]}"#),
        json!({"deep": [[[[{"x": [1, {"y": "z"}]}]]]]}),
    ];
    for value in &values {
        for level in 0..6 {
            let text = pretty_at(value, level);
            assert!(canonical::is_canonical(&text, level), "{text}");
            // What the scan accepts, serde_json writes back byte for byte.
            let back: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(pretty_at(&back, level), text);
            if text.contains('\n') {
                assert!(!canonical::is_canonical(&text, level + 1), "{text}");
            }
        }
    }
}

#[test]
fn text_serde_json_would_write_otherwise_is_not_canonical() {
    let not = [
        r#"{"a":1}"#,
        "{\n  \"a\": 1 \n}",
        "{\n\t\"a\": 1\n}",
        "{\n  \"a\":1\n}",
        "{\n  \"a\": 1,\n  \"a\": 2\n}",
        "{\n  \"a\": {\n    \"b\": 1,\n    \"b\": 1\n  }\n}",
        "{\n  \"a\": \"\\/\"\n}",
        "{\n  \"a\": \"\\u00e9\"\n}",
        "{\n  \"a\": \"\\u0041\"\n}",
        "{\n  \"a\": \"\\u001F\"\n}",
        "{\n  \"a\": \"\\u000a\"\n}",
        "{\n  \"a\": \"\\ud83d\\ude00\"\n}",
        "[ ]",
        "{ }",
        "[\n  1\n  ]",
        "[\n  1e3\n]",
        "[\n  1E+3\n]",
        "[\n  -1.5E-2\n]",
        "{\n  \"a\": 2e10\n}",
    ];
    for text in not {
        assert!(!canonical::is_canonical(text, 0), "{text}");
        // serde_json agrees: its form of the value is other text.
        let value: Value = serde_json::from_str(text).unwrap();
        assert_ne!(pretty_at(&value, 0), text);
    }
    let deep = format!("{}{}", "[".repeat(120), "]".repeat(120));
    assert!(
        !canonical::is_canonical(&deep, 0),
        "too deep to keep as text"
    );
}

/// A plan with every kind of chunk: canonical text, fields runner checks, attempt records,
/// verification objects, unknown fields, synonyms, tricky strings.
fn varied_plan() -> Value {
    let strings = tricky_strings();
    json!({
        "feature": "speed",
        "x_top": {"keep": [1.50, "x"]},
        "phases": [
            {"id": "p1", "name": "one", "x_phase": 1e3, "subtasks": [
                {"id": "a", "description": strings[0].clone(), "status": "completed",
                 "attempts": [{"n": 1, "session_id": "s", "outcome": "completed", "x_attempt": [1]}],
                 "verification": {"type": "command", "command": "true", "expected": "ok"},
                 "x_chunk": {"nested": [{"deep": null}]}},
                {"id": "b", "title": "t", "status": "done"},
                {"subtask_id": " c ", "description": "c", "status": null},
                {"id": 7, "description": "numeric id", "files_to_modify": "one.rs"}
            ]},
            {"phase": 2, "depends_on": ["p1"], "chunks": [
                {"id": "d", "description": "d", "status": "in_progress",
                 "attempts": [{"n": 1, "started_at": null, "reported": "done"}]}
            ], "subtasks": [
                {"id": "d", "description": "d", "status": "in_progress",
                 "attempts": [{"n": 1, "started_at": null, "reported": "done"}]}
            ]}
        ]
    })
}

/// Every chunk of `plan` turned into fields, as the slow path reads them.
fn all_as_fields(plan: &Plan) -> Plan {
    let mut slow = plan.clone();
    let positions: Vec<ChunkPos> = slow.positions().collect();
    for pos in positions {
        slow.chunk_mut(pos).raw_mut();
    }
    slow
}

#[test]
fn chunks_kept_as_text_read_and_write_exactly_as_fields() {
    let value = varied_plan();
    // As runner writes it, and as another writer might (compact, escapes serde_json would not use).
    let pretty = String::from_utf8(plan_to_bytes(&parse(&value.to_string()))).unwrap();
    let escaped = pretty.replace('é', "\\u00e9");
    for text in [value.to_string(), pretty.clone(), escaped] {
        let plan = parse(&text);
        let slow = all_as_fields(&plan);
        assert_eq!(plan, slow);
        assert_eq!(plan_to_bytes(&plan), plan_to_bytes(&slow), "{text}");
        for (fast, slow) in plan.chunks().zip(slow.chunks()) {
            assert_eq!(fast.raw(), slow.raw());
            assert_eq!(fast.description(), slow.description());
            assert_eq!(fast.attempts(), slow.attempts());
            assert_eq!(
                fast.list_field("files_to_modify"),
                slow.list_field("files_to_modify")
            );
        }
    }
    // A plan runner wrote is read back as text, every chunk whose status needs no new spelling,
    // and written back byte for byte.
    let plan = parse(&pretty);
    assert!(plan.chunks().all(Chunk::is_verbatim));
    assert_eq!(String::from_utf8(plan_to_bytes(&plan)).unwrap(), pretty);
}

#[test]
fn a_change_to_one_chunk_leaves_the_others_as_text() {
    let pretty = String::from_utf8(plan_to_bytes(&parse(&varied_plan().to_string()))).unwrap();
    let mut plan = parse(&pretty);
    let pos = plan.find_chunk("b").unwrap();
    plan.chunk_mut(pos).set_status(Status::Failed);
    let verbatim: Vec<&str> = plan
        .chunks()
        .filter(|c| c.is_verbatim())
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(verbatim, ["a", "c", "7", "d"]);
    let mut slow = all_as_fields(&parse(&pretty));
    slow.chunk_mut(pos).set_status(Status::Failed);
    assert_eq!(plan_to_bytes(&plan), plan_to_bytes(&slow));
}

#[test]
fn chunks_kept_as_text_report_the_same_problems_as_fields() {
    let broken = [
        json!({"id": "x", "description": "d", "attempts": [{"n": "1"}]}),
        json!({"id": "x", "description": "d", "attempts": [{"n": 1, "outcome": 5}]}),
        json!({"id": "x", "description": "d", "attempts": [[1]]}),
        json!({"id": "x", "description": "d", "attempts": {"n": 1}}),
        json!({"id": "x", "description": "d", "attempts": [{"n": 4294967296u64}]}),
        json!({"id": "x", "description": "d", "status": "later"}),
        json!({"id": "x", "description": "d", "status": 3}),
        json!({"id": "x", "description": "  "}),
        json!({"id": "", "description": "d"}),
        json!({"id": "a\u{7}b", "description": "d"}),
        json!({"id": "x", "description": "d", "verification": {"type": "command"}}),
        json!({"id": "x", "description": "d", "verification": 5}),
        json!(["not", "an", "object"]),
    ];
    for chunk in broken {
        let plan = json!({"phases": [{"id": "p", "subtasks": [chunk]}]});
        let compact = parse_err(&plan.to_string());
        let pretty = parse_err(&serde_json::to_string_pretty(&plan).unwrap());
        assert_eq!(compact.problems, pretty.problems, "{chunk}");
        assert!(!pretty.problems.is_empty());
    }
}

#[test]
fn same_json_agrees_with_comparing_values() {
    let text = String::from_utf8(plan_to_bytes(&parse(&varied_plan().to_string()))).unwrap();
    let base = parse(&text);
    let mut variants = vec![
        base.clone(),
        parse(&varied_plan().to_string()),
        all_as_fields(&base),
    ];
    let changes: [&dyn Fn(&mut Plan); 6] = [
        &|p| {
            p.chunk_mut(ChunkPos { phase: 0, chunk: 1 })
                .set_status(Status::Failed)
        },
        &|p| {
            p.chunk_mut(ChunkPos { phase: 0, chunk: 0 })
                .set_str("x_new", "1")
        },
        &|p| {
            p.chunk_mut(ChunkPos { phase: 1, chunk: 0 })
                .remove("attempts")
        },
        &|p| p.set_field("x_top", json!(null)),
        &|p| {
            std::sync::Arc::make_mut(&mut p.phases[1].chunks).pop();
        },
        &|p| {
            p.phases[0].raw.insert("name".into(), json!("renamed"));
        },
    ];
    for change in changes {
        let mut changed = base.clone();
        change(&mut changed);
        variants.push(changed);
    }
    // Key order aside, as JSON values compare.
    let mut reordered = base.clone();
    let pos = ChunkPos { phase: 0, chunk: 0 };
    let raw = reordered.chunk_mut(pos).raw_mut();
    let mut fields: Vec<(String, Value)> = std::mem::take(raw).into_iter().collect();
    fields.reverse();
    raw.extend(fields);
    variants.push(reordered);
    for a in &variants {
        for b in &variants {
            assert_eq!(a.same_json(b), a.to_value() == b.to_value());
        }
    }
}

#[test]
fn a_plan_read_again_unchanged_is_the_same_plan_and_any_change_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let file = PlanFile::in_spec_dir(dir.path());
    let text = String::from_utf8(plan_to_bytes(&parse(&varied_plan().to_string()))).unwrap();
    std::fs::write(file.path(), &text).unwrap();
    let first = file.load().unwrap().unwrap();
    let again = file.load().unwrap().unwrap();
    assert_eq!(plan_to_bytes(&again), text.as_bytes());
    assert_eq!(again, first);
    // The same length, one chunk's status changed in place: read anew.
    let edited = text.replacen("\"status\": \"pending\"", "\"status\": \"blocked\"", 1);
    assert_ne!(edited, text);
    std::fs::write(file.path(), &edited).unwrap();
    let seen = file.load().unwrap().unwrap();
    assert_eq!(seen.count(Status::Blocked), 1);
    assert_eq!(plan_to_bytes(&seen), edited.as_bytes());
    // Through update too, and what it writes is read back.
    set_status_of(&file, "b", Status::Failed);
    let after = file.load().unwrap().unwrap();
    let fresh = parse_plan(file.path(), &std::fs::read(file.path()).unwrap()).unwrap();
    assert_eq!(after, fresh);
    assert_eq!(
        after.chunk(after.find_chunk("b").unwrap()).status,
        Status::Failed
    );
}

#[test]
fn a_plan_runner_wrote_reads_back_as_a_fresh_parse_would() {
    let dir = tempfile::tempdir().unwrap();
    let file = PlanFile::in_spec_dir(dir.path());
    let plans = [
        varied_plan(),
        // `chunks` read over an empty `subtasks`: the write puts the chunks under both.
        json!({"phases": [{"id": "p", "subtasks": [], "chunks": [
            {"id": "b", "description": "b", "status": "todo"}]}]}),
        // A list beside the phases that is not runner's, and a bare top-level list.
        json!({"subtasks": [{"x": 1}], "phases": [{"id": "p", "subtasks": [
            {"id": "b", "description": "b"}]}]}),
        json!({"x_top": 1, "chunks": [{"id": "b", "description": "b", "status": "done"}]}),
    ];
    for plan in plans {
        std::fs::write(file.path(), plan.to_string()).unwrap();
        for status in [Status::Failed, Status::Pending] {
            file.update(|p| {
                let pos = p.find_chunk("b").unwrap();
                p.chunk_mut(pos).set_status(status);
                Ok(())
            })
            .unwrap();
            let bytes = std::fs::read(file.path()).unwrap();
            let fresh = parse_plan(file.path(), &bytes).unwrap();
            let read = file.load().unwrap().unwrap();
            assert_eq!(read, fresh, "{plan}");
            assert_eq!(read.phases.len(), fresh.phases.len());
            for (a, b) in read.phases.iter().zip(&fresh.phases) {
                assert_eq!((a.chunks_key, a.mirror_key), (b.chunks_key, b.mirror_key));
            }
            assert_eq!(plan_to_bytes(&read), bytes);
        }
    }
}

/// A plan with `inner` as the value of a field of its one chunk, written compactly.
fn plan_with_chunk_field(inner: &str) -> String {
    format!(
        "{{\"phases\": [{{\"id\": \"p\", \"subtasks\": [{{\"id\": \"a\", \"description\": \"d\", \"x\": {inner}}}]}}]}}"
    )
}

#[test]
fn bad_json_anywhere_is_the_syntax_error_a_whole_parse_gives() {
    let mut cases: Vec<Vec<u8>> = [
        // Lone surrogates: only a real parse of the string refuses them.
        "\"\\ud800\"",
        "\"\\udc00x\"",
        "\"\\ud800\\u0041\"",
        // A raw control character, an escape JSON does not have, a bad number.
        "\"a\u{1}b\"",
        "\"\\x\"",
        "01",
        "[1,]",
    ]
    .iter()
    .map(|inner| plan_with_chunk_field(inner).into_bytes())
    .collect();
    // The same in the mirror list (read only to name a difference) and at the phase level.
    cases.push(
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "d"}], "chunks": [{"id": "a", "description": "\ud800"}]}]}"#.to_vec(),
    );
    cases.push(br#"{"phases": [{"id": "p", "name": "\udfff", "subtasks": []}]}"#.to_vec());
    cases.push(br#"{"phases": [], "subtasks": ["\ud800"]}"#.to_vec());
    let bad_utf8 = plan_with_chunk_field("\"\u{e9}\"").into_bytes();
    cases.push(bad_utf8[..bad_utf8.len() - 6].to_vec());
    for bytes in cases {
        let whole = serde_json::from_slice::<Value>(&bytes).unwrap_err();
        let err = parse_plan(Path::new(PATH), &bytes).unwrap_err();
        let shown = String::from_utf8_lossy(&bytes);
        assert_eq!(
            (err.line, err.column, err.problems),
            (
                Some(whole.line()),
                Some(whole.column()),
                vec![format!("not valid JSON: {whole}")]
            ),
            "{shown}"
        );
    }
}

#[test]
fn nesting_past_serde_jsons_limit_is_refused_as_a_whole_parse_refuses_it() {
    let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let cases = [
        // In a chunk read into values (compact), in a phase's field, beside the phases.
        plan_with_chunk_field(&nest(124)),
        format!(
            "{{\"phases\": [{{\"id\": \"p\", \"x\": {}, \"subtasks\": []}}]}}",
            nest(125)
        ),
        format!("{{\"phases\": [], \"subtasks\": [{}]}}", nest(126)),
        format!(
            "{{\"chunks\": [{{\"id\": \"a\", \"description\": \"d\", \"x\": {}}}]}}",
            nest(125)
        ),
    ];
    for text in &cases {
        let whole = serde_json::from_str::<Value>(text).unwrap_err();
        let err = parse_err(text);
        assert_eq!(
            (err.line, err.column, err.problems),
            (
                Some(whole.line()),
                Some(whole.column()),
                vec![format!("not valid JSON: {whole}")]
            ),
        );
    }
    // One level less is a plan.
    let deepest = plan_with_chunk_field(&nest(122));
    serde_json::from_str::<Value>(&deepest).unwrap();
    parse(&deepest);
}

#[test]
fn a_written_plan_past_the_cut_off_is_not_remembered_however_its_chunks_are_held() {
    let dir = tempfile::tempdir().unwrap();
    let file = PlanFile::in_spec_dir(dir.path());
    // A few chunks of 1.5 MB each, written compactly: every chunk read into fields.
    let long = "x".repeat(1_500_000);
    let chunks: Vec<Value> = (0..7)
        .map(|i| json!({"id": format!("c{i}"), "description": long}))
        .collect();
    let plan = json!({"phases": [{"id": "p", "subtasks": chunks}]});
    std::fs::write(file.path(), plan.to_string()).unwrap();
    set_status_of(&file, "c0", Status::Completed);
    assert!(std::fs::metadata(file.path()).unwrap().len() > 8 << 20);
    assert!(!file.remembers_a_plan(), "a plan past 8 MB is held twice");
    // Under the cut-off, it is remembered.
    let small = json!({"phases": [{"id": "p", "subtasks": [{"id": "c0", "description": "d"}]}]});
    std::fs::write(file.path(), small.to_string()).unwrap();
    set_status_of(&file, "c0", Status::Completed);
    assert!(file.remembers_a_plan());
}

#[test]
fn a_chunk_with_very_many_keys_is_scanned_in_linear_time() {
    // An agent may write any chunk; 200,000 keys took minutes when each key was compared with
    // every earlier one (the whole-file parse reads it in a fraction of a second).
    let keys: Map<String, Value> = (0..200_000)
        .map(|i| (format!("k{i}"), Value::from(i)))
        .collect();
    let text = pretty_at(&Value::Object(keys), 4);
    let started = std::time::Instant::now();
    assert!(canonical::is_canonical(&text, 4));
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(30), "took {took:?}");
    // A key given twice, far apart, is still seen.
    let twice = text.replacen("\"k199999\"", "\"k0\"", 1);
    assert!(!canonical::is_canonical(&twice, 4));
}

#[test]
fn a_key_given_twice_is_seen_either_side_of_the_move_from_list_to_set() {
    // The check keeps 16 keys in a list and then moves to a set: a repeat of the first key at
    // the 16th, 17th and 18th place must all be seen.
    for at in [15, 16, 17] {
        let keys: Map<String, Value> = (0..20)
            .map(|i| (format!("k{i:02}"), Value::from(i)))
            .collect();
        let text = pretty_at(&Value::Object(keys), 4);
        assert!(canonical::is_canonical(&text, 4));
        let twice = text.replacen(&format!("\"k{at:02}\""), "\"k00\"", 1);
        assert!(!canonical::is_canonical(&twice, 4), "repeat at {at}");
    }
}

#[test]
fn an_attempt_record_reads_exactly_when_it_can_be_read() {
    let cases = [
        json!({"n": 1}),
        json!({"n": 1, "commit": "abc", "outcome": null}),
        json!({"n": 1, "extra": [1, 2], "outcome": "completed"}),
        json!({"n": 4294967295u64}),
        json!({"n": 4294967296u64}),
        json!({"n": -1}),
        json!({"n": 1.5}),
        json!({"n": "1"}),
        json!({"commit": "abc"}),
        json!({"n": 1, "commit": 7}),
        json!({"n": 1, "reason": {"x": 1}}),
        json!({"n": 1, "session_id": ["a"]}),
        json!([1]),
        json!("n"),
        json!(null),
    ];
    for case in cases {
        assert_eq!(
            Attempt::reads(&case),
            Attempt::from_value(&case).is_some(),
            "{case}"
        );
    }
}

#[test]
fn a_plan_grown_past_the_cut_off_by_one_chunk_is_not_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let file = PlanFile::in_spec_dir(dir.path());
    let small = json!({"phases": [{"id": "p", "subtasks": [
        {"id": "c0", "description": "d"}, {"id": "c1", "description": "e"}]}]});
    std::fs::write(file.path(), small.to_string()).unwrap();
    set_status_of(&file, "c0", Status::Completed);
    assert!(file.remembers_a_plan());
    // An agent writes 9 MB into one chunk, in runner's own form (the quick re-read's case).
    let text = std::fs::read_to_string(file.path()).unwrap();
    let long = "x".repeat(9 << 20);
    let grown = text.replacen(
        "\"description\": \"e\"",
        &format!("\"description\": \"{long}\""),
        1,
    );
    assert_ne!(grown, text);
    std::fs::write(file.path(), &grown).unwrap();
    let read = file.load().unwrap().unwrap();
    assert_eq!(read, parse_plan(file.path(), grown.as_bytes()).unwrap());
    assert!(!file.remembers_a_plan(), "a plan past 8 MB is held twice");
}

/// Set chunk `id`'s status through `PlanFile::update` (the plan's write path).
fn set_status_of(file: &PlanFile, id: &str, status: Status) {
    file.update(|p| {
        let pos = p.find_chunk(id).unwrap();
        p.chunk_mut(pos).set_status(status);
        Ok(())
    })
    .unwrap();
}
