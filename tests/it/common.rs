//! Test harness: a real git repository in a temp folder, the real runner binary, and the
//! scriptable fake agent from fixtures/.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub const RUNNER: &str = env!("CARGO_BIN_EXE_runner");

/// runner as its prompts and its agents' permission rules name it: its absolute path, as one
/// shell word.
pub fn runner_word() -> String {
    shell_words::quote(RUNNER).into_owned()
}

/// The user-level config folder (`XDG_CONFIG_HOME`) of every runner the tests start: an empty
/// folder of the test build, so that a developer's own `~/.config/runner/config.toml` never
/// changes a result. A test of the user config gives its runner a folder of its own.
pub fn user_config_home() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("empty-xdg-config-home");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `program` (runner, or a shell or wrapper that starts it) with the environment every runner
/// the tests start gets: the empty user config folder. The one way tests start runner
/// (`house.rs` checks it).
pub fn isolated(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    cmd.env("XDG_CONFIG_HOME", user_config_home());
    cmd
}

/// runner, isolated from the user's own config (see `isolated`).
pub fn runner_command() -> Command {
    isolated(RUNNER)
}

/// The same for an async test (the MCP client).
pub fn tokio_runner_command() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(RUNNER);
    cmd.env("XDG_CONFIG_HOME", user_config_home());
    cmd
}

pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// The real Auto-Claude plans' folder, or `None` when they are absent (see `corpus`).
pub fn reference_plans_dir() -> Option<PathBuf> {
    crate::corpus::dir()
}

pub struct TestRepo {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
}

impl TestRepo {
    /// A repository on `main` with one commit.
    pub fn new() -> TestRepo {
        TestRepo::in_folder("project")
    }

