//! Merge, discard and undo: all-or-nothing (refused, failed or SIGKILLed at any step, then
//! `runner recover`), and backups and recovery refs that belong to exactly one spec.

use std::os::unix::process::ExitStatusExt;
use std::process::Output;

use crate::common::*;

mod cut_off;
mod killed_at_every_step;

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
