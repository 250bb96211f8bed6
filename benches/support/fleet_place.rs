//! The fleet bench's place: bare remotes in a temp folder (served by `git daemon` on loopback
//! when asked), clones of them as hosts with a fake agent, workers started and stopped, and
//! the CPU of a worker's processes read from `/proc`. Included by `benches/fleet.rs` only.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How the hosts reach the remote.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Transport {
    File,
    Daemon,
}

/// Bare remotes in a temp folder, each on `main` with one commit, served by `git daemon` on
/// loopback for `Transport::Daemon`.
pub(crate) struct Place {
    _tmp: tempfile::TempDir,
    pub(crate) base: PathBuf,
    daemon: Option<Daemon>,
}

impl Place {
    pub(crate) fn new(transport: Transport, bares: &[&str]) -> anyhow::Result<Place> {
        let tmp = tempfile::Builder::new()
            .prefix("runner-fleet-bench-")
            .tempdir()?;
        let base = tmp.path().canonicalize()?;
        let seed = base.join("seed");
        std::fs::create_dir_all(&seed)?;
        git(&seed, &["init", "-q", "-b", "main"])?;
        std::fs::write(seed.join("README.md"), "# bench\n")?;
        git(&seed, &["add", "-A"])?;
        git(
            &seed,
            &[
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@example.com",
                "commit",
                "-q",
                "-m",
                "initial",
            ],
        )?;
        for bare in bares {
            git(&base, &["init", "-q", "--bare", "-b", "main", bare])?;
            git(
                &seed,
                &["push", "-q", &base.join(bare).display().to_string(), "main"],
            )?;
        }
        let daemon = match transport {
            Transport::File => None,
            Transport::Daemon => Some(Daemon::start(&base)?),
        };
        Ok(Place {
            _tmp: tmp,
            base,
            daemon,
        })
    }

    pub(crate) fn url(&self, bare: &str) -> String {
        match &self.daemon {
            Some(d) => format!("git://127.0.0.1:{}/{bare}", d.port),
            None => format!("file://{}", self.base.join(bare).display()),
        }
    }

    /// A clone of `bare` in `name`, with a committer.
    pub(crate) fn clone_of(&self, bare: &str, name: &str) -> anyhow::Result<PathBuf> {
        git(&self.base, &["clone", "-q", &self.url(bare), name])?;
        let root = self.base.join(name);
        git(&root, &["config", "user.name", "Bench"])?;
        git(&root, &["config", "user.email", "bench@example.com"])?;
        Ok(root)
    }

    /// A host: a clone with `[fleet] lease_secs` and the fake agent's `script`.
    pub(crate) fn host(
        &self,
        bare: &str,
        name: &str,
        lease_secs: u64,
        script: &str,
    ) -> anyhow::Result<Host> {
        let root = self.clone_of(bare, name)?;
        std::fs::create_dir_all(root.join(".auto-claude"))?;
        std::fs::write(
            root.join(".auto-claude/config.toml"),
            format!("[fleet]\nlease_secs = {lease_secs}\n"),
        )?;
        let script_file = self.base.join(format!("{name}.script"));
        std::fs::write(&script_file, format!("{script}\n"))?;
        Ok(Host {
            root,
            script: script_file,
            log: self.base.join(format!("{name}.stderr")),
        })
    }
}

pub(crate) struct Host {
    root: PathBuf,
    script: PathBuf,
    log: PathBuf,
}

impl Host {
    /// `runner worker EXTRA` with the fake agent, in a process group of its own.
    pub(crate) fn worker(&self, extra: &[&str]) -> anyhow::Result<Worker> {
        use std::os::unix::process::CommandExt;
        let agent = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/fake-agent");
        let child = crate::support::runner_command()
            .args(["worker", "--agent-command", agent])
            .args(extra)
            .current_dir(&self.root)
            .env("FAKE_AGENT_SCRIPT", &self.script)
            .env("FAKE_AGENT_HOST", "bench")
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&self.log)?)
            .spawn()?;
        Ok(Worker {
            child,
            log: self.log.clone(),
        })
    }
}

