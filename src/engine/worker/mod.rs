//! `runner worker`: specs published on a git remote built by this clone (a host), up to N at
//! once, under a lease each (docs/fleet.md). Each spec is built exactly as `runner run` builds
//! it, by a job of `engine::jobs` (its own `runner run --spec S --auto-continue` in a slot of
//! its own); this module is the [`JobSource`](crate::engine::jobs::JobSource) that says which
//! spec to start next (`source`), takes it with a compare-and-swap push of its lease and makes
//! the clone's state of it the remote's (`local`), publishes every chunk fenced by the lease
//! and renews it as the heartbeat (`held`), stops a job whose lease is lost, and shares the
//! account's usage-limit pause with every other worker (`account`).

mod account;
mod held;
mod judge;
mod local;
mod reports;
mod source;

pub use reports::withdraw_unpublished;

use std::ffi::OsString;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;

use crate::engine::progress::ProgressSink;
use crate::store::workspace::Workspace;

/// How the worker runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The git remote (`--remote`, else `fleet.remote`).
    pub remote: String,
    /// At most this many specs at once (≥ 1).
    pub jobs: usize,
    /// Exit once nothing is left to take and nothing runs (else poll for new specs).
    pub exit_when_idle: bool,
    /// `fleet.lease_secs`.
    pub lease: Duration,
    /// The agent account a usage limit belongs to.
    pub account: String,
    /// runner's own executable, where the jobs start, and the flags each job's run gets
    /// (the agent, colour, verbosity).
    pub program: PathBuf,
    pub cwd: PathBuf,
    pub args: Vec<OsString>,
    /// Agent sessions shown live (a terminal).
    pub live: bool,
}

/// What the worker did (`runner worker --json`).
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct WorkerReport {
    /// This worker's name in its leases: `<host>:<pid>:<random>`.
    pub worker: String,
    pub remote: String,
    pub account: String,
    /// Each spec taken, in the order taken, with how its job ended.
    pub specs: Vec<TakenSpec>,
    /// Leases lost: the spec's job was stopped and its leftovers kept.
    pub leases_lost: Vec<LostLease>,
    /// Pushes the remote refused (takes lost to another worker included).
    pub pushes_refused: usize,
    /// Pushes and fetches that could not reach the remote.
    pub remote_errors: usize,
    /// Stopped by Ctrl-C/SIGTERM (after its jobs drained and were published).
    pub interrupted: bool,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct TakenSpec {
    pub spec: String,
    /// How its run ended: its outcome (`complete`, …), or the kind of its error
    /// (`needs_human`, `usage_limited`, `interrupted`, `lease_lost`, …).
    pub end: String,
    /// The run's exit code (0: it ended well).
    pub exit_code: i32,
    /// Its error, if its run ended with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Publications of its work (the branch or the folder changed), the last one included.
    pub publications: usize,
    /// The lease was deleted at the end (false: lost, or the remote could not be reached:
    /// it then expires).
    pub released: bool,
    /// What this clone had of the spec that differed from the remote's, kept when it was
    /// taken (local refs).
    pub kept_when_taken: Vec<String>,
    /// Chunks reported done where they ran whose work was never published: their reports
    /// were withdrawn when it was taken, and they are built again.
    pub reports_withdrawn: Vec<String>,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct LostLease {
    pub spec: String,
    /// Who holds it now (`<worker> on <host>`), if anyone does.
    pub holder: Option<String>,
    /// Why it was lost, in words.
    pub reason: String,
    /// The local refs that keep what its job had not published.
    pub kept: Vec<String>,
}

/// Work as a worker until idle (`exit_when_idle`) or interrupted; `progress` gets this
/// worker's own lines, `job_progress(spec)` a job's.
pub fn work(
    ws: &Workspace,
    opts: &WorkerOptions,
    progress: Rc<dyn ProgressSink>,
    job_progress: &dyn Fn(&str) -> Rc<dyn ProgressSink>,
) -> anyhow::Result<WorkerReport> {
    let mut source = source::Fleet::new(ws, opts, progress.clone())?;
    let jobs = crate::engine::jobs::JobsOptions {
        jobs: opts.jobs.max(1),
        program: opts.program.clone(),
        cwd: opts.cwd.clone(),
        args: opts.args.clone(),
        live: opts.live,
    };
    let ran = crate::engine::jobs::drive_jobs(ws, &mut source, &jobs, progress, job_progress);
    let mut report = source.finish();
    report.interrupted = ran?.interrupted;
    Ok(report)
}
