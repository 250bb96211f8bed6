//! Merge, discard and undo: all-or-nothing (refused, failed or SIGKILLed at any step, then
//! `runner recover`), and backups and recovery refs that belong to exactly one spec.

use std::os::unix::process::ExitStatusExt;
use std::process::Output;

use crate::common::*;

/// Two spec names the old ref mapping (every other byte → `_`) gave the same refs.
const DOT: &str = "001-a.b";
const UNDERSCORE: &str = "001-a_b";

fn branch(spec: &str) -> String {
    format!("auto-claude/{spec}")
}

fn rev(repo: &TestRepo, what: &str) -> Option<String> {
    git_result(&repo.root, &["rev-parse", "--verify", "-q", what])
        .ok()
        .map(|s| s.trim().to_string())
}

/// Every ref under `prefix` whose commit has `path` with `content`.
fn refs_holding(repo: &TestRepo, prefix: &str, path: &str, content: &str) -> Vec<String> {
    repo.git(&["for-each-ref", "--format=%(refname)", prefix])
        .lines()
        .filter(|r| {
            git_result(&repo.root, &["show", &format!("{r}:{path}")])
                .ok()
                .as_deref()
                == Some(content)
        })
        .map(str::to_string)
        .collect()
}

/// The spec component of `refs/auto-claude/<kind>/<spec>/…`.
fn spec_component(refname: &str) -> String {
    refname.split('/').nth(3).unwrap().to_string()
}

#[test]
fn specs_whose_names_differ_only_in_punctuation_never_share_refs_or_backups() {
    let repo = TestRepo::new();
    repo.add_spec(DOT);
    repo.add_spec(UNDERSCORE);

    // Recovery refs: each spec's leftovers are saved when the slot switches to the other.
    assert_exit(&repo.run_spec(DOT, &[]), 0);
    std::fs::write(repo.worktree().join("scratch.txt"), "dot's leftovers").unwrap();
    assert_exit(&repo.run_spec(UNDERSCORE, &[]), 0);
    std::fs::write(
        repo.worktree().join("scratch.txt"),
        "underscore's leftovers",
    )
    .unwrap();
    assert_exit(&repo.run_spec(DOT, &[]), 0);
    let dot_saved = refs_holding(
        &repo,
        "refs/auto-claude/recovery",
        "scratch.txt",
        "dot's leftovers",
    );
    let us_saved = refs_holding(
        &repo,
        "refs/auto-claude/recovery",
        "scratch.txt",
        "underscore's leftovers",
    );
    assert_eq!(
        (dot_saved.len(), us_saved.len()),
        (1, 1),
        "{dot_saved:?} {us_saved:?}"
    );
    assert_ne!(
        spec_component(&dot_saved[0]),
        spec_component(&us_saved[0]),
        "the recovery refs of {DOT} and {UNDERSCORE} share a folder: {dot_saved:?} {us_saved:?}"
    );

    // Backups: discard both (the dot first), then undo only the dot. Both builds can make the
    // same commits within one second: one more commit tells their tips apart.
    git_in(
        &repo.worktree(),
        &["commit", "-q", "--allow-empty", "-m", "only on the dot"],
    );
    let dot_tip = rev(&repo, &branch(DOT)).unwrap();
    let us_tip = rev(&repo, &branch(UNDERSCORE)).unwrap();
    assert_ne!(dot_tip, us_tip);
    let dot_plan = repo.plan(DOT);
    let us_plan = repo.plan(UNDERSCORE);
    assert_exit(&repo.runner(&["discard", "--spec", DOT, "--yes"]), 0);
    assert_exit(&repo.runner(&["discard", "--spec", UNDERSCORE, "--yes"]), 0);
    let us_plan_discarded = repo.plan(UNDERSCORE);
    assert_ne!(us_plan_discarded, us_plan);
    let backups = repo.git(&[
        "for-each-ref",
        "--format=%(refname)",
        "refs/auto-claude/backup",
    ]);
    let components: std::collections::BTreeSet<String> =
        backups.lines().map(spec_component).collect();
    assert_eq!(components.len(), 2, "{backups}");

    let out = repo.runner(&["undo", "--spec", DOT, "--json"]);
    assert_exit(&out, 0);
    assert_eq!(rev(&repo, &branch(DOT)).as_deref(), Some(dot_tip.as_str()));
    assert_eq!(repo.plan(DOT), dot_plan, "the dot's own plan is back");
    assert_eq!(
        rev(&repo, &branch(UNDERSCORE)),
        None,
        "the other spec is untouched"
    );
    assert_eq!(repo.plan(UNDERSCORE), us_plan_discarded);

    // The other spec's backup is still its own to undo.
    assert_exit(&repo.runner(&["undo", "--spec", UNDERSCORE]), 0);
    assert_eq!(
        rev(&repo, &branch(UNDERSCORE)).as_deref(),
        Some(us_tip.as_str())
    );
    assert_eq!(repo.plan(UNDERSCORE), us_plan);
    let out = repo.runner(&["undo", "--spec", DOT]);
    assert_exit(&out, 2);
}

