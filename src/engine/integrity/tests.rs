//! Unit tests of the integrity decisions.

use super::*;

fn facts(recorded: &[(&str, bool)], start: Option<bool>) -> HistoryFacts {
    HistoryFacts {
        branch_exists: true,
        recorded: recorded
            .iter()
            .map(|(c, p)| (c.to_string(), format!("{c}-commit"), *p))
            .collect(),
        start: start.map(|p| ("cur".to_string(), "start".to_string(), p)),
        hollowed: Vec::new(),
    }
}

#[test]
fn history_intact_is_no_breach() {
    assert_eq!(
        judge_history(&facts(&[("a", true), ("b", true)], Some(true))),
        None
    );
    assert_eq!(judge_history(&HistoryFacts::default()), None);
}

#[test]
fn a_missing_recorded_commit_or_start_is_a_breach() {
    let b = judge_history(&facts(&[("a", false), ("b", true)], Some(true))).unwrap();
    assert_eq!(b.missing, vec![("a".to_string(), "a-commit".to_string())]);
    assert_eq!(b.start_lost, None);
    let b = judge_history(&facts(&[("a", true)], Some(false))).unwrap();
    assert!(b.missing.is_empty());
    assert_eq!(b.start_lost.as_deref(), Some("start"));
    assert!(b.describe("auto-claude/x").contains("rewritten"));
}

#[test]
fn changes_hidden_by_a_merge_are_a_breach() {
    let mut f = facts(&[("a", true)], None);
    f.hollowed = vec![("a".to_string(), vec!["x.txt".to_string()])];
    let b = judge_history(&f).unwrap();
    assert!(b.missing.is_empty());
    assert!(
        b.describe("br").contains("a (x.txt)"),
        "{}",
        b.describe("br")
    );
}

#[test]
fn a_gone_branch_is_a_breach_only_with_recorded_work() {
    let mut f = facts(&[("a", false)], None);
    f.branch_exists = false;
    assert!(judge_history(&f).unwrap().branch_gone);
    let f = HistoryFacts {
        branch_exists: false,
        ..Default::default()
    };
    assert_eq!(judge_history(&f), None);
}

#[test]
fn a_plan_restores_only_when_runner_was_running_or_it_is_torn() {
    use PlanOnDisk::*;
    assert!(restore_missing_plan(Unparsable, false, true));
    assert!(restore_missing_plan(Missing, true, true));
    assert!(restore_missing_plan(Invalid, true, true));
    assert!(!restore_missing_plan(Missing, false, true));
    assert!(!restore_missing_plan(Invalid, false, true));
    assert!(!restore_missing_plan(Missing, true, false));
}

#[test]
fn the_last_run_is_unfinished_without_a_run_end() {
    let ev = |e: &str| typed(json!({"event": e}));
    assert!(last_run_unfinished(&[
        ev("run_end"),
        ev("run_start"),
        ev("commit")
    ]));
    assert!(!last_run_unfinished(&[ev("run_start"), ev("run_end")]));
    assert!(!last_run_unfinished(&[]));
}

/// A journal line as the journal reads it back.
fn typed(line: serde_json::Value) -> Event {
    serde_json::from_value(line).unwrap()
}

pub(super) fn plan(statuses: &[(&str, &str)]) -> Plan {
    let chunks: Vec<serde_json::Value> = statuses
        .iter()
        .map(|(id, s)| json!({"id": id, "description": format!("do {id}"), "status": s}))
        .collect();
    let text = json!({"phases": [{"id": "p1", "subtasks": chunks}]}).to_string();
    crate::plan::parse_plan(Path::new("t.json"), text.as_bytes()).unwrap()
}

fn with_attempt(mut p: Plan, id: &str, session: &str, reported: Option<&str>) -> Plan {
    let pos = p.find_chunk(id).unwrap();
    p.chunk_mut(pos).set_attempts(&[crate::plan::Attempt {
        n: 1,
        session_id: Some(session.into()),
        reported: reported.map(str::to_string),
        ..Default::default()
    }]);
    p
}

#[test]
fn other_chunks_statuses_are_undone_and_the_own_report_stands() {
    let before = with_attempt(
        plan(&[("a", "in_progress"), ("b", "pending"), ("c", "pending")]),
        "a",
        "s1",
        None,
    );
    let found = with_attempt(
        plan(&[("a", "in_progress"), ("b", "completed"), ("c", "completed")]),
        "a",
        "s1",
        Some("done"),
    );
    let (settled, undone) = settle_plan(&before, &found, "a", "s1", &[]);
    let st: Vec<Status> = settled.chunks().map(|c| c.status).collect();
    assert_eq!(
        st,
        vec![Status::InProgress, Status::Pending, Status::Pending]
    );
    assert_eq!(
        settled
            .chunk(settled.find_chunk("a").unwrap())
            .last_attempt()
            .unwrap()
            .reported
            .as_deref(),
        Some("done")
    );
    assert_eq!(
        undone,
        vec!["b completed → pending", "c completed → pending"]
    );
}

#[test]
fn a_persons_change_and_the_own_completed_status_stand() {
    let before = plan(&[("a", "in_progress"), ("b", "pending")]);
    let found = plan(&[("a", "completed"), ("b", "completed")]);
    let (settled, undone) = settle_plan(&before, &found, "a", "s1", &["b".to_string()]);
    assert!(undone.is_empty(), "{undone:?}");
    assert_eq!(settled.to_value(), found.to_value());
}

#[test]
fn removed_attempts_and_added_chunks_are_put_back() {
    let before = with_attempt(
        plan(&[("a", "in_progress"), ("b", "completed")]),
        "b",
        "old",
        Some("done"),
    );
    let found = plan(&[("a", "in_progress"), ("b", "completed"), ("x", "pending")]);
    let (settled, undone) = settle_plan(&before, &found, "a", "s1", &[]);
    assert_eq!(settled.to_value(), before.to_value());
    assert_eq!(undone, vec!["x (added) removed"]);
}

#[test]
fn person_changes_are_read_from_the_journal_since_the_session_started() {
    let events = vec![
        json!({"event": "chunk_report", "chunk": "old", "session_id": null}),
        json!({"event": "session_start", "session_id": "s1"}),
        json!({"event": "chunk_report", "chunk": "a", "session_id": "s1"}),
        json!({"event": "chunk_report", "chunk": "b", "session_id": null}),
    ];
    let events: Vec<Event> = events.into_iter().map(typed).collect();
    assert_eq!(changed_by_person(&events, "s1"), vec!["b"]);
}

#[test]
fn chunks_moved_or_removed_by_the_agent_are_named_by_id() {
    let before = plan(&[("a", "in_progress"), ("b", "pending"), ("c", "completed")]);
    // The same chunks in another order, one status changed: compared by id, not by place.
    let found = plan(&[("c", "completed"), ("b", "completed"), ("a", "in_progress")]);
    let (settled, undone) = settle_plan(&before, &found, "a", "s1", &[]);
    assert_eq!(settled.to_value(), before.to_value());
    assert_eq!(undone, vec!["b completed → pending"]);
    // A chunk removed, another renamed in its place.
    let found = plan(&[("a", "in_progress"), ("z", "pending")]);
    let (_, undone) = settle_plan(&before, &found, "a", "s1", &[]);
    assert_eq!(
        undone,
        vec![
            "b (removed) → pending",
            "c (removed) → completed",
            "z (added) removed"
        ]
    );
}
