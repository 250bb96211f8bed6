//! A session's plan edits settled without the run that would have settled them: by recovery
//! (its run died) and for a worker's publication (the session still runs). The copy of the
//! plan kept as the session started says which chunk and session; the session end's rules
//! (`integrity::settle_plan`) say what of the file stands.

use crate::engine::integrity;
use crate::plan::{Plan, Status};
use crate::store::SpecPaths;
use crate::store::event::Event;
use crate::store::read_typed;

/// The plan as runner wrote it when its latest coder session started, beside the plan: one
/// file written over in place for every session (a copy per session made the spec's folder
/// grow with the square of its chunks).
pub const PLAN_BEFORE_SESSION: &str = "implementation_plan.json.before-session";
/// Where earlier builds kept that copy: in the session's own folder (still read).
const PLAN_BEFORE_SESSION_IN_SESSION: &str = "plan-before-session.json";

/// The plan as the next run reads it once its recovery has settled a session whose run died
/// (`found` itself when there is nothing to settle). Writes nothing: `runner resume` judges
/// its summary against this plan, so that it says what the continued run will do (a person's
/// edit this recovery undoes is not the run's plan).
pub fn plan_after_recovery(paths: &SpecPaths, found: Plan) -> Plan {
    match settle_interrupted_session(paths, &found) {
        Some((settled, _)) => settled,
        None => found,
    }
}

/// The plan settled against the plan as it was when the session started, when a run died with
/// exactly one chunk in progress and a session of it started — or with none in progress, the
/// session's chunk having been marked `completed` in the file by its agent and never judged:
/// `None` when there is nothing to undo, or when that copy does not show the same attempt in
/// progress. Person changes are those the journal names (the run that could have heard them is
/// gone).
pub(super) fn settle_interrupted_session(
    paths: &SpecPaths,
    found: &Plan,
) -> Option<(Plan, Vec<String>)> {
    // The plan first: most specs have nothing in progress, and the journal is not read for
    // them (`recover --all` over many specs).
    let mut in_progress = found.chunks().filter(|c| c.status == Status::InProgress);
    let (before, own, session, events) = match (in_progress.next(), in_progress.next()) {
        (Some(own), None) => {
            let session = own.last_attempt()?.session_id?;
            let events = unfinished_run(paths)?;
            let before = copy_of_session(paths, &own.id, &session)?;
            (before, own.id.clone(), session, events)
        }
        (Some(_), Some(_)) => return None,
        // Nothing in progress: the latest session's chunk, if its agent marked it completed
        // in the file and the session's end never judged it (runner died first).
        (None, _) => {
            let (before, own, session) = latest_session(paths)?;
            let marked = found
                .find_chunk(&own)
                .is_some_and(|pos| found.chunk(pos).status == Status::Completed);
            if !marked || judged(found, &own, &session) {
                return None;
            }
            let events = unfinished_run(paths)?;
            // Recovery may run before or after its own run's start is journaled: the run
            // that died is the one since the last run's end.
            started_since(&events, &session, |e| matches!(e, Event::RunEnd(_))).then_some(())?;
            (before, own, session, events)
        }
    };
    // The run that could have heard a person's changes is gone: the journal names them.
    let by_person = integrity::changed_by_person(&events, &session);
    let (settled, undone) = settle(&before, found, &own, &session, &by_person);
    (!settled.same_json(found)).then_some((settled, undone))
}

/// What a worker publishes as the plan while a coder session may be editing the file.
#[derive(Debug)]
pub enum PlanToPublish {
    /// The file as it is: no session of the run under way is open, or its end judged it.
    File,
    /// This plan in place of the file: the file settled against the copy kept as the session
    /// started (or that copy, when the file does not parse or is gone).
    Settled(Plan),
    /// The plan of the last publication: a session of the run under way is open and its copy
    /// is gone or not its own, so nothing can say what of the file is runner's.
    Previous,
}

/// The plan a worker publishes in place of the file while a coder session may be editing it.
/// The heartbeat publishes mid-session, and what an agent wrote in the file (its chunk or
/// others set `completed`, garbage) is not runner's until the session's end settles it:
/// published as is, a worker that takes the spec over after a crash took those marks for work
/// done, or could not read the plan at all. So while the latest session's chunk has no judged
/// attempt of that session, and the run has not ended, the plan published is the file settled
/// against the copy kept as the session started by the session end's rules (its own report
/// stands). A person's `runner chunk …` during the session is published once the session's
/// end has heard it from the run's socket: the journal, which an agent can write, does not
/// vouch for it here.
pub fn plan_to_publish(paths: &SpecPaths) -> PlanToPublish {
    let Some(events) = unfinished_run(paths) else {
        return PlanToPublish::File;
    };
    // A copy this clone kept in an earlier run (a session of its own the remote never heard
    // of, the spec taken over since) is not the running session's: settled against it, the
    // chunks completed since would be published undone. The run under way is the last one
    // started (an earlier run of this clone that died is not, nor one of another host).
    let copy = latest_session(paths).filter(|(_, _, session)| {
        started_since(&events, session, |e| matches!(e, Event::RunStart(_)))
    });
    let Some((before, own, session)) = copy else {
        return match coder_session_open(&events) {
            true => PlanToPublish::Previous,
            false => PlanToPublish::File,
        };
    };
    let found = match paths.plan.load() {
        Ok(Some(found)) => found,
        _ => return PlanToPublish::Settled(before),
    };
    if judged(&found, &own, &session) {
        return PlanToPublish::File;
    }
    let (settled, _) = settle(&before, &found, &own, &session, &[]);
    match settled.same_json(&found) {
        true => PlanToPublish::File,
        false => PlanToPublish::Settled(settled),
    }
}

