//! The conventions every command shares: `--color`, `NO_COLOR`, `-q`, `-C`.

use std::process::Command;
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
        let mut cmd = Command::new(RUNNER);
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
        let mut cmd = Command::new(RUNNER);
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
    let out = Command::new(RUNNER)
        .args(["-C", &root, "status", "--json"])
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["specs"][0]["name"], SPEC);
    // A relative -C is taken from where runner started; after the subcommand works too.
    let out = Command::new(RUNNER)
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
