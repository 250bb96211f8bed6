//! The one spec resolver: `--spec`, else the runner slot the command runs in, else the only
//! spec; several and no terminal: exit 2 with a command per spec that works when copied.

use serde_json::Value;

use crate::common::*;

/// Two specs; `001-a` built to the end, so the slot `.worktrees/auto-claude` holds its branch.
fn two_specs_one_built() -> TestRepo {
    let repo = TestRepo::new();
    repo.add_spec("001-a");
    repo.add_spec("002-b");
    assert_exit(&repo.run_spec("001-a", &[]), 0);
    assert!(repo.worktree().is_dir());
    repo
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

fn spec_names(status: &Value) -> Vec<String> {
    status["specs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["spec"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn inside_a_slot_the_spec_is_its_branch() {
    let repo = two_specs_one_built();
    let inside = repo.worktree().join("sub");
    std::fs::create_dir_all(&inside).unwrap();

    let review = repo
        .cmd(&["review", "--json"])
        .current_dir(&inside)
        .output()
        .unwrap();
    assert_exit(&review, 0);
    assert_eq!(json(&review)["spec"], "001-a");

    let status = repo
        .cmd(&["status", "--json"])
        .current_dir(repo.worktree())
        .output()
        .unwrap();
    assert_exit(&status, 0);
    assert_eq!(spec_names(&json(&status)), ["001-a"]);

    let agent = fixture("fake-agent").display().to_string();
    let run = repo
        .cmd(&["run", "--agent-command", &agent, "--json"])
        .current_dir(repo.worktree())
        .output()
        .unwrap();
    assert_exit(&run, 0);
    // One summary (not the list `--auto-continue` without a spec resumes), for the slot's spec.
    assert_eq!(json(&run)["spec"], "001-a", "{}", stdout(&run));
    assert!(!repo.plan_path("002-b").exists(), "002-b was not planned");

    // Explicit wins: from the slot of 001-a, --spec names another spec.
    let other = repo
        .cmd(&["status", "--spec", "002", "--json"])
        .current_dir(repo.worktree())
        .output()
        .unwrap();
    assert_exit(&other, 0);
    assert_eq!(spec_names(&json(&other)), ["002-b"]);
}

#[test]
fn several_specs_without_a_terminal_list_a_command_per_spec_that_works() {
    let repo = TestRepo::new();
    repo.add_spec("001-a");
    repo.add_spec("002-b");
    let agent = fixture("fake-agent").display().to_string();
    // The harness's environment (the fake agent's files), but not `cmd`, which adds
    // --auto-continue to a run.
    let harness = repo.cmd(&[]);
    let env = || harness.get_envs().filter_map(|(k, v)| Some((k, v?)));
    let out = crate::common::runner_command()
        .args(["run", "--agent-command", &agent])
        .current_dir(&repo.root)
        .envs(env())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_exit(&out, 2);
    let err = stderr(&out);
    let lines: Vec<&str> = err
        .lines()
        .map(|l| l.trim().trim_start_matches("hint: "))
        .filter(|l| l.starts_with("runner run "))
        .collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].ends_with("--spec 001-a"), "{err}");
    assert!(lines[1].ends_with("--spec 002-b"), "{err}");
    assert!(!repo.plan_path("001-a").exists() && !repo.plan_path("002-b").exists());

    // The listed command, copied into a shell, builds that spec.
    let bin_dir = std::path::Path::new(RUNNER).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let copied = crate::common::isolated("sh")
        .args(["-c", lines[1]])
        .current_dir(&repo.root)
        .envs(env())
        .env("PATH", path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_exit(&copied, 0);
    assert!(repo.branch_log("auto-claude/002-b").len() >= 2);
    assert!(!repo.plan_path("001-a").exists());

    // The other commands list their own command line the same way.
    let review = repo.runner(&["review"]);
    assert_exit(&review, 2);
    assert!(
        stderr(&review).contains("runner review --spec 001-a")
            && stderr(&review).contains("runner review --spec 002-b"),
        "{}",
        stderr(&review)
    );
    let merge = repo.runner(&["merge", "--squash"]);
    assert_exit(&merge, 2);
    assert!(
        stderr(&merge).contains("runner merge --squash --spec 002-b"),
        "{}",
        stderr(&merge)
    );
}

#[test]
fn status_spec_shows_one_spec() {
    let repo = TestRepo::new();
    repo.add_spec("001-a");
    repo.add_spec("002-b");
    let all = repo.runner(&["status", "--json"]);
    assert_exit(&all, 0);
    assert_eq!(spec_names(&json(&all)), ["001-a", "002-b"]);

    let one = repo.runner(&["status", "--spec", "002", "--json"]);
    assert_exit(&one, 0);
    assert_eq!(spec_names(&json(&one)), ["002-b"]);

    let text = repo.runner(&["status", "--spec", "002-b"]);
    assert_exit(&text, 0);
    assert!(
        stdout(&text).contains("002-b") && !stdout(&text).contains("001-a"),
        "{}",
        stdout(&text)
    );

    let none = repo.runner(&["status", "--spec", "zzz"]);
    assert_exit(&none, 2);
    assert!(stderr(&none).contains("no spec matches \"zzz\""));
}

#[test]
fn a_worktree_that_is_not_a_runner_slot_infers_nothing() {
    let repo = TestRepo::new();
    repo.add_spec("001-a");
    repo.add_spec("002-b");
    // A worktree of the user's own, on a branch named like a spec's.
    let elsewhere = repo.tmp.path().join("elsewhere");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "auto-claude/001-a",
        elsewhere.to_str().unwrap(),
    ]);
    let review = repo
        .cmd(&["review"])
        .current_dir(&elsewhere)
        .output()
        .unwrap();
    assert_exit(&review, 2);
    assert!(
        stderr(&review).contains("cannot tell which spec")
            && stderr(&review).contains("--spec 002-b"),
        "{}",
        stderr(&review)
    );
    let status = repo
        .cmd(&["status", "--json"])
        .current_dir(&elsewhere)
        .output()
        .unwrap();
    assert_exit(&status, 0);
    assert_eq!(spec_names(&json(&status)), ["001-a", "002-b"]);
}

