//! `runner worker`: specs published on a bare remote (file://) built by workers, each in a
//! `git clone` of its own (a host), with the fake agent: every chunk published as one commit,
//! the plan published complete, the lease released; `--exit-when-idle`; one worker per clone;
//! two workers racing for the same specs never build one twice. Fencing, takeovers and usage
//! limits are in `worker_fencing.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

/// A bare repository as the remote, and the repository specs are submitted from.
pub struct Fleet {
    pub tmp: tempfile::TempDir,
    pub remote: PathBuf,
    pub origin: TestRepo,
}

/// A clone of the remote where a worker runs, with its own fake agent script and logs.
pub struct Host {
    pub root: PathBuf,
    pub dir: PathBuf,
}

impl Fleet {
    pub fn new() -> Fleet {
        let tmp = tempfile::tempdir().unwrap();
        let remote = tmp.path().join("remote.git");
        git_in(
            tmp.path(),
            &["init", "-q", "--bare", "-b", "main", "remote.git"],
        );
        let origin = TestRepo::new();
        origin.git(&["remote", "add", "origin", &url(&remote)]);
        origin.git(&["push", "-q", "origin", "main"]);
        Fleet {
            tmp,
            remote,
            origin,
        }
    }

    /// Publish spec `spec` (its folder with `spec.md`, and the two-phase plan when
    /// `planned`) on the remote with `runner submit`.
    pub fn submit(&self, spec: &str, planned: bool) {
        let dir = self.origin.add_spec(spec);
        if planned {
            std::fs::copy(
                fixture("plans/two-phases.json"),
                dir.join("implementation_plan.json"),
            )
            .unwrap();
        }
        let out = self.origin.runner(&["submit", "--spec", spec]);
        assert_exit(&out, 0);
    }

    /// Publish the folder `dir` as spec `spec`'s, whatever it holds (`runner submit` would
    /// refuse a spec it cannot run): its files as a commit under `refs/runner/specs/<spec>`.
    pub fn submit_folder(&self, spec: &str, dir: &Path) {
        let index = self.tmp.path().join(format!("index-{spec}"));
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .args(["--work-tree", dir.to_str().unwrap()])
                .args(args)
                .current_dir(&self.origin.root)
                .env("GIT_INDEX_FILE", &index)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
            stdout(&out).trim().to_string()
        };
        git(&["add", "-A", "."]);
        let tree = git(&["write-tree"]);
        let commit = git(&["commit-tree", &tree, "-m", &format!("submit {spec}")]);
        self.origin.git(&[
            "push",
            "-q",
            "origin",
            &format!("{commit}:refs/runner/specs/{spec}"),
        ]);
    }

    /// `git ARGS` in the bare remote; `None` when it fails (a ref that is not there).
    pub fn remote_git(&self, args: &[&str]) -> Option<String> {
        git_result(&self.remote, args).ok()
    }

    /// The commit subjects of the spec's branch on the remote after main, oldest first.
    pub fn branch_log(&self, spec: &str) -> Vec<String> {
        self.remote_git(&[
            "log",
            "--reverse",
            "--format=%s",
            &format!("main..auto-claude/{spec}"),
        ])
        .map(|out| out.lines().map(str::to_string).collect())
        .unwrap_or_default()
    }

    /// The plan published for `spec`, if any.
    pub fn published_plan(&self, spec: &str) -> Option<Value> {
        let text = self.remote_git(&[
            "show",
            &format!("refs/runner/specs/{spec}:implementation_plan.json"),
        ])?;
        serde_json::from_str(&text).ok()
    }

    /// Each chunk's status in the published plan, in file order.
    pub fn published_statuses(&self, spec: &str) -> Vec<(String, String)> {
        let Some(plan) = self.published_plan(spec) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for phase in plan["phases"].as_array().into_iter().flatten() {
            let chunks = phase.get("subtasks").or_else(|| phase.get("chunks"));
            for c in chunks.and_then(Value::as_array).into_iter().flatten() {
                out.push((
                    c["id"].as_str().unwrap_or("").to_string(),
                    c["status"].as_str().unwrap_or("").to_string(),
                ));
            }
        }
        out
    }

    pub fn published_complete(&self, spec: &str) -> bool {
        let statuses = self.published_statuses(spec);
        !statuses.is_empty() && statuses.iter().all(|(_, s)| s == "completed")
    }

    /// The commit a ref of the remote points at.
    pub fn remote_ref(&self, name: &str) -> Option<String> {
        self.remote_git(&["rev-parse", "--verify", "-q", name])
            .map(|s| s.trim().to_string())
    }

    /// A clone of the remote as a host: `name` (a folder of the fleet's), configured with
    /// the fake agent (through a wrapper that logs every session's spec) and `config`.
    pub fn host(&self, name: &str, config: &str) -> Host {
        let dir = self.tmp.path().join(format!("{name}-files"));
        std::fs::create_dir_all(&dir).unwrap();
        git_in(self.tmp.path(), &["clone", "-q", &url(&self.remote), name]);
        let root = self.tmp.path().join(name).canonicalize().unwrap();
        git_in(&root, &["config", "user.name", "Worker"]);
        git_in(&root, &["config", "user.email", "worker@example.com"]);
        let wrapper = dir.join("agent.sh");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\necho \"$RUNNER_SPEC $RUNNER_ROLE ${{RUNNER_CHUNK_ID:-}} $(date +%s.%N)\" >> '{}'\nexec '{}' \"$@\"\n",
                dir.join("sessions.log").display(),
                fixture("fake-agent").display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let host = Host { root, dir };
        host.write(
            ".auto-claude/config.toml",
            &format!("[agent]\ncommand = \"{}\"\n{config}", wrapper.display()),
        );
        host.script("* * done\n");
        host
    }
}

