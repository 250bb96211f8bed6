//! An adversarial review of the CLI conventions (issue 9, section 2), against the real binary:
//! each test here failed before the fix beside it.

use std::process::Command;

use crate::common::*;

/// `runner man` documents the nested commands too: `chunk done|fail|show` and their flags
/// (`--reason`, `--notes`), which agents are told to call.
#[test]
fn the_man_page_covers_the_chunk_subcommands() {
    let out = crate::common::runner_command().arg("man").output().unwrap();
    assert_exit(&out, 0);
    let page = stdout(&out);
    for wanted in [
        "runner chunk done",
        "runner chunk fail",
        "runner chunk show",
        "\\-\\-reason",
        "\\-\\-notes",
    ] {
        assert!(page.contains(wanted), "the man page lacks {wanted:?}");
    }
}

/// The error `runner ARGS` printed on stderr, which must exit with `code`: its message and
/// its hints (the `  hint: ` lines).
fn text_error(repo: &TestRepo, args: &[&str], code: i32) -> (String, Vec<String>) {
    let out = repo.runner(args);
    assert_exit(&out, code);
    let text = stderr(&out);
    let mut parts = text.split("\n  hint: ");
    let message = parts.next().unwrap().to_string();
    (message, parts.map(|h| h.trim_end().to_string()).collect())
}

/// The advice is a hint, not part of the message: `init` onto an existing config, an invalid
/// config, an `undo` with nothing to undo.
#[test]
fn advice_is_a_hint_not_fused_into_the_message() {
    let repo = TestRepo::new();
    repo.add_spec("001-a");
    assert_exit(&repo.runner(&["init"]), 0);
    let cases: [(&[&str], &str); 3] = [
        (&["init"], "runner init --force"),
        (&["config"], "runner init --force"),
        (&["undo", "--spec", "001-a"], "runner undo --list"),
    ];
    for (args, advice) in cases {
        if args == ["config"] {
            repo.write_config("[run]\nmax_attempts = \"three\"\n");
        }
        let (message, hints) = text_error(&repo, args, 2);
        assert!(!message.contains(advice), "{args:?}: advice in {message:?}");
        assert!(
            hints.iter().any(|h| h.contains(advice)),
            "{args:?}: no hint {advice:?}: {hints:?}"
        );
    }
}

/// With `-C DIR`, a command printed in a hint runs where the user typed it: it carries the
/// same `-C DIR` (the hint, copied into a shell in the folder runner was started from, works).
#[test]
fn hints_carry_the_directory_given_with_dash_c() {
    let repo = TestRepo::in_folder("my app");
    repo.add_spec("001-a");
    let parent = repo.root.parent().unwrap();
    let out = crate::common::runner_command()
        .args(["-C", "my app", "undo", "--spec", "001-a"])
        .current_dir(parent)
        .output()
        .unwrap();
    assert_exit(&out, 2);
    let text = stderr(&out);
    let hint = text
        .lines()
        .find_map(|l| l.strip_prefix("  hint: "))
        .unwrap_or_else(|| panic!("no hint: {text}"));
    let command = hint.split('`').nth(1).unwrap();
    assert_eq!(command, "runner -C 'my app' undo --list", "{hint}");
    // As a person would: pasted into a shell, in the folder runner was started from.
    let bin_dir = std::path::Path::new(RUNNER).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let pasted = crate::common::isolated("sh")
        .args(["-c", command])
        .current_dir(parent)
        .env("PATH", path)
        .output()
        .unwrap();
    assert_exit(&pasted, 0);
    // -C after the command: the typed command line, repeated in a hint, gets no second -C.
    repo.add_spec("002-b");
    let out = crate::common::runner_command()
        .args(["review", "-C", "my app"])
        .current_dir(parent)
        .output()
        .unwrap();
    assert_exit(&out, 2);
    let text = stderr(&out);
    assert!(
        text.contains("  hint: runner review -C 'my app' --spec 001-a\n"),
        "{text}"
    );
}

/// The log lines of `-v`/`-vv` follow `--color` and `NO_COLOR` like the rest: on a terminal
/// with NO_COLOR (or `--color never`) they are plain.
#[test]
fn log_lines_on_a_terminal_respect_no_color_and_color_never() {
    use expectrl::session::OsSession;
    use expectrl::{Eof, Expect};
    let repo = TestRepo::new();
    let dir = repo.add_spec("001-a");
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
    let screen = |args: &[&str], no_color: Option<&str>| {
        let mut cmd = crate::common::runner_command();
        cmd.args(args)
            .args(["-vv", "chunk", "done", "core-a", "--spec", "001-a"])
            .current_dir(&repo.root)
            .env("TERM", "xterm")
            .env_remove("RUST_LOG")
            .env_remove("RUNNER_SESSION_ID");
        match no_color {
            Some(v) => cmd.env("NO_COLOR", v),
            None => cmd.env_remove("NO_COLOR"),
        };
        let mut s = OsSession::spawn(cmd).unwrap();
        s.set_expect_timeout(Some(std::time::Duration::from_secs(20)));
        let found = s.expect(Eof).unwrap();
        let mut text = String::from_utf8_lossy(found.before()).into_owned();
        for m in found.matches() {
            text.push_str(&String::from_utf8_lossy(m));
        }
        text
    };
    let coloured = screen(&[], None);
    assert!(
        coloured.contains("writing plan") && coloured.contains("\x1b["),
        "{coloured:?}"
    );
    for (args, no_color) in [(&[][..], Some("1")), (&["--color", "never"][..], None)] {
        let plain = screen(args, no_color);
        assert!(plain.contains("writing plan"), "{plain:?}");
        assert!(!plain.contains('\x1b'), "{args:?} {no_color:?}: {plain:?}");
    }
}

