//! What every real-CLI test shares: the scripted model server, a CLI's own HOME, a repository
//! with a spec, and the runner command that drives the CLI.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{TestRepo, assert_exit, fixture, stderr, stdout};

pub const SPEC: &str = "001-greet";

/// The agent CLIs with presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    Claude,
    Codex,
    Gemini,
    Aider,
}

impl Cli {
    pub fn name(self) -> &'static str {
        match self {
            Cli::Claude => "claude",
            Cli::Codex => "codex",
            Cli::Gemini => "gemini",
            Cli::Aider => "aider",
        }
    }

    /// The installed CLI (a missing one fails the test, saying how to install it).
    pub fn program(self) -> PathBuf {
        let dir = std::env::var_os("RUNNER_AGENT_CLIS")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".agent-clis"));
        let program = dir.join("bin").join(self.name());
        assert!(
            program.exists(),
            "{} is not installed at {}: run scripts/install-agent-clis (or set RUNNER_AGENT_CLIS)",
            self.name(),
            program.display()
        );
        program
    }
}

/// The scripted model server (`fixtures/model-server/model_server.py`), killed on drop.
pub struct Server {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    pub fn start(script: &Value) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let script_path = dir.path().join("script.json");
        std::fs::write(&script_path, serde_json::to_vec_pretty(script).unwrap()).unwrap();
        let port_file = dir.path().join("port");
        let log = dir.path().join("log.jsonl");
        let child = Command::new("python3")
            .arg(fixture("model-server/model_server.py"))
            .arg("--script")
            .arg(&script_path)
            .arg("--port-file")
            .arg(&port_file)
            .arg("--log")
            .arg(&log)
            // A Gemini quota as Google's daily one (gemini does not retry it).
            .env("GEMINI_LIMIT_VARIANT", "daily")
            .stdin(Stdio::null())
            .spawn()
            .expect("python3 starts the model server");
        let deadline = Instant::now() + Duration::from_secs(20);
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                break text.trim().parse().unwrap();
            }
            assert!(Instant::now() < deadline, "the model server did not start");
            std::thread::sleep(Duration::from_millis(20));
        };
        Server {
            child,
            port,
            log,
            _dir: dir,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Everything the server logged, in order.
    pub fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    pub fn count(&self, event: &str) -> usize {
        self.events().iter().filter(|e| e["event"] == event).count()
    }

    /// The tokens the server's responses carried (input + output + cached).
    pub fn tokens_served(&self) -> u64 {
        self.events()
            .iter()
            .filter(|e| e["event"] == "response")
            .map(|e| {
                let u = &e["usage"];
                ["input", "output", "cached"]
                    .iter()
                    .map(|k| u[k].as_u64().unwrap_or(0))
                    .sum::<u64>()
            })
            .sum()
    }

    /// Wait (up to `secs`) until the server logged `event`.
    pub fn wait_for(&self, event: &str, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while self.count(event) == 0 {
            assert!(
                Instant::now() < deadline,
                "the model server never logged {event}: {:#?}",
                self.events()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// chunk-2's verification command. What it prints (`13 two.txt`: the scripted coder writes
/// `chunk-2 done\n`) is nowhere else: seen in a request, it proves the CLI ran the command.
pub const VERIFICATION: &str = "wc -c two.txt";
pub const VERIFICATION_OUTPUT: &str = "13 two.txt";

/// The plan the scripted planner writes: two chunks, the second with a verification command
/// (the scripted coder runs it with the CLI's shell tool; runner runs it after the session).
pub fn plan() -> Value {
    json!({
        "feature": "greeting files",
        "phases": [{
            "id": "phase-1",
            "name": "Build",
            "depends_on": [],
            "subtasks": [
                {"id": "chunk-1", "description": "Write one.txt", "status": "pending",
                 "files_to_create": ["one.txt"]},
                {"id": "chunk-2", "description": "Write two.txt", "status": "pending",
                 "files_to_create": ["two.txt"],
                 "verification": {"type": "command", "command": VERIFICATION,
                                  "expected": "exit 0"}}
            ]
        }]
    })
}

/// One real-CLI scenario: a repository with spec `SPEC`, the model server scripted with
/// `rules`, and the CLI's own HOME.
pub struct Case {
    pub repo: TestRepo,
    pub server: Server,
    pub home: PathBuf,
    pub env: Vec<(String, String)>,
}

impl Case {
    pub fn new(cli: Cli, rules: Value) -> Case {
        Case::with_script(cli, json!({ "rules": rules }))
    }

    /// [`Case::new`] with more of the server's script (`rules`, `watch`, …) over the default.
    pub fn with_script(cli: Cli, extra: Value) -> Case {
        let repo = TestRepo::new();
        repo.write(
            &format!(".auto-claude/specs/{SPEC}/spec.md"),
            "# Greeting files\n\nWrite one.txt and two.txt.\n",
        );
        let mut script = json!({
            "worktree": repo.worktree(),
            "plan": plan(),
            "rules": [],
            "recovery": {"decision": "continue", "reason": "scripted judgement: keep the partial work"},
            "watch": [VERIFICATION_OUTPUT],
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            script[k] = v.clone();
        }
        let server = Server::start(&script);
        let home = repo.tmp.path().join(format!("{}-home", cli.name()));
        std::fs::create_dir_all(&home).unwrap();
        let env = match cli {
            Cli::Claude => super::claude::setup(&home, &server),
            Cli::Codex => super::codex::setup(&home, &server),
            Cli::Gemini => super::gemini::setup(&home, &server),
            Cli::Aider => super::aider::setup(&home, &server),
        };
        let extra = match cli {
            Cli::Claude => super::claude::CONFIG,
            Cli::Codex => super::codex::CONFIG,
            Cli::Gemini => super::gemini::CONFIG,
            Cli::Aider => super::aider::CONFIG,
        };
        repo.write_config(&format!(
            "[agent]\npreset = \"{}\"\nprogram = \"{}\"\n{extra}",
            cli.name(),
            cli.program().display()
        ));
        Case {
            repo,
            server,
            home,
            env,
        }
    }

    /// `runner ARGS` with the CLI's environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = self.repo.cmd(args);
        cmd.env("HOME", &self.home);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// `runner run --spec SPEC`.
    pub fn run(&self) -> Output {
        self.cmd(&["run", "--spec", SPEC]).output().unwrap()
    }

    /// `runner run --spec SPEC` exactly as a user types it (no `--auto-continue`), no terminal.
    pub fn plain_run(&self) -> Output {
        let mut cmd = crate::common::runner_command();
        cmd.args(["run", "--spec", SPEC])
            .current_dir(&self.repo.root)
            .env("HOME", &self.home)
            .stdin(Stdio::null());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    /// `runner run --spec SPEC`, started and left running.
    pub fn spawn_run(&self) -> Child {
        self.cmd(&["run", "--spec", SPEC])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The statuses of the plan's chunks.
    pub fn statuses(&self) -> Vec<String> {
        self.repo
            .statuses(SPEC)
            .into_iter()
            .map(|(_, s)| s)
            .collect()
    }

    /// The spec's ledger as `status --json` shows it: (dollars, tokens).
    pub fn ledger(&self) -> (f64, u64) {
        let out = self
            .cmd(&["status", "--spec", SPEC, "--json"])
            .output()
            .unwrap();
        assert_exit(&out, 0);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let spec = &v["specs"][0];
        let spent = &spec["spent"];
        (
            spent["usd"].as_f64().unwrap_or(0.0),
            spent["tokens"].as_u64().unwrap_or(0),
        )
    }

    /// A whole spec planned and built: exit 0, both chunks completed, one commit per chunk on
    /// the spec's branch holding the files the CLI wrote with its own tool, and nothing of
    /// runner's or the CLI's own (the plan draft, `.aider*`) committed.
    pub fn assert_built(&self, out: &Output) {
        assert_exit(out, 0);
        assert_eq!(self.statuses(), ["completed", "completed"]);
        let branch = format!("auto-claude/{SPEC}");
        let log = self.repo.branch_log(&branch);
        assert_eq!(
            log,
            [
                "auto-claude: chunk-1 - Write one.txt",
                "auto-claude: chunk-2 - Write two.txt"
            ],
            "{}",
            stderr(out)
        );
        let files = self
            .repo
            .git(&["ls-tree", "-r", "--name-only", &branch])
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>();
        assert_eq!(
            files,
            ["README.md", "one.txt", "two.txt"],
            "{}",
            stdout(out)
        );
    }
}

impl Case {
    /// Until when `status` says the spec is paused.
    pub fn paused_until(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        let out = self
            .cmd(&["status", "--spec", SPEC, "--json"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["specs"][0]["paused_until"]
            .as_str()
            .map(|t| t.parse().unwrap())
    }
}

/// A reset this many seconds away that falls within the current minute (waiting for the next
/// minute first when too little of this one is left): a CLI that prints only the minute must
/// still be paused until the reset, and not for a day.
pub fn reset_within_this_minute(secs: i64) -> chrono::DateTime<chrono::Utc> {
    use chrono::Timelike;
    loop {
        let now = chrono::Utc::now();
        if i64::from(now.second()) + secs < 59 {
            // Whole seconds, as the providers give it.
            let at = now.timestamp() + secs;
            return chrono::DateTime::from_timestamp(at, 0).unwrap();
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The usage-limit scenario every CLI goes through: chunk-1's second request (after the CLI
/// wrote its file) meets the provider's 429 with a reset `secs` seconds away, in the current minute. The run stops with
/// exit 6, paused until the reset — never before it, and not a day later — having spent no
/// attempt; a run before the reset starts no session (the server sees no request); one after
/// it builds the spec. `slack` is how far past the reset the CLI's words may place it (codex
/// prints only the minute, whose end runner waits for).
pub fn limit_scenario(cli: Cli, secs: i64, slack: i64) {
    let resets_at = reset_within_this_minute(secs);
    let case = Case::new(
        cli,
        // After the CLI wrote chunk-1's file: the limited attempt leaves work behind.
        json!([{"who": "chunk-1", "step": 1, "do": "limit", "resets_at": resets_at.timestamp(), "times": 1}]),
    );
    let out = case.run();
    // A run that met no limit is told with what the server saw (which requests, whose, which
    // step), to tell a CLI that asked differently from runner missing the limit.
    assert_eq!(
        out.status.code(),
        Some(6),
        "expected exit 6\n{}\nthe server's events:\n{}",
        stderr(&out),
        case.server
            .events()
            .iter()
            .map(|e| format!("{e}\n"))
            .collect::<String>()
    );
    assert_eq!(case.server.count("limit"), 1, "{}", stderr(&out));
    let until = case.paused_until().expect("the spec is paused");
    assert!(
        until >= resets_at && until <= resets_at + chrono::Duration::seconds(slack + 1),
        "paused until {until}, the reset is at {resets_at}\n{}",
        stderr(&out)
    );
    assert_eq!(case.statuses(), ["pending", "pending"]);
    let requests = case.server.count("request");
    let again = case.run();
    assert_exit(&again, 6);
    // Without --auto-continue and without a terminal too: the pause is said before the
    // question about the existing worktree (which would exit 2 with no one to answer).
    let plain = case.plain_run();
    assert_exit(&plain, 6);
    assert_eq!(case.server.count("request"), requests, "a session started");
    record(
        &case,
        cli,
        "limit",
        &[("coder", "coder", Some("chunk-1"), 0)],
    );
    let wait = until - chrono::Utc::now() + chrono::Duration::milliseconds(500);
    if let Ok(wait) = wait.to_std() {
        std::thread::sleep(wait);
    }
    case.assert_built(&case.run());
}

/// The `session_start` records of `chunk` in the spec's journal, in order.
pub fn session_starts(case: &Case, chunk: &str) -> Vec<Value> {
    case.repo
        .events(SPEC)
        .into_iter()
        .filter(|e| e["event"] == "session_start" && e["chunk"] == chunk)
        .collect()
}

/// kill -9 in the middle of a chunk: the model server holds chunk-1's second request (after
/// the CLI wrote its file) while runner is killed, which takes the CLI with it. The next run
/// continues the CLI's own session (the server sees the earlier tool call and result in the
/// history and goes on from there), builds the spec, and the ledger counts every token the
/// server served — the killed session's too.
pub fn kill_and_resume_scenario(cli: Cli) -> Case {
    let case = Case::new(
        cli,
        json!([{"who": "chunk-1", "step": 1, "do": "hang", "seconds": 120, "times": 1}]),
    );
    let mut child = case.spawn_run();
    case.server.wait_for("hang", 120);
    child.kill().unwrap();
    let _ = child.wait();
    let out = case.run();
    case.assert_built(&out);
    let starts = session_starts(&case, "chunk-1");
    assert_eq!(starts.len(), 2, "{starts:#?}");
    assert_eq!(starts[1]["resumed"], true, "{starts:#?}\n{}", stderr(&out));
    // The CLI's own session: the one runner chose (claude), else the one the killed session's
    // output named (codex, gemini).
    let resumed = starts[1]["agent_session_id"]
        .as_str()
        .expect("a resumed session id");
    if let Some(chosen) = starts[0]["agent_session_id"].as_str() {
        assert_eq!(resumed, chosen);
    }
    let killed = case
        .repo
        .spec_dir(SPEC)
        .join("sessions")
        .join(starts[0]["session_id"].as_str().unwrap());
    let log = std::fs::read_to_string(killed.join("output.log")).unwrap();
    assert!(
        log.contains(resumed),
        "{resumed} is not in the killed session's output:\n{log}"
    );
    let (_, tokens) = case.ledger();
    assert_eq!(tokens, case.server.tokens_served(), "{}", stderr(&out));
    record(
        &case,
        cli,
        "kill",
        &[
            ("killed", "coder", Some("chunk-1"), 0),
            ("resumed", "coder", Some("chunk-1"), 1),
        ],
    );
    case
}

/// The recovery evaluator is the real CLI too: runner is killed mid-chunk (the CLI wrote its
/// file), and `runner recover` with `[recovery] evaluator = "agent"` asks the CLI, which
/// answers with the script's judgement; the decision recorded is the agent's, with its reason.
///
/// aider makes one model call per session and applies its edits only when the answer is
/// whole, so for it the model hangs before answering and the partial work is left by hand.
pub fn evaluator_scenario(cli: Cli) {
    let step = if cli == Cli::Aider { 0 } else { 1 };
    let case = Case::new(
        cli,
        json!([{"who": "chunk-1", "step": step, "do": "hang", "seconds": 120, "times": 1}]),
    );
    let config = case.repo.read(".auto-claude/config.toml");
    case.repo
        .write_config(&format!("{config}[recovery]\nevaluator = \"agent\"\n"));
    let mut child = case.spawn_run();
    case.server.wait_for("hang", 120);
    child.kill().unwrap();
    let _ = child.wait();
    if step == 0 {
        std::fs::write(case.repo.worktree().join("one.txt"), "half of chunk-1\n").unwrap();
    }
    let out = case
        .cmd(&["recover", "--spec", SPEC, "--json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let decision = case
        .repo
        .events(SPEC)
        .into_iter()
        .rfind(|e| e["event"] == "recovery_decision")
        .unwrap_or_else(|| panic!("no recovery decision:\n{}", stdout(&out)));
    assert_eq!(
        decision["source"],
        "agent",
        "{decision:#}\n{}",
        stdout(&out)
    );
    assert_eq!(decision["decision"], "continue", "{decision:#}");
    assert_eq!(
        decision["reason"],
        "scripted judgement: keep the partial work"
    );
    assert!(
        case.server
            .events()
            .iter()
            .any(|e| e["event"] == "response" && e["who"] == "recovery"),
        "the evaluator never asked the model"
    );
    record(
        &case,
        cli,
        "evaluator",
        &[("recovery", "recovery", None, 0)],
    );
}

/// A whole spec planned and built by the CLI (see [`Case::assert_built`]), the ledger's tokens
/// those the server served.
pub fn build_scenario(cli: Cli) -> Case {
    let case = Case::new(cli, json!([]));
    let out = case.run();
    case.assert_built(&out);
    let (_, tokens) = case.ledger();
    assert_eq!(tokens, case.server.tokens_served(), "{}", stderr(&out));
    // Under the default `safe` permission the CLI ran the chunk's verification itself (aider
    // runs no command: its chunks are judged by runner's run of it).
    assert_eq!(
        case.server.count("seen") > 0,
        cli != Cli::Aider,
        "{cli:?}: the verification's output in a request"
    );
    assert_logs_read_as_a_person_reads_them(&case, cli);
    record(
        &case,
        cli,
        "build",
        &[
            ("planner", "planner", None, 0),
            ("coder", "coder", Some("chunk-1"), 0),
        ],
    );
    case
}

/// `runner logs` on what the real CLI printed: the latest session (chunk-2's coder, which ran
/// the verification with the CLI's shell tool, but aider, which runs no command) shown as a
/// person reads it, never as the CLI's raw JSON events.
fn assert_logs_read_as_a_person_reads_them(case: &Case, cli: Cli) {
    let out = case.cmd(&["logs", SPEC]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{cli:?}: runner logs: {}",
        stderr(&out)
    );
    assert!(
        !text.trim().is_empty(),
        "{cli:?}: runner logs printed nothing"
    );
    let raw: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("{\""))
        .collect();
    assert!(
        raw.is_empty(),
        "{cli:?}: raw JSON events in runner logs: {raw:?}\n{text}"
    );
    if cli != Cli::Aider {
        assert!(
            text.contains(VERIFICATION),
            "{cli:?}: runner logs does not name the command the agent ran:\n{text}"
        );
    }
}

/// With `RUNNER_RECORD_AGENT_OUTPUT` set (`scripts/record-agent-outputs`), the CLI's output of
/// the sessions of a scenario is kept as the recording of that case:
/// `fixtures/agent-output/<cli>/recorded/suite-<scenario>-<what>.{stdout,stderr,exit}` (the
/// session's `output.log`, stdout and stderr as runner logged them together, so `.stderr` is
/// empty; aider's analytics log as `.analytics.jsonl`). `sessions` names them: (what, role,
/// chunk, which of that role's and chunk's sessions, in order). The fake CLIs' drift test
/// (`tests/it/fake_drift.rs`) reads them: recording again after a CLI's upgrade shows at once
/// where the fakes no longer print what the real CLI prints.
pub fn record(
    case: &Case,
    cli: Cli,
    scenario: &str,
    sessions: &[(&str, &str, Option<&str>, usize)],
) {
    if std::env::var_os("RUNNER_RECORD_AGENT_OUTPUT").is_none() {
        return;
    }
    let events = case.repo.events(SPEC);
    let dir = crate::common::fixture(&format!("agent-output/{}/recorded", cli.name()));
    for (what, role, chunk, nth) in sessions {
        let started: Vec<&Value> = events
            .iter()
            .filter(|e| e["event"] == "session_start" && e["role"] == *role)
            .filter(|e| chunk.is_none_or(|c| e["chunk"] == c))
            .collect();
        let sessions_dir = case.repo.spec_dir(SPEC).join("sessions");
        // The recovery evaluator's session is not journaled: its folder names its role.
        let mut by_name: Vec<String> = std::fs::read_dir(&sessions_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(&format!("-{role}")))
            .collect();
        by_name.sort();
        let id = match started.get(*nth) {
            Some(start) => start["session_id"].as_str().unwrap().to_string(),
            None => by_name
                .get(*nth)
                .unwrap_or_else(|| panic!("{scenario}: no session {what} in {by_name:?}"))
                .clone(),
        };
        let session = sessions_dir.join(&id);
        let exit = events
            .iter()
            .find(|e| e["event"] == "session_end" && e["session_id"] == id)
            .map(
                |e| match (e["exit_status"].as_i64(), e["signal"].as_i64()) {
                    (Some(code), _) => code.to_string(),
                    (None, Some(signal)) => format!("signal {signal}"),
                    _ => e["ended"].as_str().unwrap_or("?").to_string(),
                },
            )
            .unwrap_or_else(|| "killed".to_string());
        let name = dir.join(format!("suite-{scenario}-{what}"));
        let with = |ext: &str| name.with_file_name(format!("suite-{scenario}-{what}.{ext}"));
        std::fs::copy(session.join("output.log"), with("stdout")).unwrap();
        std::fs::write(with("stderr"), "").unwrap();
        std::fs::write(with("exit"), format!("{exit}\n")).unwrap();
        if cli == Cli::Aider {
            std::fs::copy(session.join("aider.jsonl"), with("analytics.jsonl")).unwrap();
        }
    }
}

/// `safe` keeps the agent inside the worktree: chunk-1's coder is scripted to try its shell on
/// writes outside it — the temp folder, the CLI's HOME, the main checkout — and to read a file
/// outside (harmless) so that the request after it proves the CLI went on. None of the writes
/// happens.
pub fn escape_scenario(cli: Cli) {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let home = |case: &Case| case.home.join("escaped.txt");
    let fixed = [
        outside.join("escaped.txt"),
        std::path::PathBuf::from(format!(
            "/tmp/runner-escape-{}-{}",
            cli.name(),
            std::process::id()
        )),
    ];
    // The case's own HOME (`<tmp>/<cli>-home`) and checkout (`<tmp>/project`) do not exist
    // yet when the script is written: they are named from the worktree, where the agent's
    // shell starts (`<tmp>/project/.worktrees/auto-claude`).
    let command = format!(
        "echo escaped > {}; echo escaped > {}; echo escaped > ../../../{cli}-home/escaped.txt; echo escaped > ../../escaped.txt",
        fixed[0].display(),
        fixed[1].display(),
        cli = cli.name()
    );
    let case = Case::with_script(
        cli,
        json!({"rules": [{"who": "chunk-1", "step": 0, "do": "shell", "command": command, "times": 1}]}),
    );
    let targets = [
        fixed[0].clone(),
        fixed[1].clone(),
        home(&case),
        case.repo.root.join("escaped.txt"),
    ];
    let out = case.run();
    let after: Vec<Value> = case
        .server
        .events()
        .into_iter()
        .filter(|e| e["event"] == "response" && e["who"] == "chunk-1" && e["step"] == 1)
        .collect();
    assert!(
        !after.is_empty(),
        "the CLI never came back after the attempt\n{}",
        stderr(&out)
    );
    for t in &targets {
        assert!(!t.exists(), "{cli:?} wrote {} under safe", t.display());
    }
    let _ = std::fs::remove_file(&targets[1]);
}
