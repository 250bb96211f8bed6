//! A report on a chunk (`runner chunk done|fail`), from its agent or a person, applied to the plan.

use crate::error::RunnerError;
use crate::plan::{Plan, Status};
use crate::policy::transition::{ChunkEvent, apply};
use crate::store::Journal;
use crate::store::SpecPaths;
use crate::store::event::{self as ev, Event};

/// The error for a chunk id the plan does not have, listing the ids it has.
pub fn unknown_chunk(plan: &Plan, id: &str) -> anyhow::Error {
    let ids: Vec<&str> = plan.chunks().map(|c| c.id.as_str()).collect();
    RunnerError::bad_input(format!(
        "no chunk {id:?} in the plan. Chunks: {}",
        ids.join(", ")
    ))
    .into()
}

/// The session calling us, if any: a report from a session that is not the chunk's current
/// attempt (a stray agent of an earlier attempt) is refused.
fn check_session(
    chunk_id: &str,
    caller: Option<&str>,
    current: Option<&str>,
) -> anyhow::Result<()> {
    match (caller, current) {
        (Some(caller), Some(current)) if caller != current => Err(RunnerError::bad_input(format!(
            "session {caller} is not the current attempt at chunk {chunk_id} (that is {current}); its report is ignored"
        ))
        .into()),
        _ => Ok(()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Done,
    Fail,
}

/// `mark` for a caller already known: a session's id, or `None` for a person.
pub fn mark_as(
    paths: &SpecPaths,
    id: &str,
    mark: Mark,
    text: Option<&str>,
    caller: Option<String>,
) -> anyhow::Result<String> {
    let (outcome, change) = paths.plan.update(|plan| {
        let pos = plan.find_chunk(id).ok_or_else(|| unknown_chunk(plan, id))?;
        let chunk = plan.chunk_mut(pos);
        let caller = caller.clone();
        if chunk.status != Status::InProgress
            && let Some(caller) = caller
        {
            // An agent session reports only on the chunk it is working on: a report on another
            // chunk (or from a stray earlier attempt) would complete it unverified.
            return Err(RunnerError::bad_input(format!(
                "session {caller} may only report on the chunk it is working on; chunk {id} is {} (not in progress)",
                chunk.status
            ))
            .into());
        }
        if chunk.status == Status::InProgress {
            let current = chunk.last_attempt().and_then(|a| a.session_id);
            check_session(id, caller.as_deref(), current.as_deref())?;
            chunk.update_last_attempt(|a| {
                a.reported = Some(match mark {
                    Mark::Done => "done".into(),
                    Mark::Fail => "fail".into(),
                });
                a.report_notes = text.map(str::to_string);
            });
            if let (Mark::Done, Some(notes)) = (mark, text) {
                chunk.set_str("notes", notes);
            }
            let said = match mark {
                Mark::Done => format!(
                    "chunk {id} reported done; runner verifies and commits it when the session ends"
                ),
                Mark::Fail => format!(
                    "chunk {id} reported failed; runner records the attempt when the session ends"
                ),
            };
            return Ok((said, None));
        }
        // A person's override: a status change like any other, journaled so that a plan
        // rebuilt from the journal has it.
        let now = crate::clock::now();
        match mark {
            Mark::Done => {
                let change = apply(chunk, &ChunkEvent::MarkDone)?;
                chunk.set_str("completed_at", &now);
                if let Some(notes) = text {
                    chunk.set_str("notes", notes);
                }
                Ok((format!("chunk {id} marked completed"), Some(change)))
            }
            Mark::Fail => {
                let change = apply(chunk, &ChunkEvent::MarkFailed)?;
                chunk.set_str("failure_reason", text.unwrap_or("marked failed by hand"));
                Ok((format!("chunk {id} marked failed"), Some(change)))
            }
        }
    })?;
    let journal = Journal::new(
        &paths.dir,
        &std::env::var("RUNNER_RUN_ID").unwrap_or_else(|_| crate::store::ids::run_id()),
    );
    // Advisory: the plan already holds the change, so a journal that cannot be written does
    // not undo it; but a plan rebuilt from that journal would miss it, so the person is told.
    let mut written = match change {
        Some(change) => journal.status(id, change),
        None => Ok(()),
    };
    let report = journal.write(&Event::ChunkReport(ev::ChunkReport {
        chunk: id.to_string(),
        report: match mark {
            Mark::Done => "done",
            Mark::Fail => "fail",
        }
        .into(),
        text: text.map(str::to_string),
        session_id: caller,
    }));
    written = written.and(report);
    if let Err(e) = written {
        crate::output::warn(&format!(
            "the journal {} was not written ({e:#}); the plan has the change, but a plan rebuilt from the journal would miss it",
            journal.path().display()
        ));
    }
    Ok(outcome)
}
