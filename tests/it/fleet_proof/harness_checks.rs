//! The proof's own instruments checked against states made by hand: the audit finds a lost, a
//! duplicated and a stranger commit and a rewrite; the hook names the client's address; the
//! restart loop restarts what dies; marked processes are found and killed; the daemon dies
//! with its guard. (A proof whose instruments cannot see a fault proves nothing.)

use std::time::Duration;

use super::audit::audit;
use super::harness::{MARK_VAR, Remote};
use super::procs::{self, Kind};
use super::supervise::Supervisor;
use crate::common::*;

/// Commit `files` (path, text) on top of HEAD in `root` with `subject`; its id.
fn commit(root: &std::path::Path, files: &[(&str, &str)], subject: &str) -> String {
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git_in(root, &["add", "-A"]);
    git_in(root, &["commit", "-q", "--allow-empty", "-m", subject]);
    git_in(root, &["rev-parse", "HEAD"]).trim().to_string()
}

#[test]
fn the_audit_sees_a_lost_a_duplicated_and_a_stranger_commit_and_a_rewrite() {
    let mut remote = Remote::new("fleet_audit_check");
    let url = remote.serve("127.0.0.1");
    let host = remote.host("hand", &url, 3);
    let root = &host.root;
    // The published folder: a plan of three chunks, all completed.
    let mut plan: serde_json::Value =
        serde_json::from_str(&super::harness::plan_json(1, 3)).unwrap();
    for c in plan["phases"][0]["subtasks"].as_array_mut().unwrap() {
        c["status"] = "completed".into();
    }
    git_in(root, &["checkout", "-q", "--orphan", "folder"]);
    git_in(root, &["rm", "-rqf", "."]);
    commit(
        root,
        &[("implementation_plan.json", &plan.to_string())],
        "folder",
    );
    git_in(
        root,
        &["push", "-q", "origin", "HEAD:refs/runner/specs/001-x"],
    );
    // The branch: p1-c1 twice, p1-c2 never, p1-c3 once, and a commit naming no chunk.
    git_in(root, &["checkout", "-q", "-b", "work", "origin/main"]);
    commit(
        root,
        &[("a", "1")],
        "auto-claude: p1-c1 - Part 1 of phase 1",
    );
    commit(
        root,
        &[("a", "2")],
        "auto-claude: p1-c1 - Part 1 of phase 1",
    );
    let before = commit(
        root,
        &[("c", "3")],
        "auto-claude: p1-c3 - Part 3 of phase 1",
    );
    commit(root, &[("d", "4")], "agent: something else");
    git_in(
        root,
        &["push", "-q", "origin", "HEAD:refs/heads/auto-claude/001-x"],
    );
    // Then a push that drops the last commit: a rewrite of the branch.
    git_in(
        root,
        &[
            "push",
            "-q",
            "-f",
            "origin",
            &format!("{before}:refs/heads/auto-claude/001-x"),
        ],
    );

    let a = audit(&remote, &["001-x".to_string()]);
    assert!(a.all_complete(), "{}", a.describe());
    assert_eq!(a.lost(), 1, "{}", a.describe());
    assert_eq!(a.duplicated(), 1, "{}", a.describe());
    assert_eq!(
        a.strangers(),
        0,
        "the stranger was dropped by the rewrite: {}",
        a.describe()
    );
    assert_eq!(a.rewrites.len(), 1, "{}", a.describe());
    assert!(
        a.rewrites[0].contains("(from 127.0.0.1)"),
        "{:?}",
        a.rewrites
    );

    git_in(
        root,
        &[
            "push",
            "-q",
            "-f",
            "origin",
            "HEAD:refs/heads/auto-claude/001-x",
        ],
    );
    let a = audit(&remote, &["001-x".to_string()]);
    assert_eq!(a.strangers(), 1, "{}", a.describe());
    // An unpublished spec is not complete.
    let none = audit(&remote, &["002-none".to_string()]);
    assert!(!none.all_complete() && none.specs[0].unreadable.is_some());
}

#[test]
fn the_restart_loop_restarts_what_dies_and_the_mark_finds_and_kills_it() {
    let remote = Remote::new("fleet_loop_check");
    let mark = remote.mark.clone();
    let _reaper = procs::Reaper(mark.clone());
    let mut sup = Supervisor::new(&mark);
    let logs = remote.base();
    let m = mark.clone();
    sup.start(
        "loop",
        Box::new(move |n| {
            let mut cmd = std::process::Command::new("sleep");
            cmd.arg("300").env(MARK_VAR, &m);
            (
                cmd,
                logs.join(format!("{n}.out")),
                logs.join(format!("{n}.err")),
            )
        }),
    );
    for round in 1..=2 {
        let mut pid = None;
        wait_for("the loop's process", || {
            pid = procs::marked(&mark).first().map(|p| (p.pid, p.kind));
            pid.is_some()
        });
        let (pid, kind) = pid.unwrap();
        assert_eq!(kind, Kind::Other);
        assert!(
            !procs::kill9(pid, Kind::Worker, &mark),
            "not a worker: left alone"
        );
        assert!(procs::kill9(pid, Kind::Other, &mark), "round {round}");
        wait_for("the killed process to go", || {
            procs::marked(&mark).iter().all(|p| p.pid != pid)
        });
    }
    wait_for("the third start", || !procs::marked(&mark).is_empty());
    let loops = sup.stop(Duration::from_secs(10));
    assert_eq!(loops[0].restarts(), 2, "{}", loops[0].describe());
    assert!(!loops[0].killed_at_stop, "sleep stops on SIGTERM");
    assert!(procs::wait_none_left(&mark, Duration::from_secs(5)).is_empty());
}

#[test]
fn the_daemon_answers_until_its_guard_is_dropped() {
    let mut remote = Remote::new("fleet_daemon_check");
    let url = remote.serve("127.0.0.1");
    let base = remote.base();
    git_in(&base, &["ls-remote", &url]);
    drop(remote);
    assert!(git_result(&std::env::temp_dir(), &["ls-remote", &url]).is_err());
}
