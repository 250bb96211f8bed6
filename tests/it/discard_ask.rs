//! `runner discard`'s question on a real pseudo-terminal (expectrl): y/N with No the default,
//! as `runner merge` asks (a discard can be undone), and without a terminal `--yes` or exit 2.

use std::time::Duration;

use expectrl::session::OsSession;
use expectrl::{Eof, Expect};

use crate::common::*;

const SPEC: &str = "001-feature";

/// `runner discard --spec SPEC` on a terminal, at its question.
fn asked(repo: &TestRepo) -> OsSession {
    let mut cmd = runner_command();
    cmd.args(["discard", "--spec", SPEC])
        .current_dir(&repo.root)
        .env("TERM", "xterm")
        .env("NO_COLOR", "1");
    let mut s = OsSession::spawn(cmd).unwrap();
    s.set_expect_timeout(Some(Duration::from_secs(20)));
    s.expect("Discard the build of 001-feature? (it can be undone)")
        .unwrap();
    s.expect("(y/N)").unwrap();
    s
}

/// What the session showed until it ended, and its exit status.
fn ended(s: &mut OsSession) -> (String, String) {
    let found = s.expect(Eof).unwrap();
    let mut text = String::from_utf8_lossy(found.before()).into_owned();
    for m in found.matches() {
        text.push_str(&String::from_utf8_lossy(m));
    }
    (text, format!("{:?}", s.get_process_mut().wait().unwrap()))
}

#[test]
fn discard_asks_y_n_with_no_the_default_and_yes_discards() {
    let repo = repo_with_fixture_plan(SPEC);
    assert_exit(&repo.run_spec(SPEC, &[]), 0);
    let tip = repo.git(&["rev-parse", "auto-claude/001-feature"]);
    // n, and Enter alone (No is the default): nothing discarded.
    for answer in ["n\r", "\r"] {
        let mut s = asked(&repo);
        s.send(answer).unwrap();
        let (text, status) = ended(&mut s);
        assert!(text.contains("Not discarded."), "{answer:?}: {text}");
        assert!(status.contains(", 0)"), "{status}");
        assert_eq!(repo.git(&["rev-parse", "auto-claude/001-feature"]), tip);
    }
    // y: discarded, backed up, and the way back said.
    let mut s = asked(&repo);
    s.send("y\r").unwrap();
    let (text, status) = ended(&mut s);
    assert!(
        text.contains("Discarded the build of 001-feature"),
        "{text}"
    );
    assert!(text.contains("runner undo --spec 001-feature"), "{text}");
    assert!(status.contains(", 0)"), "{status}");
    assert!(
        repo.git(&["for-each-ref", "refs/auto-claude/backup/"])
            .contains(tip.trim())
    );
    assert!(repo.statuses(SPEC).iter().all(|(_, s)| s == "pending"));
}

#[test]
fn without_a_terminal_discard_needs_yes() {
    let repo = repo_with_fixture_plan(SPEC);
    assert_exit(&repo.run_spec(SPEC, &[]), 0);
    let tip = repo.git(&["rev-parse", "auto-claude/001-feature"]);
    let out = repo.runner(&["discard", "--spec", SPEC]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("--yes"), "{}", stderr(&out));
    assert_eq!(repo.git(&["rev-parse", "auto-claude/001-feature"]), tip);
    assert!(repo.statuses(SPEC).iter().all(|(_, s)| s == "completed"));
    assert_exit(&repo.runner(&["discard", "--spec", SPEC, "--yes"]), 0);
    assert!(repo.statuses(SPEC).iter().all(|(_, s)| s == "pending"));
}