/// Write a backup the way runner did before ref names were escaped: under the lossy component,
/// with its spec recorded in `backup.json`.
fn write_legacy_backup(repo: &TestRepo, spec: &str, stamp: &str, tip: &str, plan: &str) {
    let component = spec.replace('.', "_");
    let meta = serde_json::json!({
        "kind": "discard", "spec": spec, "time": "2025-01-01T00:00:00Z", "stamp": stamp,
        "branch": branch(spec), "branch_tip": tip,
    });
    let dir = repo.tmp.path();
    std::fs::write(dir.join("backup.json"), meta.to_string()).unwrap();
    std::fs::write(dir.join("plan.json"), plan).unwrap();
    let blob = |f: &str| {
        repo.git(&["hash-object", "-w", &dir.join(f).display().to_string()])
            .trim()
            .to_string()
    };
    let (meta_blob, plan_blob) = (blob("backup.json"), blob("plan.json"));
    let listing = format!(
        "100644 blob {meta_blob}\tbackup.json\n100644 blob {plan_blob}\timplementation_plan.json\n"
    );
    let tree = {
        use std::io::Write;
        let mut child = std::process::Command::new("git")
            .arg("mktree")
            .current_dir(&repo.root)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(listing.as_bytes())
            .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string()
    };
    let commit = repo
        .git(&["commit-tree", &tree, "-m", "runner backup"])
        .trim()
        .to_string();
    let prefix = format!("refs/auto-claude/backup/{component}/{stamp}");
    repo.git(&["update-ref", &format!("{prefix}/branch"), tip]);
    repo.git(&["update-ref", &format!("{prefix}/meta"), &commit]);
}

