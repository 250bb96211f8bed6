//! Merge, discard and undo all or nothing: refused with a held lock, or SIGKILLed at every step,
//! then finished or rolled back by `recover`.

use super::*;

#[test]
fn a_merge_refused_for_a_held_index_lock_names_it_and_changes_nothing() {
    for extra in [&[][..], &["--squash"][..], &["--no-commit"][..]] {
        let repo = built(false);
        std::fs::write(repo.path(".git/index.lock"), "").unwrap();
        let before = main_state(&repo);
        let refs = repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
        let mut args = vec!["merge", "--spec", SPEC, "--yes"];
        args.extend_from_slice(extra);
        let out = repo.runner(&args);
        assert_exit(&out, 3);
        assert!(
            stderr(&out).contains(".git/index.lock"),
            "{extra:?}: {}",
            stderr(&out)
        );
        assert_eq!(
            main_state(&repo),
            before,
            "{extra:?}: the main worktree changed"
        );
        assert_eq!(
            repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
            refs,
            "{extra:?}: refs changed"
        );
        assert!(
            !repo.path("work").exists(),
            "{extra:?}: merged files were written"
        );
        // Once the lock is gone the merge works at once.
        std::fs::remove_file(repo.path(".git/index.lock")).unwrap();
        assert_exit(&repo.runner(&args), 0);
    }
}

#[test]
fn a_discard_refused_for_a_held_worktree_index_lock_names_it_and_changes_nothing() {
    let repo = built(true);
    let lock = repo.path(".git/worktrees/auto-claude/index.lock");
    std::fs::write(&lock, "").unwrap();
    let refs = repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
    let out = repo.runner(&["discard", "--spec", SPEC, "--yes"]);
    assert_exit(&out, 3);
    assert!(stderr(&out).contains("index.lock"), "{}", stderr(&out));
    assert!(repo.worktree().join("untracked.txt").exists());
    assert_eq!(
        repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
        refs
    );
    std::fs::remove_file(&lock).unwrap();
    assert_exit(&repo.runner(&["discard", "--spec", SPEC, "--yes"]), 0);
}

const MERGE_POINTS: &[&str] = &[
    "merge_intent_recorded",
    "backup_refs_written",
    "merge_after_backup",
    "merge_files_written",
    "merge_after_ref",
    "worktree_folder_removed",
    "merge_worktree_removed",
    "merge_branch_deleted",
];

#[test]
fn a_merge_killed_at_any_step_is_finished_or_rolled_back_by_recover() {
    for (mode, extra) in [
        ("merge", &[][..]),
        ("squash", &["--squash"][..]),
        ("no-commit", &["--no-commit"][..]),
    ] {
        let mut args = vec!["merge", "--spec", SPEC, "--yes"];
        args.extend_from_slice(extra);
        for point in MERGE_POINTS {
            let what = format!("{mode} killed at {point}");
            let repo = built(false);
            let tip = rev(&repo, &branch(SPEC)).unwrap();
            let main_before = main_state(&repo);
            let out = with_failpoint(&repo, &args, point);
            if !killed(&out) {
                // A step --no-commit does not have.
                assert_eq!(mode, "no-commit", "{what}: {}", stderr(&out));
                assert_exit(&out, 0);
                continue;
            }
            recover(&repo, &what);
            assert_consistent(&repo, &what);
            assert_reachable(&repo, &tip, &what);
            let main_now = repo.git(&["rev-parse", "main"]);
            let staged = repo.git(&["diff", "--cached", "--name-only"]);
            let rolled_back = main_now == main_before.0 && staged.trim().is_empty();
            if rolled_back {
                assert_eq!(main_state(&repo).1, main_before.1, "{what}: files left");
                assert!(!repo.path("work").exists(), "{what}: merged files left");
                assert_eq!(
                    repo.git(&["for-each-ref", "refs/auto-claude/backup"])
                        .trim(),
                    "",
                    "{what}: a rolled-back merge leaves no backup"
                );
                assert_exit(&repo.runner(&args), 0);
            } else if mode == "no-commit" {
                assert_eq!(main_now, main_before.0, "{what}");
                assert!(staged.contains("work/core-a.txt"), "{what}: {staged}");
                assert_eq!(rev(&repo, &branch(SPEC)).as_deref(), Some(tip.as_str()));
            } else {
                assert_eq!(
                    repo.git(&["status", "--porcelain", "--untracked-files=all"]),
                    "",
                    "{what}"
                );
                assert!(repo.path("work/core-a.txt").exists(), "{what}");
                assert_eq!(rev(&repo, &branch(SPEC)), None, "{what}: branch kept");
                assert!(!repo.worktree().exists(), "{what}: slot kept");
                assert!(repo.plan(SPEC).get("merged").is_some(), "{what}");
                if mode == "merge" {
                    repo.git(&["merge-base", "--is-ancestor", &tip, "main"]);
                }
                // What is landed can be undone at once.
                assert_exit(&repo.runner(&["undo", "--spec", SPEC]), 0);
                assert_eq!(repo.git(&["rev-parse", "main"]), main_before.0, "{what}");
                assert_eq!(rev(&repo, &branch(SPEC)).as_deref(), Some(tip.as_str()));
            }
            assert_consistent(&repo, &what);
        }
    }
}

