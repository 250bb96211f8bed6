//! `runner runs` and `runner show`: the runs every spec's records (`store::runs`) tell of, each
//! with its state (`policy::runs::state`: active while its lock is held, stale once nobody runs
//! it, ended), and one run in detail (its checkpoint, its last journal lines). Reads only: no
//! lock is taken for more than a probe's instant, nothing is written. A record that cannot be
//! read is left aside with a warning.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::error::RunnerError;
use crate::policy::runs::{self as rules, Liveness, RunState};
use crate::store::checkpoint::{self, Trigger};
use crate::store::lock::{self, LockState};
use crate::store::runs::{self, RunRecord};
use crate::store::workspace::{SpecPaths, Workspace};

/// How many of a run's journal lines `runner show` gives.
pub const SHOWN_EVENTS: usize = 20;

/// One run as `runner runs` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub record: RunRecord,
    pub state: RunState,
    /// The shortest prefix of the run id that tells it from every other run (8 or more).
    pub shown: String,
    /// Seconds since its last heartbeat: below zero when the heartbeat is dated in the future
    /// (clock skew, `policy::age`).
    pub heartbeat_age_secs: i64,
}

/// The spec's checkpoint as `runner show` tells of it.
#[derive(Debug, Clone, Serialize)]
pub struct CheckpointNote {
    pub id: String,
    pub time: DateTime<Utc>,
    pub trigger: Trigger,
    /// The run that wrote it (this one, or a later run of the spec).
    pub run_id: String,
    pub by_this_run: bool,
}

/// One run in detail: what `runner show` prints.
#[derive(Debug, Clone, Serialize)]
pub struct ShowReport {
    #[serde(flatten)]
    pub info: RunInfo,
    /// `auto-claude/<spec>`.
    pub branch: String,
    /// The spec's checkpoint when this run or a later one wrote it.
    pub checkpoint: Option<CheckpointNote>,
    /// The run's last journal lines, newest first (at most [`SHOWN_EVENTS`]).
    pub events: Vec<Value>,
    /// Records that could not be read on the way (each names its file).
    pub warnings: Vec<String>,
}

/// One run as `runner runs --json` lists it and the MCP server's `list_runs` returns it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RunView {
    pub run_id: String,
    /// The shortest prefix that names the run (8 or more characters).
    pub shown: String,
    pub spec: String,
    /// run, recover, merge, discard or undo.
    pub kind: String,
    /// active, stale or ended.
    pub state: String,
    pub started: DateTime<Utc>,
    /// When it ended; null while it has not.
    pub ended: Option<DateTime<Utc>>,
    /// How it ended (complete, failed, interrupted, merged …); null while it has not.
    pub outcome: Option<String>,
    pub heartbeat: DateTime<Utc>,
    /// Seconds since its last heartbeat; below zero when the heartbeat is dated in the future
    /// (clock skew: never a sign of a fresh run).
    pub heartbeat_age_secs: i64,
    /// The chunk it was working on.
    pub chunk: Option<String>,
    /// The agent preset or command.
    pub agent: Option<String>,
    /// The run it resumed.
    pub resumed_from: Option<String>,
    pub host: String,
    pub pid: u32,
    /// The worktree slot it ran in (null: the default one).
    pub slot: Option<String>,
}

impl RunView {
    pub fn of(r: &RunInfo) -> RunView {
        let rec = &r.record;
        RunView {
            run_id: rec.run_id.clone(),
            shown: r.shown.clone(),
            spec: rec.spec.clone(),
            kind: kind_word(rec).to_string(),
            state: state_word(r.state).to_string(),
            started: rec.started,
            ended: rec.ended,
            outcome: rec.outcome.clone(),
            heartbeat: rec.heartbeat,
            heartbeat_age_secs: r.heartbeat_age_secs,
            chunk: rec.chunk.clone(),
            agent: rec.agent.clone(),
            resumed_from: rec.resumed_from.clone(),
            host: rec.host.clone(),
            pid: rec.pid,
            slot: rec.slot.clone(),
        }
    }
}

/// The runs as `runner runs --json` prints them (after `schema`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunsView {
    pub runs: Vec<RunView>,
}

/// One run in detail as `runner show --json` prints it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunDetailsView {
    #[serde(flatten)]
    pub run: RunView,
    /// `auto-claude/<spec>`.
    pub branch: String,
    /// The spec's checkpoint when this run or a later one wrote it.
    pub checkpoint: Option<CheckpointView>,
    /// The run's last journal lines, newest first.
    pub events: Vec<Value>,
}

/// The spec's checkpoint as `runner show --json` tells of it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CheckpointView {
    pub id: String,
    pub time: DateTime<Utc>,
    /// What made runner write it.
    pub trigger: String,
    /// The run that wrote it (this one, or a later run of the spec).
    pub run_id: String,
    pub by_this_run: bool,
}

