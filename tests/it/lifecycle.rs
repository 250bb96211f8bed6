//! Review, merge, discard, undo, gc, and the question `runner run` asks about existing work.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

const SPEC: &str = "001-feature";

/// A repository whose spec is built completely on its branch.
fn built() -> TestRepo {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    assert_exit(&repo.run_spec(SPEC, &[]), 0);
    repo
}

/// Everything git and the files say, to compare before and after a refused operation.
fn snapshot(repo: &TestRepo) -> (String, String, Vec<u8>, String) {
    (
        repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
        repo.git(&["status", "--porcelain", "--untracked-files=all"]),
        std::fs::read(repo.path(".git/index")).unwrap(),
        std::fs::read_to_string(repo.plan_path(SPEC)).unwrap(),
    )
}

fn merge(repo: &TestRepo, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["merge", "--spec", SPEC, "--yes"];
    args.extend_from_slice(extra);
    repo.runner(&args)
}

#[test]
fn review_reports_commits_files_progress_and_mergeability_without_changing_anything() {
    let repo = built();
    repo.write("other.txt", "main moved\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "main moves on"]);
    let before = snapshot(&repo);
    let out = repo.runner(&["review", "--spec", SPEC, "--json", "--diff"]);
    assert_exit(&out, 0);
    let r: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(r["base_branch"], "main");
    assert_eq!(r["base_moved"], 1);
    let commits = r["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 3);
    assert_eq!(commits[0]["chunk"], "polish");
    assert_eq!(commits[2]["chunk"], "core-a");
    let files: Vec<&str> = r["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        vec!["work/core-a.txt", "work/core-b.txt", "work/polish.txt"]
    );
    assert_eq!(r["files"][0]["change"], "added");
    assert_eq!(r["files"][0]["additions"], 1);
    assert_eq!(r["progress"][0]["completed"], 2);
    assert_eq!(r["verifications"][0]["chunk"], "core-b");
    assert_eq!(r["verifications"][0]["passed"], true);
    assert_eq!(r["merge"]["clean"], true);
    assert!(r["diff"].as_str().unwrap().contains("+core-a attempt 1"));
    assert_eq!(snapshot(&repo), before, "review is read-only");
    let text = stdout(&repo.runner(&["review", "--spec", SPEC]));
    assert!(
        text.contains("moved 1 commit since") && text.contains("merges cleanly"),
        "{text}"
    );
    crate::assert_screen!(repo, text, @r#"
        Spec 001-feature on auto-claude/001-feature (base main, which moved 1 commit since the spec started)

        3 commits ahead of main:
          [commit] auto-claude: polish - Polish it
          [commit] auto-claude: core-b - Build part B
          [commit] auto-claude: core-a - Build part A

        3 files changed, +3 -0:
          added     work/core-a.txt (+1 -0)
          added     work/core-b.txt (+1 -0)
          added     work/polish.txt (+1 -0)

        Plan progress:
          phase-1 (Core): 2/2
          phase-2 (Polish): 1/1

        Last verifications:
          pass core-b: test -f work/core-b.txt

        It merges cleanly into main.
        "#);
}

#[test]
fn a_clean_merge_makes_a_merge_commit_then_cleans_up() {
    let repo = built();
    let tip = repo
        .git(&["rev-parse", "auto-claude/001-feature"])
        .trim()
        .to_string();
    let main_before = repo.git(&["rev-parse", "main"]).trim().to_string();
    let out = merge(&repo, &["--json"]);
    assert_exit(&out, 0);
    let o: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(o["target"], "main");
    assert_eq!(o["cleaned_up"], true);
    let landed = o["commits"].as_array().unwrap();
    assert_eq!(landed.len(), 3, "{o}");
    assert!(
        landed
            .iter()
            .all(|c| c["commit"].as_str().is_some_and(|id| id.len() == 40)
                && c["summary"].is_string())
    );
    let parents = repo.git(&["log", "-1", "--format=%P", "main"]);
    assert_eq!(parents.trim(), format!("{main_before} {tip}"));
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", "main"]).trim(),
        "auto-claude: merge 001-feature"
    );
    // main is checked out: its files were updated and it is clean.
    assert!(repo.path("work/polish.txt").is_file());
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    // Cleaned up: no branch, no worktree; backed up: both tips.
    assert!(
        repo.git(&["branch", "--list", "auto-claude/*"])
            .trim()
            .is_empty()
    );
    assert!(!repo.worktree().exists());
    let backup = o["backup"].as_str().unwrap();
    assert_eq!(
        repo.git(&["rev-parse", &format!("{backup}/branch")]).trim(),
        tip
    );
    assert_eq!(
        repo.git(&["rev-parse", &format!("{backup}/target")]).trim(),
        main_before
    );
    assert_eq!(repo.plan(SPEC)["merged"]["into"], "main");
    // A merged spec is left out of the list unless --all (or named).
    let st: Value = serde_json::from_str(&stdout(&repo.runner(&["status", "--json"]))).unwrap();
    assert_eq!(st["hidden"], 1, "{st}");
    let st: Value =
        serde_json::from_str(&stdout(&repo.runner(&["status", "--all", "--json"]))).unwrap();
    assert_eq!(st["specs"][0]["status"], "merged");
    assert!(repo.events(SPEC).iter().any(|e| e["event"] == "merged"));
    // Merging again: nothing to do.
}

#[test]
fn squash_makes_one_commit_listing_the_chunks() {
    let repo = built();
    let branch_tree = repo.git(&["rev-parse", "auto-claude/001-feature^{tree}"]);
    let main_before = repo.git(&["rev-parse", "main"]).trim().to_string();
    assert_exit(&merge(&repo, &["--squash"]), 0);
    assert_eq!(
        repo.git(&["log", "-1", "--format=%P", "main"]).trim(),
        main_before,
        "one parent"
    );
    let msg = repo.git(&["log", "-1", "--format=%B", "main"]);
    assert!(
        msg.starts_with("auto-claude: 001-feature (squashed)"),
        "{msg}"
    );
    for id in ["core-a", "core-b", "polish"] {
        assert!(msg.contains(&format!("- {id}: ")), "{msg}");
    }
    assert_eq!(repo.git(&["rev-parse", "main^{tree}"]), branch_tree);
}

#[test]
fn no_commit_stages_the_changes_and_keeps_the_branch() {
    let repo = built();
    let main_before = repo.git(&["rev-parse", "main"]);
    assert_exit(&merge(&repo, &["--no-commit"]), 0);
    assert_eq!(repo.git(&["rev-parse", "main"]), main_before);
    let staged = repo.git(&["diff", "--cached", "--name-only"]);
    assert_eq!(
        staged.lines().collect::<Vec<_>>(),
        vec!["work/core-a.txt", "work/core-b.txt", "work/polish.txt"]
    );
    assert!(
        repo.git(&["rev-parse", "--verify", "auto-claude/001-feature"])
            .len()
            > 10
    );
    assert!(repo.worktree().exists());
    // Undo puts the working tree back.
    assert_exit(&repo.runner(&["undo", "--spec", SPEC]), 0);
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_conflicting_merge_is_refused_and_touches_nothing() {
    let repo = built();
    // The same line changed on both sides.
    repo.write("work/core-a.txt", "main's version\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "main changes core-a"]);
    let before = snapshot(&repo);
    let worktree_before = git_in(&repo.worktree(), &["status", "--porcelain"]);
    let out = merge(&repo, &[]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains("conflicts in") && err.contains("work/core-a.txt"),
        "{err}"
    );
    assert!(err.contains("Nothing was changed"), "{err}");
    assert_eq!(
        snapshot(&repo),
        before,
        "refs, status, index and plan are exactly as they were"
    );
    assert_eq!(
        git_in(&repo.worktree(), &["status", "--porcelain"]),
        worktree_before
    );
    assert_eq!(repo.read("work/core-a.txt"), "main's version\n");
}

#[test]
fn a_base_that_moved_on_still_merges_when_clean() {
    let repo = built();
    repo.write("docs/moved.txt", "main moved\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "main moves on"]);
    assert_exit(&merge(&repo, &[]), 0);
    let tree = repo.git(&["ls-tree", "-r", "--name-only", "main"]);
    assert!(
        tree.contains("docs/moved.txt") && tree.contains("work/polish.txt"),
        "{tree}"
    );
}

#[test]
fn a_dirty_checked_out_target_is_refused() {
    let repo = built();
    repo.write("README.md", "my local edit\n");
    let before = snapshot(&repo);
    let out = merge(&repo, &[]);
    assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("uncommitted changes (README.md)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(&repo), before);
    assert_eq!(repo.read("README.md"), "my local edit\n");
}

#[test]
fn a_target_not_checked_out_only_moves_its_ref() {
    let repo = built();
    repo.git(&["switch", "-q", "-c", "elsewhere"]);
    let head_before = repo.git(&["rev-parse", "HEAD"]);
    assert_exit(&merge(&repo, &[]), 0);
    assert_eq!(
        repo.git(&["rev-parse", "HEAD"]),
        head_before,
        "the checked-out branch is untouched"
    );
    assert!(
        !repo.path("work/polish.txt").exists(),
        "no files changed in the main worktree"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert!(
        repo.git(&["ls-tree", "-r", "--name-only", "main"])
            .contains("work/polish.txt")
    );
}

#[test]
fn merge_then_undo_restores_target_branch_worktree_and_plan() {
    let repo = built();
    let main_before = repo.git(&["rev-parse", "main"]);
    let tip = repo.git(&["rev-parse", "auto-claude/001-feature"]);
    let plan_before = repo.plan(SPEC);
    assert_exit(&merge(&repo, &[]), 0);
    let out = repo.runner(&["undo", "--spec", SPEC, "--json"]);
    assert_exit(&out, 0);
    let o: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(o["kind"], "merge");
    assert_eq!(repo.git(&["rev-parse", "main"]), main_before);
    assert_eq!(repo.git(&["rev-parse", "auto-claude/001-feature"]), tip);
    assert!(repo.worktree().join("work/polish.txt").is_file());
    assert!(
        !repo.path("work/polish.txt").exists(),
        "main's files are back too"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    assert_eq!(repo.plan(SPEC), plan_before);
    // The backup is kept, as undone; a second undo has nothing to undo.
    assert!(
        repo.git(&["for-each-ref", "refs/auto-claude/undone/"])
            .contains("/meta")
    );
    assert_exit(&repo.runner(&["undo", "--spec", SPEC]), 2);
}

#[test]
fn undo_of_a_merge_is_refused_when_the_target_moved_since() {
    let repo = built();
    assert_exit(&merge(&repo, &[]), 0);
    repo.write("after.txt", "x\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "work after the merge"]);
    let main_now = repo.git(&["rev-parse", "main"]);
    let out = repo.runner(&["undo", "--spec", SPEC]);
    assert_exit(&out, 3);
    assert!(stderr(&out).contains("git revert -m 1"), "{}", stderr(&out));
    assert_eq!(repo.git(&["rev-parse", "main"]), main_now);
}

#[test]
fn discard_then_undo_restores_every_commit_and_uncommitted_change() {
    let repo = built();
    let tip = repo.git(&["rev-parse", "auto-claude/001-feature"]);
    let plan_before = repo.plan(SPEC);
    std::fs::write(
        repo.worktree().join("work/core-a.txt"),
        "edited, not committed\n",
    )
    .unwrap();
    std::fs::write(repo.worktree().join("untracked.txt"), "new file\n").unwrap();
    std::fs::create_dir_all(repo.worktree().join("target")).unwrap();

    // Without a terminal discard needs --yes, and does nothing without it.
    let before = snapshot(&repo);
    let refused = repo.runner(&["discard", "--spec", SPEC]);
    assert_exit(&refused, 2);
    assert!(stderr(&refused).contains("--yes"));
    assert_eq!(snapshot(&repo), before);

    let out = repo.runner(&["discard", "--spec", SPEC, "--yes", "--json"]);
    assert_exit(&out, 0);
    let o: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(o["uncommitted"].is_string());
    assert!(!repo.worktree().exists());
    assert!(
        repo.git(&["branch", "--list", "auto-claude/*"])
            .trim()
            .is_empty()
    );
    assert!(repo.statuses(SPEC).iter().all(|(_, s)| s == "pending"));
    assert!(repo.chunk(SPEC, "core-a").get("attempts").is_none());

    assert_exit(&repo.runner(&["undo", "--spec", SPEC]), 0);
    assert_eq!(repo.git(&["rev-parse", "auto-claude/001-feature"]), tip);
    assert_eq!(
        std::fs::read_to_string(repo.worktree().join("work/core-a.txt")).unwrap(),
        "edited, not committed\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.worktree().join("untracked.txt")).unwrap(),
        "new file\n"
    );
    let status = git_in(&repo.worktree(), &["status", "--porcelain"]);
    assert!(
        status.contains(" M work/core-a.txt") && status.contains("?? untracked.txt"),
        "{status}"
    );
    assert_eq!(repo.plan(SPEC), plan_before);
}

#[test]
fn undo_list_and_gc() {
    let repo = built();
    assert_exit(&repo.runner(&["discard", "--spec", SPEC, "--yes"]), 0);
    let list = repo.runner(&["undo", "--list", "--json"]);
    assert_exit(&list, 0);
    let backups: Value = serde_json::from_str(&stdout(&list)).unwrap();
    assert_eq!(backups["backups"].as_array().unwrap().len(), 1);
    assert_eq!(backups["backups"][0]["kind"], "discard");
    assert_eq!(backups["backups"][0]["spec"], SPEC);
    // Recent backups are kept by default; --older-than 0 removes them (dry run first).
    let kept = repo.runner(&["gc", "--json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&kept)).unwrap()["removed"],
        serde_json::json!([])
    );
    let dry = repo.runner(&["gc", "--older-than", "0", "--dry-run", "--json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&dry)).unwrap()["removed"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(
        repo.git(&["for-each-ref", "refs/auto-claude/backup/"])
            .contains("/meta")
    );
    // Backups are stamped to the second: make this one at least a second old.
    std::thread::sleep(Duration::from_millis(1100));
    assert_exit(&repo.runner(&["gc", "--older-than", "0"]), 0);
    assert_eq!(repo.git(&["for-each-ref", "refs/auto-claude/backup/"]), "");
}

#[test]
fn existing_work_without_a_terminal_exits_2_at_once_naming_each_choice() {
    let repo = built();
    let before = snapshot(&repo);
    let agent = fixture("fake-agent").display().to_string();
    for extra in [vec![], vec!["--yes"]] {
        // setsid: no controlling terminal at all, stdin from /dev/null.
        let mut args = vec![
            RUNNER,
            "run",
            "--spec",
            SPEC,
            "--agent-command",
            agent.as_str(),
        ];
        args.extend(extra);
        let started = Instant::now();
        let out = crate::common::isolated("setsid")
            .args(&args)
            .current_dir(&repo.root)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_exit(&out, 2);
        let err = stderr(&out);
        for choice in [
            "3/3 chunks done, 3 commits ahead of main",
            "runner review --spec 001-feature",
            "runner merge --spec 001-feature --yes",
            "runner discard --spec 001-feature --yes",
        ] {
            assert!(err.contains(choice), "{choice:?} missing in:\n{err}");
        }
        // Every chunk is done: nothing to continue.
        assert!(!err.contains("--auto-continue"), "{err}");
    }
    assert_eq!(snapshot(&repo), before);
}

mod pty {
    //! The question on a real pseudo-terminal (expectrl), answered with arrow keys and Enter.
    use super::*;
    use expectrl::session::OsSession as Session;
    use expectrl::{Eof, Expect};

    const DOWN: &str = "\x1b[B";

    fn spawn_run(repo: &TestRepo) -> Session {
        let agent = fixture("fake-agent").display().to_string();
        let mut cmd = crate::common::runner_command();
        cmd.args(["run", "--spec", SPEC, "--agent-command", &agent])
            .current_dir(&repo.root)
            .env("FAKE_AGENT_PLAN", fixture("plans/two-phases.json"))
            .env("TERM", "xterm");
        let mut s = Session::spawn(cmd).unwrap();
        s.set_expect_timeout(Some(Duration::from_secs(20)));
        s.expect("What now?").unwrap();
        s
    }

    fn exit_code(s: &mut Session) -> String {
        let _ = s.expect(Eof);
        format!("{:?}", s.get_process_mut().wait().unwrap())
    }

    /// A spec with one chunk done and two to go (the session budget stopped it).
    fn half_built() -> TestRepo {
        let repo = TestRepo::new();
        repo.add_spec(SPEC);
        repo.write_config("[run]\nmax_sessions = 2\n");
        assert_exit(&repo.run_spec(SPEC, &[]), 5);
        std::fs::remove_file(repo.path(".auto-claude/config.toml")).unwrap();
        repo
    }

    /// A usage limit's pause, an hour long, as runner writes it.
    fn pause(repo: &TestRepo) {
        let until = chrono::Utc::now() + chrono::Duration::hours(1);
        repo.write(
            &format!(".auto-claude/pauses/{SPEC}.json"),
            &serde_json::json!({
                "until": until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "reason": "the agent hit its usage limit",
                "preset": "claude",
                "session_id": null,
                "set_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            })
            .to_string(),
        );
    }

    #[test]
    fn a_paused_spec_is_still_asked_about_on_a_terminal_and_says_its_pause_without_one() {
        let repo = half_built();
        pause(&repo);
        // Without a terminal (and without --auto-continue): the pause, exit 6, not the
        // refused question's exit 2.
        let agent = fixture("fake-agent").display().to_string();
        let out = crate::common::runner_command()
            .args(["run", "--spec", SPEC, "--agent-command", &agent])
            .current_dir(&repo.root)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_exit(&out, 6);
        // On a terminal the person is asked (they may review, merge or discard meanwhile).
        let mut s = spawn_run(&repo);
        s.send("\r").unwrap();
        s.expect("paused").unwrap();
        assert!(exit_code(&mut s).contains(", 6)"));
    }

    #[test]
    fn continue_is_the_default() {
        let repo = half_built();
        let mut s = spawn_run(&repo);
        s.send("\r").unwrap();
        s.expect("All 3 chunks").unwrap();
        assert!(exit_code(&mut s).contains(", 0)"));
        assert!(repo.statuses(SPEC).iter().all(|(_, st)| st == "completed"));
    }

    #[test]
    fn review_prints_the_review_and_asks_again_then_esc_cancels_cleanly() {
        let repo = half_built();
        let before = snapshot(&repo);
        let mut s = spawn_run(&repo);
        s.send(DOWN).unwrap();
        s.send("\r").unwrap();
        s.expect("1 commit ahead of main").unwrap();
        s.expect("What now?").unwrap();
        s.send("\x1b").unwrap();
        assert!(exit_code(&mut s).contains(", 130)"));
        assert_eq!(snapshot(&repo), before, "a cancel changes nothing");
    }

    #[test]
    fn merge_from_the_menu() {
        let repo = half_built();
        let mut s = spawn_run(&repo);
        s.send(DOWN).unwrap();
        s.send(DOWN).unwrap();
        s.send("\r").unwrap();
        s.expect("Merged 001-feature into main").unwrap();
        assert!(exit_code(&mut s).contains(", 0)"));
        assert_eq!(
            repo.git(&["log", "-1", "--format=%s", "main"]).trim(),
            "auto-claude: merge 001-feature"
        );
    }

    #[test]
    fn discard_and_start_fresh_from_the_menu() {
        let repo = half_built();
        let old_tip = repo.git(&["rev-parse", "auto-claude/001-feature"]);
        let mut s = spawn_run(&repo);
        for _ in 0..3 {
            s.send(DOWN).unwrap();
        }
        s.send("\r").unwrap();
        s.expect("Discard the build").unwrap();
        s.send("y\r").unwrap();
        s.expect("Starting fresh").unwrap();
        s.expect("All 3 chunks").unwrap();
        assert!(exit_code(&mut s).contains(", 0)"));
        // A new build from scratch; the old one is in the backup.
        assert_ne!(repo.git(&["rev-parse", "auto-claude/001-feature"]), old_tip);
        assert!(
            repo.git(&["for-each-ref", "refs/auto-claude/backup/"])
                .contains(old_tip.trim())
        );
    }
}

/// Random histories on both sides and random merge / discard / undo sequences: every commit
/// that ever existed on a spec branch stays reachable from a branch or a backup ref.
#[test]
fn randomized_lifecycle_never_loses_a_commit() {
    let seed: u64 = std::env::var("RUNNER_LIFECYCLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_2026);
    eprintln!("seed {seed} (set RUNNER_LIFECYCLE_SEED to replay)");
    let mut rng = Rng(seed);
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    let branch = "auto-claude/001-feature";
    let mut seen: std::collections::BTreeSet<String> = Default::default();
    let record = |seen: &mut std::collections::BTreeSet<String>| {
        if let Ok(out) = Command::new("git")
            .args(["rev-list", branch, "--not", "main"])
            .current_dir(&repo.root)
            .output()
            && out.status.success()
        {
            seen.extend(
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .map(str::to_string),
            );
        }
    };
    for step in 0..60 {
        let action = rng.below(7);
        let n = rng.next() % 1000;
        match action {
            // The spec's build: run it (continues, or starts fresh after a discard/merge).
            0 | 1 => {
                let out = repo.run_spec(SPEC, &[]);
                assert!(
                    matches!(out.status.code(), Some(0)),
                    "step {step}: run failed: {}",
                    stderr(&out)
                );
            }
            // Work on the spec's branch by hand, committed or not.
            2 => {
                if repo.worktree().exists() {
                    std::fs::write(
                        repo.worktree().join(format!("hand-{n}.txt")),
                        format!("{n}\n"),
                    )
                    .unwrap();
                    // (The same n twice writes the same file: then there is nothing to commit.)
                    if rng.below(2) == 0
                        && !git_in(&repo.worktree(), &["status", "--porcelain"]).is_empty()
                    {
                        git_in(&repo.worktree(), &["add", "-A"]);
                        git_in(
                            &repo.worktree(),
                            &["commit", "-q", "-m", &format!("by hand {n}")],
                        );
                    }
                }
            }
            // main moves on, sometimes touching a file the spec also touches (conflicts).
            3 => {
                let file = if rng.below(3) == 0 {
                    "work/core-a.txt".to_string()
                } else {
                    format!("main-{n}.txt")
                };
                if repo.git(&["status", "--porcelain"]).is_empty() {
                    repo.write(&file, &format!("main {n}\n"));
                    repo.git(&["add", "-A"]);
                    repo.git(&["commit", "-q", "-m", &format!("main {n}")]);
                }
            }
            4 => {
                let mode = ["", "--squash", "--keep-worktree"][rng.below(3) as usize];
                let args: Vec<&str> = ["merge", "--spec", SPEC, "--yes"]
                    .into_iter()
                    .chain((!mode.is_empty()).then_some(mode))
                    .collect();
                let out = repo.runner(&args);
                assert!(
                    matches!(out.status.code(), Some(0 | 2 | 3)),
                    "step {step}: merge: {}",
                    stderr(&out)
                );
            }
            5 => {
                let out = repo.runner(&["discard", "--spec", SPEC, "--yes"]);
                assert!(
                    matches!(out.status.code(), Some(0 | 2)),
                    "step {step}: discard: {}",
                    stderr(&out)
                );
            }
            _ => {
                let out = repo.runner(&["undo", "--spec", SPEC]);
                assert!(
                    matches!(out.status.code(), Some(0 | 2 | 3)),
                    "step {step}: undo: {}",
                    stderr(&out)
                );
            }
        }
        record(&mut seen);
        // The invariant, after every step.
        for commit in &seen {
            let holders = repo.git(&[
                "for-each-ref",
                "--contains",
                commit,
                "--format=%(refname)",
                "refs/heads",
                "refs/auto-claude",
            ]);
            assert!(
                !holders.trim().is_empty(),
                "step {step}: commit {commit} is no longer reachable from any branch or backup"
            );
        }
    }
    assert!(
        seen.len() > 5,
        "the sequence built something: {} commits",
        seen.len()
    );
}

#[test]
fn undo_of_a_discard_leaves_a_rebuilt_build_alone() {
    let repo = built();
    std::fs::write(
        repo.worktree().join("work/core-a.txt"),
        "first build, uncommitted\n",
    )
    .unwrap();
    assert_exit(&repo.runner(&["discard", "--spec", SPEC, "--yes"]), 0);
    // A new build starts (with other content: identical commits would have identical ids)
    // and has uncommitted work of its own.
    repo.script("core-a * idem\n");
    assert_exit(&repo.run_spec(SPEC, &[]), 0);
    let new_tip = repo.git(&["rev-parse", "auto-claude/001-feature"]);
    std::fs::write(repo.worktree().join("new-work.txt"), "second build\n").unwrap();
    let plan_now = std::fs::read_to_string(repo.plan_path(SPEC)).unwrap();

    let out = repo.runner(&["undo", "--spec", SPEC, "--json"]);
    assert_exit(&out, 0);
    let o: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        o["notes"][0]
            .as_str()
            .unwrap()
            .contains("built again since"),
        "{o}"
    );
    // Nothing of the new build was touched: branch, worktree files, plan.
    assert_eq!(repo.git(&["rev-parse", "auto-claude/001-feature"]), new_tip);
    assert_eq!(
        std::fs::read_to_string(repo.worktree().join("new-work.txt")).unwrap(),
        "second build\n"
    );
    assert_ne!(
        std::fs::read_to_string(repo.worktree().join("work/core-a.txt")).unwrap(),
        "first build, uncommitted\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.plan_path(SPEC)).unwrap(),
        plan_now
    );
    // The first build stays reachable in the (undone) backup.
    assert!(
        repo.git(&["for-each-ref", "refs/auto-claude/undone/"])
            .contains("/branch")
    );
}

#[test]
fn discard_of_a_spec_with_an_invalid_plan_does_nothing() {
    let repo = built();
    repo.write_plan(SPEC, r#"{"phases": [{"id": "p", "subtasks": [{"id": "x", "status": "weird", "description": "d"}]}]}"#);
    let before = snapshot(&repo);
    let out = repo.runner(&["discard", "--spec", SPEC, "--yes"]);
    assert_exit(&out, 2);
    assert_eq!(snapshot(&repo), before);
    assert!(repo.worktree().exists());
}

#[test]
fn gc_with_an_absurd_age_removes_nothing_and_does_not_panic() {
    let repo = built();
    assert_exit(&repo.runner(&["discard", "--spec", SPEC, "--yes"]), 0);
    for days in ["100000000", "18446744073709551615"] {
        let out = repo.runner(&["gc", "--older-than", days, "--json"]);
        assert_exit(&out, 0);
        let o: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(o["removed"], serde_json::json!([]), "{days}");
    }
    assert!(
        repo.git(&["for-each-ref", "refs/auto-claude/backup/"])
            .contains("/meta")
    );
}

/// Merge and discard killed (SIGKILL) right after their backup, and a merge killed right after
/// its ref moved: no commit is lost, and the operation (or its undo) completes afterwards.
#[test]
fn merge_and_discard_killed_midway_lose_nothing_and_can_finish() {
    use std::os::unix::process::ExitStatusExt;
    for (point, command) in [
        ("merge_after_backup", "merge"),
        ("merge_after_ref", "merge"),
        ("discard_after_backup", "discard"),
    ] {
        let repo = built();
        let tip = repo
            .git(&["rev-parse", "auto-claude/001-feature"])
            .trim()
            .to_string();
        let out = repo
            .cmd(&[command, "--spec", SPEC, "--yes"])
            .env("RUNNER_FAILPOINTS", point)
            .output()
            .unwrap();
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGKILL),
            "{point}: {}",
            stderr(&out)
        );
        let holders = repo.git(&[
            "for-each-ref",
            "--contains",
            &tip,
            "refs/heads",
            "refs/auto-claude",
        ]);
        assert!(
            !holders.trim().is_empty(),
            "{point}: the branch tip is reachable"
        );
        // Undo puts everything back, whatever had happened.
        let undo = repo.runner(&["undo", "--spec", SPEC]);
        assert_exit(&undo, 0);
        assert_eq!(
            repo.git(&["rev-parse", "auto-claude/001-feature"]).trim(),
            tip,
            "{point}"
        );
        assert_eq!(
            repo.git(&["log", "-1", "--format=%s", "main"]).trim(),
            "initial",
            "{point}"
        );
        assert_eq!(repo.git(&["status", "--porcelain"]), "", "{point}");
        // And the operation then completes.
        assert_exit(&repo.runner(&[command, "--spec", SPEC, "--yes"]), 0);
    }
}

#[test]
fn an_ambiguous_spec_name_offers_a_numbered_choice_on_a_terminal() {
    use expectrl::session::OsSession;
    use expectrl::{Eof, Expect};
    let repo = TestRepo::new();
    repo.add_spec("001-add-login");
    repo.add_spec("010-login-page");
    let mut cmd = crate::common::runner_command();
    cmd.args([
        "run",
        "--spec",
        "login",
        "--agent-command",
        &fixture("fake-agent").display().to_string(),
    ])
    .current_dir(&repo.root)
    .env("FAKE_AGENT_PLAN", fixture("plans/two-phases.json"))
    .env("TERM", "xterm");
    let mut s = OsSession::spawn(cmd).unwrap();
    s.set_expect_timeout(Some(Duration::from_secs(20)));
    s.expect("matches several specs").unwrap();
    s.expect("2. 010-login-page").unwrap();
    s.send("\x1b[B").unwrap();
    s.send("\r").unwrap();
    s.expect("All 3 chunks of 010-login-page").unwrap();
    let _ = s.expect(Eof);
    assert!(format!("{:?}", s.get_process_mut().wait().unwrap()).contains(", 0)"));
    assert!(
        !repo
            .spec_dir("001-add-login")
            .join("implementation_plan.json")
            .exists()
    );
}

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
        let mut cmd = crate::common::runner_command();
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

/// A command that changes a spec acts only on a spec the user clearly named: a name whose
/// words are found in another order or apart in a spec's name (a stale name whose words
/// reappear in another spec's), which `runner run` or `review` would accept, is refused (exit
/// 2, nothing changed), naming the spec it resembles.
#[test]
fn merge_discard_and_undo_refuse_a_spec_named_only_loosely() {
    let repo = built();
    let before = snapshot(&repo);
    for (command, query) in [
        ("discard", "feature_001"),
        ("merge", "feat-1"),
        ("undo", "ure_00"),
    ] {
        let mut args = vec![command, "--spec", query, "--json"];
        if command != "undo" {
            args.push("--yes");
        }
        let out = repo.runner(&args);
        assert_exit(&out, 2);
        let err: Value = serde_json::from_slice(&out.stdout).unwrap();
        let message = err["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("does not clearly name a spec"),
            "{message}"
        );
        let hint = err["error"]["hints"][0].as_str().unwrap();
        assert!(hint.ends_with("--spec 001-feature"), "{err}");
        assert_eq!(snapshot(&repo), before, "{command} --spec {query}");
    }
    // A loose name still finds the spec for a command that only reads it.
    assert_exit(&repo.runner(&["review", "--spec", "feature_001"]), 0);
    // And a clear one still works for the command that changes it.
    assert_exit(&repo.runner(&["discard", "--spec", "Feature", "--yes"]), 0);
}
