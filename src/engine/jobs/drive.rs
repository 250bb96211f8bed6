//! The loop of [`super::drive_jobs`]: start jobs as the source says, relay their progress,
//! forward signals, stop the jobs the source asks to stop, and collect how each ended.

use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::time::Instant;

use super::start::{Running, ended, start, taken_by_another};
use super::{JobEnd, JobSource, JobsOptions, JobsReport, STOP_GRACE, StopJob, child, wire};
use crate::agent::Interrupt;
use crate::engine::progress::{Event, Progress, ProgressSink};
use crate::store::workspace::Workspace;

/// How long an idle source that keeps waiting and has no `tick_every` waits between asks.
const IDLE_WAIT: Duration = Duration::from_secs(1);

struct Jobs<'a> {
    ws: &'a Workspace,
    source: &'a mut dyn JobSource,
    opts: &'a JobsOptions,
    progress: Rc<dyn ProgressSink>,
    job_progress: &'a dyn Fn(&str) -> Rc<dyn ProgressSink>,
    tx: UnboundedSender<child::Message>,
    interrupt: Interrupt,
    running: HashMap<usize, Running>,
    /// Each end with the index of its start.
    ends: Vec<(usize, String, JobEnd)>,
    started: usize,
    /// Signals forwarded to the jobs so far.
    forwarded: usize,
    /// A job ended interrupted (stopped by a signal sent to it alone, not by its source): that
    /// stops the starts too, as an interruption stops the specs after it without --jobs.
    stopped: bool,
}

pub(super) async fn drive(
    ws: &Workspace,
    source: &mut dyn JobSource,
    opts: &JobsOptions,
    progress: Rc<dyn ProgressSink>,
    job_progress: &dyn Fn(&str) -> Rc<dyn ProgressSink>,
) -> anyhow::Result<JobsReport> {
    let interrupt = Interrupt::install()?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut ticker = source.tick_every().map(|every| {
        let mut t = tokio::time::interval_at(Instant::now() + every, every);
        // A slow tick is not made up for with a burst of them.
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    });
    let mut jobs = Jobs {
        ws,
        source,
        opts,
        progress,
        job_progress,
        tx,
        interrupt,
        running: HashMap::new(),
        ends: Vec::new(),
        started: 0,
        forwarded: 0,
        stopped: false,
    };
    loop {
        jobs.start_more();
        if jobs.running.is_empty() {
            if jobs.interrupt.is_set() || jobs.stopped || !jobs.source.keep_waiting() {
                break;
            }
            jobs.idle(ticker.as_mut()).await;
            continue;
        }
        if !jobs.step(&mut rx, ticker.as_mut()).await {
            break;
        }
    }
    let interrupted = jobs.interrupt.is_set() || jobs.stopped;
    let mut ends = jobs.ends;
    ends.sort_by_key(|(index, _, _)| *index);
    Ok(JobsReport {
        ends: ends.into_iter().map(|(_, spec, end)| (spec, end)).collect(),
        interrupted,
    })
}