impl RunDetailsView {
    pub fn of(d: &ShowReport) -> RunDetailsView {
        RunDetailsView {
            run: RunView::of(&d.info),
            branch: d.branch.clone(),
            checkpoint: d.checkpoint.as_ref().map(|c| CheckpointView {
                id: c.id.clone(),
                time: c.time,
                trigger: serde_json::to_value(c.trigger)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                run_id: c.run_id.clone(),
                by_this_run: c.by_this_run,
            }),
            events: d.events.clone(),
        }
    }
}

/// A run's state in a word.
pub fn state_word(s: RunState) -> &'static str {
    match s {
        RunState::Active => "active",
        RunState::Stale => "stale",
        RunState::Ended => "ended",
    }
}

#[derive(Debug, Clone, Default)]
pub struct RunsOptions {
    /// Only this spec's runs (named as `status --spec` names one: never asked).
    pub spec: Option<String>,
    /// Only the stale ones (killed: nobody runs them, their end never written).
    pub stale: bool,
    /// The records of recovers, merges, discards and undos too (by default only the runs of
    /// an agent: `runner run`, `resume`, `start_run`).
    pub all: bool,
    /// At most this many, the newest.
    pub limit: Option<usize>,
}

/// `runner runs`: every run the records tell of, newest first.
pub fn runs(ctx: &super::Ctx, opts: RunsOptions) -> anyhow::Result<Vec<RunInfo>> {
    let stale_after = ctx.ws.config()?.resume.stale_after();
    let spec = match &opts.spec {
        Some(q) => Some(ctx.spec_named(q)?),
        None => None,
    };
    let mut found = list(&ctx.ws, spec.as_deref(), ctx.now(), stale_after)?;
    if opts.stale {
        found.retain(|r| r.state == RunState::Stale);
    }
    if !opts.all {
        found.retain(|r| r.record.kind == runs::RunKind::Run);
    }
    if let Some(n) = opts.limit {
        found.truncate(n);
    }
    Ok(found)
}

#[derive(Debug, Clone, Default)]
pub struct ShowOptions {
    /// A whole run id, or a prefix of 4 characters or more; none: the latest run of an agent
    /// (the first `runner runs` lists).
    pub run: Option<String>,
}

/// `runner show [RUN]`: one run in detail.
pub fn show(ctx: &super::Ctx, opts: ShowOptions) -> anyhow::Result<ShowReport> {
    let run = match opts.run {
        Some(run) => run,
        None => runs(ctx, RunsOptions::default())?
            .into_iter()
            .next()
            .map(|r| r.record.run_id)
            .ok_or_else(|| {
                RunnerError::bad_input("No runs yet")
                    .with_hint("`runner runs --all` lists recovers, merges, discards and undos too")
            })?,
    };
    details(&ctx.ws, &run, ctx.now())
}

/// The runs of every spec (or of the spec `spec` names, resolved as `--spec` is everywhere),
/// newest first. `shown` tells each apart from every run of every spec.
pub fn list(
    ws: &Workspace,
    spec: Option<&str>,
    now: DateTime<Utc>,
    stale_after: Duration,
) -> anyhow::Result<Vec<RunInfo>> {
    let (mut all, warnings) = gather(ws, now, stale_after)?;
    for w in &warnings {
        crate::output::warn(w);
    }
    if let Some(query) = spec {
        let name = crate::store::spec::choose_or_explain(ws, &ws.root, Some(query), &|n| {
            format!("runner runs --spec {}", crate::sh(n))
        })?;
        all.retain(|r| r.record.spec == name);
    }
    Ok(all)
}

/// The run `run` names (a whole run id, or a prefix of 4 characters or more): unknown or
/// ambiguous is bad input (exit 2), an ambiguous one listing the candidates.
pub fn details(ws: &Workspace, run: &str, now: DateTime<Utc>) -> anyhow::Result<ShowReport> {
    let stale_after = ws
        .config()
        .map(|c| c.resume.stale_after())
        .unwrap_or(rules::STALE_AFTER_DEFAULT);
    let (all, warnings) = gather(ws, now, stale_after)?;
    let ids: Vec<&str> = all.iter().map(|r| r.record.run_id.as_str()).collect();
    let mut matched = rules::matching(&ids, run);
    matched.dedup();
    let unknown = || -> anyhow::Error {
        RunnerError::bad_input(format!("No run found matching '{run}'"))
            .with_hint("`runner runs` lists the runs (a prefix of 4 characters or more names one)")
            .into()
    };
    let info = match matched.as_slice() {
        [] => return Err(unknown()),
        [one] => all
            .iter()
            .find(|r| r.record.run_id == *one)
            .cloned()
            .ok_or_else(unknown)?,
        several => {
            let lines: Vec<String> = all
                .iter()
                .filter(|r| several.contains(&r.record.run_id.as_str()))
                .map(|r| {
                    format!(
                        "  {} ({}, {}, started {})",
                        r.record.run_id,
                        r.record.spec,
                        kind_word(&r.record),
                        r.record.started.format("%Y-%m-%d %H:%M:%S UTC")
                    )
                })
                .collect();
            return Err(RunnerError::bad_input(format!(
                "'{run}' matches several runs:\n{}",
                lines.join("\n")
            ))
            .with_hint("give more characters of the run id")
            .into());
        }
    };
    let paths = ws.spec(&info.record.spec)?;
    let checkpoint = checkpoint_note(&paths, &info.record);
    let since = info
        .record
        .started
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let events = crate::store::journal::last_lines_of_run(
        &paths.dir,
        &info.record.run_id,
        &since,
        SHOWN_EVENTS,
    );
    Ok(ShowReport {
        branch: crate::git::branch_for(&info.record.spec),
        checkpoint,
        events,
        warnings,
        info,
    })
}

