//! The plan: restore a missing one, settle an agent's edits against the plan as the session started.

use super::*;

/// How the plan file looks when runner needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanOnDisk {
    Missing,
    /// Not JSON at all (torn, garbled).
    Unparsable,
    /// JSON that breaks a rule.
    Invalid,
}

/// Should recovery restore the plan from runner's copy? A plan that is not even JSON always
/// is (no one writes half a file on purpose). A plan that is missing or breaks a rule is
/// restored only if it happened while runner was running — the journal's last run never ended
/// (a run that ends cleanly restores such a plan itself when its session ends); with the last
/// run ended cleanly, the user removed it (plan again) or wrote it (theirs to fix).
pub fn restore_missing_plan(
    on_disk: PlanOnDisk,
    last_run_unfinished: bool,
    have_copy: bool,
) -> bool {
    have_copy
        && match on_disk {
            PlanOnDisk::Unparsable => true,
            PlanOnDisk::Missing | PlanOnDisk::Invalid => last_run_unfinished,
        }
}

/// Did the journal's last run start without ending?
pub fn last_run_unfinished(events: &[Event]) -> bool {
    events
        .iter()
        .rev()
        .find(|e| matches!(e, Event::RunStart(_) | Event::RunEnd(_)))
        .is_some_and(|e| matches!(e, Event::RunStart(_)))
}

/// The plan after a session, put right: `before` is the plan as runner wrote it when the
/// session's chunk was taken, `found` the plan now. Only these changes stand:
/// - on the session's own chunk (`own`, attempt by `session`): its report on its attempt
///   (`reported`, `report_notes`, `notes`, through `runner chunk`), and its status set to
///   `completed` (an agent that marks its own chunk done in the file has reported done);
/// - on chunks a person changed with `runner chunk …` during the session (`by_person`): all.
///
/// Everything else (other chunks' statuses, descriptions and attempt records, chunks added or
/// removed, plan fields) is what `before` says. Returns the plan and one line per status change
/// undone (empty when nothing but allowed changes happened; compare the plans for the rest).
pub fn settle_plan(
    before: &Plan,
    found: &Plan,
    own: &str,
    session: &str,
    by_person: &[String],
) -> (Plan, Vec<String>) {
    let mut settled = before.clone();
    if let (Some(pos), Some(fpos)) = (settled.find_chunk(own), found.find_chunk(own)) {
        let now = found.chunk(fpos);
        let report = now
            .last_attempt()
            .filter(|a| a.session_id.as_deref() == Some(session));
        let chunk = settled.chunk_mut(pos);
        if let Some(report) = report {
            chunk.update_last_attempt(|a| {
                a.reported = report.reported.clone();
                a.report_notes = report.report_notes.clone();
            });
            if let Some(notes) = now.str_field("notes") {
                chunk.set_str("notes", notes);
            }
        }
        // Its mark is only a report: the session's end judges it. (No journal line: the
        // judgement that follows writes the status change.)
        if now.status == Status::Completed {
            let _ = transition::apply(chunk, &transition::ChunkEvent::ReportInFile);
        }
    }
    for id in by_person {
        if let (Some(pos), Some(fpos)) = (settled.find_chunk(id), found.find_chunk(id)) {
            *settled.chunk_mut(pos) = found.chunk(fpos).clone();
        }
    }
    let mut undone = Vec::new();
    // The usual case: the same chunks in the same places (ids are unique in a plan that
    // parsed), compared place by place.
    let same_places = settled.phases.len() == found.phases.len()
        && settled.phases.iter().zip(&found.phases).all(|(a, b)| {
            a.chunks.len() == b.chunks.len()
                && a.chunks
                    .iter()
                    .zip(b.chunks.iter())
                    .all(|(x, y)| x.id == y.id)
        });
    if same_places {
        for (chunk, was) in settled.chunks().zip(found.chunks()) {
            if was.status != chunk.status {
                undone.push(format!(
                    "{} {} → {}",
                    chunk.id,
                    was.status.as_str(),
                    chunk.status.as_str()
                ));
            }
        }
        return (settled, undone);
    }
    // Looked up by id once each way (a plan has thousands of chunks).
    let found_status = statuses_by_id(found);
    for chunk in settled.chunks() {
        let was = found_status.get(chunk.id.as_str()).copied();
        match was {
            Some(s) if s != chunk.status => undone.push(format!(
                "{} {} → {}",
                chunk.id,
                s.as_str(),
                chunk.status.as_str()
            )),
            None => undone.push(format!(
                "{} (removed) → {}",
                chunk.id,
                chunk.status.as_str()
            )),
            _ => {}
        }
    }
    let settled_status = statuses_by_id(&settled);
    for chunk in found.chunks() {
        if !settled_status.contains_key(chunk.id.as_str()) {
            undone.push(format!("{} (added) removed", chunk.id));
        }
    }
    (settled, undone)
}

