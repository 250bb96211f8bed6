//! What a scheduler's restart policy does, in the test: one loop per host that starts its
//! worker, waits for it to end, and starts it again (counting the restarts) until told to stop.

use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::process::Signal;

use super::procs;

/// How one incarnation of a worker ended, and where its output is.
#[derive(Debug, Clone)]
pub struct Exit {
    pub status: ExitStatus,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

/// One host's loop, once stopped: every incarnation of its worker.
#[derive(Debug, Clone, Default)]
pub struct Loop {
    pub host: String,
    pub exits: Vec<Exit>,
    /// Whether the last incarnation had to be killed because SIGTERM did not stop it.
    pub killed_at_stop: bool,
}

impl Loop {
    /// One line per incarnation: how it ended.
    pub fn describe(&self) -> String {
        self.exits
            .iter()
            .map(|e| format!("{}: {} ({})\n", self.host, e.status, e.stderr.display()))
            .collect()
    }

    /// Starts after the first: what the scheduler's restart policy did.
    pub fn restarts(&self) -> usize {
        self.exits.len().saturating_sub(1)
    }
}

/// Builds the command of a host's next worker: given the incarnation's number, its stdout and
/// stderr files.
pub type Starter = Box<dyn Fn(usize) -> (Command, PathBuf, PathBuf) + Send>;

struct Running {
    host: String,
    pid: Arc<Mutex<Option<i32>>>,
    thread: JoinHandle<Vec<Exit>>,
}

pub struct Supervisor {
    stop: Arc<AtomicBool>,
    running: Vec<Running>,
    mark: String,
}

impl Supervisor {
    pub fn new(mark: &str) -> Supervisor {
        Supervisor {
            stop: Arc::new(AtomicBool::new(false)),
            running: Vec::new(),
            mark: mark.to_string(),
        }
    }

    /// Start `host`'s loop.
    pub fn start(&mut self, host: &str, starter: Starter) {
        let stop = self.stop.clone();
        let pid = Arc::new(Mutex::new(None));
        let slot = pid.clone();
        let thread = std::thread::spawn(move || {
            let mut exits = Vec::new();
            let mut n = 0;
            loop {
                n += 1;
                let (mut cmd, out, err) = starter(n);
                cmd.stdout(std::fs::File::create(&out).unwrap())
                    .stderr(std::fs::File::create(&err).unwrap());
                // Checked and started under the slot's lock: `stop` either sees this worker's
                // pid or this loop sees the stop.
                let mut child = {
                    let mut pid = slot.lock().unwrap();
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let child = cmd.spawn().unwrap();
                    *pid = Some(child.id() as i32);
                    child
                };
                let status = child.wait().unwrap();
                *slot.lock().unwrap() = None;
                exits.push(Exit {
                    status,
                    stdout: out,
                    stderr: err,
                });
                // A scheduler's back-off before the restart (short: the test's time is
                // bounded).
                std::thread::sleep(Duration::from_millis(200));
            }
            exits
        });
        self.running.push(Running {
            host: host.to_string(),
            pid,
            thread,
        });
    }

    /// Stop restarting, ask each worker to stop (SIGTERM, as a scheduler does), and wait for
    /// them: one that is still there after `grace` is killed and its loop says so.
    pub fn stop(mut self, grace: Duration) -> Vec<Loop> {
        self.stop.store(true, Ordering::SeqCst);
        for r in &self.running {
            let pid = r.pid.lock().unwrap();
            if let Some(pid) = *pid {
                procs::signal(pid, Signal::TERM, &self.mark);
            }
        }
        let deadline = Instant::now() + grace;
        let mut loops = Vec::new();
        for r in std::mem::take(&mut self.running) {
            let mut killed = false;
            while !r.thread.is_finished() {
                let pid = *r.pid.lock().unwrap();
                if let Some(pid) = pid.filter(|_| Instant::now() >= deadline && !killed) {
                    killed = procs::kill9(pid, procs::Kind::Worker, &self.mark);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            loops.push(Loop {
                host: r.host,
                exits: r.thread.join().unwrap(),
                killed_at_stop: killed,
            });
        }
        loops
    }
}

impl Drop for Supervisor {
    /// A test that fails half-way leaves no worker, run or agent behind.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        procs::kill_all(&self.mark);
        for r in std::mem::take(&mut self.running) {
            let _ = r.thread.join();
        }
    }
}
