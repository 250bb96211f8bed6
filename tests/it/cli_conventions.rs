//! The conventions every command shares: `--color`, `NO_COLOR`, `-q`, `-C`, shell completions,
//! the man page, `runner init` and `runner config`.

use std::time::Duration;

use crate::common::*;
use serde_json::Value;

const SPEC: &str = "001-feature";
const ESC: &str = "\x1b[";

fn built() -> TestRepo {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    assert_exit(&repo.run_spec(SPEC, &[]), 0);
    repo
}

/// Everything a terminal session showed until the program ended.
fn screen_text(s: &mut expectrl::session::OsSession) -> String {
    use expectrl::{Eof, Expect};
    let found = s.expect(Eof).unwrap();
    let mut text = String::from_utf8_lossy(found.before()).into_owned();
    for m in found.matches() {
        text.push_str(&String::from_utf8_lossy(m));
    }
    text
}

fn runner_env(repo: &TestRepo, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = repo.cmd(args);
    cmd.env_remove("NO_COLOR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn colour_is_for_terminals_and_never_with_no_color() {
    let repo = built();
    let coloured = runner_env(&repo, &["status", "--color", "always"], &[]);
    assert_exit(&coloured, 0);
    let text = stdout(&coloured);
    assert!(text.contains(&format!("{ESC}32mcomplete")), "{text:?}");
    assert!(text.contains(&format!("{ESC}1m{SPEC}")), "{text:?}");
    // Into a pipe (auto), with NO_COLOR, or --color never: plain, and the same words.
    let piped = stdout(&runner_env(&repo, &["status"], &[]));
    assert!(!piped.contains(ESC), "{piped:?}");
    let no_color = stdout(&runner_env(&repo, &["status"], &[("NO_COLOR", "1")]));
    assert_eq!(no_color, piped);
    let never = stdout(&runner_env(&repo, &["--color", "never", "status"], &[]));
    assert_eq!(never, piped);
    // --color always wins over NO_COLOR; an empty NO_COLOR counts as unset.
    let forced = runner_env(&repo, &["status", "--color=always"], &[("NO_COLOR", "1")]);
    assert!(stdout(&forced).contains(ESC));
    let strip = |s: &str| {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find(ESC) {
            out.push_str(&rest[..i]);
            let end = rest[i..].find('m').unwrap();
            rest = &rest[i + end + 1..];
        }
        out + rest
    };
    assert_eq!(strip(&text), piped);
    let bad = runner_env(&repo, &["status", "--color", "sometimes"], &[]);
    assert_exit(&bad, 2);
}

#[test]
fn on_a_terminal_status_is_coloured_unless_no_color() {
    use expectrl::session::OsSession;
    let repo = built();
    let screen = |no_color: Option<&str>| {
        let mut cmd = crate::common::runner_command();
        cmd.arg("status")
            .current_dir(&repo.root)
            .env("TERM", "xterm");
        match no_color {
            Some(v) => cmd.env("NO_COLOR", v),
            None => cmd.env_remove("NO_COLOR"),
        };
        let mut s = OsSession::spawn(cmd).unwrap();
        s.set_expect_timeout(Some(Duration::from_secs(20)));
        screen_text(&mut s)
    };
    let tty = screen(None);
    assert!(tty.contains(&format!("{ESC}32mcomplete")), "{tty:?}");
    assert!(screen(Some("")).contains(ESC), "an empty NO_COLOR is unset");
    let plain = screen(Some("1"));
    assert!(
        plain.contains("complete") && !plain.contains(ESC),
        "{plain:?}"
    );
}

#[test]
fn review_colours_the_stat_and_the_diff_only_when_asked() {
    let repo = built();
    let out = runner_env(
        &repo,
        &["review", "--spec", SPEC, "--diff", "--color", "always"],
        &[],
    );
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains(&format!("{ESC}1mdiff --git")), "{text:?}");
    assert!(text.contains(&format!("{ESC}32m+")), "{text:?}");
    assert!(
        text.contains(&format!("{ESC}32mIt merges cleanly")),
        "{text:?}"
    );
    let plain = stdout(&runner_env(
        &repo,
        &["review", "--spec", SPEC, "--diff"],
        &[],
    ));
    assert!(!plain.contains(ESC));
    assert!(plain.contains("diff --git") && plain.contains("It merges cleanly"));
}