    /// The same, in a folder of that name (a name with a space tests printed commands).
    pub fn in_folder(name: &str) -> TestRepo {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join(name);
        std::fs::create_dir_all(&root).unwrap();
        let root = root.canonicalize().unwrap();
        let repo = TestRepo { tmp, root };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["config", "user.name", "Test User"]);
        repo.git(&["config", "user.email", "test@example.com"]);
        repo.write("README.md", "# project\n");
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "initial"]);
        repo
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    pub fn git(&self, args: &[&str]) -> String {
        git_in(&self.root, args)
    }

    /// A spec folder with a spec.md.
    pub fn add_spec(&self, name: &str) -> PathBuf {
        self.write(
            &format!(".auto-claude/specs/{name}/spec.md"),
            &format!("# {name}\n\nBuild the thing.\n"),
        );
        self.spec_dir(name)
    }

    pub fn spec_dir(&self, name: &str) -> PathBuf {
        self.path(&format!(".auto-claude/specs/{name}"))
    }

    pub fn plan_path(&self, spec: &str) -> PathBuf {
        self.spec_dir(spec).join("implementation_plan.json")
    }

    pub fn write_plan(&self, spec: &str, text: &str) {
        std::fs::write(self.plan_path(spec), text).unwrap();
    }

    pub fn plan(&self, spec: &str) -> Value {
        serde_json::from_slice(&std::fs::read(self.plan_path(spec)).unwrap()).unwrap()
    }

    /// Every chunk of the plan as (id, status), in file order.
    pub fn statuses(&self, spec: &str) -> Vec<(String, String)> {
        let plan = self.plan(spec);
        let mut out = Vec::new();
        for phase in plan["phases"].as_array().unwrap() {
            let chunks = phase.get("subtasks").or_else(|| phase.get("chunks"));
            for c in chunks.and_then(Value::as_array).into_iter().flatten() {
                out.push((
                    c["id"].as_str().unwrap().to_string(),
                    c["status"].as_str().unwrap().to_string(),
                ));
            }
        }
        out
    }

    pub fn chunk(&self, spec: &str, id: &str) -> Value {
        let plan = self.plan(spec);
        for phase in plan["phases"].as_array().unwrap() {
            let chunks = phase.get("subtasks").or_else(|| phase.get("chunks"));
            for c in chunks.and_then(Value::as_array).into_iter().flatten() {
                if c["id"] == id {
                    return c.clone();
                }
            }
        }
        panic!("no chunk {id}");
    }

    pub fn events(&self, spec: &str) -> Vec<Value> {
        let text =
            std::fs::read_to_string(self.spec_dir(spec).join("events.jsonl")).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    pub fn write_config(&self, toml: &str) {
        self.write(".auto-claude/config.toml", toml);
    }

    /// The fake agent's script (see fixtures/fake-agent).
    pub fn script(&self, rules: &str) {
        std::fs::write(self.tmp.path().join("agent-script"), rules).unwrap();
    }

    pub fn agent_log(&self) -> Vec<String> {
        std::fs::read_to_string(self.tmp.path().join("agent-log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `runner ARGS` in the repository root, with the fake agent wired in. Tests run without a
    /// terminal, so `run` gets `--auto-continue` (continue existing work instead of asking);
    /// tests of the question itself build their command without this harness.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = runner_command();
        cmd.args(args);
        if args.first() == Some(&"run") && !args.contains(&"--auto-continue") {
            cmd.arg("--auto-continue");
        }
        cmd.current_dir(&self.root)
            .env("FAKE_AGENT_SCRIPT", self.tmp.path().join("agent-script"))
            .env("FAKE_AGENT_LOG", self.tmp.path().join("agent-log"))
            .env("FAKE_AGENT_PROMPTS", self.tmp.path().join("prompts"))
            .env("FAKE_AGENT_PLAN", fixture("plans/two-phases.json"))
            .env_remove("RUNNER_SPEC_DIR")
            .env_remove("RUNNER_CHUNK_ID")
            .env_remove("RUNNER_SESSION_ID")
            .stdin(std::process::Stdio::null());
        cmd
    }

    pub fn runner(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// `runner run --spec SPEC --agent-command fake-agent` plus `extra`.
    pub fn run_spec(&self, spec: &str, extra: &[&str]) -> Output {
        let agent = fixture("fake-agent").display().to_string();
        let mut args = vec!["run", "--spec", spec, "--agent-command", agent.as_str()];
        args.extend_from_slice(extra);
        self.runner(&args)
    }

    pub fn worktree(&self) -> PathBuf {
        self.path(".worktrees/auto-claude")
    }

    /// Commit subjects on a branch, oldest first, after main.
    pub fn branch_log(&self, branch: &str) -> Vec<String> {
        let out = self.git(&[
            "log",
            "--reverse",
            "--format=%s",
            &format!("main..{branch}"),
        ]);
        out.lines().map(str::to_string).collect()
    }
}

/// `git ARGS` in `dir`: `Err(stderr)` if git fails.
pub fn git_result(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// `git ARGS` in `dir`; the test fails if git does.
pub fn git_in(dir: &Path, args: &[&str]) -> String {
    git_result(dir, args).unwrap_or_else(|e| panic!("git {args:?} failed: {e}"))
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[track_caller]
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "expected exit {code}\nstdout:\n{}\nstderr:\n{}",
        stdout(out),
        stderr(out)
    );
}

/// Poll `cond` every 20 ms; fail the test after 30 s, naming `what` was awaited.
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Hold the OS lock on `path` from another process (`flock`) until the child is killed; returns
/// once the lock is held.
pub fn hold_lock(path: &Path) -> std::process::Child {
    hold_lock_for(path, "30")
}

/// Hold the OS lock on `path` from another process (`flock`) for `seconds` (as `sleep` takes
/// them) or until the child is killed; returns once the lock is held.
pub fn hold_lock_for(path: &Path, seconds: &str) -> std::process::Child {
    // -o: `sleep` does not inherit the lock, so killing `flock` releases it.
    let holder = Command::new("flock")
        .arg("-o")
        .arg(path)
        .args(["sleep", seconds])
        .spawn()
        .unwrap();
    wait_for("the lock to be held", || {
        Command::new("flock")
            .arg("-n")
            .arg(path)
            .arg("true")
            .status()
            .is_ok_and(|s| !s.success())
    });
    holder
}

/// splitmix64: a small seeded PRNG, so randomized tests are reproducible without a dependency.
pub struct Rng(pub u64);

impl Rng {
    /// The seed in the environment variable `var` (a run to replay), else one from the clock.
    pub fn seed_from(var: &str) -> u64 {
        std::env::var(var)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            })
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A spec with the two-phase fixture plan (chunks core-a, core-b, polish) in `repo`.
pub fn add_fixture_spec(repo: &TestRepo, spec: &str) {
    let dir = repo.add_spec(spec);
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
}

/// The ids of `spec`'s run records, in folder order. Only records: a heartbeat's write under
/// way leaves a temp file beside them.
pub fn run_ids(repo: &TestRepo, spec: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(repo.spec_dir(spec).join("runs")) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let id = name.strip_suffix(".json")?;
            (id.len() == 13 && id.starts_with('r')).then(|| id.to_string())
        })
        .collect()
}

/// `runner run --spec SPEC` with the fake agent, which must SIGKILL itself at `failpoint`
/// (`name[@N]`, see src/failpoint.rs).
pub fn run_killed_at(repo: &TestRepo, spec: &str, failpoint: &str) {
    use std::os::unix::process::ExitStatusExt;
    let agent = fixture("fake-agent").display().to_string();
    let out = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent])
        .env("RUNNER_FAILPOINTS", failpoint)
        .output()
        .unwrap();
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGKILL),
        "the run should have died at {failpoint}: {:?}\nstderr:\n{}",
        out.status,
        stderr(&out)
    );
}

