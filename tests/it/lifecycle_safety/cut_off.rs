//! Merge, discard, undo and recovery cut off part way (by hand, not by failpoint): what
//! `recover` and `gc` then do, and what they never touch.

use super::*;

#[test]
fn retrying_at_once_after_a_cut_off_backup_gets_a_distinct_backup() {
    let repo = built(true);
    let out = with_failpoint(
        &repo,
        &["discard", "--spec", SPEC, "--yes"],
        "backup_refs_written",
    );
    assert!(killed(&out), "{}", stderr(&out));
    // No recover in between, in the same second: the retry rolls the cut-off one back first.
    assert_exit(&repo.runner(&["discard", "--spec", SPEC, "--yes"]), 0);
    assert_exit(&repo.runner(&["undo", "--spec", SPEC]), 0);
    assert_exit(&repo.runner(&["discard", "--spec", SPEC, "--yes"]), 0);
    assert_exit(&repo.runner(&["undo", "--spec", SPEC]), 0);
    let metas = repo.git(&["for-each-ref", "--format=%(refname)", "refs/auto-claude/"]);
    let metas: Vec<&str> = metas.lines().filter(|r| r.ends_with("/meta")).collect();
    assert_eq!(metas.len(), 2, "{metas:?}");
    assert_discard_undone(&repo, &rev(&repo, &branch(SPEC)).unwrap(), "retry");
}

#[test]
fn an_intent_record_naming_other_refs_is_reported_and_never_acted_on() {
    let repo = built(false);
    let refs = repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
    let record = serde_json::json!({
        "op": "discard", "spec": SPEC, "backup": "refs/heads",
        "branch": branch(SPEC), "branch_tip": rev(&repo, &branch(SPEC)),
        "slot": "auto-claude",
    });
    std::fs::write(
        repo.spec_dir(SPEC).join("lifecycle.json"),
        record.to_string(),
    )
    .unwrap();
    let out = repo.runner(&["recover", "--spec", SPEC]);
    assert_exit(&out, 3);
    assert!(stdout(&out).contains("lifecycle.json"), "{}", stdout(&out));
    assert_eq!(
        repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
        refs
    );
    assert!(repo.worktree().join(".git").exists());
    let out = repo.runner(&["discard", "--spec", SPEC, "--yes"]);
    assert_exit(&out, 3);
    assert!(stderr(&out).contains("lifecycle.json"), "{}", stderr(&out));
    assert_eq!(
        repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
        refs
    );
}

/// A removal cut off inside a step: the folder half deleted and git's admin folder half pruned
/// (its `gitdir` and `commondir` files gone), as a kill during `remove_dir_all` or a prune
/// leaves them. Recover removes both completely; nothing is left for `git worktree prune`.
#[test]
fn a_half_deleted_worktree_and_half_pruned_admin_folder_are_removed_by_recover() {
    for (command, point) in [
        ("discard", "discard_after_backup"),
        ("merge", "merge_after_ref"),
    ] {
        let what = format!("{command} killed at {point}, then half removed");
        let repo = built(command == "discard");
        let tip = rev(&repo, &branch(SPEC)).unwrap();
        let out = with_failpoint(&repo, &[command, "--spec", SPEC, "--yes"], point);
        assert!(killed(&out), "{what}: {}", stderr(&out));
        std::fs::remove_dir_all(repo.worktree().join("work")).unwrap();
        std::fs::remove_file(repo.worktree().join(".git")).unwrap();
        let admin = repo.path(".git/worktrees/auto-claude");
        std::fs::remove_file(admin.join("gitdir")).unwrap();
        std::fs::remove_file(admin.join("commondir")).unwrap();
        recover(&repo, &what);
        assert_consistent(&repo, &what);
        assert_reachable(&repo, &tip, &what);
        assert!(!repo.worktree().exists(), "{what}");
        assert!(!admin.exists(), "{what}");
        assert_eq!(rev(&repo, &branch(SPEC)), None, "{what}");
        assert_exit(&repo.runner(&["undo", "--spec", SPEC]), 0);
        assert_eq!(
            rev(&repo, &branch(SPEC)).as_deref(),
            Some(tip.as_str()),
            "{what}"
        );
        assert_consistent(&repo, &what);
    }
}

