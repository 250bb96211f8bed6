//! Interrupted states recovery cannot decide alone (rewritten history, a merge or conflict
//! markers, a deleted branch): a human is asked and nothing is guessed.

use super::*;

/// Asserts the chunk was blocked for a person, with `why` in the reason and the report.
#[track_caller]
fn assert_blocked(repo: &TestRepo, spec: &str, out: &Output, why: &str) {
    assert_exit(out, 3);
    let text = stdout(out);
    assert!(
        text.contains("needs a person") && text.contains("human_review") && text.contains(why),
        "the report should say what to look at ({why}):\n{text}"
    );
    let a = repo.chunk(spec, "core-a");
    assert_eq!(a["status"], "blocked");
    assert!(
        a["blocked_reason"].as_str().unwrap().contains(why),
        "{}",
        a["blocked_reason"]
    );
    assert_eq!(a["attempts"][0]["recovery"]["decision"], "human_review");
    let d = events_of(repo, spec, "recovery_decision");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["decision"], "human_review");
}

#[test]
fn rewritten_history_needs_a_human() {
    let spec = "008-rewritten";
    let repo = TestRepo::new();
    repo.write("second.txt", "second\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "second"]);
    let dir = repo.add_spec(spec);
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
    repo.script("core-a * uncommitted\n");
    run_killed_at(&repo, spec, "after_coder_session");
    // Someone reset the branch to before the attempt's start and committed something else.
    wt_git(&repo, &["reset", "-q", "--hard", "HEAD~1"]);
    std::fs::write(repo.worktree().join("other.txt"), "other\n").unwrap();
    wt_git(&repo, &["add", "-A"]);
    wt_git(&repo, &["commit", "-q", "-m", "something else"]);
    let tip = repo.git(&["rev-parse", &format!("auto-claude/{spec}")]);
    let out = recover(&repo, &[]);
    assert_blocked(&repo, spec, &out, "no longer contains the commit");
    // The branch was not touched; the tip runner knew (the attempt's start) is kept under a
    // recovery ref (issue 8: a rewrite saves the old tip and says how to restore it).
    assert_eq!(
        repo.git(&["rev-parse", &format!("auto-claude/{spec}")]),
        tip
    );
    let start = repo.chunk(spec, "core-a")["attempts"][0]["start_commit"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        recovery_refs(&repo)
            .iter()
            .any(|r| repo.git(&["rev-parse", r]).trim() == start),
        "{:?}",
        recovery_refs(&repo)
    );
}

#[test]
fn a_merge_in_progress_needs_a_human() {
    let spec = "009-merge";
    let repo = interrupted_core_a(spec, "noop");
    // A branch that changes README.md one way; the worktree changes it another and merges.
    repo.git(&["switch", "-q", "-c", "other"]);
    repo.write("README.md", "theirs\n");
    repo.git(&["commit", "-q", "-am", "theirs"]);
    repo.git(&["switch", "-q", "main"]);
    std::fs::write(repo.worktree().join("README.md"), "ours\n").unwrap();
    wt_git(&repo, &["commit", "-q", "-am", "ours"]);
    let merge = std::process::Command::new("git")
        .args(["merge", "other"])
        .current_dir(repo.worktree())
        .output()
        .unwrap();
    assert!(!merge.status.success(), "the merge should conflict");
    let out = recover(&repo, &[]);
    assert_blocked(&repo, spec, &out, "a merge is half done");
    // The merge is left as it was for the person.
    wt_git(&repo, &["rev-parse", "-q", "--verify", "MERGE_HEAD"]);
    assert!(
        std::fs::read_to_string(repo.worktree().join("README.md"))
            .unwrap()
            .contains("<<<<<<<")
    );
}

#[test]
fn conflict_markers_in_a_changed_file_need_a_human_and_stop_a_run() {
    let spec = "010-markers";
    let repo = interrupted_core_a(spec, "noop");
    std::fs::write(
        repo.worktree().join("README.md"),
        "<<<<<<< ours\nmine\n=======\nyours\n>>>>>>> theirs\n",
    )
    .unwrap();
    let sessions = repo.agent_log().len();
    // `runner run` recovers first, and stops for a person.
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains("needs a person") && err.contains("conflicts in README.md"),
        "{err}"
    );
    assert_eq!(repo.agent_log().len(), sessions, "no agent may run");
    let a = repo.chunk(spec, "core-a");
    assert_eq!(a["status"], "blocked");
    assert!(
        a["blocked_reason"]
            .as_str()
            .unwrap()
            .contains("conflicts in README.md")
    );
    let d = events_of(&repo, spec, "recovery_decision");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["decision"], "human_review");
    // The file is left for the person.
    assert!(
        std::fs::read_to_string(repo.worktree().join("README.md"))
            .unwrap()
            .contains("=======")
    );
}

#[test]
fn conflict_markers_in_a_new_file_in_a_new_folder_need_a_human() {
    let spec = "011-new-markers";
    let repo = interrupted_core_a(spec, "noop");
    std::fs::create_dir_all(repo.worktree().join("src/deep")).unwrap();
    std::fs::write(
        repo.worktree().join("src/deep/merged.rs"),
        "<<<<<<< ours\nfn a() {}\n=======\nfn b() {}\n>>>>>>> theirs\n",
    )
    .unwrap();
    let out = recover(&repo, &[]);
    assert_blocked(&repo, spec, &out, "src/deep/merged.rs");
}

#[test]
fn a_branch_deleted_after_the_attempt_started_needs_a_human() {
    let spec = "012-nobranch";
    let repo = interrupted_core_a(spec, "uncommitted");
    repo.git(&[
        "update-ref",
        "-d",
        &format!("refs/heads/auto-claude/{spec}"),
    ]);
    let out = recover(&repo, &[]);
    assert_blocked(&repo, spec, &out, "branch is gone");
    // Not recreated: a person decides; the last tip runner knew is kept under a recovery ref.
    assert!(!recovery_refs(&repo).is_empty());
    assert!(
        repo.git(&["branch", "--list", &format!("auto-claude/{spec}")])
            .is_empty()
    );
    assert!(repo.worktree().join("work/core-a.txt").is_file());
}

#[test]
fn a_blocked_chunk_s_conflicted_files_are_not_committed_by_the_next_run() {
    let spec = "013-blocked-then-run";
    let repo = interrupted_core_a(spec, "noop");
    std::fs::write(
        repo.worktree().join("README.md"),
        "<<<<<<< ours\nmine\n=======\nyours\n>>>>>>> theirs\n",
    )
    .unwrap();
    assert_exit(&recover(&repo, &[]), 3);
    assert_eq!(repo.chunk(spec, "core-a")["status"], "blocked");
    // The user runs again before sorting it out. Whatever the run does, the conflicted file
    // of the blocked chunk must not end up committed as another chunk's work.
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 3);
    let branch = format!("auto-claude/{spec}");
    let readme = repo.git(&["show", &format!("{branch}:README.md")]);
    assert!(
        !readme.contains("<<<<<<<"),
        "README.md with conflict markers was committed on {branch}: {:?}\n{}",
        repo.branch_log(&branch),
        stderr(&out)
    );
}