/// Each chunk's status by id (the first chunk of an id, as `Plan::find_chunk` finds it).
fn statuses_by_id(plan: &Plan) -> std::collections::HashMap<&str, Status> {
    let mut by_id = std::collections::HashMap::new();
    for chunk in plan.chunks() {
        by_id.entry(chunk.id.as_str()).or_insert(chunk.status);
    }
    by_id
}

/// After a session: put the plan right if the agent deleted, broke, replaced or edited it
/// (see `settle_plan`). A plan that is gone or broken is rebuilt from runner's last-good copy
/// (which holds the reports made through `runner chunk`), else from the plan as it was before
/// the session; a broken file is kept as `implementation_plan.json.corrupt-<time>`. Returns
/// one line per thing put right, for the person watching.
pub fn settle_after_session(
    paths: &SpecPaths,
    journal: &Journal,
    before: &Plan,
    own: &str,
    session: &str,
    by_person: &[String],
) -> anyhow::Result<Vec<String>> {
    let last_good = || -> Option<Plan> {
        let path = paths.plan.last_good_path();
        let bytes = crate::store::safe::read(path).ok()?;
        crate::plan::parse_plan(path, &bytes).ok()
    };
    let plan_path = paths.plan.path().to_path_buf();
    let (lines, record) = paths.plan.settle(|now| {
        // A plan that is gone or broken: runner's last-good copy, else the plan as it was
        // before the session.
        let copy = || match last_good() {
            Some(plan) => (plan, "last_good"),
            None => (before.clone(), "before_session"),
        };
        let mut source = None;
        let (found, gone) = match now {
            Ok(Some(plan)) => (plan, None),
            Ok(None) => {
                let (plan, from) = copy();
                source = Some(from);
                (plan, Some("deleted"))
            }
            Err(e) => {
                e.downcast::<crate::plan::PlanError>()?;
                let aside = crate::store::unused_path(&plan_path.with_file_name(format!(
                    "{}.corrupt-{}",
                    crate::plan::PLAN_FILE,
                    crate::clock::stamp()
                )));
                // Never through a link, never over an existing file (see `store::safe`).
                crate::store::safe::copy_new(&plan_path, &aside)
                    .with_context(|| format!("keeping the broken plan as {}", aside.display()))?;
                let (plan, from) = copy();
                source = Some(from);
                (plan, Some("broken"))
            }
        };
        let (settled, undone) = settle_plan(before, &found, own, session, by_person);
        let edited = !settled.same_json(&found);
        let mut lines = Vec::new();
        if let Some(how) = gone {
            lines.push(format!(
                "The plan was {how} during the session of {own}; restored from runner's last copy."
            ));
        }
        if edited {
            lines.push(format!(
                "The agent edited the plan directly; undone: {}",
                if undone.is_empty() {
                    "changes to chunks other than its own (or their records)".to_string()
                } else {
                    undone.join(", ")
                }
            ));
        }
        let write = (gone.is_some() || edited).then_some(settled);
        Ok((write, (lines, (gone, source, edited, undone))))
    })?;
    let (gone, source, edited, undone) = record;
    if let Some(how) = gone {
        journal.write(&Event::PlanRestored(ev::PlanRestored {
            source: source.map(str::to_string),
            why: Some(format!("the plan was {how} during session {session}")),
            ..Default::default()
        }))?;
    }
    if edited {
        journal.write(&Event::PlanEditUndone(ev::PlanEditUndone {
            chunk: Some(own.to_string()),
            session_id: Some(session.to_string()),
            undone,
            why: None,
        }))?;
    }
    Ok(lines)
}

/// Chunks a person changed with `runner chunk …` (no session) since `session` started, as the
/// journal says. Only where the run cannot hear a person's changes itself (no `/proc`, see
/// `ops::person`): an agent can write this journal line too.
pub fn changed_by_person(events: &[Event], session: &str) -> Vec<String> {
    let start = events
        .iter()
        .rposition(|e| matches!(e, Event::SessionStart(s) if s.session_id == session))
        .unwrap_or(0);
    events[start..]
        .iter()
        .filter_map(|e| match e {
            Event::ChunkReport(r) if r.session_id.is_none() => Some(r.chunk.clone()),
            _ => None,
        })
        .collect()
}