/// A cut-off discard or merge, then someone keeps working in the spec's worktree: finishing the
/// operation saves those changes (untracked files included) before it removes the worktree.
#[test]
fn changes_made_in_the_worktree_after_a_cut_off_discard_or_merge_are_saved_before_removal() {
    for (args, point) in [
        (
            &["discard", "--spec", SPEC, "--yes"][..],
            "discard_after_backup",
        ),
        (&["merge", "--spec", SPEC, "--yes"][..], "merge_after_ref"),
    ] {
        let what = format!("{} killed at {point}", args[0]);
        let repo = built(false);
        let out = with_failpoint(&repo, args, point);
        assert!(killed(&out), "{what}: {}", stderr(&out));
        std::fs::write(repo.worktree().join("work/core-a.txt"), "late edit\n").unwrap();
        std::fs::write(repo.worktree().join("late.txt"), "late file\n").unwrap();
        let out = repo.runner(&["recover", "--spec", SPEC]);
        assert_exit(&out, 0);
        assert!(!repo.worktree().exists(), "{what}: the worktree is left");
        let saved = refs_holding(&repo, "refs/auto-claude", "late.txt", "late file\n");
        assert_eq!(saved.len(), 1, "{what}: the late untracked file is lost");
        assert_eq!(
            git_result(
                &repo.root,
                &["show", &format!("{}:work/core-a.txt", saved[0])]
            )
            .unwrap(),
            "late edit\n",
            "{what}"
        );
        assert!(
            stdout(&out).contains(&saved[0]) || stderr(&out).contains(&saved[0]),
            "{what}: recover does not say where the changes are: {}",
            stdout(&out)
        );
        assert_consistent(&repo, &what);
    }
}

/// A merge killed while it wrote the main worktree's files, then `recover`: every path the merge
/// writes is put back (files, index entries), whatever was found there — half written, edited
/// since, deleted, a symlink, a submodule, a file through `core.autocrlf` — and any content that
/// was neither the old nor the merged version is saved first to a recovery ref it names.
#[test]
fn a_merge_cut_off_while_writing_files_is_rolled_back_whatever_it_left() {
    let half_written = |repo: &TestRepo| {
        // libgit2 writes a file in place: a kill leaves a truncated one, in no tree.
        std::fs::write(repo.path("work/core-a.txt"), "tru").unwrap();
    };
    let deleted = |repo: &TestRepo| {
        std::fs::remove_file(repo.path("work/core-a.txt")).unwrap();
    };
    let nothing = |_: &TestRepo| {};
    type Setup = fn(&TestRepo);
    let cases: [(&str, Setup, Setup, Option<&str>); 5] = [
        ("half-written", |_| {}, half_written, Some("tru")),
        ("deleted since", |_| {}, deleted, None),
        (
            "symlink and submodule",
            |repo| {
                let wt = repo.worktree();
                std::os::unix::fs::symlink("core-a.txt", wt.join("work/link")).unwrap();
                let sub = git_in(&wt, &["rev-parse", "HEAD"]).trim().to_string();
                git_in(
                    &wt,
                    &[
                        "update-index",
                        "--add",
                        "--cacheinfo",
                        &format!("160000,{sub},sub"),
                    ],
                );
                git_in(&wt, &["add", "work/link"]);
                git_in(&wt, &["commit", "-qm", "link and submodule"]);
            },
            nothing,
            None,
        ),
        (
            "autocrlf",
            |repo| {
                repo.git(&["config", "core.autocrlf", "true"]);
            },
            nothing,
            None,
        ),
        (
            "autocrlf, half-written",
            |repo| {
                repo.git(&["config", "core.autocrlf", "true"]);
            },
            half_written,
            Some("tru"),
        ),
    ];
    for (what, before_merge, after_kill, saved_content) in cases {
        let repo = built(false);
        before_merge(&repo);
        let main_before = main_state(&repo);
        let out = with_failpoint(
            &repo,
            &["merge", "--spec", SPEC, "--yes"],
            "merge_files_written",
        );
        assert!(killed(&out), "{what}: {}", stderr(&out));
        after_kill(&repo);
        let out = repo.runner(&["recover", "--spec", SPEC]);
        assert_exit(&out, 0);
        assert_eq!(main_state(&repo).1, main_before.1, "{what}: files left");
        assert_eq!(
            repo.git(&["diff", "--cached", "--name-only", "HEAD"])
                .trim(),
            "",
            "{what}: the index keeps merged entries"
        );
        assert!(!repo.path("work").exists(), "{what}: merged files left");
        let saved = repo.git(&[
            "for-each-ref",
            "--format=%(refname)",
            "refs/auto-claude/recovery",
        ]);
        match saved_content {
            Some(content) => {
                let saved = refs_holding(
                    &repo,
                    "refs/auto-claude/recovery",
                    "work/core-a.txt",
                    content,
                );
                assert_eq!(saved.len(), 1, "{what}: the half-written file is not saved");
                assert!(stdout(&out).contains(&saved[0]), "{what}: {}", stdout(&out));
            }
            None => assert_eq!(
                saved.trim(),
                "",
                "{what}: saved a file that was the merge's"
            ),
        }
        assert_consistent(&repo, what);
        assert_exit(&repo.runner(&["merge", "--spec", SPEC, "--yes"]), 0);
    }
}