/// A repository with spec `spec` whose plan is the two-phase fixture, written by hand (so no
/// planner runs).
pub fn repo_with_fixture_plan(spec: &str) -> TestRepo {
    let repo = TestRepo::new();
    let dir = repo.add_spec(spec);
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
    repo
}

/// Spec `spec` (the two-phase fixture plan) with existing work on its branch, pinned to a base
/// branch `dev` that has been deleted since: the next run needs a re-pin (`--base-branch`).
pub fn repo_pinned_to_a_deleted_base(spec: &str) -> TestRepo {
    let repo = repo_with_fixture_plan(spec);
    repo.git(&["branch", "dev"]);
    // One session: the spec has work, and the run stops (exit 5) before it is done.
    repo.write_config("[run]\nmax_sessions = 1\n");
    assert_exit(&repo.run_spec(spec, &["--base-branch", "dev"]), 5);
    std::fs::remove_file(repo.path(".auto-claude/config.toml")).unwrap();
    repo.git(&["branch", "-D", "dev"]);
    repo
}

// ---------------------------------------------------------------------------------------------
// Whole screens as snapshots (`snapshots.rs` and `assert_screen!`).
// ---------------------------------------------------------------------------------------------

/// Output as it would be compared: run-to-run values replaced, the repository's folder named,
/// and this checkout's folder (the fake agent's path) too.
pub fn settled(repo: &TestRepo, text: &str) -> String {
    let root = repo.root.to_string_lossy().into_owned();
    let tmp = repo.tmp.path().to_string_lossy().into_owned();
    text.replace(&root, "[repo]")
        .replace(&tmp, "[tmp]")
        .replace(env!("CARGO_MANIFEST_DIR"), "[checkout]")
}

pub fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        // Times: ISO 8601 with or without zone, and the compact stamps of backup refs.
        (
            r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?",
            "[time]",
        ),
        (r"\d{8}T\d{6}Z", "[stamp]"),
        // A session id's random part, after its time.
        (r"(\[stamp\])-[0-9a-f]{4}-", "$1-[hex]-"),
        // Commit and object ids (abbreviated or full), and run ids (r + hex).
        (r"\b[0-9a-f]{7,40}\b", "[commit]"),
        (r"\br[0-9a-f]{8,}\b", "[run-id]"),
        (r"\bpid \d+", "pid [pid]"),
        (r#""pid": \d+"#, r#""pid": [pid]"#),
        (r"\b\d+(\.\d+)?(ms|s)\b", "[duration]"),
        (r#""(duration_ms|elapsed_ms|seconds)": \d+"#, r#""$1": [n]"#),
    ]
}

/// insta's settings with [`filters`] applied.
pub fn screen_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    for (pattern, replacement) in filters() {
        settings.add_filter(pattern, replacement);
    }
    settings
}

/// A whole screen the user reads, as an inline snapshot (jj's style): the text is `settled`
/// (the repository's folder as `[repo]`, the temp folder as `[tmp]`) and filtered (times, ids,
/// durations), then compared with the snapshot written in the test.
#[macro_export]
macro_rules! assert_screen {
    ($repo:expr, $text:expr, @$snapshot:literal) => {{
        let text = $crate::common::settled(&$repo, &$text);
        $crate::common::screen_settings().bind(|| insta::assert_snapshot!(text, @$snapshot));
    }};
}
