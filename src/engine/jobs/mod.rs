//! `runner run --auto-continue --jobs N`: up to N interrupted specs resumed at the same time.
//!
//! Each spec is resumed by a `runner run --spec S --auto-continue --json` process of its own
//! (a job), not by a second run inside this one: a run's crash safety — its locks, heartbeat,
//! journal, drain and the process-wide signal count it depends on — stays exactly that of a
//! single run, and a job that crashes takes no other job with it. This process picks each
//! job's slot, starts up to N jobs, shows their progress (one stream per job), forwards every
//! Ctrl-C/SIGTERM/SIGHUP it gets to each job once (a second one then stops them at once, as for
//! one run) and waits for their drains; it never touches a spec's state itself.

mod child;
pub mod wire;

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::path::PathBuf;
use std::rc::Rc;

use crate::agent::Interrupt;
use crate::engine::progress::{Progress, ProgressSink};
use crate::engine::run::RunReport;
use crate::error::RunnerError;
use crate::git::{Slot, SlotState, branch_for, slot_holding};
use crate::store::lock::{self, LockState};
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
    /// Not started: another runner holds it, or it is no longer interrupted.
    Skipped(String),
}

/// What the jobs did, in the order the specs were given; a spec not started because of an
/// interruption is not in `ends`.
#[derive(Debug, Default)]
pub struct JobsReport {
    pub ends: Vec<(String, JobEnd)>,
    pub interrupted: bool,
}

/// A job that is running.
struct Running {
    spec: String,
    pid: u32,
    slot: Slot,
    sink: Rc<dyn ProgressSink>,
}

/// Resume `specs` (most recent first), up to `opts.jobs` at a time. `progress` gets this
/// process's own lines; `job_progress(spec)` gives the sink of one job's progress.
pub fn run_jobs(
    ws: &Workspace,
    specs: Vec<String>,
    opts: &JobsOptions,
    progress: Rc<dyn ProgressSink>,
    job_progress: &dyn Fn(&str) -> Rc<dyn ProgressSink>,
) -> anyhow::Result<JobsReport> {
    crate::engine::block_on(drive(ws, specs, opts, progress, job_progress))
}

async fn drive(
    ws: &Workspace,
    specs: Vec<String>,
    opts: &JobsOptions,
    progress: Rc<dyn ProgressSink>,
    job_progress: &dyn Fn(&str) -> Rc<dyn ProgressSink>,
) -> anyhow::Result<JobsReport> {
    let interrupt = Interrupt::install()?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut ends: Vec<Option<(String, JobEnd)>> = specs.iter().map(|_| None).collect();
    let mut queue: VecDeque<(usize, String)> = specs.into_iter().enumerate().collect();
    let mut running: HashMap<usize, Running> = HashMap::new();
    let mut forwarded = 0;
    // A job that ended interrupted (stopped by a signal sent to it alone) stops the starts too:
    // an interruption stops the specs after it, as without --jobs.
    let mut stopped = false;
    loop {
        while running.len() < opts.jobs.max(1) && !interrupt.is_set() && !stopped {
            let Some((index, spec)) = queue.pop_front() else {
                break;
            };
            match start(ws, index, &spec, opts, &running, &tx, job_progress) {
                Ok(job) => {
                    progress.report(Progress::Line(&format!(
                        "Resuming interrupted spec {spec} in {}",
                        job.slot.path.display()
                    )));
                    running.insert(index, job);
                }
                Err(end) => {
                    let end = *end;
                    match &end {
                        JobEnd::Skipped(why) => {
                            progress.report(Progress::Line(&format!("Skipped spec {spec}: {why}")))
                        }
                        JobEnd::Failed(e) => {
                            progress.report(Progress::Notice(&format!("runner: {e:#}")))
                        }
                        JobEnd::Ran(_) => {}
                    }
                    ends[index] = Some((spec, end));
                }
            }
        }
        if running.is_empty() {
            break;
        }
        tokio::select! {
            message = rx.recv() => match message {
                Some(child::Message::Line(index, line)) => {
                    if let Some(job) = running.get(&index) {
                        job.sink.report(wire::as_progress(&wire::decode(&line)));
                    }
                }
                Some(child::Message::Exit(index, status, stdout)) => {
                    if let Some(job) = running.remove(&index) {
                        job.sink.report(Progress::Finished);
                        let end = taken_by_another(
                            ws,
                            &job.spec,
                            ended(&job.spec, status, &stdout, interrupt.is_set()),
                        );
                        if let JobEnd::Skipped(why) = &end {
                            progress.report(Progress::Line(&format!(
                                "Skipped spec {}: {why}",
                                job.spec
                            )));
                        }
                        stopped |= matches!(&end, JobEnd::Failed(e) if crate::error::is_interrupted(e));
                        ends[index] = Some((job.spec, end));
                    }
                }
                // Every job's task holds a sender until it sent its exit: not reached while
                // one runs.
                None => break,
            },
            _ = interrupt.wait_beyond(forwarded) => {
                // Each signal once to each job: the first drains it, a second stops it now.
                let count = interrupt.count();
                for _ in forwarded..count {
                    for job in running.values() {
                        child::signal(job.pid, libc::SIGINT);
                    }
                }
                forwarded = count;
            }
        }
    }
    Ok(JobsReport {
        ends: ends.into_iter().flatten().collect(),
        interrupted: interrupt.is_set() || stopped,
    })
}

