//! `runner chunk done|fail|show`: how an agent (or a person) reports on a chunk. Callable from
//! inside the worktree; every change goes through the plan lock.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::engine::mark::{Mark, mark_as, unknown_chunk};
use crate::error::RunnerError;
use crate::plan::{Status, next_chunk_id};
use crate::store::workspace::SpecPaths;

/// Which spec a `runner chunk` call is about: `--spec`, else `RUNNER_SPEC_DIR`, else (as for
/// every command) the slot it is called from, else the only spec. `command(name)` is what to
/// type for each spec when that does not tell.
pub fn locate_spec(ctx: &super::Ctx, spec: Option<&str>) -> anyhow::Result<SpecPaths> {
    let ws = &ctx.ws;
    if let Some(q) = spec {
        let name = ctx.spec_named(q)?;
        return Ok(ws.spec(&name)?);
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
        return Ok(paths);
    }
    let name = ctx.spec_name(None, &super::Nobody)?;
    Ok(ws.spec(&name)?)
}

/// `runner chunk done|fail`.
#[derive(Debug, Clone)]
pub struct MarkOptions {
    pub spec: Option<String>,
    pub id: String,
    pub mark: Mark,
    /// The notes (done) or the reason (fail).
    pub text: Option<String>,
}

/// What `runner chunk done|fail --json` prints.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MarkReport {
    pub ok: bool,
    pub spec: String,
    pub chunk: String,
    pub message: String,
}

pub fn mark_chunk(ctx: &super::Ctx, opts: MarkOptions) -> anyhow::Result<MarkReport> {
    let paths = locate_spec(ctx, opts.spec.as_deref())?;
    let message = mark(&paths, &opts.id, opts.mark, opts.text.as_deref())?;
    Ok(MarkReport {
        ok: true,
        spec: paths.name,
        chunk: opts.id,
        message,
    })
}

/// `runner chunk show`.
#[derive(Debug, Clone, Default)]
pub struct ChunkShowOptions {
    pub spec: Option<String>,
    /// The chunk; none: this session's, else the one in progress, else the next.
    pub id: Option<String>,
}

pub fn show_chunk(ctx: &super::Ctx, opts: ChunkShowOptions) -> anyhow::Result<ChunkView> {
    let paths = locate_spec(ctx, opts.spec.as_deref())?;
    show(
        &paths,
        opts.id.as_deref(),
        ctx.ws.config()?.run.max_attempts,
    )
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
    let own_group = rustix::process::getpgrp().as_raw_nonzero().get();
    let events = crate::store::journal::read_typed_containing(&paths.dir, "\"process_");
    crate::engine::recovery::procs::leftovers(&events)
        .into_iter()
        .find(|open| open.pgid == own_group)
        .map(|open| open.session_id)
}

/// Record the agent's report. On a chunk in progress it is recorded on the current attempt and
/// the run decides (verification, commit). On any other chunk it is a person's override and
/// sets the status directly.
///
/// A person's call (no session) on a spec a live run holds goes through that run
/// (`engine::run::person`), which applies it and remembers it as a person's: a direct edit would be
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

/// What `runner chunk show` (and the MCP tool `chunk_show`) answers: one chunk with the plan's
/// progress.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ChunkView {
    pub spec: String,
    /// The plan file.
    pub plan: PathBuf,
    pub progress: ChunkProgress,
    /// The chunk asked for, else the one in progress, else the next; null when none is left.
    pub current: Option<ShownChunk>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ChunkProgress {
    pub completed: usize,
    pub total: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ShownChunk {
    /// The phase's id, else `phase N`.
    pub phase: String,
    pub phase_name: Option<String>,
    /// The chunk as the plan has it (id, description, status, files, verification, …).
    pub chunk: Map<String, Value>,
    /// Its attempts in words, as `runner plan` says them ("attempt 2 of 3"); null when its
    /// status says all.
    pub attempt: Option<String>,
    /// Its verification in brief, as `runner plan` shows it; null when it has none.
    pub verification: Option<crate::plan::verification::Brief>,
}

/// One chunk (by id, else `RUNNER_CHUNK_ID`, else the one in progress or next) with the plan's
/// progress, its attempts counted against `max_attempts`.
pub fn show(paths: &SpecPaths, id: Option<&str>, max_attempts: u32) -> anyhow::Result<ChunkView> {
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
    let current = match wanted {
        Some(id) => {
            let pos = plan
                .find_chunk(&id)
                .ok_or_else(|| unknown_chunk(&plan, &id))?;
            let phase = &plan.phases[pos.phase];
            let chunk = plan.chunk(pos);
            let line = super::plan::chunk_line(chunk, max_attempts);
            Some(ShownChunk {
                phase: phase.label(pos.phase),
                phase_name: phase.name().map(str::to_string),
                chunk: chunk.raw().clone(),
                attempt: line.attempt,
                verification: line.verification,
            })
        }
        None => None,
    };
    Ok(ChunkView {
        spec: paths.name.clone(),
        plan: paths.plan.path().to_path_buf(),
        progress: ChunkProgress {
            completed: plan.count(Status::Completed),
            total: plan.total(),
        },
        current,
    })
}