#[test]
fn backups_written_under_the_old_shared_names_are_undone_for_their_own_spec_only() {
    let repo = TestRepo::new();
    repo.add_spec(DOT);
    repo.add_spec(UNDERSCORE);
    assert_exit(&repo.run_spec(DOT, &[]), 0);
    let dot_tip = rev(&repo, &branch(DOT)).unwrap();
    let dot_plan = std::fs::read_to_string(repo.plan_path(DOT)).unwrap();
    assert_exit(&repo.run_spec(UNDERSCORE, &[]), 0);
    let us_tip = rev(&repo, &branch(UNDERSCORE)).unwrap();
    // What an old runner's discards left: both under `001-a_b`, the underscore's newer.
    assert_exit(&repo.runner(&["discard", "--spec", DOT, "--yes"]), 0);
    assert_exit(&repo.runner(&["discard", "--spec", UNDERSCORE, "--yes"]), 0);
    for r in repo
        .git(&[
            "for-each-ref",
            "--format=%(refname)",
            "refs/auto-claude/backup",
        ])
        .lines()
    {
        repo.git(&["update-ref", "-d", r]);
    }
    write_legacy_backup(&repo, DOT, "20250101T000000Z", &dot_tip, &dot_plan);
    write_legacy_backup(
        &repo,
        UNDERSCORE,
        "20250101T000001Z",
        &us_tip,
        "{\"broken\": ",
    );

    let list = repo.runner(&["undo", "--list", "--spec", DOT, "--json"]);
    assert_exit(&list, 0);
    let listed: serde_json::Value = serde_json::from_str(&stdout(&list)).unwrap();
    assert_eq!(listed["backups"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["backups"][0]["spec"], DOT);

    assert_exit(&repo.runner(&["undo", "--spec", DOT]), 0);
    assert_eq!(rev(&repo, &branch(DOT)).as_deref(), Some(dot_tip.as_str()));
    let restored: serde_json::Value = repo.plan(DOT);
    assert_eq!(
        restored,
        serde_json::from_str::<serde_json::Value>(&dot_plan).unwrap()
    );
    assert_eq!(rev(&repo, &branch(UNDERSCORE)), None);
}

// ---------------------------------------------------------------------------------------------
// All or nothing: refusals, and SIGKILL at every step followed by `runner recover`.
// ---------------------------------------------------------------------------------------------

const SPEC: &str = "001-feature";

/// A repository whose spec is built on its branch, with uncommitted changes (an edit and an
/// untracked file) in its worktree when `dirty`.
fn built(dirty: bool) -> TestRepo {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    assert_exit(&repo.run_spec(SPEC, &[]), 0);
    if dirty {
        std::fs::write(repo.worktree().join("work/core-a.txt"), "edited\n").unwrap();
        std::fs::write(repo.worktree().join("untracked.txt"), "new\n").unwrap();
    }
    repo
}

fn killed(out: &Output) -> bool {
    out.status.signal() == Some(libc::SIGKILL)
}

fn with_failpoint(repo: &TestRepo, args: &[&str], point: &str) -> Output {
    repo.cmd(args)
        .env("RUNNER_FAILPOINTS", point)
        .output()
        .unwrap()
}

fn main_state(repo: &TestRepo) -> (String, String, Vec<u8>) {
    (
        repo.git(&["rev-parse", "main"]),
        repo.git(&["status", "--porcelain", "--untracked-files=all"]),
        std::fs::read(repo.path(".git/index")).unwrap(),
    )
}

/// Git's worktree records are consistent: nothing for `git worktree prune` to do, no
/// registered worktree whose folder is gone or empty, no intent record left.
fn assert_consistent(repo: &TestRepo, what: &str) {
    let prune = repo.git(&["worktree", "prune", "--dry-run", "-v"]);
    assert_eq!(prune.trim(), "", "{what}: git worktree prune would act");
    for line in repo.git(&["worktree", "list", "--porcelain"]).lines() {
        if let Some(path) = line.strip_prefix("worktree ") {
            let p = std::path::Path::new(path);
            assert!(
                p.join(".git").exists(),
                "{what}: registered worktree {path} is missing or empty"
            );
        }
    }
    let admin = repo.path(".git/worktrees");
    if let Ok(entries) = std::fs::read_dir(&admin) {
        for e in entries.flatten() {
            assert!(
                e.path().join("gitdir").exists(),
                "{what}: half-pruned {}",
                e.path().display()
            );
        }
    }
    assert!(
        !repo.spec_dir(SPEC).join("lifecycle.json").exists(),
        "{what}: the intent record is left"
    );
}

/// `commit` is on a branch or one of runner's refs.
fn assert_reachable(repo: &TestRepo, commit: &str, what: &str) {
    let holders = repo.git(&[
        "for-each-ref",
        "--contains",
        commit,
        "refs/heads",
        "refs/auto-claude",
    ]);
    assert!(!holders.trim().is_empty(), "{what}: {commit} is lost");
}

fn recover(repo: &TestRepo, what: &str) {
    let out = repo.runner(&["recover", "--spec", SPEC]);
    assert_exit(&out, 0);
    let _ = what;
}

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

fn assert_discard_undone(repo: &TestRepo, tip: &str, what: &str) {
    assert_eq!(rev(repo, &branch(SPEC)).as_deref(), Some(tip), "{what}");
    assert_eq!(
        std::fs::read_to_string(repo.worktree().join("work/core-a.txt")).unwrap(),
        "edited\n",
        "{what}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.worktree().join("untracked.txt")).unwrap(),
        "new\n",
        "{what}"
    );
    assert!(
        repo.statuses(SPEC).iter().all(|(_, s)| s == "completed"),
        "{what}: {:?}",
        repo.statuses(SPEC)
    );
}

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
    assert!(!stdout(&out).contains(" 0 commit(s)"), "{}", stdout(&out));
    assert!(!stdout(&out).contains(" 0 file(s)"), "{}", stdout(&out));

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
