//! `runner watch` against a run of an 800-chunk plan, in a real terminal (tmux, 120×40):
//!
//! - latency: the agent prints a line (the bench writes it into a FIFO the agent copies to its
//!   output, so it lands in the session's log as any agent line does), and the clock runs until
//!   the line is on the screen (`tmux capture-pane`, polled every 20 ms); over `LINES` lines,
//!   target: every one within 1 s;
//! - cost: the watch process's CPU time (utime + stime of `/proc/<pid>/stat`) over `IDLE`
//!   seconds while nothing changes (the run is alive, its agent silent; watch still redraws the
//!   run's elapsed time every second and reads `status` again at the run's heartbeat), target:
//!   under 2 % of one core.
//!
//! The plan: 8 phases × 100 chunks, the first 40 completed, Auto-Claude's fields on each. The
//! runner binary is this build's (`cargo bench`: release). `cargo bench --bench watch` prints
//! a `TARGET` line per target and exits 1 when one is missed (2 on an error); `cargo test
//! --benches` runs a smoke version (3 lines, 2 s, no verdicts). Without tmux it says `NOT RUN`
//! and passes, except under CI (`CI` set), where tmux must be there (`scripts/install-tmux`).

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::{RUNNER, empty_config_home, runner_command};

const LINES: usize = 20;
const IDLE: Duration = Duration::from_secs(10);
const LATENCY_TARGET: Duration = Duration::from_secs(1);
const CPU_TARGET_PERCENT: f64 = 2.0;
const SPEC: &str = "001-big";

fn main() -> ExitCode {
    let full = std::env::args().any(|a| a == "--bench");
    if !have_tmux() {
        return ExitCode::SUCCESS;
    }
    let bench = match Bench::start() {
        Ok(bench) => bench,
        Err(e) => {
            eprintln!("watch bench: {e}");
            return ExitCode::from(2);
        }
    };
    let result = bench.measure(
        if full { LINES } else { 3 },
        if full { IDLE } else { Duration::from_secs(2) },
    );
    drop(bench);
    match result {
        Err(e) => {
            eprintln!("watch bench: {e}");
            ExitCode::from(2)
        }
        Ok((latencies, cpu)) => report(full, &latencies, cpu),
    }
}

fn have_tmux() -> bool {
    if Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    assert!(
        !ci,
        "watch bench: tmux is missing: CI must have it (scripts/install-tmux)"
    );
    eprintln!("NOT RUN: watch bench: tmux is not installed (scripts/install-tmux)");
    false
}

