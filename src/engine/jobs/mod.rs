//! Several specs built at the same time: `runner run --jobs N` and a worker's `--jobs` drive
//! the same loop ([`drive_jobs`]), told which spec to start next by a [`JobSource`].
//!
//! Each spec is run by a `runner run --spec S --auto-continue --json` process of its own (a
//! job), not by a second run inside this one: a run's crash safety — its locks, heartbeat,
//! journal, drain and the process-wide signal count it depends on — stays exactly that of a
//! single run, and a job that crashes takes no other job with it. This process picks each
//! job's slot, starts up to N jobs, shows their progress (one stream per job), forwards every
//! Ctrl-C/SIGTERM/SIGHUP it gets to each job once (a second one then stops them at once, as for
//! one run), stops a job at once when its source asks ([`StopJob`]) and waits for their
//! drains; it never touches a spec's state itself.

mod child;
mod drive;
#[cfg(test)]
mod drive_tests;
mod start;
pub mod wire;

pub use start::held_by_another;

use std::ffi::OsString;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use crate::engine::progress::ProgressSink;
use crate::engine::run::RunReport;
use crate::store::workspace::Workspace;

/// How to start the jobs.
#[derive(Debug, Clone)]
pub struct JobsOptions {
    /// At most this many at the same time (≥ 1).
    pub jobs: usize,
    /// runner's own executable.
    pub program: PathBuf,
    /// Where the jobs start (where this runner was started).
    pub cwd: PathBuf,
    /// The flags each job gets besides `run --spec S --auto-continue --json
    /// --progress-events [--slot N]`: the run's flags and the global ones, as given.
    pub args: Vec<OsString>,
    /// Whether the jobs' agent sessions are shown live (a terminal): each job then sends
    /// them too (`--progress-live`).
    pub live: bool,
}

/// How one spec's job ended.
#[derive(Debug)]
pub enum JobEnd {
    Ran(RunReport),
    Failed(anyhow::Error),
    /// Not started: another runner holds it, or it has nothing left to do.
    Skipped(String),
}

/// What the jobs did, in the order they were started (a spec skipped at its start included);
/// a spec not started because of an interruption is not in `ends`.
#[derive(Debug, Default)]
pub struct JobsReport {
    pub ends: Vec<(String, JobEnd)>,
    pub interrupted: bool,
}

/// A job to start: its spec, and the flags its `runner run` gets besides
/// [`JobsOptions::args`] (after them; for example `--agent NAME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobStart {
    pub spec: String,
    pub extra_args: Vec<OsString>,
}

impl JobStart {
    /// A job with no flags of its own.
    pub fn new(spec: impl Into<String>) -> JobStart {
        JobStart {
            spec: spec.into(),
            extra_args: Vec::new(),
        }
    }
}

/// What a [`JobSource`] asks of a running job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopJob {
    /// Stop that spec's job at once: it gets its parent's stop signal (SIGUSR1, which its run
    /// takes as a second Ctrl-C told as its parent's stop), so its run kills its agent's
    /// process group, keeps the leftovers as after a second Ctrl-C, and exits. A run that has not ended
    /// [`STOP_GRACE`] later is killed (SIGKILL): recovery then deals with it as with any
    /// killed run.
    Stop(String),
}

/// How long a job stopped by [`StopJob::Stop`] has to end before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// Where the jobs come from, and who hears how they go: `run --jobs` (a list) and a worker
/// (its remote). Every callback is called on the loop's thread, between the loop's own steps:
/// the loop waits on none of them longer than it takes.
pub trait JobSource {
    /// The next spec to start now that fewer than N jobs run (`running`: their specs); `None`:
    /// none for now. Not asked once a Ctrl-C arrived.
    fn next(&mut self, running: &[String]) -> Option<JobStart>;
    /// When nothing runs and `next` gave `None`: true to wait for `tick_every` (1 s when
    /// `None`) and ask again (a worker polling its remote); false ends the jobs.
    fn keep_waiting(&mut self) -> bool {
        false
    }
    /// How often `tick` is called while the jobs go on (a worker's heartbeat); `None`: never.
    fn tick_every(&self) -> Option<Duration> {
        None
    }
    /// Called every `tick_every`; the jobs to stop at once.
    fn tick(&mut self, _running: &[String]) -> Vec<StopJob> {
        Vec::new()
    }
    /// Each progress event of a running job, as decoded from its stderr (`wire::decode`).
    fn progress(&mut self, _spec: &str, _event: &crate::engine::progress::Event) -> Vec<StopJob> {
        Vec::new()
    }
    /// A job ended (or was not started: [`JobEnd::Skipped`], or [`JobEnd::Failed`] when its
    /// process could not be started).
    fn ended(&mut self, _spec: &str, _end: &JobEnd) {}
    /// The line said when the job of `spec` starts, before " in <slot>".
    fn starting(&self, spec: &str) -> String {
        format!("Starting spec {spec}")
    }
    /// Whether `spec` still has work for this source: asked when its job ended busy (exit 4)
    /// and no runner holds it any more, to tell "another runner ran it" (skipped) from a busy
    /// slot (an error).
    fn still_to_do(&mut self, _spec: &str) -> bool {
        true
    }
}

/// Start and watch jobs, up to `opts.jobs` at a time, as `source` says, until it has no more
/// and every job ended (or a Ctrl-C drained them). `progress` gets this process's own lines;
/// `job_progress(spec)` gives the sink of one job's progress.
pub fn drive_jobs(
    ws: &Workspace,
    source: &mut dyn JobSource,
    opts: &JobsOptions,
    progress: Rc<dyn ProgressSink>,
    job_progress: &dyn Fn(&str) -> Rc<dyn ProgressSink>,
) -> anyhow::Result<JobsReport> {
    crate::engine::block_on(drive::drive(ws, source, opts, progress, job_progress))
}
