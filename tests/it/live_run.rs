//! A live `runner run` on a real terminal (a pty): every agent session shows a spinner with its
//! elapsed time and, under it, the agent's latest line, escaped; `--jobs` shows the same per
//! spec; without a terminal, or with `-q`, nothing of it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use expectrl::session::OsSession;
use expectrl::{Eof, Expect, Regex};

use crate::common::*;

/// A session's clock once a second or more has passed (up to an hour: a slow machine is fine).
const ELAPSED: &str = r"\[00:(?:00:(?:0[1-9]|[1-5]\d)|(?:0[1-9]|[1-5]\d):\d\d)\]";

/// An agent (`--agent-command`) that says what it is doing, then, in its first session of each
/// role in each spec, waits (up to 60 s) until the test, having seen that on the screen, lets
/// it go (`$LIVE_GO/<spec>_<role>.go`); then it does the fake agent's work. `$LIVE_LINE`
/// replaces the words it says.
fn live_agent(repo: &TestRepo) -> (String, PathBuf) {
    let go = repo.tmp.path().join("go");
    std::fs::create_dir_all(&go).unwrap();
    let script = repo.tmp.path().join("live-agent");
    std::fs::write(
        &script,
        format!(
            r#"#!/usr/bin/env bash
key="${{RUNNER_SPEC}}_${{RUNNER_ROLE}}"
echo "reading the spec"
if [ -n "${{LIVE_LINE:-}}" ]; then
    printf "$LIVE_LINE\n"
else
    echo "editing src/lib.rs now for $RUNNER_SPEC $RUNNER_ROLE"
fi
if [ ! -e "$LIVE_GO/$key.seen" ]; then
    : >"$LIVE_GO/$key.seen"
    for _ in $(seq 1200); do [ -e "$LIVE_GO/$key.go" ] && break; sleep 0.05; done
fi
exec {agent}
"#,
            agent = fixture("fake-agent").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (script.display().to_string(), go)
}

/// Let the first session of `role` in `spec` go on.
fn let_go(go: &Path, spec: &str, role: &str) {
    std::fs::write(go.join(format!("{spec}_{role}.go")), "").unwrap();
}

/// `runner ARGS` on a pty of 120 columns, with everything it writes kept.
struct Screen {
    session: OsSession,
    seen: Vec<u8>,
}

impl Screen {
    fn start(mut cmd: Command, go: &Path) -> Screen {
        cmd.env("LIVE_GO", go)
            .env("TERM", "xterm")
            .env("NO_COLOR", "1");
        let mut session = OsSession::spawn(cmd).unwrap();
        session.get_process_mut().set_window_size(120, 40).unwrap();
        // Generous: a loaded machine may be slow to start a run and its agent.
        session.set_expect_timeout(Some(Duration::from_secs(90)));
        Screen {
            session,
            seen: Vec::new(),
        }
    }

    /// Wait until the terminal shows `pattern` (a regex); what it showed up to it is kept.
    #[track_caller]
    fn shows(&mut self, pattern: &str) -> String {
        let found = self.session.expect(Regex(pattern)).unwrap_or_else(|e| {
            panic!(
                "{pattern:?} never shown ({e}); shown:\n{}",
                String::from_utf8_lossy(&self.seen)
            )
        });
        self.seen.extend_from_slice(found.before());
        let matched = found.get(0).unwrap_or_default().to_vec();
        self.seen.extend_from_slice(&matched);
        String::from_utf8_lossy(&matched).into_owned()
    }

    /// Wait for the end; everything shown, and the exit status.
    fn end(mut self) -> (Vec<u8>, String) {
        let rest = self.session.expect(Eof).unwrap();
        self.seen.extend_from_slice(rest.before());
        self.seen.extend_from_slice(rest.get(0).unwrap_or_default());
        let status = format!("{:?}", self.session.get_process_mut().wait().unwrap());
        (self.seen, status)
    }
}

#[test]
fn planning_and_coding_each_show_a_spinner_with_elapsed_time_and_the_agents_line() {
    let repo = TestRepo::new();
    repo.add_spec("001-live");
    let (agent, go) = live_agent(&repo);
    let mut screen = Screen::start(
        repo.cmd(&["run", "--spec", "001", "--agent-command", &agent]),
        &go,
    );
    // Planning: its spinner, its clock running (a second has passed), the agent's line.
    screen.shows(&format!("planning {ELAPSED}"));
    screen.shows("editing src/lib.rs now for 001-live planner");
    let_go(&go, "001-live", "planner");
    // The first chunk's session under the plan's bar.
    screen.shows(r"0/3 chunks  core-a");
    screen.shows(&format!("core-a {ELAPSED}"));
    screen.shows("editing src/lib.rs now for 001-live coder");
    let_go(&go, "001-live", "coder");
    let (shown, status) = screen.end();
    assert!(exited_0(&status), "{status}");
    assert!(
        repo.statuses("001-live")
            .iter()
            .all(|(_, s)| s == "completed")
    );
    // The lines of news are there too, as without a terminal.
    let shown = String::from_utf8_lossy(&shown);
    assert!(shown.contains("✓ core-a completed"), "{shown}");
}

#[test]
fn the_recovery_evaluators_session_shows_too() {
    let repo = repo_with_fixture_plan("001-eval");
    repo.write_config(&format!(
        "[recovery]\nevaluator = \"agent\"\n\n[agent]\ncommand = [{:?}]\n",
        fixture("fake-agent").display().to_string()
    ));
    // Partial work left by a killed run: the rules weigh it, so the evaluator is asked.
    repo.script("core-a 1 uncommitted\nrecovery * answer continue\n* * done\n");
    run_killed_at(&repo, "001-eval", "after_coder_session");
    let (agent, go) = live_agent(&repo);
    let_go(&go, "001-eval", "coder");
    let mut screen = Screen::start(
        repo.cmd(&["run", "--spec", "001", "--agent-command", &agent]),
        &go,
    );
    screen.shows(&format!("recovery of core-a {ELAPSED}"));
    screen.shows("editing src/lib.rs now for 001-eval recovery");
    let_go(&go, "001-eval", "recovery");
    let (_, status) = screen.end();
    assert!(exited_0(&status), "{status}");
    assert!(
        repo.events("001-eval")
            .iter()
            .any(|e| e["event"] == "recovery_decision" && e["source"] == "agent")
    );
}

#[test]
fn escape_sequences_in_the_agents_words_never_reach_the_terminal() {
    let repo = repo_with_fixture_plan("001-evil");
    let (agent, go) = live_agent(&repo);
    let mut cmd = repo.cmd(&["run", "--spec", "001", "--agent-command", &agent]);
    cmd.env(
        "LIVE_LINE",
        r"clear \033[2J\033]0;pwned\007 title \033c reset",
    );
    let mut screen = Screen::start(cmd, &go);
    // The line as a terminal showed it (its colour, cursor and title sequences dropped, as
    // `agent::output::activity` reads text lines); any other control character shown as a
    // visible escape.
    screen.shows(&regex_quote(r"clear title \u{1b}c reset"));
    let_go(&go, "001-evil", "coder");
    let (shown, status) = screen.end();
    assert!(exited_0(&status), "{status}");
    for raw in [&b"\x1b[2J"[..], b"\x1b]0;pwned", b"\x07", b"\x1bc"] {
        assert!(
            !shown.windows(raw.len()).any(|w| w == raw),
            "{raw:?} reached the terminal:\n{}",
            String::from_utf8_lossy(&shown)
        );
    }
}

#[test]
fn jobs_show_each_specs_session_and_its_agents_line() {
    let repo = TestRepo::new();
    let specs = ["010-a", "011-b"];
    crate::jobs::interrupted(&repo, &specs);
    let (agent, go) = live_agent(&repo);
    repo.script("* * done\n");
    let mut screen = Screen::start(
        repo.cmd(&[
            "run",
            "--auto-continue",
            "--jobs",
            "2",
            "--agent-command",
            &agent,
        ]),
        &go,
    );
    // Both specs' sessions at once (each agent waits for the test), each named by its spec
    // with its clock running, each with its agent's line. The bars are drawn again and again
    // while they wait, so each is awaited in turn.
    for spec in specs {
        screen.shows(&format!("{spec} core-[ab] {ELAPSED}"));
        screen.shows(&format!("editing src/lib.rs now for {spec} coder"));
    }
    for spec in specs {
        let_go(&go, spec, "coder");
    }
    let (_, status) = screen.end();
    assert!(exited_0(&status), "{status}");
}

#[test]
fn quiet_on_a_terminal_shows_no_session() {
    let repo = repo_with_fixture_plan("001-quiet");
    let (agent, go) = live_agent(&repo);
    // Nothing to wait for: with -q nothing of the session is shown.
    let_go(&go, "001-quiet", "coder");
    let screen = Screen::start(
        repo.cmd(&["run", "--spec", "001", "-q", "--agent-command", &agent]),
        &go,
    );
    let (shown, status) = screen.end();
    assert!(exited_0(&status), "{status}");
    let shown = String::from_utf8_lossy(&shown);
    assert!(!shown.contains("editing src/lib.rs"), "{shown}");
    assert!(!shown.contains("core-a ["), "{shown}");
}

#[test]
fn without_a_terminal_the_lines_are_todays_and_carry_no_escape() {
    let repo = TestRepo::new();
    repo.add_spec("001-plain");
    let (agent, go) = live_agent(&repo);
    for role in ["planner", "coder"] {
        let_go(&go, "001-plain", role);
    }
    let out = repo
        .cmd(&["run", "--spec", "001", "--agent-command", &agent])
        .env("LIVE_GO", &go)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}'), "{err}");
    crate::assert_screen!(repo, err, @r"
    Created worktree [repo]/.worktrees/auto-claude on branch auto-claude/001-plain.
    Planning 001-plain (attempt 1 of 3)…
    Plan ready: 2 phases, 3 chunks.
    [1/3] core-a: Build part A (attempt 1 of 3)
      ✓ core-a completed, committed [commit]
    [2/3] core-b: Build part B (attempt 1 of 3)
      ✓ core-b completed, committed [commit]
    [3/3] polish: Polish it (attempt 1 of 3)
      ✓ polish completed, committed [commit]
    All 3 chunks of 001-plain are completed on branch auto-claude/001-plain.
    ");
}

/// A pty child's wait status: it exited with 0.
fn exited_0(status: &str) -> bool {
    status.starts_with("Exited(") && status.ends_with(", 0)")
}

/// `text` as a regex that matches it literally.
fn regex_quote(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\\' | '.' | '+' | '*' | '?' | '(' | ')' | '|' | '[' | ']' | '{' | '}' | '^' | '$' => {
                format!("\\{c}")
            }
            c => c.to_string(),
        })
        .collect()
}
