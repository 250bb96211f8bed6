//! `runner chunk done|fail|show`: how an agent (or a person) reports on a chunk. Callable from
//! inside the worktree; every change goes through the plan lock.

use std::path::Path;

use serde_json::{Value, json};

use crate::error::RunnerError;
use crate::plan::{Plan, Status, next_chunk_id};
use crate::store::Journal;
use crate::store::workspace::{SpecPaths, Workspace};

/// Which spec a `runner chunk` call is about: `--spec`, else `RUNNER_SPEC_DIR`, else the branch
/// of the worktree it is called from.
pub fn locate_spec(cwd: &Path, spec: Option<&str>) -> anyhow::Result<(Workspace, SpecPaths)> {
    let ws = Workspace::open(cwd)?;
    if let Some(q) = spec {
        let name = crate::store::spec::resolve(&ws.specs_dir, q)?;
        let paths = ws.spec(&name)?;
        return Ok((ws, paths));
    }
    if let Some(dir) = std::env::var_os("RUNNER_SPEC_DIR") {
        let dir = Path::new(&dir);
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| RunnerError::bad_input("RUNNER_SPEC_DIR has no folder name"))?;
        crate::store::spec::check_name(name)?;
        let paths = ws.spec(name)?;
        if !paths.dir.is_dir() {
            return Err(RunnerError::bad_input(format!(
                "RUNNER_SPEC_DIR names spec {name}, which is not in {}",
                ws.specs_dir.display()
            ))
            .into());
        }
        return Ok((ws, paths));
    }
    let from_branch = git2::Repository::discover(cwd)
        .ok()
        .and_then(|r| crate::git::head_branch(&r))
        .and_then(|b| crate::git::spec_of_branch(&b).map(str::to_string));
    if let Some(name) = from_branch {
        crate::store::spec::check_name(&name)?;
        let paths = ws.spec(&name)?;
        return Ok((ws, paths));
    }
    Err(RunnerError::bad_input(
        "cannot tell which spec this is about: pass --spec, set RUNNER_SPEC_DIR, or call it from the spec's worktree",
    )
    .into())
}

/// The agent session making this call: `RUNNER_SESSION_ID`; else, if this process descends
/// from the live run of the spec (an ancestor holds its run lock open — the kernel's process
/// tree, which `setsid` does not leave, as the run is a subreaper), that run's session: the one
/// of the chunk in progress, or a name no attempt has; else (where there is no `/proc`) a live
/// session of the spec whose process group this process is in. An agent that unsets the
/// variable to pass for a person (whose `runner chunk` may complete any chunk) is caught so.
fn caller_session(paths: &SpecPaths) -> Option<String> {
    if let Ok(id) = std::env::var("RUNNER_SESSION_ID") {
        return Some(id);
    }
    if let Some(run_pid) = crate::agent::ancestry::ancestor_holding(&paths.run_lock) {
        let current = paths.plan.load().ok().flatten().and_then(|plan| {
            plan.chunks()
                .find(|c| c.status == Status::InProgress)
                .and_then(|c| c.last_attempt()?.session_id)
        });
        return Some(current.unwrap_or_else(|| format!("inside-run-{run_pid}")));
    }
    // SAFETY: getpgrp has no preconditions and cannot fail.
    let own_group = unsafe { libc::getpgrp() };
    let events = crate::store::read_events_containing(&paths.dir, "\"process_");
    crate::engine::recovery::procs::leftovers(&events)
        .into_iter()
        .find(|open| open.pgid == own_group)
        .map(|open| open.session_id)
}

fn unknown_chunk(plan: &Plan, id: &str) -> anyhow::Error {
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

/// Record the agent's report. On a chunk in progress it is recorded on the current attempt and
/// the run decides (verification, commit). On any other chunk it is a person's override and
/// sets the status directly.
///
/// A person's call (no session) on a spec a live run holds goes through that run
/// (`ops::person`), which applies it and remembers it as a person's: a direct edit would be
/// undone when the session's plan is settled.
pub fn mark(paths: &SpecPaths, id: &str, mark: Mark, text: Option<&str>) -> anyhow::Result<String> {
    let caller = caller_session(paths);
    if caller.is_none()
        && let Some(message) = crate::engine::run::person::send(paths, id, mark, text)?
    {
        return Ok(message);
    }
    mark_as(paths, id, mark, text, caller)
}

/// `mark` for a caller already known: a session's id, or `None` for a person.
pub fn mark_as(
    paths: &SpecPaths,
    id: &str,
    mark: Mark,
    text: Option<&str>,
    caller: Option<String>,
) -> anyhow::Result<String> {
    let outcome = paths.plan.update(|plan| {
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
            return Ok(match mark {
                Mark::Done => format!(
                    "chunk {id} reported done; runner verifies and commits it when the session ends"
                ),
                Mark::Fail => format!(
                    "chunk {id} reported failed; runner records the attempt when the session ends"
                ),
            });
        }
        let now = crate::clock::now();
        match mark {
            Mark::Done => {
                chunk.set_status(Status::Completed);
                chunk.set_str("completed_at", &now);
                if let Some(notes) = text {
                    chunk.set_str("notes", notes);
                }
                Ok(format!("chunk {id} marked completed"))
            }
            Mark::Fail => {
                chunk.set_status(Status::Failed);
                chunk.set_str("failure_reason", text.unwrap_or("marked failed by hand"));
                Ok(format!("chunk {id} marked failed"))
            }
        }
    })?;
    let journal = Journal::new(
        &paths.dir,
        &std::env::var("RUNNER_RUN_ID").unwrap_or_else(|_| crate::store::ids::run_id()),
    );
    let _ = journal.record(
        "chunk_report",
        Some(id),
        json!({"report": match mark { Mark::Done => "done", Mark::Fail => "fail" }, "text": text,
               "session_id": caller}),
    );
    Ok(outcome)
}

/// One chunk (by id, else `RUNNER_CHUNK_ID`, else the one in progress or next) with the plan's
/// progress, as JSON.
pub fn show(paths: &SpecPaths, id: Option<&str>) -> anyhow::Result<Value> {
    let plan = paths
        .plan
        .load()?
        .ok_or_else(|| RunnerError::bad_input(format!("spec {} has no plan yet", paths.name)))?;
    let env_id = std::env::var("RUNNER_CHUNK_ID").ok();
    let wanted = id
        .map(str::to_string)
        .or(env_id)
        .or_else(|| {
            plan.chunks()
                .find(|c| c.status == Status::InProgress)
                .map(|c| c.id.clone())
        })
        .or_else(|| next_chunk_id(&plan).map(str::to_string));
    let chunk = match wanted {
        Some(id) => {
            let pos = plan
                .find_chunk(&id)
                .ok_or_else(|| unknown_chunk(&plan, &id))?;
            let phase = &plan.phases[pos.phase];
            json!({
                "phase": phase.label(pos.phase),
                "phase_name": phase.name(),
                "chunk": Value::Object(plan.chunk(pos).raw.clone()),
            })
        }
        None => Value::Null,
    };
    Ok(json!({
        "spec": paths.name,
        "plan": paths.plan.path(),
        "progress": {"completed": plan.count(Status::Completed), "total": plan.total()},
        "current": chunk,
    }))
}
