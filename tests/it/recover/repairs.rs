//! Repairs of the worktree and the repository's own files: a missing, empty or unknown worktree
//! folder, a stale index lock, temp files of dead writers, an unfinished slot registration.

use super::*;

#[test]
fn a_registered_worktree_whose_folder_is_gone_is_pruned_and_recreated() {
    let spec = "030-gone";
    let repo = repo_with_fixture_plan(spec);
    run_killed_at(&repo, spec, "after_prepare_slot");
    assert!(repo.worktree().is_dir());
    std::fs::remove_dir_all(repo.worktree()).unwrap();
    assert!(
        repo.git(&["worktree", "list"])
            .contains(".worktrees/auto-claude")
    );

    let dry = recover_json(&repo, &["--dry-run"], 0);
    assert_eq!(dry["slots"].as_array().unwrap().len(), 1, "{dry}");
    assert!(
        repo.git(&["worktree", "list"])
            .contains(".worktrees/auto-claude")
    );

    let report = recover_json(&repo, &[], 0);
    let slots = report["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 1, "{report}");
    assert!(
        slots[0].as_str().unwrap().contains("pruned"),
        "{}",
        slots[0]
    );
    assert!(
        !repo
            .git(&["worktree", "list"])
            .contains(".worktrees/auto-claude"),
        "{}",
        repo.git(&["worktree", "list"])
    );
    // The branch is untouched; the next run recreates the worktree from it.
    assert!(
        !repo
            .git(&["branch", "--list", &format!("auto-claude/{spec}")])
            .is_empty()
    );
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("Created worktree"),
        "{}",
        stderr(&out)
    );
    assert!(repo.worktree().join("work/core-a.txt").is_file());
}

#[test]
fn a_folder_git_does_not_know_is_moved_aside_with_its_files() {
    let spec = "031-unknown";
    let repo = repo_with_fixture_plan(spec);
    repo.write(".worktrees/auto-claude/notes.txt", "my notes\n");
    let dry = recover_json(&repo, &["--dry-run"], 0);
    assert!(
        dry["slots"][0].as_str().unwrap().contains("moved aside"),
        "{dry}"
    );
    assert!(repo.worktree().join("notes.txt").is_file());
    let report = recover_json(&repo, &[], 0);
    let slots = report["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 1, "{report}");
    assert!(
        slots[0].as_str().unwrap().contains("moved aside"),
        "{}",
        slots[0]
    );
    assert!(!repo.worktree().exists());
    let aside = files_starting(&repo.path(".worktrees"), "auto-claude.unregistered-");
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        std::fs::read_to_string(aside[0].join("notes.txt")).unwrap(),
        "my notes\n"
    );
    // And a run can now build there.
    assert_exit(&repo.run_spec(spec, &[]), 0);
    assert!(repo.worktree().join("work/polish.txt").is_file());
    assert!(aside[0].join("notes.txt").is_file());
}