/// An undo of a merge killed while it put the target's files back (the index, written last,
/// still the merge's; a file half-written): `recover` finishes it, saving the stray content.
#[test]
fn an_undo_cut_off_during_its_checkout_is_finished_by_recover() {
    let repo = built(false);
    let main_before = main_state(&repo);
    assert_exit(&repo.runner(&["merge", "--spec", SPEC, "--yes"]), 0);
    let out = with_failpoint(&repo, &["undo", "--spec", SPEC], "undo_target_files_reset");
    assert!(killed(&out), "{}", stderr(&out));
    // Cut off before libgit2 wrote the index: it still holds the merge's tree.
    repo.git(&["read-tree", "HEAD"]);
    std::fs::create_dir_all(repo.path("work")).unwrap();
    std::fs::write(repo.path("work/core-a.txt"), "half").unwrap();
    let out = repo.runner(&["recover", "--spec", SPEC]);
    assert_exit(&out, 0);
    assert_eq!(main_state(&repo).0, main_before.0, "main not put back");
    assert_eq!(main_state(&repo).1, main_before.1, "files left");
    assert_eq!(
        refs_holding(
            &repo,
            "refs/auto-claude/recovery",
            "work/core-a.txt",
            "half"
        )
        .len(),
        1,
        "the stray content is not saved"
    );
    assert!(rev(&repo, &branch(SPEC)).is_some(), "branch not restored");
    assert_consistent(&repo, "undo cut off during its checkout");
}