/// A path as a file:// URL.
pub fn url(path: &Path) -> String {
    format!("file://{}", path.display())
}

impl Host {
    pub fn write(&self, rel: &str, text: &str) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// The fake agent's script on this host.
    pub fn script(&self, rules: &str) {
        std::fs::write(self.dir.join("agent-script"), rules).unwrap();
    }

    /// `runner ARGS` in this clone, with the fake agent's variables set.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = runner_command();
        cmd.args(args)
            .current_dir(&self.root)
            .env("FAKE_AGENT_SCRIPT", self.dir.join("agent-script"))
            .env("FAKE_AGENT_LOG", self.dir.join("agent-log"))
            .env("FAKE_AGENT_PLAN", fixture("plans/two-phases.json"))
            .env_remove("RUNNER_SPEC_DIR")
            .env_remove("RUNNER_CHUNK_ID")
            .env_remove("RUNNER_SESSION_ID")
            .stdin(Stdio::null());
        cmd
    }

    pub fn runner(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// `runner worker ARGS` in the background, its stdout and stderr to files of this host.
    pub fn start_worker(&self, args: &[&str]) -> Child {
        let mut all = vec!["worker"];
        all.extend_from_slice(args);
        self.cmd(&all)
            .stdout(std::fs::File::create(self.dir.join("worker.out")).unwrap())
            .stderr(std::fs::File::create(self.dir.join("worker.err")).unwrap())
            .spawn()
            .unwrap()
    }

    pub fn worker_stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("worker.err")).unwrap_or_default()
    }

    pub fn worker_stdout(&self) -> String {
        std::fs::read_to_string(self.dir.join("worker.out")).unwrap_or_default()
    }

    /// Every session's (spec, role, chunk, start time in seconds) on this host.
    pub fn sessions(&self) -> Vec<(String, String, String, f64)> {
        std::fs::read_to_string(self.dir.join("sessions.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (
                    f[0].to_string(),
                    f[1].to_string(),
                    f[2].to_string(),
                    f[3].parse().unwrap_or(0.0),
                )
            })
            .collect()
    }
}

/// Wait for `cond`, polling, up to `secs` seconds; fail naming `what`.
pub fn wait_long(what: &str, secs: u64, cond: impl FnMut() -> bool) {
    wait_or(what, secs, cond, String::new);
}

/// [`wait_long`], failing with `explain()` too (the workers' stderr).
pub fn wait_or(
    what: &str,
    secs: u64,
    mut cond: impl FnMut() -> bool,
    explain: impl Fn() -> String,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n{}",
            explain()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Wait for `child` to exit, up to `secs` seconds (killed and failed after).
pub fn wait_exit(child: &mut Child, secs: u64) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the worker did not exit within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Ctrl-C for a background worker.
pub fn interrupt(child: &Child) {
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
}

const LEASE: &str = "[fleet]\nlease_secs = 4\n";

fn report(out: &Output) -> Value {
    serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(out), stderr(out)))
}

