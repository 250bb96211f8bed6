//! The fleet on one machine: a bare repository as the remote (reachable as `file://` and through
//! `git daemon`), hosts that are separate clones of it with a config and a fake agent of their
//! own, and a desk clone where specs are written and submitted.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// The environment variable every process of a fleet carries (workers, their runs, agents, the
/// agents' children): how the tests find them in `/proc`, and the proof that none is left.
pub const MARK_VAR: &str = "RUNNER_FLEET_PROOF_MARK";

/// The bare repository the hosts share, with a `post-receive` hook that appends every accepted
/// ref update to `updates.log` (`<unix time> <client address or local> <ref> <old> <new>`):
/// what reached the remote, told by the remote itself rather than by the workers.
pub struct Remote {
    /// Held for its drop: the remote, the hosts and their logs go with the test.
    _tmp: tempfile::TempDir,
    pub bare: PathBuf,
    daemon: Option<Daemon>,
    /// What every process of this fleet carries in [`MARK_VAR`].
    pub mark: String,
}

impl Remote {
    /// A bare repository on `main` with one commit, named after `test` (the mark).
    pub fn new(test: &str) -> Remote {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let bare = base.join("remote.git");
        git_in(&base, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
        let seed = base.join("seed");
        std::fs::create_dir_all(&seed).unwrap();
        git_in(&seed, &["init", "-q", "-b", "main"]);
        std::fs::write(seed.join("README.md"), "# fleet\n").unwrap();
        git_in(&seed, &["add", "-A"]);
        let id = ["-c", "user.name=Seed", "-c", "user.email=seed@example.com"];
        git_in(
            &seed,
            &[&id[..], &["commit", "-q", "-m", "initial"]].concat(),
        );
        git_in(&seed, &["push", "-q", bare.to_str().unwrap(), "main"]);
        std::fs::remove_dir_all(&seed).unwrap();
        let log = base.join("updates.log");
        let hook = bare.join("hooks/post-receive");
        std::fs::write(
            &hook,
            format!(
                "#!/bin/sh\nwhile read old new ref; do\n  echo \"$(date +%s.%N) ${{REMOTE_ADDR:-local}} $ref $old $new\"\ndone >>'{}'\n",
                log.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let leaf = base.file_name().unwrap().to_string_lossy().into_owned();
        let mark = format!("{test}-{leaf}");
        Remote {
            _tmp: tmp,
            bare,
            daemon: None,
            mark,
        }
    }

    pub fn base(&self) -> PathBuf {
        self.bare.parent().unwrap().to_path_buf()
    }

    pub fn file_url(&self) -> String {
        format!("file://{}", self.bare.display())
    }

    /// Serve the bare repository with `git daemon` on `addr` (pushes allowed) at a free port;
    /// returns its `git://` URL once it answers. The daemon dies with the `Remote`.
    pub fn serve(&mut self, addr: &str) -> String {
        let daemon = Daemon::start(&self.base(), addr);
        let url = format!("git://{addr}:{}/remote.git", daemon.port);
        self.daemon = Some(daemon);
        url
    }

    /// Leave the remote, the hosts and their logs on disk when the test ends (a failed proof
    /// is read from them: the hook's log, every worker's stderr, each clone's refs); where.
    pub fn keep_files(&mut self) -> PathBuf {
        self._tmp.disable_cleanup(true);
        self.base()
    }

    /// The hook's log: every accepted ref update, in order.
    pub fn updates(&self) -> Vec<Update> {
        std::fs::read_to_string(self.base().join("updates.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(Update::parse)
            .collect()
    }

    /// A clone of the remote at `url`: a host (or the desk) named `name`.
    pub fn host(&self, name: &str, url: &str, lease_secs: u64) -> Host {
        let dir = self.base().join("hosts").join(name);
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        git_in(&dir, &["clone", "-q", url, "repo"]);
        let root = dir.join("repo");
        git_in(&root, &["config", "user.name", &format!("Host {name}")]);
        git_in(
            &root,
            &["config", "user.email", &format!("{name}@example.com")],
        );
        let host = Host {
            name: name.to_string(),
            dir,
            root,
            mark: self.mark.clone(),
        };
        host.write(
            ".auto-claude/config.toml",
            &format!("[fleet]\nlease_secs = {lease_secs}\n"),
        );
        host
    }
}

/// One accepted ref update, as the remote's hook logged it.
#[derive(Debug, Clone)]
pub struct Update {
    pub at: f64,
    pub from: String,
    pub reference: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

impl Update {
    fn parse(line: &str) -> Option<Update> {
        let f: Vec<&str> = line.split(' ').collect();
        let [at, from, reference, old, new] = f.as_slice() else {
            return None;
        };
        let oid = |s: &str| (!s.bytes().all(|b| b == b'0')).then(|| s.to_string());
        Some(Update {
            at: at.parse().ok()?,
            from: from.to_string(),
            reference: reference.to_string(),
            old: oid(old),
            new: oid(new),
        })
    }
}

/// `git daemon` serving a folder, in a process group of its own (its per-connection children
/// too): killed, group and all, when dropped, so a failing test leaves none behind.
pub struct Daemon {
    child: Child,
    pub port: u16,
}

impl Daemon {
    fn start(base: &Path, addr: &str) -> Daemon {
        let mut tries = 0;
        loop {
            tries += 1;
            // A free port now; another process may take it before the daemon binds, so a
            // daemon that does not answer is retried on a new one.
            let port = std::net::TcpListener::bind((addr, 0))
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            use std::os::unix::process::CommandExt;
            let child = Command::new("git")
                .arg("daemon")
                .arg("--reuseaddr")
                .arg(format!("--base-path={}", base.display()))
                .arg("--export-all")
                .arg("--enable=receive-pack")
                .arg("--informative-errors")
                .arg(format!("--listen={addr}"))
                .arg(format!("--port={port}"))
                .arg(base)
                .process_group(0)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut daemon = Daemon { child, port };
            let url = format!("git://{addr}:{port}/remote.git");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if daemon.child.try_wait().unwrap().is_some() {
                    break;
                }
                if git_result(base, &["ls-remote", &url]).is_ok() {
                    return daemon;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            drop(daemon);
            assert!(
                tries < 5,
                "git daemon did not answer on {addr} after {tries} tries"
            );
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // The whole group: the daemon and the receive-pack/upload-pack it forked.
        let _ = rustix::process::kill_process_group(
            rustix::process::Pid::from_raw(self.child.id() as i32).unwrap(),
            rustix::process::Signal::KILL,
        );
        let _ = self.child.wait();
    }
}

/// A host: a clone of the remote with its own `.auto-claude/config.toml`, agent script and log
/// folder.
#[derive(Clone)]
pub struct Host {
    pub name: String,
    /// The host's own folder: `repo/` (the clone), `logs/`, the agent's script and log.
    pub dir: PathBuf,
    pub root: PathBuf,
    mark: String,
}

impl Host {
    pub fn write(&self, rel: &str, text: &str) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn git(&self, args: &[&str]) -> String {
        git_in(&self.root, args)
    }

    /// The fake agent's script for every session on this host (see fixtures/fake-agent).
    pub fn script(&self, rules: &str) {
        std::fs::write(self.dir.join("agent-script"), rules).unwrap();
    }

    /// The sessions the fake agent started on this host: `role chunk attempt session pid`.
    pub fn agent_log(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("agent-log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The environment of every runner started on this host: the fake agent wired in, the
    /// fleet's mark, and nothing of a surrounding run.
    pub fn environ(&self, cmd: &mut Command) {
        cmd.current_dir(&self.root)
            .env("FAKE_AGENT_SCRIPT", self.dir.join("agent-script"))
            .env("FAKE_AGENT_LOG", self.dir.join("agent-log"))
            .env("FAKE_AGENT_PLAN", fixture("plans/two-phases.json"))
            .env("FAKE_AGENT_HOST", &self.name)
            .env(MARK_VAR, &self.mark)
            .env_remove("RUNNER_SPEC_DIR")
            .env_remove("RUNNER_CHUNK_ID")
            .env_remove("RUNNER_SESSION_ID")
            .stdin(Stdio::null());
    }

    /// The arguments of a worker that keeps polling with the fake agent (after `runner`).
    pub fn worker_args(extra: &[&str]) -> Vec<String> {
        let mut args = vec![
            "worker".to_string(),
            "--agent-command".to_string(),
            fixture("fake-agent").display().to_string(),
            "--json".to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }

    /// A spec in this clone whose plan has `phases` phases of `chunks` chunks each (ids
    /// `p<i>-c<j>`; each phase depends on the one before), so no planner runs.
    pub fn add_planned_spec(&self, spec: &str, phases: usize, chunks: usize) {
        self.write(
            &format!(".auto-claude/specs/{spec}/spec.md"),
            &format!("# {spec}\n\nBuild the thing.\n"),
        );
        self.write(
            &format!(".auto-claude/specs/{spec}/implementation_plan.json"),
            &plan_json(phases, chunks),
        );
    }

    /// `runner submit --spec SPEC` from this clone; the test fails if it does.
    pub fn submit(&self, spec: &str) {
        let mut cmd = runner_command();
        cmd.args(["submit", "--spec", spec]);
        self.environ(&mut cmd);
        assert_exit(&cmd.output().unwrap(), 0);
    }

    /// A file for a worker's output: `logs/<name>`.
    pub fn log_file(&self, name: &str) -> PathBuf {
        self.dir.join("logs").join(name)
    }
}

/// A plan of `phases` phases with `chunks` chunks each, all pending, without verification
/// commands (the agent's mark is the chunk's end).
pub fn plan_json(phases: usize, chunks: usize) -> String {
    let phases: Vec<serde_json::Value> = (1..=phases)
        .map(|p| {
            let subtasks: Vec<serde_json::Value> = (1..=chunks)
                .map(|c| {
                    serde_json::json!({
                        "id": format!("p{p}-c{c}"),
                        "description": format!("Part {c} of phase {p}"),
                        "status": "pending",
                    })
                })
                .collect();
            let depends: Vec<String> = (p > 1).then(|| format!("phase-{}", p - 1)).into_iter().collect();
            serde_json::json!({"id": format!("phase-{p}"), "name": format!("Phase {p}"), "depends_on": depends, "subtasks": subtasks})
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({"feature": "fleet", "phases": phases}))
        .unwrap()
}