/// The record's kind as `runner runs` shows it.
pub fn kind_word(r: &RunRecord) -> &'static str {
    match r.kind {
        runs::RunKind::Run => "run",
        runs::RunKind::Recover => "recover",
        runs::RunKind::Merge => "merge",
        runs::RunKind::Discard => "discard",
        runs::RunKind::Undo => "undo",
    }
}

/// The spec's checkpoint, if this run or a later one wrote it.
fn checkpoint_note(paths: &SpecPaths, record: &RunRecord) -> Option<CheckpointNote> {
    let checkpoint::Found::Checkpoint(c) = checkpoint::read(&paths.dir) else {
        return None;
    };
    let by_this_run = c.run_id == record.run_id;
    if !by_this_run && c.time < record.started {
        return None;
    }
    Some(CheckpointNote {
        id: c.id,
        time: c.time,
        trigger: c.trigger,
        run_id: c.run_id,
        by_this_run,
    })
}

/// Every readable record of every spec with its state, newest first, and a warning for each
/// record left aside.
fn gather(
    ws: &Workspace,
    now: DateTime<Utc>,
    stale_after: Duration,
) -> anyhow::Result<(Vec<RunInfo>, Vec<String>)> {
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    for name in crate::store::spec::list(&ws.specs_dir) {
        let Ok(paths) = ws.spec(&name) else {
            continue;
        };
        let ids = runs::list(&paths.dir);
        if ids.is_empty() {
            continue;
        }
        // One probe of the spec's lock for all its runs.
        let lock = match lock::probe(&paths.run_lock) {
            Ok(LockState::Held(holder)) => Some(holder),
            _ => None,
        };
        for id in ids {
            match runs::read_of(&paths.dir, &name, &id) {
                runs::Found::Record(r) => {
                    found.push(with_state(*r, lock.as_ref(), now, stale_after));
                }
                runs::Found::Unusable(why) => warnings.push(why),
                runs::Found::Nothing => {}
            }
        }
    }
    found.sort_by(|a, b| {
        (b.record.started, &b.record.run_id).cmp(&(a.record.started, &a.record.run_id))
    });
    shorten(&mut found);
    Ok((found, warnings))
}

/// The state of the run `r`, `lock` being the spec's run lock if it is held (and its holder
/// record, if it could be read).
fn with_state(
    r: RunRecord,
    lock: Option<&Option<lock::Holder>>,
    now: DateTime<Utc>,
    stale_after: Duration,
) -> RunInfo {
    RunInfo {
        state: state_of(&r, lock, now, stale_after),
        heartbeat_age_secs: crate::policy::age::age_secs(r.heartbeat, now),
        shown: String::new(),
        record: r,
    }
}

/// The state of the run `r`, `lock` being its spec's run lock if it is held (and its holder
/// record, if it could be read): the facts `policy::runs::state` decides on, gathered one way
/// for `runner runs`, `show` and `resume`.
pub fn state_of(
    r: &RunRecord,
    lock: Option<&Option<lock::Holder>>,
    now: DateTime<Utc>,
    stale_after: Duration,
) -> RunState {
    let holder = lock.and_then(Option::as_ref);
    let lock_held_by_it = match lock {
        Some(Some(h)) => h.run_id == r.run_id,
        // A held lock whose holder cannot be read: the careful reading, for a run that has not
        // ended, is that it is this one.
        Some(None) => r.ended.is_none(),
        None => false,
    };
    // Its pid now holds the lock for another run: the process is another runner's.
    let pid_reused =
        holder.is_some_and(|h| h.run_id != r.run_id && h.pid == r.pid && h.host == r.host);
    let facts = Liveness {
        lock_held_by_it,
        ended: r.ended.is_some(),
        heartbeat: r.heartbeat,
        process_gone: !lock_held_by_it
            && (pid_reused || crate::store::guard::process_gone(&r.host, r.pid)),
    };
    rules::state(facts, now, stale_after)
}

/// Set each run's `shown` prefix (one id in several specs, a recover of many, counts once).
fn shorten(runs: &mut [RunInfo]) {
    let mut ids: Vec<&str> = runs.iter().map(|r| r.record.run_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let lengths: HashMap<String, usize> = ids
        .iter()
        .zip(rules::shortest_unique_lengths(&ids))
        .map(|(id, n)| (id.to_string(), n))
        .collect();
    for r in runs.iter_mut() {
        let n = lengths[&r.record.run_id];
        r.shown = r.record.run_id[..n].to_string();
    }
}
