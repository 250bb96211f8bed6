//! Compatibility with real Auto-Claude plans.
//!
//! The plans live in `../shared/reference/auto-claude-plans/` beside the checkout (or
//! `$RUNNER_AUTO_CLAUDE_PLANS`, see `corpus`) and are read from there, never copied into this
//! project. Every expectation below is computed from the
//! file's own data, so the test holds for any plan placed in that folder.

use std::path::{Path, PathBuf};

use serde_json::Value;

use runner::plan::{
    NextStep, Plan, Status, check_planner_output, next_chunk_id, next_step, parse_plan,
    plan_to_bytes, verification,
};

/// Every `*.json` directly in the corpus folder (not `memory-examples/`), sorted; `None`, after
/// saying so, when the corpus is absent (a failure under CI: see `corpus`).
fn reference_plans() -> Option<Vec<PathBuf>> {
    crate::corpus::plans()
}

fn read(path: &Path) -> (Vec<u8>, Value) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    (bytes, value)
}

fn parse(path: &Path, bytes: &[u8]) -> Plan {
    parse_plan(path, bytes).unwrap_or_else(|e| panic!("{e}"))
}

/// The chunk list of a phase object, whichever era's key it uses.
fn chunks_of(phase: &Value) -> &[Value] {
    ["chunks", "subtasks"]
        .iter()
        .find_map(|k| phase.get(*k).and_then(Value::as_array))
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn status_of(chunk: &Value) -> Status {
    match chunk.get("status") {
        None | Some(Value::Null) => Status::Pending,
        Some(Value::String(s)) => {
            Status::parse(s).unwrap_or_else(|| panic!("status {s:?} should be known"))
        }
        Some(other) => panic!("status {other} should be a string"),
    }
}

/// The file with each chunk status in the spelling runner writes. Nothing else may change.
fn normalised(mut v: Value) -> Value {
    for phase in v["phases"].as_array_mut().expect("phases list") {
        for key in ["chunks", "subtasks"] {
            if let Some(chunks) = phase.get_mut(key).and_then(Value::as_array_mut) {
                for chunk in chunks {
                    if let Some(Value::String(s)) = chunk.get_mut("status") {
                        let canonical = Status::parse(s)
                            .unwrap_or_else(|| panic!("status {s:?} should be known"));
                        *s = canonical.as_str().into();
                    }
                }
            }
        }
    }
    v
}

/// Object key order is part of "every field survives in place"; `Value` equality ignores it.
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

/// Does a `depends_on` entry name this phase object? Numbers and strings name either a
/// numeric `phase` or a string `id`, in either spelling.
fn names(dep: &Value, phase: &Value) -> bool {
    let as_text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => Some(s.trim().to_string()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let dep = as_text(Some(dep)).expect("depends_on entries are strings or numbers");
    as_text(phase.get("id")).as_deref() == Some(dep.as_str())
        || as_text(phase.get("phase")).as_deref() == Some(dep.as_str())
}

fn depends_on(phase: &Value) -> Vec<Value> {
    match phase.get("depends_on") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(single) => vec![single.clone()],
    }
}

/// The next chunk as the file describes it, worked out independently of runner's model: the
/// first pending chunk, in file order, of the first phase whose dependencies are all done.
fn expected_next(plan: &Value) -> Option<String> {
    let phases = plan["phases"].as_array().expect("phases list");
    let complete = |phase: &Value| {
        chunks_of(phase)
            .iter()
            .all(|c| status_of(c) == Status::Completed)
    };
    for phase in phases {
        let ready = depends_on(phase).iter().all(|dep| {
            let target = phases
                .iter()
                .find(|p| names(dep, p))
                .unwrap_or_else(|| panic!("depends_on {dep} names no phase"));
            complete(target)
        });
        if !ready {
            continue;
        }
        if let Some(chunk) = chunks_of(phase)
            .iter()
            .find(|c| status_of(c) == Status::Pending)
        {
            return Some(chunk["id"].as_str().expect("chunk id").to_string());
        }
    }
    None
}

#[test]
fn reference_plans_parse_round_trip_and_pick_the_right_next_chunk() {
    let mut eras = Vec::new();
    let Some(plans) = reference_plans() else {
        return;
    };
    for path in plans {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (bytes, original) = read(&path);

        // Valid, and something to do.
        let plan = parse(&path, &bytes);
        assert!(
            check_planner_output(&plan).is_empty(),
            "{name}: {:?}",
            check_planner_output(&plan)
        );

        // The model sees every chunk, with the file's statuses.
        let phases = original["phases"].as_array().expect("phases list");
        assert_eq!(plan.phases.len(), phases.len(), "{name}");
        let file_chunks: Vec<&Value> = phases.iter().flat_map(chunks_of).collect();
        assert_eq!(plan.total(), file_chunks.len(), "{name}");
        for (chunk, raw) in plan.chunks().zip(&file_chunks) {
            assert_eq!(Some(chunk.id.as_str()), raw["id"].as_str(), "{name}");
            assert_eq!(chunk.status, status_of(raw), "{name}: {}", chunk.id);
        }
        for status in Status::ALL {
            let want = file_chunks
                .iter()
                .filter(|c| status_of(c) == status)
                .count();
            assert_eq!(plan.count(status), want, "{name}: {status}");
        }
        for (phase, raw) in plan.phases.iter().zip(phases) {
            eras.push(phase.chunks_key.expect("every reference phase has chunks"));
            assert!(
                raw.get(phase.chunks_key.unwrap()).is_some(),
                "{name}: chunks key"
            );
            assert_eq!(phase.depends_on.len(), depends_on(raw).len(), "{name}");
        }

        // Every field survives, in place.
        let first = plan_to_bytes(&plan);
        let written: Value = serde_json::from_slice(&first)
            .unwrap_or_else(|e| panic!("{name}: runner wrote invalid JSON: {e}"));
        let want = normalised(original.clone());
        assert!(
            written == want,
            "{name}: fields changed on the round trip\n--- written ---\n{}",
            String::from_utf8_lossy(&first)
        );
        assert_same_key_order(&want, &written, &name);

        // The canonical form is stable: loading what runner wrote and saving again is a no-op.
        let again = parse(&path, &first);
        assert_eq!(again, plan, "{name}");
        let second = plan_to_bytes(&again);
        assert!(
            first == second,
            "{name}: the second save differs from the first"
        );
        assert!(first.ends_with(b"}\n"), "{name}: final newline");

        // The next chunk is the one the file implies.
        let want_next = expected_next(&original);
        assert!(
            want_next.is_some(),
            "{name}: reference plans are mid-flight, so something must be next"
        );
        assert_eq!(
            next_chunk_id(&plan).map(str::to_string),
            want_next,
            "{name}"
        );
        let NextStep::Chunk(pos) = next_step(&plan) else {
            panic!("{name}: expected a chunk, got {:?}", next_step(&plan));
        };
        assert_eq!(plan.chunk(pos).status, Status::Pending, "{name}");

        // Command verifications are read in both styles; other types are not checks.
        for (chunk, raw) in plan.chunks().zip(&file_chunks) {
            let check = verification::command_check(chunk);
            let v = raw.get("verification");
            let kind = v.and_then(|v| v.get("type")).and_then(Value::as_str);
            let command = v
                .and_then(|v| v.get("command").or_else(|| v.get("run")))
                .and_then(Value::as_str);
            match (kind, command) {
                (Some("command"), Some(cmd)) => {
                    let check = check.unwrap_or_else(|| panic!("{name}: {} check", chunk.id));
                    assert_eq!(check.command, cmd, "{name}: {}", chunk.id);
                    assert_eq!(check.expect_status, 0, "{name}: {}", chunk.id);
                }
                _ => assert_eq!(check, None, "{name}: {}", chunk.id),
            }
            assert_eq!(
                verification::describe(chunk).is_some(),
                v.is_some(),
                "{name}: {}",
                chunk.id
            );
        }
    }
    // Both eras are covered by the reference data.
    assert!(eras.contains(&"chunks"), "no chunks-era reference plan");
    assert!(eras.contains(&"subtasks"), "no subtasks-era reference plan");
}

#[test]
fn chunks_era_reference_plan_depends_on_numbers() {
    let mut seen = false;
    let Some(plans) = reference_plans() else {
        return;
    };
    for path in plans {
        let (bytes, original) = read(&path);
        let phases = original["phases"].as_array().expect("phases list");
        if !phases.iter().any(|p| p.get("chunks").is_some()) {
            continue;
        }
        seen = true;
        let plan = parse(&path, &bytes);
        for (phase, raw) in plan.phases.iter().zip(phases) {
            assert_eq!(
                phase.key.number,
                raw["phase"].as_i64(),
                "{}",
                path.display()
            );
            for (dep, raw_dep) in phase.depends_on.iter().zip(depends_on(raw)) {
                let n = raw_dep
                    .as_i64()
                    .expect("chunks era depends_on holds numbers");
                assert_eq!(*dep, runner::plan::PhaseRef::Number(n));
            }
        }
    }
    assert!(seen, "no chunks-era plan among the reference plans");
}

#[test]
fn advancing_a_reference_plan_to_the_end() {
    // Mark the next chunk completed until nothing is left: runner must reach Complete on every
    // real plan, and each save must stay loadable and keep the unknown fields.
    let Some(plans) = reference_plans() else {
        return;
    };
    for path in plans {
        let (bytes, original) = read(&path);
        let mut plan = parse(&path, &bytes);
        let mut steps = 0;
        while let NextStep::Chunk(pos) = next_step(&plan) {
            plan.chunk_mut(pos).set_status(Status::Completed);
            let saved = plan_to_bytes(&plan);
            plan = parse(&path, &saved);
            steps += 1;
            assert!(steps <= plan.total(), "{}: no progress", path.display());
        }
        assert_eq!(next_step(&plan), NextStep::Complete, "{}", path.display());
        let pending = original["phases"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(chunks_of)
            .filter(|c| status_of(c) != Status::Completed)
            .count();
        assert_eq!(steps, pending, "{}", path.display());

        // Apart from the statuses, the file is what it was.
        let mut written: Value = serde_json::from_slice(&plan_to_bytes(&plan)).unwrap();
        let mut want = original.clone();
        for v in [&mut written, &mut want] {
            for phase in v["phases"].as_array_mut().unwrap() {
                for key in ["chunks", "subtasks"] {
                    if let Some(chunks) = phase.get_mut(key).and_then(Value::as_array_mut) {
                        for chunk in chunks {
                            chunk.as_object_mut().unwrap().shift_remove("status");
                        }
                    }
                }
            }
        }
        assert_eq!(written, want, "{}", path.display());
        assert_same_key_order(&want, &written, &path.display().to_string());
    }
}
