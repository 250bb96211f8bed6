use super::*;
use crate::ops::status::{BudgetStatus, Counts, Running, SpentStatus};
use crate::store::runs::RunKind;

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap().to_utc()
}

fn spec(name: &str, status: &str) -> SpecStatus {
    SpecStatus {
        spec: name.into(),
        status: status.into(),
        continue_command: None,
        branch: None,
        worktree: None,
        chunks: Counts {
            total: 800,
            completed: 12,
            pending: 787,
            in_progress: 1,
            ..Counts::default()
        },
        current_chunk: None,
        next_chunk: Some("subtask-1-13".into()),
        running: None,
        paused_until: None,
        error: None,
        warnings: Vec::new(),
        problem: None,
        spent: SpentStatus {
            usd: 1.25,
            tokens: 4000,
            sessions: 12,
        },
        budget: BudgetStatus::default(),
    }
}

fn running(mut s: SpecStatus, run_id: &str, since: &str) -> SpecStatus {
    s.status = "running".into();
    s.current_chunk = Some("subtask-1-13".into());
    s.running = Some(Running {
        pid: Some(42),
        run_id: Some(run_id.into()),
        since: Some(since.into()),
    });
    s
}

fn report(specs: Vec<SpecStatus>) -> StatusReport {
    StatusReport {
        specs,
        slots: Vec::new(),
        hidden: 0,
    }
}

fn record(run_id: &str, started: &str, chunk: &str) -> RunRecord {
    let mut r = RunRecord::starting(run_id, "001-a", RunKind::Run);
    r.started = at(started);
    r.chunk = Some(chunk.into());
    r.agent = Some("claude".into());
    r
}

#[test]
fn an_idle_spec_shows_its_state_progress_cost_and_next_chunk_and_nothing_live() {
    let rows = rows(
        &report(vec![spec("001-a", "in_progress")]),
        &HashMap::new(),
        at("2026-11-29T10:00:00Z"),
    );
    let r = &rows[0];
    assert_eq!(
        (r.spec.as_str(), r.state.as_str(), r.active),
        ("001-a", "in_progress", false)
    );
    assert_eq!((r.done, r.total), (12, 800));
    assert_eq!((r.chunk.as_deref(), r.next), (Some("subtask-1-13"), true));
    assert_eq!((r.usd, r.tokens), (1.25, 4000));
    assert_eq!(
        (r.elapsed_secs, r.attempt, r.latest.as_ref()),
        (None, None, None)
    );
}

#[test]
fn an_active_run_shows_its_records_chunk_the_sessions_attempt_elapsed_time_and_latest_line() {
    let s = running(spec("001-a", "x"), "r0000000000aa", "2026-11-29T09:58:00Z");
    let live = Live {
        record: Some(record(
            "r0000000000aa",
            "2026-11-29T09:58:00Z",
            "subtask-1-14",
        )),
        session: Some("20261129T095900Z-3f9a-coder-subtask-1-14-a2".into()),
        latest: Some("Editing src/lib.rs".into()),
    };
    let rows = rows(
        &report(vec![s]),
        &HashMap::from([("001-a".to_string(), live)]),
        at("2026-11-29T10:00:05Z"),
    );
    let r = &rows[0];
    assert!(r.active);
    assert_eq!(r.run_id.as_deref(), Some("r0000000000aa"));
    // The record's chunk is the run's own word for what it works on now.
    assert_eq!((r.chunk.as_deref(), r.next), (Some("subtask-1-14"), false));
    assert_eq!(r.attempt, Some(2));
    assert_eq!(r.elapsed_secs, Some(125));
    assert_eq!(r.agent.as_deref(), Some("claude"));
    assert_eq!(r.latest.as_deref(), Some("Editing src/lib.rs"));
    assert!(!r.planning);
}

#[test]
fn a_session_older_than_the_run_is_not_its_words_and_a_record_of_another_run_is_not_used() {
    let s = running(spec("001-a", "x"), "r0000000000bb", "2026-11-29T09:58:00Z");
    let live = Live {
        record: Some(record(
            "r0000000000aa",
            "2026-11-29T08:00:00Z",
            "subtask-9-9",
        )),
        session: Some("20261129T095700Z-3f9a-coder-subtask-1-12-a1".into()),
        latest: Some("words of the run before".into()),
    };
    let rows = rows(
        &report(vec![s]),
        &HashMap::from([("001-a".to_string(), live)]),
        at("2026-11-29T09:58:30Z"),
    );
    let r = &rows[0];
    // The lock's own start time, and the plan's chunk in progress.
    assert_eq!(r.elapsed_secs, Some(30));
    assert_eq!(r.chunk.as_deref(), Some("subtask-1-13"));
    assert_eq!(
        (r.attempt, r.latest.as_ref(), r.agent.as_ref()),
        (None, None, None)
    );
}

#[test]
fn a_planning_session_is_shown_as_planning_without_a_chunk() {
    let mut s = running(spec("001-a", "x"), "r0000000000aa", "2026-11-29T09:58:00Z");
    s.status = "planning".into();
    s.current_chunk = None;
    let live = Live {
        record: None,
        session: Some("20261129T095800Z-0001-planner-a1".into()),
        latest: Some("Reading spec.md".into()),
    };
    let rows = rows(
        &report(vec![s]),
        &HashMap::from([("001-a".to_string(), live)]),
        at("2026-11-29T09:59:00Z"),
    );
    let r = &rows[0];
    assert!(r.planning);
    assert_eq!((r.chunk.as_ref(), r.attempt), (None, Some(1)));
    assert_eq!(r.latest.as_deref(), Some("Reading spec.md"));
}

#[test]
fn an_interrupted_spec_shows_the_chunk_it_was_left_at_and_no_live_line() {
    let mut s = spec("001-a", "interrupted");
    s.current_chunk = Some("subtask-1-13".into());
    let live = Live {
        record: Some(record(
            "r0000000000aa",
            "2026-11-29T09:58:00Z",
            "subtask-1-13",
        )),
        session: Some("20261129T095900Z-3f9a-coder-subtask-1-13-a1".into()),
        latest: Some("killed mid-sentence".into()),
    };
    let rows = rows(
        &report(vec![s]),
        &HashMap::from([("001-a".to_string(), live)]),
        at("2026-11-29T10:00:00Z"),
    );
    let r = &rows[0];
    assert!(!r.active);
    assert_eq!((r.chunk.as_deref(), r.next), (Some("subtask-1-13"), false));
    assert_eq!((r.elapsed_secs, r.latest.as_ref()), (None, None));
}

#[test]
fn session_ids_are_read_for_their_attempt_role_and_start() {
    let id = "20261122T192400Z-3f9a-coder-subtask-1-1-a12";
    assert_eq!(session_attempt(id), Some(12));
    assert_eq!(session_role(id), Some("coder"));
    assert_eq!(
        session_role("20261122T192300Z-0001-planner-a1"),
        Some("planner")
    );
    assert_eq!(session_attempt("20261122T192300Z-0001-planner"), None);
    assert_eq!(session_attempt("x-a0"), None);
    assert!(session_of_run(id, at("2026-11-22T19:24:00.900Z")));
    assert!(!session_of_run(id, at("2026-11-22T19:24:01Z")));
    assert!(!session_of_run("garbage", at("2026-11-22T19:24:01Z")));
    assert!(!session_of_run("é", at("2026-11-22T19:24:01Z")));
}

#[test]
fn elapsed_time_reads_as_a_clock() {
    assert_eq!(clock(0), "0:00");
    assert_eq!(clock(125), "2:05");
    assert_eq!(clock(3723), "1:02:03");
}