impl Jobs<'_> {
    /// Start jobs while fewer than N run and the source has one.
    fn start_more(&mut self) {
        while self.running.len() < self.opts.jobs.max(1)
            && !self.interrupt.is_set()
            && !self.stopped
        {
            let names = self.names();
            let Some(job) = self.source.next(&names) else {
                return;
            };
            let index = self.started;
            self.started += 1;
            let started = start(
                self.ws,
                index,
                &job,
                self.opts,
                &self.running,
                &self.tx,
                self.job_progress,
            );
            match started {
                Ok(running) => {
                    let line = self.source.starting(&job.spec);
                    self.progress.report(Progress::Line(&format!(
                        "{line} in {}",
                        running.slot.path.display()
                    )));
                    self.running.insert(index, running);
                }
                Err(end) => self.end(index, job.spec, *end, true),
            }
        }
    }

    /// Nothing runs and the source keeps waiting: wait for its next tick (or [`IDLE_WAIT`])
    /// or a signal.
    async fn idle(&mut self, ticker: Option<&mut tokio::time::Interval>) {
        match ticker {
            Some(ticker) => tokio::select! {
                _ = ticker.tick() => {
                    // Nothing runs: nothing to stop.
                    let _ = self.source.tick(&[]);
                }
                _ = self.interrupt.wait_beyond(self.forwarded) => {}
            },
            None => tokio::select! {
                _ = tokio::time::sleep(IDLE_WAIT) => {}
                _ = self.interrupt.wait_beyond(self.forwarded) => {}
            },
        }
    }

    /// Wait for the next thing to happen while jobs run, and deal with it; false when no job
    /// can report any more (not reached while one runs).
    async fn step(
        &mut self,
        rx: &mut UnboundedReceiver<child::Message>,
        ticker: Option<&mut tokio::time::Interval>,
    ) -> bool {
        let kill_at = self.running.values().filter_map(|r| r.kill_at).min();
        let tick = async {
            match ticker {
                Some(t) => {
                    t.tick().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        // (A test's stop at once: none in a release build.)
        let failpoint = crate::failpoint::stop_job();
        let stop_point = async {
            match &failpoint {
                Some((_, file)) => loop {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if file.exists() {
                        break;
                    }
                },
                None => std::future::pending::<()>().await,
            }
        };
        let overdue = async {
            match kill_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            message = rx.recv() => match message {
                Some(message) => self.on_message(message),
                // Every job's task holds a sender until it sent its exit.
                None => return false,
            },
            _ = self.interrupt.wait_beyond(self.forwarded) => {
                // Each signal once to each job: the first drains it, a second stops it now.
                let count = self.interrupt.count();
                for _ in self.forwarded..count {
                    for job in self.running.values() {
                        child::signal(job.pid, libc::SIGINT);
                    }
                }
                self.forwarded = count;
            }
            _ = tick => {
                let names = self.names();
                let stops = self.source.tick(&names);
                self.stop(stops);
            }
            _ = overdue => self.kill_overdue(),
            _ = stop_point => {
                if let Some((spec, _)) = failpoint {
                    self.stop(vec![StopJob::Stop(spec)]);
                }
            }
        }
        true
    }

    fn on_message(&mut self, message: child::Message) {
        match message {
            child::Message::Line(index, line) => {
                let Some(job) = self.running.get(&index) else {
                    return;
                };
                let event = wire::decode(&line);
                // A session's start and end come always (`ProgressSink::session_bounds`); they
                // are shown only where sessions are shown live, as before.
                let session = matches!(
                    event,
                    Event::SessionStarted { .. } | Event::SessionEnded | Event::Activity(_)
                );
                if self.opts.live || !session {
                    job.sink.report(wire::as_progress(&event));
                }
                let spec = job.spec.clone();
                let stops = self.source.progress(&spec, &event);
                self.stop(stops);
            }
            child::Message::Exit(index, status, stdout) => {
                let Some(job) = self.running.remove(&index) else {
                    return;
                };
                job.sink.report(Progress::Finished);
                let by_source = job.kill_at.is_some();
                let stopping = self.interrupt.is_set() || by_source;
                let source = &mut *self.source;
                let end = taken_by_another(
                    self.ws,
                    &job.spec,
                    ended(&job.spec, status, &stdout, stopping),
                    &mut |spec| source.still_to_do(spec),
                );
                self.stopped |= !by_source
                    && matches!(&end, JobEnd::Failed(e) if crate::error::is_interrupted(e));
                self.end(index, job.spec, end, false);
            }
        }
    }

    /// A job ended (or was not started: `at_start`): said, handed to the source, kept for the
    /// report.
    fn end(&mut self, index: usize, spec: String, end: JobEnd, at_start: bool) {
        match &end {
            JobEnd::Skipped(why) => self
                .progress
                .report(Progress::Line(&format!("Skipped spec {spec}: {why}"))),
            // (A job's own error came with its progress; this one is of its start.)
            JobEnd::Failed(e) if at_start => self
                .progress
                .report(Progress::Notice(&format!("runner: {e:#}"))),
            _ => {}
        }
        self.source.ended(&spec, &end);
        self.ends.push((index, spec, end));
    }

    /// Stop the jobs asked for at once (each once): the parent's stop signal, a second
    /// Ctrl-C's worth told in the run's words as its parent's stop (`agent::interrupt`); killed
    /// [`STOP_GRACE`] later if still running.
    fn stop(&mut self, stops: Vec<StopJob>) {
        for StopJob::Stop(spec) in stops {
            for job in self.running.values_mut() {
                if job.spec == spec && job.kill_at.is_none() {
                    child::signal(job.pid, crate::agent::interrupt::STOP_FROM_PARENT);
                    job.kill_at = Some(Instant::now() + STOP_GRACE);
                }
            }
        }
    }

    /// Kill the stopped jobs whose grace is over.
    fn kill_overdue(&mut self) {
        let now = Instant::now();
        for job in self.running.values_mut() {
            if job.kill_at.is_some_and(|at| at <= now) {
                child::kill_group(job.pid);
                // Killed once; its exit is on its way.
                job.kill_at = Some(now + Duration::from_secs(3600));
            }
        }
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<(usize, String)> = self
            .running
            .iter()
            .map(|(i, r)| (*i, r.spec.clone()))
            .collect();
        names.sort();
        names.into_iter().map(|(_, s)| s).collect()
    }
}
