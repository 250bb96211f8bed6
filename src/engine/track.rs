//! A run's record (`store::runs`) as the engine keeps it while the work goes on: written when
//! the work starts, rewritten at every heartbeat and chunk change, and once more when it ends
//! with its outcome. `runner run` keeps one for its whole life; recover, merge, discard and undo
//! write one when they changed something.
//!
//! Advisory: the record only tells `runner runs`, `show` and `resume` what runner knows. A
//! write that fails (a full disk, a link an agent planted, a folder in the file's place) is
//! logged and the work goes on; the lock, the plan and the branch stay the truth.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::RunnerError;
use crate::store::runs::{self, RunKind, RunRecord};

/// A run's record, shared with its heartbeat task.
#[derive(Debug, Clone)]
pub struct RunTrack {
    spec_dir: PathBuf,
    record: Arc<Mutex<RunRecord>>,
    /// Held over a change and its write, so that writes land in the order of the changes: a
    /// heartbeat's copy taken before the run ended is never written after the end's.
    writing: Arc<Mutex<()>>,
}

impl RunTrack {
    /// The record of `run_id` starting now (`kind` on `spec`, whose folder is `spec_dir`),
    /// written at once.
    pub fn start(spec_dir: &Path, run_id: &str, spec: &str, kind: RunKind) -> RunTrack {
        Self::start_with(spec_dir, RunRecord::starting(run_id, spec, kind))
    }

    /// A record set up by the caller (agent, slot, `resumed_from`), written at once.
    pub fn start_with(spec_dir: &Path, record: RunRecord) -> RunTrack {
        let track = RunTrack {
            spec_dir: spec_dir.to_path_buf(),
            record: Arc::new(Mutex::new(record)),
            writing: Arc::new(Mutex::new(())),
        };
        track.update(true, |_| {});
        track
    }

    /// The record of an operation that finished and changed something (recover, merge,
    /// discard, undo): `run_id` on `spec` since `started`, ended now with `outcome`. When
    /// `run_id` is a `runner run`'s (a merge or discard it asked for), the run's own record
    /// stands and nothing is written.
    pub fn finished(
        spec_dir: &Path,
        run_id: &str,
        spec: &str,
        kind: RunKind,
        started: chrono::DateTime<chrono::Utc>,
        outcome: &str,
    ) {
        if let runs::Found::Record(r) = runs::read(spec_dir, run_id)
            && r.kind == RunKind::Run
        {
            return;
        }
        let mut record = RunRecord::starting(run_id, spec, kind);
        record.started = started;
        record.ended = Some(record.heartbeat);
        record.outcome = Some(outcome.to_string());
        write_logged(spec_dir, &record, true);
    }

    /// `op` (a merge, discard or undo of the spec whose folder is `spec_dir`, journaled as
    /// `run_id`), with its record written when it succeeded and changed something: `changed`
    /// gives the outcome word then.
    pub fn around<T>(
        spec_dir: &Path,
        run_id: &str,
        spec: &str,
        kind: RunKind,
        op: impl FnOnce() -> anyhow::Result<T>,
        changed: impl FnOnce(&T) -> Option<&'static str>,
    ) -> anyhow::Result<T> {
        let started = chrono::Utc::now();
        let done = op()?;
        if let Some(outcome) = changed(&done) {
            Self::finished(spec_dir, run_id, spec, kind, started, outcome);
        }
        Ok(done)
    }

    pub fn run_id(&self) -> String {
        self.lock().run_id.clone()
    }

    /// The chunk the record names.
    pub fn current_chunk(&self) -> Option<String> {
        self.lock().chunk.clone()
    }

    /// Whether the record says the run ended.
    pub fn is_ended(&self) -> bool {
        self.lock().ended.is_some()
    }

    /// The heartbeat: the run says it is alive.
    pub fn beat(&self) {
        self.update(false, |r| r.heartbeat = chrono::Utc::now());
    }

    /// The chunk being worked on changed (written only when it did).
    pub fn chunk(&self, chunk: Option<&str>) {
        if self.lock().chunk.as_deref() == chunk || chunk.is_none() {
            return;
        }
        self.update(false, |r| {
            r.chunk = chunk.map(str::to_string);
            r.heartbeat = chrono::Utc::now();
        });
    }

    /// The run ended with `outcome` (once: a later call changes nothing).
    pub fn end(&self, outcome: &str) {
        if self.is_ended() {
            return;
        }
        self.update(true, |r| {
            let now = chrono::Utc::now();
            r.ended = Some(now);
            r.heartbeat = now;
            r.outcome = Some(outcome.to_string());
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RunRecord> {
        // A panic while the record was held leaves a record that is still whole data.
        self.record.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Change the record and write it (a copy is written; the record's lock is not held over
    /// the write, the writing lock is): durably when the run starts and ends, without an fsync
    /// for a heartbeat or a chunk change (cheap; a power cut only leaves the record a little
    /// older).
    fn update(&self, durable: bool, change: impl FnOnce(&mut RunRecord)) {
        let _writing = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        let record = {
            let mut record = self.lock();
            change(&mut record);
            record.clone()
        };
        write_logged(&self.spec_dir, &record, durable);
    }
}

/// Write `record`; a failure is logged, never an error.
fn write_logged(spec_dir: &Path, record: &RunRecord, durable: bool) {
    let written = match durable {
        true => runs::write(spec_dir, record),
        false => runs::write_unsynced(spec_dir, record),
    };
    if let Err(e) = written {
        tracing::warn!(
            run = %record.run_id,
            file = %runs::path(spec_dir, &record.run_id).display(),
            "could not write the run record: {e}"
        );
    }
}

/// The outcome word of a run that ended with `result`: `ok` when it succeeded, else
/// [`error_word`].
pub fn outcome_word<T>(result: &anyhow::Result<T>, ok: &str) -> String {
    match result {
        Ok(_) => ok.to_string(),
        Err(e) => error_word(e),
    }
}

/// The word for how a run that failed with `e` stopped, as `runner run` names a spec's
/// outcomes.
pub fn error_word(e: &anyhow::Error) -> String {
    match e.downcast_ref::<RunnerError>().map(RunnerError::fact) {
        Some(RunnerError::Interrupted) => "interrupted",
        // A question cancelled: the run stopped before it did anything.
        Some(RunnerError::Cancelled) => "cancelled",
        Some(RunnerError::NeedsHuman(_)) => "needs_human",
        Some(RunnerError::BudgetSpent(_)) => "budget_exhausted",
        Some(RunnerError::UsageLimited(_)) => "usage_limited",
        Some(RunnerError::Busy(_)) => "busy",
        _ => "error",
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The heartbeat task and the run's own thread write the record at once: the last write
    /// must be of the last change, never a heartbeat's copy taken before the run ended.
    #[test]
    fn a_heartbeat_racing_the_end_never_undoes_it() {
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..150 {
            let id = crate::store::ids::run_id();
            let track = RunTrack::start(dir.path(), &id, "001-a", RunKind::Run);
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let beaters: Vec<_> = (0..3)
                .map(|_| {
                    let (track, stop) = (track.clone(), stop.clone());
                    std::thread::spawn(move || {
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            track.beat();
                        }
                    })
                })
                .collect();
            std::thread::sleep(std::time::Duration::from_micros(300));
            track.end("complete");
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            for b in beaters {
                b.join().unwrap();
            }
            match runs::read(dir.path(), &id) {
                runs::Found::Record(r) => {
                    assert_eq!(r.outcome.as_deref(), Some("complete"), "{r:?}");
                    assert!(r.ended.is_some());
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
