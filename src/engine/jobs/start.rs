//! Starting one job (its slot, its flags, its process) and reading how it ended.

use std::collections::HashMap;
use std::ffi::OsString;
use std::rc::Rc;

use super::{JobEnd, JobStart, JobsOptions, child, wire};
use crate::engine::progress::ProgressSink;
use crate::error::RunnerError;
use crate::git::{Slot, SlotState, branch_for, slot_holding};
use crate::store::lock::{self, LockState};
use crate::store::workspace::Workspace;

/// A job that is running.
pub(super) struct Running {
    pub spec: String,
    pub pid: u32,
    pub slot: Slot,
    pub sink: Rc<dyn ProgressSink>,
    /// Its source asked to stop it ([`super::StopJob`]): killed if still running then.
    pub kill_at: Option<tokio::time::Instant>,
}

/// Start the job `job` as job `index`, or say why not.
pub(super) fn start(
    ws: &Workspace,
    index: usize,
    job: &JobStart,
    opts: &JobsOptions,
    running: &HashMap<usize, Running>,
    tx: &tokio::sync::mpsc::UnboundedSender<child::Message>,
    job_progress: &dyn Fn(&str) -> Rc<dyn ProgressSink>,
) -> Result<Running, Box<JobEnd>> {
    let spec = job.spec.as_str();
    // Asked again now: the source's list may have been made before the earlier jobs ran, and
    // another runner may have taken this spec since. Its run lock decides in the end: a runner
    // that takes it in the instant between makes this job end busy (exit 4), never a second
    // run of the spec.
    if running.values().any(|r| r.spec == spec) {
        return Err(Box::new(JobEnd::Skipped(
            "its job is running already".into(),
        )));
    }
    if held_by_another(ws, spec) {
        return Err(Box::new(JobEnd::Skipped(
            "another runner is running it".into(),
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
    args.extend(job.extra_args.iter().cloned());
    match child::spawn(index, &opts.program, &args, &opts.cwd, tx.clone()) {
        Ok(pid) => Ok(Running {
            spec: spec.to_string(),
            pid,
            slot,
            sink: job_progress(spec),
            kill_at: None,
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
/// other runner holds the spec's lock, or ran it to where it has nothing left to do:
/// `still_to_do` says). A job busy for any other reason (its slot held by another spec's run)
/// stays an error: its spec was not run.
pub(super) fn taken_by_another(
    ws: &Workspace,
    spec: &str,
    end: JobEnd,
    still_to_do: &mut dyn FnMut(&str) -> bool,
) -> JobEnd {
    let busy = matches!(&end, JobEnd::Failed(e)
        if crate::error::exit_code_of(e) == crate::error::exit::BUSY);
    if !busy {
        return end;
    }
    if held_by_another(ws, spec) {
        JobEnd::Skipped("another runner is running it".into())
    } else if !still_to_do(spec) {
        JobEnd::Skipped("another runner ran it".into())
    } else {
        end
    }
}

/// Whether a runner holds `spec`'s run lock.
pub fn held_by_another(ws: &Workspace, spec: &str) -> bool {
    ws.spec(spec)
        .map(|paths| !matches!(lock::probe(&paths.run_lock), Ok(LockState::Free)))
        .unwrap_or(false)
}

/// A job's end from its exit status and stdout. Killed by a signal: interrupted when this
/// runner was asked to stop it (a job can die of the forwarded Ctrl-C before it listens for
/// it, and a job stopped by its source may be killed).
pub(super) fn ended(
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