#[test]
fn a_worker_builds_two_submitted_specs_one_commit_per_chunk_and_publishes_them_complete() {
    let fleet = Fleet::new();
    fleet.submit("001-a", false);
    fleet.submit("002-b", true);
    let host = fleet.host("host1", LEASE);
    let out = host.runner(&["worker", "--exit-when-idle", "--json"]);
    assert_exit(&out, 0);
    let report = report(&out);
    let ends: BTreeMap<String, (String, bool)> = report["specs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["spec"].as_str().unwrap().to_string(),
                (
                    s["end"].as_str().unwrap().to_string(),
                    s["released"].as_bool().unwrap(),
                ),
            )
        })
        .collect();
    assert_eq!(
        ends,
        BTreeMap::from([
            ("001-a".to_string(), ("complete".to_string(), true)),
            ("002-b".to_string(), ("complete".to_string(), true)),
        ]),
        "{report}"
    );
    assert_eq!(report["leases_lost"], serde_json::json!([]));
    for spec in ["001-a", "002-b"] {
        // One commit per chunk, in plan order, on the remote's branch.
        let log = fleet.branch_log(spec);
        assert_eq!(log.len(), 3, "{spec}: {log:?}");
        for (subject, chunk) in log.iter().zip(["core-a", "core-b", "polish"]) {
            assert!(subject.contains(chunk), "{spec}: {log:?}");
        }
        assert!(
            fleet.published_complete(spec),
            "{spec}: {:?}",
            fleet.published_statuses(spec)
        );
        // Released: no lease left on the remote.
        assert_eq!(
            fleet.remote_ref(&format!("refs/runner/leases/{spec}")),
            None
        );
        // The published branch is the clone's, and the published folder has its run records.
        assert_eq!(
            fleet.remote_ref(&format!("auto-claude/{spec}")),
            Some(
                git_in(&host.root, &["rev-parse", &format!("auto-claude/{spec}")])
                    .trim()
                    .to_string()
            )
        );
        let runs = fleet
            .remote_git(&[
                "ls-tree",
                "--name-only",
                &format!("refs/runner/specs/{spec}"),
                "runs/",
            ])
            .unwrap_or_default();
        assert!(!runs.trim().is_empty(), "{spec}: no run record published");
    }
    // The specs were published after every chunk, not only at the end: the folder's history
    // has the submission, a publication per chunk at least, and the last.
    let history = fleet
        .remote_git(&["rev-list", "--count", "refs/runner/specs/002-b"])
        .unwrap();
    assert!(history.trim().parse::<u32>().unwrap() >= 4, "{history}");
    // Nothing is left to take: a second worker exits at once, having taken nothing.
    let again = host.runner(&["worker", "--exit-when-idle", "--json"]);
    assert_exit(&again, 0);
    assert_eq!(self::report(&again)["specs"], serde_json::json!([]));
}

#[test]
fn one_worker_per_clone_a_second_one_is_busy() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    let host = fleet.host("host1", LEASE);
    host.script("* * slow 5\n");
    let mut first = host.start_worker(&[]);
    wait_long("the first worker to take the spec", 30, || {
        fleet.remote_ref("refs/runner/leases/001-a").is_some()
    });
    let second = host.runner(&["worker", "--exit-when-idle"]);
    assert_exit(&second, 4);
    assert!(
        stderr(&second).contains("another runner worker works in this clone"),
        "{}",
        stderr(&second)
    );
    interrupt(&first);
    let status = wait_exit(&mut first, 60);
    assert_eq!(status.code(), Some(130), "{}", host.worker_stderr());
    // Ctrl-C drained the job, published what it did and released the lease.
    assert_eq!(
        fleet.remote_ref("refs/runner/leases/001-a"),
        None,
        "{}",
        host.worker_stderr()
    );
}