/// A worker; killed with its process group (its runs; their agents die with them) on `stop`.
pub(crate) struct Worker {
    pub(crate) child: Child,
    log: PathBuf,
}

impl Worker {
    /// What the worker said on stderr so far.
    pub(crate) fn said(&self) -> String {
        format!(
            "the worker said: {}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        )
    }

    /// An error with what it said if the worker has exited.
    pub(crate) fn alive(&mut self) -> anyhow::Result<()> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => anyhow::bail!(
                "the worker exited ({status}): {}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            ),
        }
    }

    pub(crate) fn stop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `git daemon` serving a folder on loopback at a free port, killed (its group) when dropped.
struct Daemon {
    pub(crate) child: Child,
    port: u16,
}

impl Daemon {
    fn start(base: &Path) -> anyhow::Result<Daemon> {
        use std::os::unix::process::CommandExt;
        for _ in 0..5 {
            let port = std::net::TcpListener::bind(("127.0.0.1", 0))?
                .local_addr()?
                .port();
            let child = Command::new("git")
                .arg("daemon")
                .arg("--reuseaddr")
                .arg(format!("--base-path={}", base.display()))
                .args([
                    "--export-all",
                    "--enable=receive-pack",
                    "--listen=127.0.0.1",
                ])
                .arg(format!("--port={port}"))
                .arg(base)
                .process_group(0)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            let mut daemon = Daemon { child, port };
            let url = format!("git://127.0.0.1:{port}/");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && daemon.child.try_wait()?.is_none() {
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Ok(daemon);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = url;
            drop(daemon);
        }
        anyhow::bail!("git daemon did not answer on 127.0.0.1")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = self.child.wait();
    }
}

pub(crate) fn git(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("git").args(args).current_dir(dir).output()?;
    anyhow::ensure!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// The refs of the bare repository `bare` under `prefix`.
pub(crate) fn refs(bare: &Path, prefix: &str) -> anyhow::Result<Vec<String>> {
    let out = Command::new("git")
        .args(["for-each-ref", "--format=%(refname)", prefix])
        .current_dir(bare)
        .output()?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

/// Poll `cond` every 100 ms until it holds; an error naming `what` after `limit`.
pub(crate) fn wait(
    limit: Duration,
    what: &str,
    mut cond: impl FnMut() -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while !cond()? {
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

pub(crate) struct Ticks {
    pub(crate) own: u64,
    pub(crate) children: u64,
}

/// The CPU of process `pid` and of its descendants that are runner (a worker's runs), in
/// clock ticks: their own utime + stime, and their reaped children's (cutime + cstime: the
/// git processes they ran).
pub(crate) fn cpu_ticks(pid: u32) -> anyhow::Result<Ticks> {
    let mut total = Ticks {
        own: 0,
        children: 0,
    };
    for p in runner_descendants(pid)? {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some((_, after)) = stat.rsplit_once(')') else {
            continue;
        };
        let f: Vec<u64> = after
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        // `after` starts at field 3: utime, stime, cutime, cstime are fields 14–17.
        total.own += f.get(11).unwrap_or(&0) + f.get(12).unwrap_or(&0);
        total.children += f.get(13).unwrap_or(&0) + f.get(14).unwrap_or(&0);
    }
    Ok(total)
}

/// `pid` and every process below it whose program is runner.
pub(crate) fn runner_descendants(pid: u32) -> anyhow::Result<Vec<u32>> {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let Some(p) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, a)| a.split_whitespace().nth(1))
            .and_then(|x| x.parse::<u32>().ok())
            .unwrap_or(0);
        parent_of.push((p, ppid));
    }
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    let is_runner = |p: &u32| {
        std::fs::read(format!("/proc/{p}/cmdline"))
            .is_ok_and(|c| c.split(|b| *b == 0).next() == Some(crate::support::RUNNER.as_bytes()))
    };
    Ok(found.into_iter().filter(is_runner).collect())
}

/// Clock ticks per second (what `/proc/<pid>/stat` counts in).
pub(crate) fn clock_hz() -> f64 {
    // SAFETY: sysconf reads a constant of the system; no memory is passed.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}
