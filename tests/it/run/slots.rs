//! The slot (`.worktrees/auto-claude`) and concurrency: one run per spec, slot switches between
//! specs, foreign branches, two slots at once, a hanging agent's process group.

use super::*;

#[test]
fn two_runs_of_one_spec_exactly_one_proceeds_the_other_exits_4() {
    let repo = TestRepo::new();
    repo.add_spec("012-busy");
    repo.script("core-a 1 slow 3\n");
    let agent = fixture("fake-agent").display().to_string();
    let mut first = repo
        .cmd(&["run", "--spec", "012", "--agent-command", &agent])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first run is in its coder session.
    wait_for("a coder session", || {
        repo.agent_log().iter().any(|l| l.starts_with("coder"))
    });
    let second = repo.run_spec("012", &[]);
    assert_exit(&second, 4);
    let err = stderr(&second);
    assert!(err.contains(&format!("pid {}", first.id())), "{err}");
    let holder: Value = serde_json::from_str(
        std::fs::read_to_string(repo.spec_dir("012-busy").join("run.lock"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    let run_id = holder["run_id"].as_str().unwrap();
    assert!(run_id.starts_with('r') && run_id.len() == 13, "{run_id}");
    assert!(
        err.contains(&format!("run {run_id}")),
        "names the run id: {err}"
    );

    // status sees who runs it.
    let st: Value = serde_json::from_str(&stdout(&repo.runner(&["status", "--json"]))).unwrap();
    assert_eq!(st["specs"][0]["running"]["pid"], first.id());
    assert_eq!(st["specs"][0]["status"], "running");

    assert!(first.wait().unwrap().success());
    // Only the first run's sessions happened.
    assert_eq!(repo.agent_log().len(), 4);
    let st: Value = serde_json::from_str(&stdout(&repo.runner(&["status", "--json"]))).unwrap();
    assert_eq!(st["specs"][0]["running"], Value::Null);
}

#[test]
fn a_hanging_agent_is_killed_with_its_whole_process_group() {
    let repo = TestRepo::new();
    repo.add_spec("013-hang");
    repo.write_config("[run]\nsession_timeout = 1\nmax_attempts = 1\n");
    repo.script("core-a * hang\n");
    let started = std::time::Instant::now();
    let out = repo.run_spec("013", &[]);
    assert_exit(&out, 3);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let reason = repo.chunk("013-hang", "core-a")["attempts"][0]["reason"].clone();
    assert!(reason.as_str().unwrap().contains("timed out"), "{reason}");
    // The agent's background child is gone too.
    let pid: i32 = std::fs::read_to_string(repo.spec_dir("013-hang").join("fake-agent-child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let alive = std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ");
    assert!(!alive, "background child {pid} survived the timeout");
}

#[test]
fn slot_switches_between_specs_and_saves_uncommitted_changes_first() {
    let repo = TestRepo::new();
    repo.add_spec("020-a");
    repo.add_spec("021-b");
    assert_exit(&repo.run_spec("020-a", &[]), 0);
    let a_tip = repo.git(&["rev-parse", "auto-claude/020-a"]);

    // Leftovers of A in the slot: saved to A's recovery ref before the slot switches to B.
    std::fs::write(repo.worktree().join("scratch.txt"), "keep me").unwrap();
    std::fs::write(repo.worktree().join("README.md"), "changed\n").unwrap();
    let out = repo.run_spec("021-b", &[]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains(
            "uncommitted changes of spec 020-a: saved at refs/auto-claude/recovery/020-a/worktree/1"
        ),
        "{err}"
    );
    assert!(err.contains("Switched the slot"), "{err}");
    assert_eq!(
        git_in(&repo.worktree(), &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "auto-claude/021-b"
    );
    assert!(!repo.worktree().join("scratch.txt").exists());
    // Nothing lost: the ref holds both changes on top of A's tip.
    let saved = "refs/auto-claude/recovery/020-a/worktree/1";
    assert_eq!(
        repo.git(&["show", &format!("{saved}:scratch.txt")]),
        "keep me"
    );
    assert_eq!(
        repo.git(&["show", &format!("{saved}:README.md")]),
        "changed\n"
    );
    assert_eq!(repo.git(&["rev-parse", &format!("{saved}^")]), a_tip);
    // A's branch is intact.
    assert_eq!(repo.git(&["rev-parse", "auto-claude/020-a"]), a_tip);
    assert_eq!(repo.branch_log("auto-claude/020-a").len(), 3);

    // status reports which spec the slot holds.
    let st: Value = serde_json::from_str(&stdout(&repo.runner(&["status", "--json"]))).unwrap();
    let specs = st["specs"].as_array().unwrap();
    assert_eq!(specs[0]["worktree"], Value::Null);
    assert_eq!(specs[0]["branch"], "auto-claude/020-a");
    assert!(
        specs[1]["worktree"]
            .as_str()
            .unwrap()
            .ends_with(".worktrees/auto-claude")
    );
    assert_eq!(st["slots"][0]["spec"], "021-b");
}

#[test]
fn a_slot_on_a_foreign_branch_with_changes_is_refused() {
    let repo = TestRepo::new();
    repo.add_spec("022-a");
    assert_exit(&repo.run_spec("022-a", &[]), 0);
    // Someone checked out their own branch in the slot and left work there.
    git_in(&repo.worktree(), &["checkout", "-q", "-b", "my-experiment"]);
    std::fs::write(repo.worktree().join("scratch.txt"), "mine").unwrap();
    repo.add_spec("023-b");
    let out = repo.run_spec("023-b", &[]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("uncommitted changes") && err.contains("scratch.txt"),
        "{err}"
    );
    assert!(err.contains("--slot"), "says how to avoid it: {err}");
    assert_eq!(
        std::fs::read_to_string(repo.worktree().join("scratch.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn two_slots_build_two_specs_at_once() {
    let repo = TestRepo::new();
    repo.add_spec("030-a");
    repo.add_spec("031-b");
    repo.script("* * slow 1\n");
    let agent = fixture("fake-agent").display().to_string();
    let a = repo
        .cmd(&["run", "--spec", "030", "--agent-command", &agent])
        .spawn()
        .unwrap();
    let b = repo
        .cmd(&[
            "run",
            "--spec",
            "031",
            "--agent-command",
            &agent,
            "--slot",
            "two",
        ])
        .spawn()
        .unwrap();
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert_exit(&a, 0);
    assert_exit(&b, 0);
    assert!(repo.path(".worktrees/auto-claude-two").is_dir());
    assert_eq!(repo.branch_log("auto-claude/030-a").len(), 3);
    assert_eq!(repo.branch_log("auto-claude/031-b").len(), 3);
}

#[test]
fn a_second_spec_in_a_busy_slot_exits_4() {
    let repo = TestRepo::new();
    repo.add_spec("040-a");
    repo.add_spec("041-b");
    repo.script("core-a * slow 3\n");
    let agent = fixture("fake-agent").display().to_string();
    let mut first = repo
        .cmd(&["run", "--spec", "040", "--agent-command", &agent])
        .spawn()
        .unwrap();
    wait_for("a coder session", || {
        repo.agent_log().iter().any(|l| l.starts_with("coder"))
    });
    let out = repo.run_spec("041", &[]);
    assert_exit(&out, 4);
    assert!(stderr(&out).contains("slot"), "{}", stderr(&out));
    assert!(first.wait().unwrap().success());
}

#[test]
fn a_worktree_whose_folder_is_gone_is_reported_and_recreated() {
    let repo = TestRepo::new();
    repo.add_spec("050-gone");
    repo.script("polish * fail not yet\n");
    repo.write_config("[run]\nmax_attempts = 1\n");
    assert_exit(&repo.run_spec("050", &[]), 3);
    std::fs::remove_dir_all(repo.worktree()).unwrap();

    let st: Value = serde_json::from_str(&stdout(&repo.runner(&["status", "--json"]))).unwrap();
    assert_eq!(st["slots"][0]["state"], "broken");
    assert!(st["slots"][0]["problem"].as_str().unwrap().contains("gone"));
    assert_eq!(st["specs"][0]["worktree"], Value::Null);
    assert_eq!(st["specs"][0]["status"], "failed");
    assert_eq!(st["specs"][0]["chunks"]["completed"], 2);
    assert_eq!(st["specs"][0]["chunks"]["failed"], 1);

    // Put the chunk back and run: the slot is recreated from the branch, nothing lost.
    let plan = std::fs::read_to_string(repo.plan_path("050-gone")).unwrap();
    repo.write_plan(
        "050-gone",
        &plan.replace("\"status\": \"failed\"", "\"status\": \"pending\""),
    );
    repo.script("");
    let out = repo.run_spec("050", &[]);
    assert_exit(&out, 0);
    assert!(stderr(&out).contains("recreating it"), "{}", stderr(&out));
    assert!(repo.worktree().join("work/core-a.txt").is_file());
    assert_eq!(repo.branch_log("auto-claude/050-gone").len(), 3);
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

/// The entries of `.worktrees/` whose name starts with `prefix`.
fn slot_entries(repo: &TestRepo, prefix: &str) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(repo.path(".worktrees"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    found.sort();
    found
}

#[test]
fn a_dangling_link_where_the_slot_belongs_is_moved_aside_and_the_run_builds() {
    let repo = repo_with_fixture_plan("014-link");
    let target = repo.tmp.path().join("nowhere");
    std::fs::create_dir_all(repo.path(".worktrees")).unwrap();
    std::os::unix::fs::symlink(&target, repo.worktree()).unwrap();
    let out = repo.run_spec("014", &[]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(err.contains("symbolic link"), "{err}");
    assert!(err.contains("moved aside"), "{err}");
    // Nothing was written through it; the link is kept beside the slot, as it was.
    assert!(std::fs::symlink_metadata(&target).is_err());
    let meta = std::fs::symlink_metadata(repo.worktree()).unwrap();
    assert!(meta.is_dir(), "the slot is a real folder now");
    let aside = slot_entries(&repo, "auto-claude.link-");
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(std::fs::read_link(&aside[0]).unwrap(), target);
    assert!(err.contains(&aside[0].display().to_string()), "{err}");
    assert!(repo.worktree().join("work/polish.txt").is_file());
}

#[test]
fn a_link_to_a_folder_outside_where_the_slot_belongs_is_never_followed() {
    let repo = repo_with_fixture_plan("015-outside");
    let outside = repo.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("precious.txt"), "mine\n").unwrap();
    std::fs::create_dir_all(repo.path(".worktrees")).unwrap();
    std::os::unix::fs::symlink(&outside, repo.worktree()).unwrap();
    let out = repo.run_spec("015", &[]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(err.contains("symbolic link"), "{err}");
    // The folder outside is as it was: no worktree, no work, no .git file in it.
    let names: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["precious.txt"]);
    assert_eq!(
        std::fs::read_to_string(outside.join("precious.txt")).unwrap(),
        "mine\n"
    );
    let aside = slot_entries(&repo, "auto-claude.link-");
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(std::fs::read_link(&aside[0]).unwrap(), outside);
    assert!(
        !std::fs::symlink_metadata(repo.worktree())
            .unwrap()
            .is_symlink()
    );
    assert!(repo.worktree().join("work/polish.txt").is_file());
}

/// A link where the slot belongs that names the slot's own worktree, moved to another disk and
/// linked back (git works through it; `status` calls the slot ready), holding uncommitted work:
/// moving the link aside left that work behind unsaved and made the slot afresh on the same
/// registration, so that the old folder and the new one shared one index. A person puts it
/// back; nothing is moved, and the work is where it was.
#[test]
fn a_link_to_the_slots_own_worktree_moved_elsewhere_is_left_to_a_person() {
    let repo = repo_with_fixture_plan("016-moved");
    repo.write_config("[run]\nmax_attempts = 1\n");
    repo.script("core-b * fail nope\n* * done\n");
    assert_exit(&repo.run_spec("016", &[]), 3);
    std::fs::write(repo.worktree().join("uncommitted.txt"), "precious\n").unwrap();
    let elsewhere = repo.tmp.path().join("other-disk");
    std::fs::rename(repo.worktree(), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, repo.worktree()).unwrap();
    repo.script("* * done\n");
    for args in [
        &["recover", "--spec", "016", "--retry-failed"][..],
        &["run", "--spec", "016", "--agent-command", "x"],
    ] {
        let out = repo.runner(args);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(err.contains("a git worktree"), "{args:?}: {err}");
        assert!(err.contains("mv "), "{args:?}: {err}");
        assert!(
            std::fs::symlink_metadata(repo.worktree())
                .unwrap()
                .is_symlink(),
            "{args:?}: the link is left in place"
        );
        assert!(slot_entries(&repo, "auto-claude.link-").is_empty());
    }
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("uncommitted.txt")).unwrap(),
        "precious\n"
    );
    // Put back as the hint says, the run goes on from it.
    std::fs::remove_file(repo.worktree()).unwrap();
    std::fs::rename(&elsewhere, repo.worktree()).unwrap();
    assert_exit(
        &repo.runner(&["recover", "--spec", "016", "--retry-failed"]),
        0,
    );
    assert_exit(&repo.run_spec("016", &[]), 0);
    assert!(repo.worktree().join("uncommitted.txt").is_file());
}