#[test]
fn two_workers_racing_for_the_same_specs_never_both_build_one() {
    let fleet = Fleet::new();
    let specs = ["001-a", "002-b", "003-c", "004-d"];
    for spec in specs {
        fleet.submit(spec, true);
    }
    let hosts = [fleet.host("host1", LEASE), fleet.host("host2", LEASE)];
    for host in &hosts {
        host.script("* * slow 0.3\n");
    }
    let mut workers: Vec<Child> = hosts
        .iter()
        .map(|h| h.start_worker(&["--exit-when-idle", "--json"]))
        .collect();
    for (worker, host) in workers.iter_mut().zip(&hosts) {
        let status = wait_exit(worker, 120);
        assert_eq!(status.code(), Some(0), "{}", host.worker_stderr());
    }
    // Every coder session of every chunk ran once, on one host or the other.
    let mut sessions: BTreeMap<(String, String), usize> = BTreeMap::new();
    for host in &hosts {
        for (spec, role, chunk, _) in host.sessions() {
            if role == "coder" {
                *sessions.entry((spec, chunk)).or_default() += 1;
            }
        }
    }
    assert_eq!(sessions.len(), specs.len() * 3, "{sessions:?}");
    assert!(sessions.values().all(|n| *n == 1), "{sessions:?}");
    for spec in specs {
        assert_eq!(fleet.branch_log(spec).len(), 3, "{spec}");
        assert!(fleet.published_complete(spec), "{spec}");
    }
    // Both worked (each took at least one spec), and the reports add up to every spec once.
    let taken: Vec<Vec<String>> = hosts
        .iter()
        .map(|h| {
            let report: Value = serde_json::from_str(&h.worker_stdout()).unwrap();
            report["specs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["spec"].as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    let mut all: Vec<String> = taken.concat();
    all.sort();
    assert_eq!(all, specs.map(str::to_string).to_vec(), "{taken:?}");
}

#[test]
fn a_remote_that_cannot_be_reached_is_exit_7_and_a_bad_jobs_count_exit_2() {
    let fleet = Fleet::new();
    let host = fleet.host("host1", LEASE);
    let gone = fleet.tmp.path().join("no-such-remote.git");
    git_in(&host.root, &["remote", "set-url", "origin", &url(&gone)]);
    let out = host.runner(&["worker", "--exit-when-idle", "--json"]);
    assert_exit(&out, 7);
    assert_eq!(
        self::report(&out)["error"]["kind"],
        "remote",
        "{}",
        stdout(&out)
    );
    let out = host.runner(&["worker", "--jobs", "0"]);
    assert_exit(&out, 2);
}

#[test]
fn a_spec_whose_run_fails_is_not_taken_again_until_its_folder_changes() {
    let fleet = Fleet::new();
    // No spec.md: every run of it refuses at once (exit 2).
    let dir = fleet.origin.add_spec("001-a");
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
    std::fs::remove_file(dir.join("spec.md")).unwrap();
    fleet.submit_folder("001-a", &dir);
    let host = fleet.host("host1", LEASE);
    let log = host.dir.join("failpoints.log");
    let fetches = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.ends_with(" worker_view_fetched"))
            .count()
    };
    let mut worker = host
        .cmd(&["worker", "--json"])
        .env("RUNNER_FAILPOINT_LOG", &log)
        .stdout(std::fs::File::create(host.dir.join("worker.out")).unwrap())
        .stderr(std::fs::File::create(host.dir.join("worker.err")).unwrap())
        .spawn()
        .unwrap();
    wait_long("the spec taken and let go", 60, || {
        host.worker_stderr().contains("Released spec 001-a")
    });
    // Three more looks at the remote, each of which would have taken it again.
    let seen = fetches();
    wait_long("three more fetches", 60, || fetches() >= seen + 3);
    interrupt(&worker);
    let status = wait_exit(&mut worker, 60);
    assert_eq!(status.code(), Some(130), "{}", host.worker_stderr());
    let report: Value = serde_json::from_str(&host.worker_stdout()).unwrap();
    let specs = report["specs"].as_array().unwrap();
    assert_eq!(specs.len(), 1, "taken once: {report}");
    assert_eq!(specs[0]["exit_code"], 2, "{report}");
    assert_eq!(specs[0]["released"], true, "{report}");
    assert_eq!(fleet.remote_ref("refs/runner/leases/001-a"), None);
}