/// A slot on a branch that is not runner's, with uncommitted changes: the ways out are hints,
/// and each command in them works when pasted, even with a space in the repository's path.
#[test]
fn a_foreign_dirty_slot_hints_commands_that_work_when_pasted() {
    let repo = TestRepo::in_folder("my app");
    repo.add_spec("001-a");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "feature",
        ".worktrees/auto-claude",
    ]);
    repo.write(".worktrees/auto-claude/dirty.txt", "mine\n");
    let (message, hints) = text_error(
        &repo,
        &[
            "run",
            "--spec",
            "001-a",
            "--agent-command",
            &fixture("fake-agent").display().to_string(),
        ],
        2,
    );
    assert!(message.contains("dirty.txt"), "{message}");
    assert!(
        !message.contains("git -C"),
        "advice in the message: {message}"
    );
    let keep = hints
        .iter()
        .find_map(|h| h.strip_prefix("keep them: "))
        .unwrap_or_else(|| panic!("no `keep them` hint: {hints:?}"));
    let pasted = crate::common::isolated("sh")
        .args(["-c", keep.trim()])
        .current_dir(repo.tmp.path())
        .output()
        .unwrap();
    assert_exit(&pasted, 0);
    let wt = repo.worktree();
    assert_eq!(git_in(&wt, &["status", "--porcelain"]), "");
    assert_eq!(git_in(&wt, &["log", "-1", "--format=%s"]).trim(), "wip");
    // The other way out runs the same agent: without --agent-command there may be none.
    let agent = fixture("fake-agent").display().to_string();
    let elsewhere = hints
        .iter()
        .find(|h| h.contains("--slot NAME"))
        .unwrap_or_else(|| panic!("no --slot hint: {hints:?}"));
    assert!(
        elsewhere.contains(&format!("--agent-command {agent}")),
        "{elsewhere}"
    );
}

/// A FIFO where the config should be: the refusal says what is wrong, and the hint is a
/// command that removes it when pasted, even with a space in the path.
#[test]
fn a_refused_file_hints_a_quoted_command_that_works_when_pasted() {
    let repo = TestRepo::in_folder("my app");
    let config = repo.path(".auto-claude/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let made = Command::new("mkfifo").arg(&config).status().unwrap();
    assert!(made.success());
    let (message, hints) = text_error(&repo, &["config"], 2);
    assert!(message.contains("not a regular file"), "{message}");
    assert!(
        !message.contains("emove it"),
        "advice in the message: {message}"
    );
    let rm = hints
        .iter()
        .find_map(|h| h.split('`').nth(1).filter(|c| c.starts_with("rm ")))
        .unwrap_or_else(|| panic!("no `rm …` hint: {hints:?}"));
    let pasted = crate::common::isolated("sh")
        .args(["-c", rm])
        .current_dir(repo.tmp.path())
        .output()
        .unwrap();
    assert_exit(&pasted, 0);
    assert!(std::fs::symlink_metadata(&config).is_err(), "{rm} left it");
    assert_exit(&repo.runner(&["config"]), 0);
}

/// `-q` holds for the demo too: its narration on stderr is informational; the summary on
/// stdout stays.
#[test]
fn a_quiet_demo_prints_nothing_on_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let out = crate::common::runner_command()
        .args(["-q", "demo", "--dir"])
        .arg(&dir)
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(stderr(&out), "");
    assert!(stdout(&out).contains("rm -rf"), "{}", stdout(&out));
}

/// `run`'s refusals of a base branch and of an agent that cannot start keep the fact in the
/// message and the way out in a hint.
#[test]
fn run_refusals_keep_their_advice_in_hints() {
    let repo = repo_with_fixture_plan("001-a");
    let (message, hints) = text_error(
        &repo,
        &[
            "run",
            "--spec",
            "001-a",
            "--agent-command",
            "/nonexistent/agent",
        ],
        2,
    );
    assert!(message.contains("cannot start"), "{message}");
    assert!(!message.contains("Check the agent"), "advice in: {message}");
    assert!(
        hints.iter().any(|h| h.contains("--agent-command")),
        "{hints:?}"
    );
    let repo = repo_with_fixture_plan("001-a");
    repo.git(&["checkout", "-q", "--detach"]);
    std::fs::remove_file(repo.plan_path("001-a")).unwrap();
    let (message, hints) = text_error(
        &repo,
        &["run", "--spec", "001-a", "--agent-command", "/bin/true"],
        2,
    );
    assert!(message.contains("HEAD is detached"), "{message}");
    assert!(
        !message.contains("Pass --base-branch"),
        "advice in: {message}"
    );
    assert!(
        hints.iter().any(|h| h.contains("--base-branch")),
        "{hints:?}"
    );
}
