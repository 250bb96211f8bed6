//! Choosing what runs next (`next_step`): file order, dependencies, waiting phases, and why a
//! plan is stuck.

use super::*;

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
