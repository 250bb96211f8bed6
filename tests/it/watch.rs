//! `runner watch` in a real terminal: tmux runs it at a fixed size on a socket of each test's
//! own, keys are sent with `send-keys` and the screen read with `capture-pane`; every wait
//! polls the screen (never a fixed sleep). Without tmux a test prints `NOT RUN` and passes,
//! except under CI (`CI` set), where it fails: `scripts/install-tmux` installs it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::{
    RUNNER, TestRepo, add_fixture_spec, assert_exit, isolated, runner_command, stderr,
};

/// A tmux server of the test's own (`tmux -L`), killed when dropped, failure or not.
struct Tmux {
    socket: String,
}

/// Whether tmux is there; without it a test returns (`NOT RUN`), or fails under CI.
fn have_tmux() -> bool {
    let found = isolated("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    assert!(
        !ci,
        "tmux is missing: CI must have it (scripts/install-tmux installs it)"
    );
    let thread = std::thread::current();
    let _ = writeln!(
        std::io::stderr(),
        "NOT RUN: {}: tmux is not installed (scripts/install-tmux)",
        thread.name().unwrap_or("a watch test")
    );
    false
}

impl Tmux {
    /// `shell` (a `sh -c` line) in a detached 100×30 session in `dir`.
    fn start(dir: &Path, shell: &str) -> Tmux {
        static N: AtomicUsize = AtomicUsize::new(0);
        let socket = format!(
            "runner-watch-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let tmux = Tmux { socket };
        let out = tmux
            .cmd()
            .args(["new-session", "-d", "-x", "100", "-y", "30", "-c"])
            .arg(dir)
            .arg(shell)
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux: {}", stderr(&out));
        tmux
    }

    /// tmux on this test's socket, with no user config (isolated: it starts runner).
    fn cmd(&self) -> Command {
        let mut cmd = isolated("tmux");
        cmd.args(["-L", &self.socket, "-f", "/dev/null"]);
        cmd
    }

    fn run(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen as text.
    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p"])
    }

    /// The screen with its colours and attributes as escape sequences.
    fn screen_with_attributes(&self) -> String {
        self.run(&["capture-pane", "-p", "-e"])
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// A fact of the pane (`#{alternate_on}`, `#{cursor_flag}`, `#{pane_pid}`).
    fn pane(&self, format: &str) -> String {
        self.run(&["display-message", "-p", format])
            .trim()
            .to_string()
    }

    /// Poll the screen every 20 ms until `cond` holds (30 s at most: then fail, showing it).
    fn wait(&self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if cond(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_text(&self, text: &str) -> String {
        self.wait(text, |s| s.contains(text))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

/// The shell line that runs `runner ARGS` in the pane, then says how it exited and what mode
/// it left the terminal in (`stty -a` into `stty`), and keeps the pane open.
fn watch_line(args: &str, stty: &Path) -> String {
    format!(
        "printf 'BEFORE-WATCH\\n'; {} {args}; echo \"watch exited $?\"; stty -a > {}; exec sleep 120",
        shell_words::quote(RUNNER),
        shell_words::quote(&stty.display().to_string())
    )
}

/// The line of `screen` that names `spec`.
fn line_of<'a>(screen: &'a str, spec: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(spec))
        .unwrap_or_else(|| panic!("no line for {spec} in:\n{screen}"))
}

/// An agent for `--agent-command`: says a distinctive line, waits for `more` in `$WATCH_CTL`,
/// says a second line (with escape sequences when `$WATCH_EVIL` is set), waits for `finish`,
/// then does the chunk's work and marks it done. Each wait ends after 30 s.
fn agent(repo: &TestRepo) -> PathBuf {
    let path = repo.tmp.path().join("watch-agent");
    std::fs::write(
        &path,
        r#"#!/usr/bin/env bash
cat >/dev/null
echo "WATCH-AGENT-SAYS hello from $RUNNER_CHUNK_ID"
wait_for() { for _ in $(seq 600); do [ -e "$WATCH_CTL/$1" ] && return 0; sleep 0.05; done; exit 9; }
wait_for more
if [ -n "$WATCH_EVIL" ]; then
    printf 'SECOND-LINE %s EVIL\033[2J\033[H\033[31mRED\033]0;pwned\007 \033c END\n' "$RUNNER_CHUNK_ID"
else
    echo "SECOND-LINE $RUNNER_CHUNK_ID"
fi
wait_for finish
mkdir -p work && echo done > "work/$RUNNER_CHUNK_ID.txt"
runner chunk done "$RUNNER_CHUNK_ID" --notes "watch test" >/dev/null
"#,
    )
    .unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

/// `runner run --spec SPEC` with [`agent`] in the background, steered through `ctl`.
fn start_run(repo: &TestRepo, spec: &str, ctl: &Path, evil: bool) -> Child {
    std::fs::create_dir_all(ctl).unwrap();
    let agent = agent(repo).display().to_string();
    let mut cmd = repo.cmd(&["run", "--spec", spec, "--agent-command", &agent]);
    cmd.env("WATCH_CTL", ctl)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if evil {
        cmd.env("WATCH_EVIL", "1");
    }
    cmd.spawn().unwrap()
}

/// Three specs: not planned, planned (the two-phase fixture), and one left interrupted (a
/// chunk in progress, nobody running it).
fn repo_with_specs() -> TestRepo {
    let repo = TestRepo::new();
    repo.add_spec("001-alpha");
    add_fixture_spec(&repo, "002-beta");
    add_fixture_spec(&repo, "003-gamma");
    let plan = repo
        .read(".auto-claude/specs/003-gamma/implementation_plan.json")
        .replacen(r#""status": "pending""#, r#""status": "in_progress""#, 1);
    repo.write(
        ".auto-claude/specs/003-gamma/implementation_plan.json",
        &plan,
    );
    repo
}

#[test]
fn without_a_terminal_watch_exits_2_at_once_and_points_to_status_json() {
    let repo = repo_with_specs();
    let started = Instant::now();
    let out = runner_command()
        .arg("watch")
        .current_dir(&repo.root)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(started.elapsed() < Duration::from_secs(10));
    let err = stderr(&out);
    assert!(err.contains("needs a terminal"), "{err}");
    assert!(err.contains("runner status --json"), "{err}");
    assert!(out.stdout.is_empty(), "nothing on stdout: {:?}", out.stdout);
}

#[test]
fn the_list_shows_every_spec_with_its_state_and_progress_and_hides_merged_ones_without_all() {
    if !have_tmux() {
        return;
    }
    let repo = repo_with_specs();
    add_fixture_spec(&repo, "004-delta");
    let plan = repo.read(".auto-claude/specs/004-delta/implementation_plan.json");
    let merged = plan.replacen('{', r#"{"merged": {"at": "2026-11-01T00:00:00Z"},"#, 1);
    repo.write(
        ".auto-claude/specs/004-delta/implementation_plan.json",
        &merged,
    );
    let stty = repo.tmp.path().join("stty");
    let tmux = Tmux::start(&repo.root, &watch_line("watch", &stty));
    let screen = tmux.wait_text("003-gamma");
    assert!(screen.starts_with("runner watch · "), "{screen}");
    assert!(screen.contains("3 specs · 0 running"), "{screen}");
    assert!(
        screen.contains("1 merged or discarded not shown"),
        "{screen}"
    );
    assert!(
        line_of(&screen, "001-alpha").contains("not_planned"),
        "{screen}"
    );
    let beta = line_of(&screen, "002-beta");
    assert!(beta.contains("planned") && beta.contains("0/3") && beta.contains("next: core-a"));
    let gamma = line_of(&screen, "003-gamma");
    assert!(
        gamma.contains("interrupted") && gamma.contains("core-a"),
        "{gamma}"
    );
    assert!(!screen.contains("004-delta"), "{screen}");
    assert!(
        screen.lines().last().unwrap().contains("q quit"),
        "the footer says the keys:\n{screen}"
    );
    tmux.keys(&["q"]);
    tmux.wait_text("watch exited 0");

    let tmux = Tmux::start(&repo.root, &watch_line("watch --all", &stty));
    let screen = tmux.wait_text("004-delta");
    assert!(line_of(&screen, "004-delta").contains("merged"), "{screen}");
}

#[test]
fn a_run_started_while_watching_shows_its_chunk_and_the_agents_lines_live_then_completes() {
    if !have_tmux() {
        return;
    }
    let repo = repo_with_specs();
    let stty = repo.tmp.path().join("stty");
    let tmux = Tmux::start(&repo.root, &watch_line("watch", &stty));
    tmux.wait_text("002-beta");
    let ctl = repo.tmp.path().join("ctl");
    let mut run = start_run(&repo, "002-beta", &ctl, true);
    let screen = tmux.wait_text("WATCH-AGENT-SAYS hello from core-a");
    assert!(screen.contains("1 running"), "{screen}");
    let beta = line_of(&screen, "002-beta");
    assert!(beta.contains("running"), "{screen}");
    assert!(beta.contains("core-a (attempt 1)"), "{screen}");
    assert!(beta.contains("0/3"), "{screen}");
    // The elapsed time of the run ticks (m:ss).
    assert!(beta.contains(" 0:0"), "{screen}");

    // A new line of the agent's shows within a second or two, its escapes made harmless.
    std::fs::write(ctl.join("more"), "").unwrap();
    let said = Instant::now();
    let screen = tmux.wait_text("SECOND-LINE core-a");
    let took = said.elapsed();
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(
        // Its colour, cursor and title sequences dropped (as a terminal showed the line, the
        // way `agent::output::activity` reads text), any other control character escaped.
        screen.contains(r"EVILRED \u{1b}c END"),
        "{screen}"
    );
    assert!(screen.starts_with("runner watch · "), "{screen}");
    assert!(
        screen.contains("001-alpha") && screen.contains("003-gamma"),
        "{screen}"
    );
    assert!(!tmux.screen_with_attributes().contains("\x1b]0;pwned"));

    std::fs::write(ctl.join("finish"), "").unwrap();
    let screen = tmux.wait("the run shown complete", |s| {
        s.contains("0 running") && line_of(s, "002-beta").contains("complete")
    });
    assert!(line_of(&screen, "002-beta").contains("3/3"), "{screen}");
    assert!(
        !screen.contains("SECOND-LINE"),
        "no live line once it ended:\n{screen}"
    );
    assert!(run.wait().unwrap().success());
}

#[test]
fn a_run_killed_with_sigkill_is_shown_interrupted() {
    if !have_tmux() {
        return;
    }
    let repo = repo_with_specs();
    let stty = repo.tmp.path().join("stty");
    let tmux = Tmux::start(&repo.root, &watch_line("watch", &stty));
    tmux.wait_text("002-beta");
    let ctl = repo.tmp.path().join("ctl");
    let mut run = start_run(&repo, "002-beta", &ctl, false);
    tmux.wait_text("WATCH-AGENT-SAYS hello from core-a");
    run.kill().unwrap();
    run.wait().unwrap();
    let killed = Instant::now();
    let screen = tmux.wait("the killed run shown interrupted", |s| {
        line_of(s, "002-beta").contains("interrupted")
    });
    // Within a second or two: nothing but the lock tells (a killed run writes nothing).
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(screen.contains("0 running"), "{screen}");
    assert!(line_of(&screen, "002-beta").contains("core-a"), "{screen}");
    assert!(!screen.contains("WATCH-AGENT-SAYS"), "{screen}");
    // The orphaned agent ends.
    std::fs::write(ctl.join("more"), "").unwrap();
    std::fs::write(ctl.join("finish"), "").unwrap();
}

/// The row drawn in reverse video: the selection.
fn selected_row(tmux: &Tmux) -> String {
    tmux.screen_with_attributes()
        .lines()
        .find(|l| l.contains("\x1b[7m") || l.contains("\x1b[0;7m"))
        .map(|l| l.to_string())
        .unwrap_or_default()
}

#[test]
fn keys_move_the_selection_open_a_log_and_q_gives_the_shell_its_screen_back() {
    if !have_tmux() {
        return;
    }
    let repo = repo_with_specs();
    // A finished run of 002-beta: its newest session's log is there to open.
    let ctl = repo.tmp.path().join("ctl");
    std::fs::create_dir_all(&ctl).unwrap();
    std::fs::write(ctl.join("more"), "").unwrap();
    std::fs::write(ctl.join("finish"), "").unwrap();
    let mut run = start_run(&repo, "002-beta", &ctl, false);
    assert!(run.wait().unwrap().success());

    let stty = repo.tmp.path().join("stty");
    let tmux = Tmux::start(&repo.root, &watch_line("watch", &stty));
    tmux.wait_text("003-gamma");
    assert_eq!(tmux.pane("#{alternate_on}"), "1");
    assert!(selected_row(&tmux).contains("001-alpha"));
    tmux.keys(&["j"]);
    tmux.wait("the selection on 002-beta", |_| {
        selected_row(&tmux).contains("002-beta")
    });
    tmux.keys(&["Down"]);
    tmux.wait("the selection on 003-gamma", |_| {
        selected_row(&tmux).contains("003-gamma")
    });
    tmux.keys(&["k"]);
    tmux.wait("the selection back on 002-beta", |_| {
        selected_row(&tmux).contains("002-beta")
    });
    tmux.keys(&["Enter"]);
    // (Its newest session: the run's sessions started within a second or so of each other, and
    // `store::sessions` orders those of one second by their random part.)
    let screen = tmux.wait_text("log of 002-beta · session ");
    assert!(screen.contains("-coder-"), "{screen}");
    tmux.wait_text("WATCH-AGENT-SAYS hello from ");
    let screen = tmux.wait_text("SECOND-LINE ");
    assert!(screen.contains("Esc/q back"), "{screen}");
    tmux.keys(&["Escape"]);
    tmux.wait("the list again", |s| {
        s.contains("001-alpha") && !s.contains("log of")
    });
    tmux.keys(&["?"]);
    tmux.wait_text("this list (any key closes it)");
    tmux.keys(&["x"]);
    tmux.wait("the keys' list closed", |s| {
        !s.contains("any key closes it")
    });

    tmux.keys(&["q"]);
    let screen = tmux.wait_text("watch exited 0");
    assert!(
        screen.contains("BEFORE-WATCH"),
        "the shell's screen is back:\n{screen}"
    );
    assert!(!screen.contains("003-gamma"), "{screen}");
    assert_eq!(tmux.pane("#{alternate_on}"), "0");
    assert_eq!(
        tmux.pane("#{cursor_flag}"),
        "1",
        "the cursor is shown again"
    );
    let modes = wait_for_file(&stty);
    assert!(
        modes.contains(" icanon") && modes.contains(" echo "),
        "{modes}"
    );
}

fn wait_for_file(path: &Path) -> String {
    crate::common::wait_for("stty's report", || {
        std::fs::read_to_string(path).is_ok_and(|t| t.contains("icanon"))
    });
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn sigterm_and_a_panic_give_the_terminal_back() {
    if !have_tmux() {
        return;
    }
    let repo = repo_with_specs();
    let stty = repo.tmp.path().join("stty");
    let tmux = Tmux::start(&repo.root, &watch_line("watch", &stty));
    tmux.wait_text("003-gamma");
    let watch = watch_pid(&repo);
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(watch).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let screen = tmux.wait_text("watch exited 130");
    assert!(screen.contains("BEFORE-WATCH"), "{screen}");
    assert_eq!(tmux.pane("#{alternate_on}"), "0");
    let modes = wait_for_file(&stty);
    assert!(
        modes.contains(" icanon") && modes.contains(" echo "),
        "{modes}"
    );

    // A panic (debug builds panic on `!` when asked to, for this test) restores it too.
    let stty = repo.tmp.path().join("stty-panic");
    let line =
        watch_line("watch", &stty).replace("printf", "export RUNNER_WATCH_TEST_PANIC=1; printf");
    let tmux = Tmux::start(&repo.root, &line);
    tmux.wait_text("003-gamma");
    tmux.keys(&["!"]);
    let screen = tmux.wait_text("watch exited 101");
    assert!(
        screen.contains("panicked"),
        "the panic is reported:\n{screen}"
    );
    assert_eq!(tmux.pane("#{alternate_on}"), "0");
    let modes = wait_for_file(&stty);
    assert!(
        modes.contains(" icanon") && modes.contains(" echo "),
        "{modes}"
    );
}

#[test]
fn a_watch_whose_terminal_goes_away_ends_at_once() {
    if !have_tmux() {
        return;
    }
    let repo = repo_with_specs();
    // The pane's process is watch itself: killing the server closes its terminal under it.
    let line = format!("exec {} watch", shell_words::quote(RUNNER));
    let tmux = Tmux::start(&repo.root, &line);
    tmux.wait_text("003-gamma");
    let pid = watch_pid(&repo);
    tmux.run(&["kill-server"]);
    let gone = Instant::now();
    crate::common::wait_for("watch to end with its terminal", || {
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit_once(") ")
                    .is_some_and(|(_, rest)| rest.starts_with('Z'))
            })
    });
    let took = gone.elapsed();
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

/// The pid of the `runner watch` running in `repo` (its current folder is the repository).
fn watch_pid(repo: &TestRepo) -> i32 {
    let mut found = None;
    crate::common::wait_for("the watch process", || {
        found = std::fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let cwd = std::fs::read_link(e.path().join("cwd")).ok()?;
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            let is_watch =
                args.first() == Some(&RUNNER.as_bytes()) && args.get(1) == Some(&&b"watch"[..]);
            (is_watch && cwd == repo.root).then_some(pid)
        });
        found.is_some()
    });
    found.unwrap()
}