/// Start the job of `spec`, or say why not.
fn start(
    ws: &Workspace,
    index: usize,
    spec: &str,
    opts: &JobsOptions,
    running: &HashMap<usize, Running>,
    tx: &tokio::sync::mpsc::UnboundedSender<child::Message>,
    job_progress: &dyn Fn(&str) -> Rc<dyn ProgressSink>,
) -> Result<Running, Box<JobEnd>> {
    // Asked again now: the list was made before the earlier jobs ran, and another runner may
    // have taken this spec (or run it to its end) since. Its run lock decides in the end: a
    // runner that takes it in the instant between makes this job end busy (exit 4), never a
    // second run of the spec.
    if held_by_another(ws, spec) {
        return Err(Box::new(JobEnd::Skipped(
            "another runner is running it".into(),
        )));
    }
    if !crate::engine::run::still_interrupted(ws, spec) {
        return Err(Box::new(JobEnd::Skipped(
            "it is no longer interrupted".into(),
        )));
    }
    // (A pause here in a test widens the instant between the check and the job's own lock.)
    crate::failpoint::hit("jobs_job_checked");
    let (slot, flag) = slot_for(ws, spec, running);
    let mut args: Vec<OsString> = ["run", "--spec", spec, "--auto-continue", "--json"]
        .iter()
        .map(OsString::from)
        .collect();
    args.push("--progress-events".into());
    if opts.live {
        args.push("--progress-live".into());
    }
    if let Some(suffix) = flag {
        args.push("--slot".into());
        args.push(suffix.into());
    }
    args.extend(opts.args.iter().cloned());
    match child::spawn(index, &opts.program, &args, &opts.cwd, tx.clone()) {
        Ok(pid) => Ok(Running {
            spec: spec.to_string(),
            pid,
            slot,
            sink: job_progress(spec),
        }),
        Err(e) => Err(Box::new(JobEnd::Failed(anyhow::anyhow!(
            "spec {spec}: cannot start its run ({}): {e}",
            opts.program.display()
        )))),
    }
}

/// The slot the job of `spec` builds in: the one that has its branch checked out (the rule of
/// every run; the job is given no `--slot`), else the first `auto-claude-<n>` that does not
/// exist yet, no other runner holds and no other job was given.
fn slot_for(
    ws: &Workspace,
    spec: &str,
    running: &HashMap<usize, Running>,
) -> (Slot, Option<String>) {
    if let Some(slot) = slot_holding(&ws.main, &branch_for(spec)) {
        return (slot, None);
    }
    let mut n = 1usize;
    loop {
        let suffix = n.to_string();
        let slot = Slot::new(&ws.root, Some(&suffix));
        let taken = running.values().any(|job| job.slot.name == slot.name);
        let free = !taken
            && !slot.path.exists()
            && slot.inspect(&ws.main) == SlotState::Missing
            && matches!(lock::probe(&ws.slot_lock(&slot.name)), Ok(LockState::Free));
        if free {
            return (slot, Some(suffix));
        }
        n += 1;
    }
}

/// A job that ended busy because another runner took its spec in the instant between the
/// check before its start and its own lock: skipped, as it would have been a moment later (the
/// other runner holds the spec's lock, or ran it to where it is no longer interrupted). A job
/// busy for any other reason (its slot held by another spec's run) stays an error: its spec
/// was not resumed.
fn taken_by_another(ws: &Workspace, spec: &str, end: JobEnd) -> JobEnd {
    let busy = matches!(&end, JobEnd::Failed(e)
        if crate::error::exit_code_of(e) == crate::error::exit::BUSY);
    if !busy {
        return end;
    }
    if held_by_another(ws, spec) {
        JobEnd::Skipped("another runner is running it".into())
    } else if !crate::engine::run::still_interrupted(ws, spec) {
        JobEnd::Skipped("another runner ran it".into())
    } else {
        end
    }
}

/// Whether a runner holds `spec`'s run lock.
fn held_by_another(ws: &Workspace, spec: &str) -> bool {
    ws.spec(spec)
        .map(|paths| !matches!(lock::probe(&paths.run_lock), Ok(LockState::Free)))
        .unwrap_or(false)
}

/// A job's end from its exit status and stdout. Killed by a signal: interrupted when this
/// runner was asked to stop (a job can die of the forwarded Ctrl-C before it listens for it).
fn ended(
    spec: &str,
    status: std::io::Result<std::process::ExitStatus>,
    stdout: &str,
    stopping: bool,
) -> JobEnd {
    use std::os::unix::process::ExitStatusExt;
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            return JobEnd::Failed(anyhow::anyhow!("spec {spec}: waiting for its run: {e}"));
        }
    };
    match (status.code(), status.signal()) {
        (Some(code), _) => match wire::result(spec, code, stdout) {
            Ok(summary) => JobEnd::Ran(summary),
            Err(e) => JobEnd::Failed(e),
        },
        (None, _) if stopping => JobEnd::Failed(RunnerError::Interrupted.into()),
        (None, signal) => JobEnd::Failed(anyhow::anyhow!(
            "spec {spec}: its run was killed (signal {})",
            signal.unwrap_or(0)
        )),
    }
}
