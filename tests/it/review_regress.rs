//! Defects found by the adversarial review of issue 9's restructure (reviewer r3), each
//! reproduced against the real binary.

use crate::common::*;

fn agent() -> String {
    fixture("fake-agent").display().to_string()
}

/// A signal (not a key press) at the existing-work question, after a re-pin was confirmed:
/// "cancelled; nothing was changed" must hold, so the re-pin is put back.
#[test]
fn a_signal_at_the_work_question_after_a_repin_puts_the_pin_back() {
    use expectrl::session::OsSession;
    use expectrl::{Eof, Expect};
    let repo = repo_pinned_to_a_deleted_base("001-ask");
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let mut cmd = std::process::Command::new(RUNNER);
        cmd.args([
            "run",
            "--spec",
            "001",
            "--agent-command",
            &agent(),
            "--base-branch",
            "main",
        ])
        .current_dir(&repo.root)
        .env("TERM", "xterm");
        let mut s = OsSession::spawn(cmd).unwrap();
        s.set_expect_timeout(Some(std::time::Duration::from_secs(20)));
        s.expect("Re-pin 001-ask to \"main\"?").unwrap();
        s.send("y\r").unwrap();
        s.expect("What now?").unwrap();
        let pid = s.get_process().pid().as_raw();
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(pid, sig) };
        s.expect("cancelled; nothing was changed").unwrap();
        let _ = s.expect(Eof);
        let status = format!("{:?}", s.get_process_mut().wait().unwrap());
        assert!(status.contains(", 130)"), "signal {sig}: {status}");
        assert_eq!(
            repo.plan("001-ask")["base_branch"],
            "dev",
            "signal {sig}: the re-pin stayed although nothing was to change"
        );
    }
}

/// A demo whose step fails (here every `sh` fails, so no verification passes) still ends with
/// where its folder is and the command that removes it, working as printed.
#[test]
fn a_demo_that_fails_midway_says_how_to_remove_its_folder() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("sh"), "#!/bin/bash\nexit 1\n").unwrap();
    std::fs::set_permissions(bin.join("sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let dir = tmp.path().join("the demo 'x'");
    let out = std::process::Command::new(RUNNER)
        .args(["demo", "--dir"])
        .arg(&dir)
        .env("PATH", &path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(dir.join(".git").exists(), "the demo's repository was made");
    let remove = stderr(&out)
        .lines()
        .find_map(|l| {
            l.trim_start()
                .strip_prefix("remove it with: ")
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no command to remove the folder:\n{}", stderr(&out)));
    let words = shell_words::split(&remove).unwrap();
    assert_eq!(words[..2], ["rm", "-rf"], "{remove}");
    let status = std::process::Command::new("/bin/sh")
        .args(["-c", &remove])
        .current_dir("/")
        .status()
        .unwrap();
    assert!(status.success());
    assert!(!dir.exists(), "{remove} did not remove {}", dir.display());
}

/// `runner …` started in a folder that was removed since (a shell left in a deleted temp
/// folder): the demo needs no current folder and works; a command that does says what is
/// wrong and what to do (it said only "No such file or directory").
#[test]
fn a_removed_current_folder_does_not_stop_the_demo_and_is_explained_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let gone = tmp.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let in_removed_folder = |args: &str| {
        std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("cd \"$1\" && rmdir \"$1\" && exec \"$2\" {args}"))
            .args(["sh", gone.to_str().unwrap(), RUNNER])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let demo_dir = tmp.path().join("demo");
    let out = in_removed_folder(&format!("demo --dir '{}'", demo_dir.display()));
    assert_exit(&out, 0);
    std::fs::create_dir(&gone).unwrap();
    let out = in_removed_folder("status");
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("current folder"), "{err}");
    assert!(err.contains("hint: "), "{err}");
}

/// `runner status` (or any probe) holds a spec's run lock for an instant: a merge started at
/// that moment must not be refused as busy (exit 4, naming a run that ended long ago).
#[test]
fn a_probe_holding_the_run_lock_for_an_instant_does_not_refuse_a_merge() {
    let repo = repo_with_fixture_plan("001-probe");
    assert_exit(&repo.run_spec("001", &[]), 0);
    let lock = repo.spec_dir("001-probe").join("run.lock");
    // A probe's instant, drawn out a little so that the merge surely starts inside it.
    let mut probe = hold_lock_for(&lock, "0.15");
    let out = repo.runner(&["merge", "--spec", "001-probe", "--yes"]);
    let _ = probe.wait();
    assert_exit(&out, 0);
}

/// The same for a run that takes over the slot of another spec: a probe of that spec's run
/// lock at that instant is not that spec being run.
#[test]
fn a_probe_of_the_other_specs_lock_does_not_refuse_a_slot_switch() {
    let repo = repo_with_fixture_plan("001-first");
    let second = repo.add_spec("002-second");
    std::fs::copy(
        fixture("plans/two-phases.json"),
        second.join("implementation_plan.json"),
    )
    .unwrap();
    assert_exit(&repo.run_spec("001", &[]), 0);
    let lock = repo.spec_dir("001-first").join("run.lock");
    let mut probe = hold_lock_for(&lock, "0.15");
    let out = repo.run_spec("002", &[]);
    let _ = probe.wait();
    assert_exit(&out, 0);
}

/// `demo --dir` naming a file or a dangling link is bad input (exit 2) that says so, not an
/// OS error ("File exists" for a dangling link) with exit 1; nothing is made.
#[test]
fn a_demo_dir_that_is_a_file_or_a_dangling_link_is_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a file");
    std::fs::write(&file, "x").unwrap();
    let link = tmp.path().join("a link");
    std::os::unix::fs::symlink(tmp.path().join("nowhere"), &link).unwrap();
    for dir in [&file, &link] {
        let out = std::process::Command::new(RUNNER)
            .args(["demo", "--dir"])
            .arg(dir)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_exit(&out, 2);
        assert!(stderr(&out).contains("is not a folder"), "{}", stderr(&out));
    }
    assert!(!tmp.path().join("nowhere").exists());
}
