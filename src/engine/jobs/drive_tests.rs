//! The jobs loop with a small test `JobSource` and a stand-in program for `runner run` (a
//! shell script that ignores its arguments): how many run at once, the source's callbacks,
//! idle waiting with ticks, and a stop at once of a job that ignores every signal.

use std::rc::Rc;
use std::time::{Duration, Instant};

use super::*;
use crate::engine::progress::{Event, Silent};

struct Fixture {
    _tmp: tempfile::TempDir,
    ws: Workspace,
    program: PathBuf,
}

/// A repository with one commit, and `script` as the jobs' program.
fn fixture(script: &str) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@e",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["commit", "-q", "--allow-empty", "-m", "initial"]);
    // The jobs start `PROGRAM run --spec S …` in the repository: `sh` runs the script named
    // `run` there (a script written and then executed at once could meet ETXTBSY while
    // another test's thread forks).
    std::fs::write(root.join("run"), format!("{script}\n")).unwrap();
    let ws = Workspace::open(&root).unwrap();
    Fixture {
        _tmp: tmp,
        ws,
        program: PathBuf::from("/bin/sh"),
    }
}

fn options(f: &Fixture, jobs: usize) -> JobsOptions {
    JobsOptions {
        jobs,
        program: f.program.clone(),
        cwd: f.ws.root.clone(),
        args: Vec::new(),
        live: false,
    }
}

fn drive(f: &Fixture, source: &mut dyn JobSource, jobs: usize) -> JobsReport {
    let silent: Rc<dyn ProgressSink> = Rc::new(Silent);
    drive_jobs(&f.ws, source, &options(f, jobs), silent, &|_| {
        Rc::new(Silent)
    })
    .unwrap()
}

/// Hands out `specs` in order; records what it is told.
#[derive(Default)]
struct Recorder {
    specs: Vec<String>,
    most_running: usize,
    events: Vec<(String, Event)>,
    ended: Vec<String>,
    ticks: usize,
    idle_asks: usize,
    stop_on_tick: Option<String>,
    tick_every: Option<Duration>,
    wait_until_asked: usize,
}

impl JobSource for Recorder {
    fn next(&mut self, running: &[String]) -> Option<JobStart> {
        self.idle_asks += 1;
        // Nothing for the first asks: a worker whose remote has no spec yet.
        if self.idle_asks <= self.wait_until_asked || self.specs.is_empty() {
            return None;
        }
        self.most_running = self.most_running.max(running.len() + 1);
        Some(JobStart::new(self.specs.remove(0)))
    }
    fn keep_waiting(&mut self) -> bool {
        !self.specs.is_empty()
    }
    fn tick_every(&self) -> Option<Duration> {
        self.tick_every
    }
    fn tick(&mut self, running: &[String]) -> Vec<StopJob> {
        self.ticks += 1;
        match &self.stop_on_tick {
            Some(spec) if running.contains(spec) => vec![StopJob::Stop(spec.clone())],
            _ => Vec::new(),
        }
    }
    fn progress(&mut self, spec: &str, event: &Event) -> Vec<StopJob> {
        self.events.push((spec.to_string(), event.clone()));
        Vec::new()
    }
    fn ended(&mut self, spec: &str, _end: &JobEnd) {
        self.ended.push(spec.to_string());
    }
}

#[test]
fn at_most_n_jobs_run_and_the_source_hears_each_ones_progress_and_end() {
    let f = fixture(
        "echo '@runner-progress {\"line\": \"at work\"}' >&2; sleep 0.3; echo '{}'; exit 0",
    );
    let mut source = Recorder {
        specs: vec!["a".into(), "b".into(), "c".into()],
        ..Recorder::default()
    };
    let report = drive(&f, &mut source, 2);
    assert_eq!(source.most_running, 2, "{:?}", report.ends);
    assert_eq!(report.ends.len(), 3);
    let mut ended = source.ended.clone();
    ended.sort();
    assert_eq!(ended, ["a", "b", "c"]);
    for spec in ["a", "b", "c"] {
        assert!(
            source
                .events
                .contains(&(spec.to_string(), Event::Line("at work".into()))),
            "{:?}",
            source.events
        );
    }
    assert!(!report.interrupted);
}

#[test]
fn an_idle_source_that_keeps_waiting_is_ticked_and_asked_again() {
    let f = fixture("echo '{}'; exit 0");
    let mut source = Recorder {
        specs: vec!["a".into()],
        tick_every: Some(Duration::from_millis(50)),
        wait_until_asked: 3,
        ..Recorder::default()
    };
    let report = drive(&f, &mut source, 2);
    assert!(source.ticks >= 3, "{}", source.ticks);
    assert_eq!(source.ended, ["a"]);
    assert_eq!(report.ends.len(), 1);
}

#[test]
fn a_job_stopped_at_once_gets_its_parents_stop_signal() {
    // A stand-in for a run: it exits 130 at SIGUSR1, as a run stops at once at its parent's
    // stop, and says which signal it got; a person's signals alone would not stop it.
    let f = fixture(
        "trap 'echo USR1 > stopped-by; exit 130' USR1; trap '' INT TERM HUP; \
         while true; do sleep 0.05; done",
    );
    let mut source = Recorder {
        specs: vec!["a".into()],
        tick_every: Some(Duration::from_millis(200)),
        stop_on_tick: Some("a".into()),
        ..Recorder::default()
    };
    let started = Instant::now();
    let report = drive(&f, &mut source, 1);
    assert!(started.elapsed() < STOP_GRACE, "{:?}", started.elapsed());
    let (_, end) = &report.ends[0];
    assert!(
        matches!(end, JobEnd::Failed(e) if crate::error::is_interrupted(e)),
        "{end:?}"
    );
    // Stopped by its source: not an interruption of the jobs.
    assert!(!report.interrupted);
    let said = std::fs::read_to_string(f.ws.root.join("stopped-by")).unwrap_or_default();
    assert_eq!(said.trim(), "USR1");
}

#[test]
fn a_stopped_job_that_ignores_every_signal_is_killed_after_the_grace() {
    let f = fixture("trap '' INT TERM HUP USR1; while true; do sleep 0.05; done");
    let mut source = Recorder {
        specs: vec!["a".into()],
        tick_every: Some(Duration::from_millis(100)),
        stop_on_tick: Some("a".into()),
        ..Recorder::default()
    };
    let started = Instant::now();
    let report = drive(&f, &mut source, 1);
    let took = started.elapsed();
    assert!(took >= STOP_GRACE && took < STOP_GRACE * 3, "{took:?}");
    assert!(matches!(&report.ends[0].1, JobEnd::Failed(e) if crate::error::is_interrupted(e)));
}