#[test]
fn a_stale_index_lock_is_removed_but_not_one_held_open() {
    let spec = "032-lock";
    let repo = repo_with_fixture_plan(spec);
    run_killed_at(&repo, spec, "after_prepare_slot");
    let git_dir = wt_git(&repo, &["rev-parse", "--absolute-git-dir"]);
    let lock = Path::new(git_dir.trim()).join("index.lock");
    std::fs::write(&lock, "").unwrap();

    // Held open by a live process (this one): not stale.
    let held = std::fs::File::open(&lock).unwrap();
    let report = recover_json(&repo, &[], 0);
    assert!(lock.exists());
    assert!(
        !report["specs"][0]["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["kind"] == "removed_git_lock"),
        "{report}"
    );
    drop(held);

    let report = recover_json(&repo, &[], 0);
    let actions = report["specs"][0]["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{report}");
    assert_eq!(actions[0]["kind"], "removed_git_lock");
    assert!(
        actions[0]["detail"]
            .as_str()
            .unwrap()
            .contains("index.lock")
    );
    assert!(!lock.exists());
    // git works in the worktree again.
    wt_git(&repo, &["add", "-A"]);
}

#[test]
fn temp_files_of_dead_writers_are_removed_and_live_ones_kept() {
    let spec = "033-temp";
    let repo = repo_with_fixture_plan(spec);
    let dir = repo.spec_dir(spec);
    let dead = dir.join(".implementation_plan.json.tmp-999999999-0");
    let live = dir.join(format!(
        ".implementation_plan.json.tmp-{}-0",
        std::process::id()
    ));
    std::fs::write(&dead, "{\"half").unwrap();
    std::fs::write(&live, "{\"being written").unwrap();
    let plan = std::fs::read(repo.plan_path(spec)).unwrap();

    let report = recover_json(&repo, &[], 0);
    let actions = report["specs"][0]["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{report}");
    assert_eq!(actions[0]["kind"], "removed_temp_file");
    assert!(
        actions[0]["detail"]
            .as_str()
            .unwrap()
            .contains("tmp-999999999-0")
    );
    assert!(!dead.exists());
    assert!(live.exists(), "a live writer's temp file was removed");
    assert_eq!(std::fs::read(repo.plan_path(spec)).unwrap(), plan);
    assert_eq!(events_of(&repo, spec, "recovered").len(), 1);
}

/// `recover --dry-run` names a slot registration a crash left unfinished and leaves it; `recover`
/// removes it.
#[test]
fn recover_reports_an_unfinished_slot_registration_and_dry_run_keeps_it() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    let admin = repo.root.join(".git/worktrees/auto-claude");
    std::fs::create_dir_all(&admin).unwrap();
    std::fs::create_dir_all(repo.root.join(".worktrees/auto-claude")).unwrap();
    let out = repo.runner(&["recover", "--dry-run"]);
    assert!(
        stdout(&out).contains("registration in .git/worktrees was left unfinished")
            && stdout(&out).contains("(would be done)"),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(admin.is_dir());
    let out = repo.runner(&["recover"]);
    assert!(!admin.exists(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(!repo.root.join(".worktrees/auto-claude").exists());
}

/// A spec stopped after core-a (its session budget spent: nothing in progress), whose slot
/// folder is then emptied as a removal cut off by kill -9 leaves it (a discard's `remove_dir_all`:
/// its `.git` file gone, an empty folder left inside), the registration still there.
fn emptied_slot(spec: &str) -> TestRepo {
    let repo = repo_with_fixture_plan(spec);
    repo.write_config("[run]\nmax_sessions = 1\n");
    assert_exit(&repo.run_spec(spec, &[]), 5);
    std::fs::remove_file(repo.path(".auto-claude/config.toml")).unwrap();
    for entry in std::fs::read_dir(repo.worktree()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path).unwrap();
        } else {
            std::fs::remove_file(&path).unwrap();
        }
    }
    std::fs::create_dir_all(repo.worktree().join("work/deep")).unwrap();
    assert!(
        repo.git(&["worktree", "list"])
            .contains(".worktrees/auto-claude")
    );
    repo
}

#[test]
fn a_slot_folder_that_holds_nothing_is_repaired_by_recover_without_a_person() {
    let spec = "036-emptied";
    let repo = emptied_slot(spec);
    let report = recover_json(&repo, &[], 0);
    let text = report.to_string();
    assert!(text.contains("held nothing"), "{report:#}");
    assert!(!text.contains("cannot be opened"), "{report:#}");
    assert!(!repo.worktree().exists());
    assert!(
        !repo
            .git(&["worktree", "list"])
            .contains(".worktrees/auto-claude"),
        "the registration is pruned"
    );
    // The next run creates the slot again from the branch and finishes the spec.
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("Created worktree"),
        "{}",
        stderr(&out)
    );
    assert!(repo.worktree().join("work/polish.txt").is_file());
    assert_eq!(repo.branch_log(&format!("auto-claude/{spec}")).len(), 3);
}

#[test]
fn a_run_repairs_a_slot_folder_that_holds_nothing_by_itself() {
    let spec = "037-emptied-run";
    let repo = emptied_slot(spec);
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(err.contains("held nothing"), "{err}");
    assert!(!err.contains("needs a person"), "{err}");
    assert!(repo.worktree().join("work/polish.txt").is_file());
    assert_eq!(repo.branch_log(&format!("auto-claude/{spec}")).len(), 3);
}