#[test]
fn quiet_drops_informational_lines_but_not_reports_or_errors() {
    use expectrl::Expect;
    use expectrl::session::OsSession;
    let repo = built();
    let report = stdout(&repo.runner(&["status"]));
    let quiet = repo.runner(&["-q", "status"]);
    assert_exit(&quiet, 0);
    assert_eq!(stdout(&quiet), report);
    assert_eq!(stderr(&quiet), "");
    let err = repo.runner(&["--quiet", "review", "--spec", "nope"]);
    assert_exit(&err, 2);
    assert!(stderr(&err).contains("nope"), "{}", stderr(&err));
    // "Not merged." after a question answered no is informational.
    let answer_no = |quiet: bool| {
        let mut cmd = crate::common::runner_command();
        if quiet {
            cmd.arg("-q");
        }
        cmd.args(["merge", "--spec", SPEC])
            .current_dir(&repo.root)
            .env("TERM", "xterm");
        let mut s = OsSession::spawn(cmd).unwrap();
        s.set_expect_timeout(Some(Duration::from_secs(20)));
        s.expect("Merge 001-feature into main").unwrap();
        s.send("n\r").unwrap();
        screen_text(&mut s)
    };
    assert!(answer_no(false).contains("Not merged."));
    assert!(!answer_no(true).contains("Not merged."));
    assert_eq!(repo.git(&["rev-list", "--count", "main"]).trim(), "1");
}

#[test]
fn dash_c_runs_as_if_started_there_and_a_missing_dir_is_exit_2() {
    let repo = built();
    let root = repo.root.display().to_string();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = crate::common::runner_command()
        .args(["-C", &root, "status", "--json"])
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["specs"][0]["spec"], SPEC);
    // A relative -C is taken from where runner started; after the subcommand works too.
    let out = crate::common::runner_command()
        .args(["status", "-C", "project"])
        .current_dir(repo.root.parent().unwrap())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert!(stdout(&out).contains(SPEC));
    let missing = repo.path("no-such-dir").display().to_string();
    let out = repo.runner(&["-C", &missing, "status"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains(&format!("-C {missing}")),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "");
}

#[test]
fn completions_name_every_command_and_man_is_a_roff_page() {
    let repo = TestRepo::new();
    let commands = [
        "run",
        "recover",
        "review",
        "merge",
        "discard",
        "undo",
        "gc",
        "status",
        "chunk",
        "init",
        "config",
        "completions",
        "man",
        "demo",
    ];
    // Each shell's script asks runner (`COMPLETE=<shell>`), which answers from the commands
    // themselves: every command, the global flags, never the hidden one.
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = repo.runner(&["completions", shell]);
        assert_exit(&out, 0);
        let script = stdout(&out);
        assert!(
            script.contains("COMPLETE") && script.contains(shell) && script.contains("runner"),
            "{shell}: {script}"
        );
        let out = repo
            .cmd(&["--", "runner", ""])
            .env("COMPLETE", shell)
            .env("_CLAP_COMPLETE_INDEX", "1")
            .output()
            .unwrap();
        assert_exit(&out, 0);
        let offered = stdout(&out);
        for c in commands.iter().chain(&["--color"]) {
            assert!(offered.contains(c), "{shell} does not offer {c}: {offered}");
        }
        assert!(
            !offered.contains("demo-agent"),
            "{shell} offers the hidden command"
        );
    }
    assert_exit(&repo.runner(&["completions", "tcsh"]), 2);
    let man = repo.runner(&["man"]);
    assert_exit(&man, 0);
    let man = stdout(&man);
    let th = man.lines().find(|l| l.starts_with('.')).unwrap();
    assert!(th.starts_with(".ie") || th.starts_with(".TH"), "{th}");
    assert!(man.contains(".TH runner 1"), "{man}");
    assert!(man.contains(".SH COMMANDS"));
    for c in commands {
        assert!(
            man.contains(&format!(".SS \"runner {c}\"")),
            "man lacks {c}"
        );
    }
    assert!(
        man.contains("\\-\\-squash"),
        "a command's own flags are in the page"
    );
}

#[test]
fn init_writes_the_commented_defaults_once() {
    let repo = TestRepo::new();
    let out = repo.runner(&["init"]);
    assert_exit(&out, 0);
    let written = repo.read(".auto-claude/config.toml");
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".auto-claude.example/config.toml"),
    )
    .unwrap();
    assert_eq!(written, example);
    assert!(written.contains("# max_attempts = 3"));
    // A second init refuses and changes nothing; --force replaces.
    repo.write_config("[run]\nmax_attempts = 9\n");
    let again = repo.runner(&["init"]);
    assert_exit(&again, 2);
    assert!(stderr(&again).contains("--force"), "{}", stderr(&again));
    assert_eq!(
        repo.read(".auto-claude/config.toml"),
        "[run]\nmax_attempts = 9\n"
    );
    assert_exit(&repo.runner(&["init", "--force"]), 0);
    assert_eq!(repo.read(".auto-claude/config.toml"), example);
}