#[test]
fn several_specs_on_a_terminal_offer_a_numbered_choice_and_esc_changes_nothing() {
    use expectrl::session::OsSession;
    use expectrl::{Eof, Expect};
    let repo = two_specs_one_built();
    let on_terminal = |args: &[&str]| {
        let mut cmd = crate::common::runner_command();
        cmd.args(args)
            .current_dir(&repo.root)
            .env("TERM", "xterm")
            .env("NO_COLOR", "1");
        let mut s = OsSession::spawn(cmd).unwrap();
        s.set_expect_timeout(Some(std::time::Duration::from_secs(20)));
        s
    };

    let mut review = on_terminal(&["review"]);
    review.expect("Which spec?").unwrap();
    review.expect("1. 001-a").unwrap();
    review.expect("2. 002-b").unwrap();
    review.send("\r").unwrap();
    review.expect("Spec 001-a on auto-claude/001-a").unwrap();
    let _ = review.expect(Eof);
    let status = review.get_process_mut().wait().unwrap();
    assert!(format!("{status:?}").contains(", 0)"), "{status:?}");

    let mut discard = on_terminal(&["discard"]);
    discard.expect("Which spec?").unwrap();
    discard.send("\x1b").unwrap();
    discard.expect("cancelled; nothing was changed").unwrap();
    let _ = discard.expect(Eof);
    let status = discard.get_process_mut().wait().unwrap();
    assert!(format!("{status:?}").contains(", 130)"), "{status:?}");
    assert!(repo.worktree().is_dir());
    assert!(repo.branch_log("auto-claude/001-a").len() >= 2);
}

#[test]
fn a_spec_matching_several_lists_the_typed_command_for_each() {
    let repo = TestRepo::new();
    repo.add_spec("001-add-login");
    repo.add_spec("010-login-page");
    for (args, typed) in [
        (
            &["recover", "--spec", "login", "--dry-run"][..],
            "runner recover --dry-run",
        ),
        (
            &["status", "--spec=login", "--json"],
            "runner status --json",
        ),
        (&["undo", "--list", "--spec", "login"], "runner undo --list"),
    ] {
        let out = repo.runner(args);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(err.contains("\"login\" matches several specs"), "{err}");
        for spec in ["001-add-login", "010-login-page"] {
            let line = format!("{typed} --spec {spec}");
            assert!(err.contains(&line), "{line:?} not in {err}");
        }
    }
}