const DISCARD_POINTS: &[&str] = &[
    "discard_intent_recorded",
    "backup_refs_written",
    "discard_after_backup",
    "worktree_folder_removed",
    "discard_worktree_removed",
    "discard_branch_deleted",
    "discard_plan_reset",
];

#[test]
fn a_discard_killed_at_any_step_is_finished_or_rolled_back_by_recover() {
    for point in DISCARD_POINTS {
        let what = format!("discard killed at {point}");
        let repo = built(true);
        let tip = rev(&repo, &branch(SPEC)).unwrap();
        let out = with_failpoint(&repo, &["discard", "--spec", SPEC, "--yes"], point);
        assert!(killed(&out), "{what}: {}", stderr(&out));
        recover(&repo, &what);
        assert_consistent(&repo, &what);
        assert_reachable(&repo, &tip, &what);
        if rev(&repo, &branch(SPEC)).is_some() {
            // Rolled back: everything as before, no backup; the discard then works at once.
            assert_discard_undone(&repo, &tip, &what);
            assert_eq!(
                repo.git(&["for-each-ref", "refs/auto-claude/backup"])
                    .trim(),
                "",
                "{what}"
            );
            assert_exit(&repo.runner(&["discard", "--spec", SPEC, "--yes"]), 0);
        } else {
            assert!(!repo.worktree().exists(), "{what}");
            assert!(
                repo.statuses(SPEC).iter().all(|(_, s)| s == "pending"),
                "{what}"
            );
        }
        assert_consistent(&repo, &what);
        // Either way one discard is done, and undoing it brings every change back.
        assert_exit(&repo.runner(&["undo", "--spec", SPEC]), 0);
        assert_discard_undone(&repo, &tip, &what);
        assert_consistent(&repo, &what);
    }
}

const UNDO_POINTS: &[&str] = &[
    "undo_intent_recorded",
    "undo_target_files_reset",
    "undo_target_reset",
    "undo_branch_restored",
    // Inside the slot's creation (see Slot::create): its marker must not outlive the undo.
    "slot_registered",
    "slot_checkout_file",
    "undo_slot_created",
    "undo_worktree_restored",
    "undo_plan_restored",
    "undo_ref_moved",
    "undo_ref_moved@2",
];

#[test]
fn an_undo_killed_at_any_step_is_finished_by_recover() {
    for kind in ["discard", "merge"] {
        for point in UNDO_POINTS {
            let what = format!("undo of a {kind} killed at {point}");
            let repo = built(kind == "discard");
            let tip = rev(&repo, &branch(SPEC)).unwrap();
            let main_before = repo.git(&["rev-parse", "main"]);
            assert_exit(&repo.runner(&[kind, "--spec", SPEC, "--yes"]), 0);
            let out = with_failpoint(&repo, &["undo", "--spec", SPEC], point);
            if !killed(&out) {
                // A step this undo does not have (no target to reset for a discard).
                assert_exit(&out, 0);
                assert!(point.contains("target"), "{what}: {}", stderr(&out));
                continue;
            }
            recover(&repo, &what);
            assert_consistent(&repo, &what);
            assert_reachable(&repo, &tip, &what);
            if kind == "discard" {
                assert_discard_undone(&repo, &tip, &what);
            } else {
                assert_eq!(repo.git(&["rev-parse", "main"]), main_before, "{what}");
                assert_eq!(rev(&repo, &branch(SPEC)).as_deref(), Some(tip.as_str()));
                assert!(repo.worktree().exists(), "{what}");
                assert!(repo.plan(SPEC).get("merged").is_none(), "{what}");
            }
            assert_eq!(
                repo.git(&["status", "--porcelain", "--untracked-files=all"]),
                "",
                "{what}: the main worktree"
            );
            assert_eq!(
                repo.git(&["for-each-ref", "refs/auto-claude/backup"])
                    .trim(),
                "",
                "{what}: the backup is not marked undone"
            );
            // The operation can be done again at once.
            assert_exit(&repo.runner(&[kind, "--spec", SPEC, "--yes"]), 0);
            assert_consistent(&repo, &what);
        }
    }
}