#[cfg(unix)]
#[test]
fn init_never_writes_through_a_link() {
    let repo = TestRepo::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("victim.toml");
    std::fs::write(&target, "mine\n").unwrap();
    std::fs::create_dir_all(repo.path(".auto-claude")).unwrap();
    std::os::unix::fs::symlink(&target, repo.path(".auto-claude/config.toml")).unwrap();
    assert_exit(&repo.runner(&["init"]), 2);
    assert_exit(&repo.runner(&["init", "--force"]), 0);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine\n");
    let link = std::fs::symlink_metadata(repo.path(".auto-claude/config.toml")).unwrap();
    assert!(link.is_file(), "the link was replaced by the file");
}

#[test]
fn unknown_keys_warn_and_config_says_where_each_value_came_from() {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    repo.write_config("[run]\nmax_attempt = 5\nmax_sessions = 9\n[agent]\ncommand = \"a 'b c'\"\n");
    let path = repo.path(".auto-claude/config.toml").display().to_string();
    let out = repo.runner(&["config", "--json"]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains("warning: unknown key `run.max_attempt`"),
        "{err}"
    );
    assert!(
        err.contains(&path) && err.contains("max_attempts, max_sessions"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["schema"], 1);
    assert_eq!(v["file_exists"], true);
    let get = |k: &str| {
        v["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == k)
            .unwrap()
            .clone()
    };
    assert_eq!(get("run.max_sessions")["value"], 9);
    assert_eq!(get("run.max_sessions")["source"], "file");
    assert_eq!(get("run.max_sessions")["path"], path.as_str());
    assert_eq!(get("run.max_attempts")["value"], 3);
    assert_eq!(get("run.max_attempts")["source"], "default");
    assert_eq!(
        get("agent.command")["value"],
        serde_json::json!(["a", "b c"])
    );
    assert_eq!(v["unknown_keys"][0]["key"], "run.max_attempt");
    let text = stdout(&repo.runner(&["config"]));
    assert!(text.contains("max_sessions = 9"), "{text}");
    assert!(
        text.contains("max_attempts = 3") && text.contains("default"),
        "{text}"
    );
    // A command that reads the config warns too, and still works.
    let run = repo.run_spec(SPEC, &[]);
    assert_exit(&run, 0);
    let run_err = stderr(&run);
    let warnings: Vec<&str> = run_err
        .lines()
        .filter(|l| l.contains("unknown key"))
        .collect();
    assert_eq!(warnings.len(), 1, "once per run: {warnings:?}");
    assert_eq!(repo.statuses(SPEC).len(), 3);
}

#[test]
fn config_without_a_file_is_all_defaults() {
    let repo = TestRepo::new();
    let out = repo.runner(&["config", "--json"]);
    assert_exit(&out, 0);
    assert_eq!(stderr(&out), "");
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["file_exists"], false);
    assert!(
        v["settings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["source"] == "default")
    );
}

/// `-q` on a run: none of the run's news (planning, the chunks' ✓ lines), the summary still on
/// stdout; the notices that say where work went stay (a cut-off session's recovery).
#[test]
fn a_quiet_run_prints_its_summary_and_notices_only() {
    let repo = TestRepo::new();
    repo.add_spec("001-add-login");
    let agent = fixture("fake-agent").display().to_string();
    let loud = repo.runner(&["run", "--spec", "001", "--agent-command", &agent]);
    assert_exit(&loud, 0);
    assert!(
        stderr(&loud).contains("✓ core-a completed"),
        "{}",
        stderr(&loud)
    );

    let repo = TestRepo::new();
    repo.add_spec("001-add-login");
    run_killed_at(&repo, "001-add-login", "after_coder_session@1");
    let quiet = repo.runner(&[
        "-q",
        "run",
        "--spec",
        "001",
        "--auto-continue",
        "--agent-command",
        &agent,
    ]);
    assert_exit(&quiet, 0);
    let err = stderr(&quiet);
    assert!(!err.contains('✓') && !err.contains("Planning"), "{err}");
    assert!(err.contains("Recovered 001-add-login"), "the notice: {err}");
    assert!(
        stdout(&quiet).contains("001-add-login: complete"),
        "{}",
        stdout(&quiet)
    );
}

/// With `--color always`, a chunk's ✓ is green even into a pipe; by default (a pipe) no escape.
#[test]
fn a_runs_check_marks_are_coloured_only_when_asked() {
    let run = |color: &str| {
        let repo = TestRepo::new();
        repo.add_spec("001-add-login");
        let agent = fixture("fake-agent").display().to_string();
        let out = repo.runner(&[
            "--color",
            color,
            "run",
            "--spec",
            "001",
            "--agent-command",
            &agent,
        ]);
        assert_exit(&out, 0);
        stderr(&out)
    };
    assert!(run("always").contains("\u{1b}[32m✓"), "{}", run("always"));
    assert!(!run("auto").contains('\u{1b}'));
}
