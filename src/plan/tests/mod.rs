//! Unit tests for the plan module: every Auto-Claude variant, the lossless round trip, the
//! errors a user can meet, choosing the next chunk, verification and attempt records.
//!
//! All plans here are written for these tests; the real Auto-Claude plans are exercised by
//! `tests/it/plan_reference.rs`.
//!
//! One file per subject (below); the helpers every file uses are here. Example plans of a
//! shape (each era, every phase-key form) are named files in `fixtures/plans/`.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::verification::{self, CommandCheck};
use super::*;

mod both_lists;
mod next_chunk;
mod parsing;
mod statuses;
mod text_equals_fields;
mod validation;
mod verifications;
mod write_back;

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

/// An attempt record with the fields a run sets when it starts one.
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

// ---------------------------------------------------------------------------------------------
// Fixtures: one of each era, and one with every phase-key and depends_on form.
// ---------------------------------------------------------------------------------------------

/// Subtasks era: string phase ids and string depends_on, planner.md-style chunk fields,
/// verification with `command` + `expected`, browser and manual verifications, unknown fields
/// at every level, and non-canonical statuses.
const SUBTASKS_ERA: &str = include_str!("../../../fixtures/plans/subtasks-era.json");

/// Chunks era: numeric `phase`, numeric depends_on, `run`-style verification, `expect_status`.
const CHUNKS_ERA: &str = include_str!("../../../fixtures/plans/chunks-era.json");

/// Every way a phase can be named and referred to.
const MIXED_KEYS: &str = include_str!("../../../fixtures/plans/mixed-phase-keys.json");