/// While someone holds the main worktree (another merge or undo), a merge or undo into the
/// checked-out target refuses at once with exit 4, naming the lock, and changes nothing.
#[test]
fn a_merge_or_undo_while_another_changes_the_main_worktree_is_refused_as_busy() {
    let repo = built(false);
    let lock = repo.path(".auto-claude/main-worktree.lock");
    let mut holder = hold_lock(&lock);
    let before = main_state(&repo);
    let refs = repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
    for args in [
        &["merge", "--spec", SPEC, "--yes"][..],
        &["undo", "--spec", SPEC][..],
    ] {
        let out = repo.runner(args);
        assert_exit(&out, 4);
        assert!(
            stderr(&out).contains("main-worktree.lock"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(main_state(&repo), before, "{args:?}");
        assert_eq!(
            repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
            refs,
            "{args:?}"
        );
    }
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_exit(&repo.runner(&["merge", "--spec", SPEC, "--yes"]), 0);
}

/// A record naming a glob or an old-style (shared) backup name, for a merge or discard, is
/// refused: every backup of this spec and of the spec sharing its old name stays.
#[test]
fn an_intent_record_with_a_glob_or_a_shared_old_name_deletes_no_backup() {
    let repo = TestRepo::new();
    repo.add_spec(DOT);
    repo.add_spec(UNDERSCORE);
    for spec in [DOT, UNDERSCORE] {
        assert_exit(&repo.run_spec(spec, &[]), 0);
        assert_exit(&repo.runner(&["discard", "--spec", spec, "--yes"]), 0);
    }
    let head = repo.git(&["rev-parse", "HEAD"]);
    write_legacy_backup(&repo, UNDERSCORE, "20200101T000000Z", head.trim(), "{}");
    let refs = repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
    let own = spec_component(
        repo.git(&[
            "for-each-ref",
            "--format=%(refname)",
            "refs/auto-claude/backup",
        ])
        .lines()
        .find(|r| r.contains("%2E"))
        .unwrap(),
    );
    for backup in [
        format!("refs/auto-claude/backup/{own}/*"),
        format!("refs/auto-claude/backup/{own}/2026*"),
        "refs/auto-claude/backup/001-a_b/20200101T000000Z".to_string(),
    ] {
        let record = serde_json::json!({
            "op": "discard", "spec": DOT, "backup": backup,
            "branch": branch(DOT), "branch_tip": null,
        });
        std::fs::write(
            repo.spec_dir(DOT).join("lifecycle.json"),
            record.to_string(),
        )
        .unwrap();
        let out = repo.runner(&["recover", "--spec", DOT]);
        assert_exit(&out, 3);
        assert_eq!(
            repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
            refs,
            "{backup}: refs deleted"
        );
    }
}

/// A spec with a branch but no plan merges whole: nothing is left half-done for recover.
#[test]
fn a_spec_without_a_plan_merges_and_leaves_no_intent() {
    let repo = built(false);
    let tip = rev(&repo, &branch(SPEC)).unwrap();
    std::fs::remove_file(repo.plan_path(SPEC)).unwrap();
    let out = repo.runner(&["merge", "--spec", SPEC, "--yes"]);
    assert_exit(&out, 0);
    repo.git(&["merge-base", "--is-ancestor", &tip, "main"]);
    assert_consistent(&repo, "merged without a plan");
    assert_exit(&repo.runner(&["recover"]), 0);
}

/// One spec's interrupted operation that fails to finish is reported with that spec; the
/// other specs' are still finished.
#[test]
fn recover_reports_a_spec_whose_interrupted_operation_fails_and_goes_on_with_the_others() {
    let repo = TestRepo::new();
    repo.add_spec("001-a");
    repo.add_spec("002-b");
    let main = repo.git(&["rev-parse", "main"]).trim().to_string();
    let broken = serde_json::json!({
        "op": "merge", "spec": "001-a", "backup": "refs/auto-claude/backup/001-a/20260101T000000Z",
        "branch": branch("001-a"), "branch_tip": main, "mode": "merge", "target": "main",
        "target_before": main, "target_after": null, "merged_tree": "not an object id",
        "main_files": true,
    });
    std::fs::write(
        repo.spec_dir("001-a").join("lifecycle.json"),
        broken.to_string(),
    )
    .unwrap();
    let fine = serde_json::json!({
        "op": "discard", "spec": "002-b", "backup": "refs/auto-claude/backup/002-b/20260101T000000Z",
        "branch": branch("002-b"), "branch_tip": null,
    });
    std::fs::write(
        repo.spec_dir("002-b").join("lifecycle.json"),
        fine.to_string(),
    )
    .unwrap();
    let out = repo.runner(&["recover"]);
    assert_exit(&out, 3);
    assert!(
        !repo.spec_dir("002-b").join("lifecycle.json").exists(),
        "the other spec's operation was not finished: {}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("001-a") && stdout(&out).contains("recover --spec 001-a"),
        "{}",
        stdout(&out)
    );
}

/// Lock files git left when the operation was SIGKILLed are removed by `recover`, which then
/// finishes the operation; a lock still held by a live process stops it (exit 3) naming it.
#[test]
fn stale_git_locks_left_by_a_killed_operation_do_not_block_its_recovery() {
    let repo = built(false);
    let out = with_failpoint(
        &repo,
        &["discard", "--spec", SPEC, "--yes"],
        "discard_after_backup",
    );
    assert!(killed(&out), "{}", stderr(&out));
    let index_lock = repo.path(".git/worktrees/auto-claude/index.lock");
    let branch_lock = repo.path(&format!(".git/refs/heads/auto-claude/{SPEC}.lock"));
    std::fs::write(&branch_lock, "").unwrap();
    std::fs::write(&index_lock, "").unwrap();
    // Held: a live process has it open.
    let mut holder = std::process::Command::new("sleep")
        .arg("30")
        .stdin(std::fs::File::open(&index_lock).unwrap())
        .spawn()
        .unwrap();
    let out = repo.runner(&["recover", "--spec", SPEC]);
    assert_exit(&out, 3);
    assert!(stdout(&out).contains("index.lock"), "{}", stdout(&out));
    assert!(
        rev(&repo, &branch(SPEC)).is_some(),
        "acted despite a held lock"
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    // Stale now: removed, and the discard finished.
    let out = repo.runner(&["recover", "--spec", SPEC]);
    assert_exit(&out, 0);
    assert!(!index_lock.exists() && !branch_lock.exists());
    assert_eq!(rev(&repo, &branch(SPEC)), None);
    assert_consistent(&repo, "discard recovered past stale locks");
}

/// A merge cut off after its ref moved, then commits made on top of the target: the merge
/// landed, and `recover` finishes it.
#[test]
fn a_cut_off_merge_whose_target_moved_on_from_the_result_is_finished() {
    for point in ["merge_after_ref", "merge_worktree_removed"] {
        let repo = built(false);
        let out = with_failpoint(&repo, &["merge", "--spec", SPEC, "--yes"], point);
        assert!(killed(&out), "{point}: {}", stderr(&out));
        repo.write("later.txt", "later\n");
        repo.git(&["add", "later.txt"]);
        repo.git(&["commit", "-qm", "later work"]);
        let out = repo.runner(&["recover", "--spec", SPEC]);
        assert_exit(&out, 0);
        assert_eq!(rev(&repo, &branch(SPEC)), None, "{point}: branch kept");
        assert!(repo.plan(SPEC).get("merged").is_some(), "{point}");
        assert_consistent(&repo, point);
    }
}

/// `runner gc` keeps the backup of an operation still pending (its intent record names it).
#[test]
fn gc_keeps_the_backup_of_an_interrupted_operation() {
    let repo = built(true);
    let tip = rev(&repo, &branch(SPEC)).unwrap();
    let out = with_failpoint(
        &repo,
        &["discard", "--spec", SPEC, "--yes"],
        "discard_after_backup",
    );
    assert!(killed(&out), "{}", stderr(&out));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let backup = repo.git(&["for-each-ref", "refs/auto-claude/backup"]);
    assert_exit(&repo.runner(&["gc", "--older-than", "0"]), 0);
    assert_eq!(
        repo.git(&["for-each-ref", "refs/auto-claude/backup"]),
        backup,
        "gc deleted it"
    );
    recover(&repo, "gc then recover");
    assert_exit(&repo.runner(&["undo", "--spec", SPEC]), 0);
    assert_discard_undone(&repo, &tip, "gc then recover then undo");
}

/// What a merge reports is true: a merge finished after a cut counts what it landed, and a
/// spec without a worktree is not said to have had one freed.
#[test]
fn a_merge_reports_what_it_landed_and_only_a_worktree_it_freed() {
    let repo = built(false);
    let out = with_failpoint(
        &repo,
        &["merge", "--spec", SPEC, "--yes"],
        "merge_after_ref",
    );
    assert!(killed(&out), "{}", stderr(&out));
    let out = repo.runner(&["merge", "--spec", SPEC, "--yes"]);
    assert_exit(&out, 0);
    assert!(!stdout(&out).contains(" 0 commits"), "{}", stdout(&out));
    assert!(!stdout(&out).contains(" 0 files"), "{}", stdout(&out));

    let repo = built(false);
    let wt = repo.worktree();
    repo.git(&["worktree", "remove", &wt.display().to_string()]);
    let out = repo.runner(&["merge", "--spec", SPEC, "--yes"]);
    assert_exit(&out, 0);
    assert!(!stdout(&out).contains("worktree"), "{}", stdout(&out));
}

/// Recovery itself killed at its new durable steps (saving late changes before removing the
/// worktree, saving stray files before a rollback), then run again: nothing is lost.
#[test]
fn recovery_killed_while_saving_changes_loses_nothing() {
    let repo = built(false);
    let out = with_failpoint(
        &repo,
        &["discard", "--spec", SPEC, "--yes"],
        "discard_after_backup",
    );
    assert!(killed(&out), "{}", stderr(&out));
    std::fs::write(repo.worktree().join("late.txt"), "late file\n").unwrap();
    let out = with_failpoint(
        &repo,
        &["recover", "--spec", SPEC],
        "lifecycle_late_changes_saved",
    );
    assert!(killed(&out), "{}", stderr(&out));
    recover(&repo, "recover after a cut while saving late changes");
    assert!(!refs_holding(&repo, "refs/auto-claude", "late.txt", "late file\n").is_empty());
    assert_consistent(&repo, "late changes");

    let repo = built(false);
    let main_before = main_state(&repo);
    let out = with_failpoint(
        &repo,
        &["merge", "--spec", SPEC, "--yes"],
        "merge_files_written",
    );
    assert!(killed(&out), "{}", stderr(&out));
    std::fs::write(repo.path("work/core-a.txt"), "tru").unwrap();
    let out = with_failpoint(&repo, &["recover", "--spec", SPEC], "merge_rollback_saved");
    assert!(killed(&out), "{}", stderr(&out));
    recover(&repo, "recover after a cut while saving stray files");
    assert!(!refs_holding(&repo, "refs/auto-claude/recovery", "work/core-a.txt", "tru").is_empty());
    assert_eq!(main_state(&repo).1, main_before.1);
    assert_consistent(&repo, "stray files");
}