/// Whether a coder session of the run under way started and has not ended.
fn coder_session_open(events: &[Event]) -> bool {
    events
        .iter()
        .rev()
        .take_while(|e| !matches!(e, Event::RunStart(_)))
        .find_map(|e| match e {
            Event::SessionStart(s) if s.chunk.is_some() => Some(true),
            Event::SessionEnd(e) if e.start.chunk.is_some() => Some(false),
            _ => None,
        })
        .unwrap_or(false)
}

/// The journal's events when its last run never ended (a run died, or is running).
fn unfinished_run(paths: &SpecPaths) -> Option<Vec<Event>> {
    let events = read_typed(&paths.dir);
    integrity::last_run_unfinished(&events).then_some(events)
}

/// Whether session `session` started after the journal's last event that `since` matches
/// (the last run's end: in the run that never ended; its last start: in the run under way).
/// The copy beside the plan stays there after its session, and a clone may hold one from a
/// run long over, of a session whose attempt the plan taken from a remote never had.
fn started_since(events: &[Event], session: &str, since: fn(&Event) -> bool) -> bool {
    events
        .iter()
        .rev()
        .take_while(|e| !since(e))
        .any(|e| matches!(e, Event::SessionStart(s) if s.session_id == session))
}

/// The copy kept as session `session` of chunk `own` started (beside the plan, else where
/// earlier builds kept it): one that shows this very attempt in progress, or none.
fn copy_of_session(paths: &SpecPaths, own: &str, session: &str) -> Option<Plan> {
    let copy = |path: std::path::PathBuf| -> Option<Plan> {
        let bytes = crate::store::safe::read(&path).ok()?;
        let before = crate::plan::parse_plan(&path, &bytes).ok()?;
        let was = before.chunk(before.find_chunk(own)?);
        (was.status == Status::InProgress
            && was.last_attempt()?.session_id.as_deref() == Some(session))
        .then_some(before)
    };
    copy(paths.dir.join(PLAN_BEFORE_SESSION)).or_else(|| {
        copy(
            paths
                .sessions_dir
                .join(session)
                .join(PLAN_BEFORE_SESSION_IN_SESSION),
        )
    })
}

/// The copy beside the plan, with the one chunk it shows in progress and that attempt's
/// session.
fn latest_session(paths: &SpecPaths) -> Option<(Plan, String, String)> {
    let path = paths.dir.join(PLAN_BEFORE_SESSION);
    let bytes = crate::store::safe::read(&path).ok()?;
    let before = crate::plan::parse_plan(&path, &bytes).ok()?;
    let (own, session) = {
        let mut in_progress = before.chunks().filter(|c| c.status == Status::InProgress);
        match (in_progress.next(), in_progress.next()) {
            (Some(own), None) => (own.id.clone(), own.last_attempt()?.session_id?),
            _ => return None,
        }
    };
    Some((before, own, session))
}

/// Whether runner judged an attempt of `session` on chunk `own` (its outcome is recorded).
fn judged(plan: &Plan, own: &str, session: &str) -> bool {
    plan.find_chunk(own).is_some_and(|pos| {
        plan.chunk(pos)
            .attempts()
            .iter()
            .any(|a| a.session_id.as_deref() == Some(session) && a.outcome.is_some())
    })
}

/// `found` settled against `before` by the session end's rules, with no session end to judge
/// it: the agent's own mark of `completed` (`ReportInFile`) stays what it is, a report of done
/// on a chunk in progress, for recovery (or a worker taking the spec over) to weigh against
/// the work that is there.
fn settle(
    before: &Plan,
    found: &Plan,
    own: &str,
    session: &str,
    by_person: &[String],
) -> (Plan, Vec<String>) {
    let (mut settled, mut undone) = integrity::settle_plan(before, found, own, session, by_person);
    if let (Some(pos), Some(was)) = (settled.find_chunk(own), before.find_chunk(own))
        && settled.chunk(pos).status == Status::Completed
        // A person's `runner chunk done` on it stands, as at a session's end.
        && !by_person.iter().any(|p| p == own)
    {
        // The chunk as the session started (in progress), with the report the settling kept.
        let report = settled.chunk(pos).last_attempt();
        let chunk = settled.chunk_mut(pos);
        *chunk = before.chunk(was).clone();
        chunk.update_last_attempt(|a| {
            if let Some(r) = &report {
                a.reported = r.reported.clone();
                a.report_notes = r.report_notes.clone();
            }
            if a.session_id.as_deref() == Some(session) && a.reported.is_none() {
                a.reported = Some("done".into());
            }
        });
        undone.push(format!("{own} completed → in_progress (reported done)"));
    }
    (settled, undone)
}
