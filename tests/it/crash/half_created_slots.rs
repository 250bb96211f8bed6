//! Slots a crash left half created (as an older runner or a cut-off `git worktree add` leaves
//! them): finished, not committed from, and nothing deleted.

use super::*;

/// A repository whose `main` has two files, spec A with `crash_plan`, and its branch.
fn repo_for_a_half_created_slot() -> (TestRepo, Agent) {
    let repo = TestRepo::new();
    repo.write("docs/guide.md", "# guide\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "guide"]);
    repo.add_spec(A);
    repo.write_plan(A, &serde_json::to_string_pretty(&crash_plan()).unwrap());
    repo.script(CRASH_SCRIPT);
    repo.git(&["branch", &branch(A), "main"]);
    let cfg = Agent {
        plan_file: repo.tmp.path().join("unused-plan.json"),
        default: "idem",
        default_args: "",
    };
    (repo, cfg)
}

fn finish_and_check_no_base_file_deleted(repo: &TestRepo, cfg: &Agent) {
    let out = run_cmd(repo, cfg, A, None).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let deleted = base_files_deleted(repo, A);
    assert!(deleted.is_empty(), "{deleted:?}\n{}", output_text(&out));
    for file in ["README.md", "docs/guide.md"] {
        assert!(
            blob_at(repo, &branch(A), file).is_some(),
            "{file} is gone from {}",
            branch(A)
        );
    }
}

#[test]
fn a_slot_whose_checkout_was_cut_off_is_finished_not_committed_from() {
    let (repo, cfg) = repo_for_a_half_created_slot();
    repo.git(&[
        "worktree",
        "add",
        "-q",
        ".worktrees/auto-claude",
        &branch(A),
    ]);
    // A checkout killed on its way: one file written, no index yet.
    std::fs::remove_file(repo.root.join(".git/worktrees/auto-claude/index")).unwrap();
    std::fs::remove_file(repo.root.join(".worktrees/auto-claude/README.md")).unwrap();
    finish_and_check_no_base_file_deleted(&repo, &cfg);
}

#[test]
fn an_unfinished_slot_registration_does_not_block_its_creation() {
    let (repo, cfg) = repo_for_a_half_created_slot();
    // `worktree add` killed after making the registration's folder, before its `gitdir`.
    std::fs::create_dir_all(repo.root.join(".git/worktrees/auto-claude")).unwrap();
    std::fs::create_dir_all(repo.root.join(".worktrees/auto-claude")).unwrap();
    finish_and_check_no_base_file_deleted(&repo, &cfg);
}

#[test]
fn a_folder_with_files_beside_an_unfinished_registration_is_moved_aside_not_deleted() {
    let (repo, cfg) = repo_for_a_half_created_slot();
    std::fs::create_dir_all(repo.root.join(".git/worktrees/auto-claude")).unwrap();
    repo.write(".worktrees/auto-claude/notes.txt", "mine\n");
    finish_and_check_no_base_file_deleted(&repo, &cfg);
    let kept: Vec<PathBuf> = std::fs::read_dir(repo.root.join(".worktrees"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("notes.txt"))
        .filter(|p| p.is_file())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(std::fs::read_to_string(&kept[0]).unwrap(), "mine\n");
}