fn report(full: bool, latencies: &[Duration], cpu: f64) -> ExitCode {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    let worst = *sorted.last().unwrap_or(&Duration::ZERO);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();
    println!(
        "watch: new agent line on screen: median {:.0} ms, worst {:.0} ms over {} lines",
        median.as_secs_f64() * 1e3,
        worst.as_secs_f64() * 1e3,
        latencies.len()
    );
    println!("watch: CPU while nothing changes: {cpu:.2} % of one core");
    if !full {
        println!("watch: smoke test only (cargo bench --bench watch gives the verdicts)");
        return ExitCode::SUCCESS;
    }
    let latency_met = worst <= LATENCY_TARGET;
    let cpu_met = cpu < CPU_TARGET_PERCENT;
    println!(
        "TARGET new line within 1 s: worst {:.0} ms — {}",
        worst.as_secs_f64() * 1e3,
        if latency_met { "met" } else { "MISSED" }
    );
    println!(
        "TARGET under 2 % of a core when idle: {cpu:.2} % — {}",
        if cpu_met { "met" } else { "MISSED" }
    );
    if latency_met && cpu_met {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

struct Bench {
    dir: tempfile::TempDir,
    socket: String,
    run: Child,
    fifo: Option<std::fs::File>,
}

impl Bench {
    /// The repository, the run (its agent waiting on the FIFO) and watch in tmux.
    fn start() -> Result<Bench, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join(format!(".auto-claude/specs/{SPEC}")))
            .map_err(|e| e.to_string())?;
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["config", "user.name", "Bench"],
            &["config", "user.email", "bench@example.com"],
            &["commit", "-q", "--allow-empty", "-m", "initial"],
        ] {
            git(&root, args)?;
        }
        let spec_dir = root.join(format!(".auto-claude/specs/{SPEC}"));
        std::fs::write(spec_dir.join("spec.md"), "# Big\n\nMany chunks.\n")
            .map_err(|e| e.to_string())?;
        std::fs::write(spec_dir.join("implementation_plan.json"), plan())
            .map_err(|e| e.to_string())?;
        let fifo = dir.path().join("agent-lines");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .map_err(|e| format!("mkfifo: {e}"))?;
        let agent = dir.path().join("agent");
        std::fs::write(
            &agent,
            "#!/bin/sh\ncat >/dev/null\nexec cat \"$BENCH_FIFO\"\n",
        )
        .map_err(|e| e.to_string())?;
        std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .map_err(|e| e.to_string())?;
        let config_home = empty_config_home();
        let run = runner_command()
            .args(["run", "--spec", SPEC, "--auto-continue", "--agent-command"])
            .arg(&agent)
            .current_dir(&root)
            .env("BENCH_FIFO", &fifo)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("runner run: {e}"))?;
        let socket = format!("runner-watch-bench-{}", std::process::id());
        let mut bench = Bench {
            dir,
            socket,
            run,
            fifo: None,
        };
        // Blocks until the agent opens the FIFO: the run and its session are under way.
        bench.fifo = Some(
            std::fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .map_err(|e| e.to_string())?,
        );
        let watch = format!(
            "XDG_CONFIG_HOME='{}' exec '{}' watch",
            config_home.display(),
            RUNNER
        );
        let out = bench
            .tmux()
            .args(["new-session", "-d", "-x", "120", "-y", "40", "-c"])
            .arg(&root)
            .arg(&watch)
            .output()
            .map_err(|e| format!("tmux: {e}"))?;
        if !out.status.success() {
            return Err(format!("tmux: {}", String::from_utf8_lossy(&out.stderr)));
        }
        bench.wait_screen(
            |s| s.contains(SPEC) && s.contains("running"),
            Duration::from_secs(30),
        )?;
        Ok(bench)
    }

    fn tmux(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &self.socket, "-f", "/dev/null"]);
        cmd
    }

    fn screen(&self) -> String {
        self.tmux()
            .args(["capture-pane", "-p"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// Poll the screen every 20 ms until `cond`; how long it took.
    fn wait_screen(
        &self,
        cond: impl Fn(&str) -> bool,
        limit: Duration,
    ) -> Result<Duration, String> {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if cond(&screen) {
                return Ok(start.elapsed());
            }
            if start.elapsed() > limit {
                return Err(format!("timed out; the screen:\n{screen}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn measure(&self, lines: usize, idle: Duration) -> Result<(Vec<Duration>, f64), String> {
        let mut fifo = self.fifo.as_ref().ok_or("no FIFO")?;
        let mut latencies = Vec::new();
        for n in 1..=lines {
            let line = format!("BENCH-LINE-{n} the agent is working\n");
            let start = Instant::now();
            fifo.write_all(line.as_bytes()).map_err(|e| e.to_string())?;
            let text = format!("BENCH-LINE-{n} ");
            self.wait_screen(|s| s.contains(&text), Duration::from_secs(10))?;
            latencies.push(start.elapsed());
            // Lines a person can read: a few a second.
            std::thread::sleep(Duration::from_millis(150));
        }
        let pid = self.watch_pid()?;
        // Settled: the last line drawn, nothing changing.
        std::thread::sleep(Duration::from_millis(1500));
        let before = cpu_ticks(pid)?;
        let start = Instant::now();
        std::thread::sleep(idle);
        let ticks = cpu_ticks(pid)? - before;
        let secs = start.elapsed().as_secs_f64();
        // SAFETY: sysconf reads a constant of the system; no memory is passed.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        Ok((latencies, ticks as f64 / hz / secs * 100.0))
    }

    fn watch_pid(&self) -> Result<u32, String> {
        let out = self
            .tmux()
            .args(["display-message", "-p", "#{pane_pid}"])
            .output()
            .map_err(|e| e.to_string())?;
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .map_err(|e| format!("the pane's pid: {e}"))
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").output();
        // SIGTERM: the run stops its agent and ends as interrupted.
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(self.run.id() as i32).expect("a child's pid"),
            rustix::process::Signal::TERM,
        );
        self.fifo = None;
        let _ = self.run.wait();
        let _ = &self.dir;
    }
}

/// utime + stime of process `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> Result<u64, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| e.to_string())?;
    // The fields after the command's name, which is in parentheses and may hold spaces.
    let after = stat.rsplit_once(") ").ok_or("an unreadable /proc stat")?.1;
    let fields: Vec<&str> = after.split(' ').collect();
    let field = |i: usize| -> Result<u64, String> {
        fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| "an unreadable /proc stat".to_string())
    };
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    Ok(field(11)? + field(12)?)
}

fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// 8 phases × 100 chunks, the first 40 completed.
fn plan() -> String {
    let phases: Vec<serde_json::Value> = (1..=8)
        .map(|p| {
            let chunks: Vec<serde_json::Value> = (1..=100)
                .map(|c| {
                    serde_json::json!({
                        "id": format!("subtask-{p}-{c}"),
                        "description": format!("Build piece {c} of part {p}: the handler, its tests and the docs"),
                        "service": "backend",
                        "files_to_modify": [format!("src/part{p}/piece{c}.rs")],
                        "files_to_create": [],
                        "patterns_from": ["src/lib.rs"],
                        "verification": {"type": "command", "command": "true", "expected": "exit 0"},
                        "status": if p == 1 && c <= 40 { "completed" } else { "pending" },
                    })
                })
                .collect();
            serde_json::json!({
                "id": format!("phase-{p}"),
                "name": format!("Part {p}"),
                "depends_on": if p == 1 { vec![] } else { vec![format!("phase-{}", p - 1)] },
                "subtasks": chunks,
            })
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({
        "feature": "Big",
        "workflow_type": "feature",
        "phases": phases,
    }))
    .expect("a plan")
}
