//! Recovery end to end: `runner recover` and the recovery `runner run` does before it starts,
//! on real repositories left interrupted for real (the debug binary's failpoints SIGKILL it).

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

fn agent() -> String {
    fixture("fake-agent").display().to_string()
}

/// A repository whose run died right after core-a's coder session, which did `action`.
fn interrupted_core_a(spec: &str, action: &str) -> TestRepo {
    let repo = repo_with_fixture_plan(spec);
    repo.script(&format!("core-a * {action}\n"));
    run_killed_at(&repo, spec, "after_coder_session");
    assert_eq!(repo.chunk(spec, "core-a")["status"], "in_progress");
    repo.script("");
    repo
}

fn recover(repo: &TestRepo, args: &[&str]) -> Output {
    let mut all = vec!["recover"];
    all.extend_from_slice(args);
    repo.runner(&all)
}

/// `runner recover ARGS --json`, its exit code checked, its report parsed.
#[track_caller]
fn recover_json(repo: &TestRepo, args: &[&str], code: i32) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = recover(repo, &all);
    assert_exit(&out, code);
    serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", stdout(&out)))
}

fn wt_git(repo: &TestRepo, args: &[&str]) -> String {
    git_in(&repo.worktree(), args)
}

fn refs(repo: &TestRepo) -> String {
    repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"])
}

fn recovery_refs(repo: &TestRepo) -> Vec<String> {
    repo.git(&["for-each-ref", "--format=%(refname)", "refs/auto-claude/"])
        .lines()
        .map(str::to_string)
        .collect()
}

fn events_of(repo: &TestRepo, spec: &str, kind: &str) -> Vec<Value> {
    repo.events(spec)
        .into_iter()
        .filter(|e| e["event"] == kind)
        .collect()
}

fn last_attempt(repo: &TestRepo, spec: &str, chunk: &str) -> Value {
    let c = repo.chunk(spec, chunk);
    c["attempts"].as_array().unwrap().last().unwrap().clone()
}

fn start_commit(repo: &TestRepo, spec: &str, chunk: &str) -> String {
    last_attempt(repo, spec, chunk)["start_commit"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Files in a folder whose names start with `prefix`.
fn files_starting(dir: &Path, prefix: &str) -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    out.sort();
    out
}

/// Alive and not a zombie.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 2..]
                .split_whitespace()
                .next()
                .unwrap_or("");
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

fn prompts(repo: &TestRepo) -> Vec<(String, String)> {
    let Ok(dir) = std::fs::read_dir(repo.tmp.path().join("prompts")) else {
        return Vec::new();
    };
    dir.map(|e| {
        let p = e.unwrap().path();
        (
            p.file_name().unwrap().to_string_lossy().into_owned(),
            std::fs::read_to_string(&p).unwrap(),
        )
    })
    .collect()
}

// ---------------------------------------------------------------------------------------------
// 1. The decisions, through the binary.

#[test]
fn nothing_changed_restarts_the_chunk() {
    let spec = "001-restart";
    let repo = interrupted_core_a(spec, "noop");
    let start = start_commit(&repo, spec, "core-a");
    let report = recover_json(&repo, &[], 0);
    assert_eq!(report["specs"][0]["outcome"], "recovered");
    let action = &report["specs"][0]["actions"][0];
    assert_eq!(action["kind"], "chunk");
    assert_eq!(action["chunk"], "core-a");
    assert_eq!(action["decision"], "restart");

    let a = repo.chunk(spec, "core-a");
    assert_eq!(a["status"], "pending");
    let attempt = &a["attempts"][0];
    assert_eq!(attempt["outcome"], "interrupted");
    assert_eq!(attempt["recovery"]["decision"], "restart");
    assert_eq!(attempt["recovery"]["source"], "rules");
    assert_eq!(attempt["recovery"]["saved_ref"], Value::Null);
    assert!(
        attempt["reason"]
            .as_str()
            .unwrap()
            .contains("nothing changed"),
        "{attempt}"
    );
    assert!(recovery_refs(&repo).is_empty(), "nothing to save");
    assert_eq!(wt_git(&repo, &["rev-parse", "HEAD"]).trim(), start);
    let d = events_of(&repo, spec, "recovery_decision");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["chunk"], "core-a");
    assert_eq!(d[0]["decision"], "restart");
    let st = events_of(&repo, spec, "chunk_status");
    let last = st.last().unwrap();
    assert_eq!(
        (last["from"].as_str(), last["to"].as_str()),
        (Some("in_progress"), Some("pending"))
    );

    // Recovering again has nothing to do.
    let again = recover(&repo, &[]);
    assert_exit(&again, 0);
    assert!(
        stdout(&again).contains("Nothing to recover"),
        "{}",
        stdout(&again)
    );
    assert_eq!(events_of(&repo, spec, "recovery_decision").len(), 1);
}

#[test]
fn uncommitted_partial_work_continues_and_is_saved_to_a_ref() {
    let spec = "002-continue";
    let repo = interrupted_core_a(spec, "uncommitted");
    let start = start_commit(&repo, spec, "core-a");
    let report = recover_json(&repo, &["--spec", "002"], 0);

    // The documented report shape.
    assert_eq!(report["dry_run"], false);
    assert!(report["slots"].as_array().unwrap().is_empty());
    let s = &report["specs"][0];
    assert_eq!(s["spec"], spec);
    assert_eq!(s["outcome"], "recovered");
    assert!(s.get("plan_source").is_none(), "no plan was restored: {s}");
    let action = &s["actions"][0];
    assert_eq!(action["kind"], "chunk");
    assert_eq!(action["chunk"], "core-a");
    assert_eq!(action["decision"], "continue");
    let saved = format!("refs/auto-claude/recovery/{spec}/core-a/1");
    assert!(
        action["detail"].as_str().unwrap().contains(&saved),
        "{action}"
    );

    // The ref holds the change on top of HEAD; the change is still in the worktree.
    assert_eq!(recovery_refs(&repo), vec![saved.clone()]);
    assert_eq!(
        repo.git(&["show", &format!("{saved}:work/core-a.txt")]),
        "core-a attempt 1\n"
    );
    assert_eq!(repo.git(&["rev-parse", &format!("{saved}^")]).trim(), start);
    assert_eq!(wt_git(&repo, &["rev-parse", "HEAD"]).trim(), start);
    assert_eq!(
        std::fs::read_to_string(repo.worktree().join("work/core-a.txt")).unwrap(),
        "core-a attempt 1\n"
    );
    assert!(wt_git(&repo, &["status", "--porcelain"]).contains("work/"));

    let a = repo.chunk(spec, "core-a");
    assert_eq!(a["status"], "pending");
    let rec = &a["attempts"][0]["recovery"];
    assert_eq!(rec["decision"], "continue");
    assert_eq!(rec["saved_ref"], saved.as_str());
    assert_eq!(rec["dirty"], true);
    assert_eq!(rec["new_commits"], 0);
    let d = events_of(&repo, spec, "recovery_decision");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["decision"], "continue");
    assert_eq!(d[0]["saved_ref"], saved.as_str());
    assert_eq!(d[0]["source"], "rules");

    // The next run builds on the work: core-a's file has both attempts' lines.
    assert_exit(&repo.run_spec(spec, &[]), 0);
    assert_eq!(
        repo.git(&["show", &format!("auto-claude/{spec}:work/core-a.txt")]),
        "core-a attempt 1\ncore-a attempt 2\n"
    );
}

#[test]
fn the_next_attempt_prompt_names_the_partial_work_and_its_ref() {
    let spec = "003-prompt";
    let repo = interrupted_core_a(spec, "uncommitted");
    assert_exit(&recover(&repo, &[]), 0);
    let saved = format!("refs/auto-claude/recovery/{spec}/core-a/1");
    assert_eq!(recovery_refs(&repo), vec![saved.clone()]);
    assert_exit(&repo.run_spec(spec, &[]), 0);
    let (name, prompt) = prompts(&repo)
        .into_iter()
        .find(|(n, _)| n.contains("coder-core-a-a2"))
        .expect("a prompt for core-a's second attempt");
    assert!(
        prompt.contains(&saved),
        "the prompt {name} should say where the uncommitted partial work was saved:\n{prompt}"
    );
    assert!(
        prompt.contains("partial work"),
        "the prompt {name} should say an earlier attempt left partial work:\n{prompt}"
    );
}

#[test]
fn new_commits_continue_and_stay_on_the_branch() {
    let spec = "004-commits";
    let repo = interrupted_core_a(spec, "noop");
    std::fs::write(repo.worktree().join("half.txt"), "half of it\n").unwrap();
    wt_git(&repo, &["add", "-A"]);
    wt_git(&repo, &["commit", "-q", "-m", "agent: half of core-a"]);
    let tip = wt_git(&repo, &["rev-parse", "HEAD"]);

    let report = recover_json(&repo, &[], 0);
    let action = &report["specs"][0]["actions"][0];
    assert_eq!(action["decision"], "continue");
    assert!(
        action["detail"]
            .as_str()
            .unwrap()
            .contains("1 new commit(s)"),
        "{action}"
    );
    // Kept on the branch, nothing reset.
    assert_eq!(
        repo.git(&["rev-parse", &format!("auto-claude/{spec}")]),
        tip
    );
    assert_eq!(wt_git(&repo, &["rev-parse", "HEAD"]), tip);
    assert_eq!(
        repo.branch_log(&format!("auto-claude/{spec}")),
        vec!["agent: half of core-a"]
    );
    let a = repo.chunk(spec, "core-a");
    assert_eq!(a["status"], "pending");
    assert_eq!(a["attempts"][0]["recovery"]["decision"], "continue");
    assert_eq!(a["attempts"][0]["recovery"]["new_commits"], 1);
    assert_eq!(a["attempts"][0]["recovery"]["dirty"], false);
}

#[test]
fn a_chunk_reported_done_is_completed_with_its_leftovers_committed() {
    let spec = "005-done";
    // The agent reported done; the run died before it could judge and commit.
    let repo = interrupted_core_a(spec, "done");
    assert_eq!(last_attempt(&repo, spec, "core-a")["reported"], "done");
    let report = recover_json(&repo, &[], 0);
    let action = &report["specs"][0]["actions"][0];
    assert_eq!(action["decision"], "next");
    assert!(
        action["detail"]
            .as_str()
            .unwrap()
            .contains("no verification command"),
        "{action}"
    );

    let branch = format!("auto-claude/{spec}");
    assert_eq!(
        repo.branch_log(&branch),
        vec!["auto-claude: core-a - Build part A"]
    );
    assert_eq!(
        repo.git(&["show", &format!("{branch}:work/core-a.txt")]),
        "core-a attempt 1\n"
    );
    assert_eq!(wt_git(&repo, &["status", "--porcelain"]), "");
    let a = repo.chunk(spec, "core-a");
    assert_eq!(a["status"], "completed");
    assert!(a["completed_at"].is_string());
    let attempt = &a["attempts"][0];
    assert_eq!(attempt["outcome"], "completed");
    assert_eq!(attempt["recovery"]["decision"], "next");
    assert_eq!(
        attempt["commit"].as_str().unwrap(),
        repo.git(&["rev-parse", &branch]).trim()
    );
    let d = &events_of(&repo, spec, "recovery_decision")[0];
    assert_eq!(d["decision"], "next");
    assert_eq!(d["commit"], attempt["commit"]);
    assert!(recovery_refs(&repo).is_empty());

    // The next run goes on with core-b; core-a is not run again.
    assert_exit(&repo.run_spec(spec, &[]), 0);
    let coders: Vec<String> = repo
        .agent_log()
        .iter()
        .filter(|l| l.starts_with("coder"))
        .map(|l| l.split(' ').nth(1).unwrap().to_string())
        .collect();
    assert_eq!(coders, vec!["core-a", "core-b", "polish"]);
    assert_eq!(repo.branch_log(&branch).len(), 3);
}

#[test]
fn a_chunk_reported_done_whose_verification_passes_is_completed() {
    let spec = "006-verified";
    let repo = repo_with_fixture_plan(spec);
    // core-a completes normally; core-b reports done and the run dies after its session.
    repo.script("core-b * done\n");
    run_killed_at(&repo, spec, "after_coder_session@2");
    assert_eq!(repo.chunk(spec, "core-a")["status"], "completed");
    assert_eq!(repo.chunk(spec, "core-b")["status"], "in_progress");
    let report = recover_json(&repo, &[], 0);
    let action = &report["specs"][0]["actions"][0];
    assert_eq!(action["chunk"], "core-b");
    assert_eq!(action["decision"], "next");
    assert!(
        action["detail"]
            .as_str()
            .unwrap()
            .contains("its verification passes"),
        "{action}"
    );
    assert_eq!(repo.chunk(spec, "core-b")["status"], "completed");
    assert_eq!(
        repo.branch_log(&format!("auto-claude/{spec}")),
        vec![
            "auto-claude: core-a - Build part A",
            "auto-claude: core-b - Build part B"
        ]
    );
}

#[test]
fn unreported_work_is_next_only_when_committed_and_verified() {
    // core-b writes its file (which its check looks for) but never reports.
    let interrupted = |spec: &str| {
        let repo = repo_with_fixture_plan(spec);
        repo.script("core-b * uncommitted\n");
        run_killed_at(&repo, spec, "after_coder_session@2");
        repo
    };

    // Uncommitted and unreported: even with its check passing it may be half-written.
    let spec = "007-work";
    let repo = interrupted(spec);
    let dry = recover_json(&repo, &["--dry-run"], 0);
    let action = &dry["specs"][0]["actions"][0];
    assert_eq!(action["decision"], "continue");
    assert!(
        action["detail"]
            .as_str()
            .unwrap()
            .contains("verification command was not run"),
        "a dry run runs no check and says so: {action}"
    );
    let report = recover_json(&repo, &[], 0);
    let action = &report["specs"][0]["actions"][0];
    assert_eq!(action["decision"], "continue");
    assert!(
        action["detail"]
            .as_str()
            .unwrap()
            .contains("never reported it done"),
        "{action}"
    );
    assert_eq!(repo.chunk(spec, "core-b")["status"], "pending");

    // Committed by the agent and its check passes: the work is there, next.
    let spec = "007-committed";
    let repo = interrupted(spec);
    wt_git(&repo, &["add", "-A"]);
    wt_git(&repo, &["commit", "-q", "-m", "agent committed core-b"]);
    let report = recover_json(&repo, &[], 0);
    let action = &report["specs"][0]["actions"][0];
    assert_eq!(action["decision"], "next");
    assert!(
        action["detail"]
            .as_str()
            .unwrap()
            .contains("its work is committed (1 new commit(s)) and its verification passes"),
        "{action}"
    );
    let b = repo.chunk(spec, "core-b");
    assert_eq!(b["status"], "completed");
    assert_eq!(b["attempts"][0]["recovery"]["decision"], "next");
    assert_eq!(wt_git(&repo, &["status", "--porcelain"]), "");

    // Committed but the check fails: partial work, continue.
    let spec = "007-failing";
    let repo = interrupted(spec);
    std::fs::rename(
        repo.worktree().join("work/core-b.txt"),
        repo.worktree().join("work/core-b.draft"),
    )
    .unwrap();
    wt_git(&repo, &["add", "-A"]);
    wt_git(&repo, &["commit", "-q", "-m", "a draft"]);
    let report = recover_json(&repo, &[], 0);
    assert_eq!(report["specs"][0]["actions"][0]["decision"], "continue");
}

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

// ---------------------------------------------------------------------------------------------
// 2. Options.

/// Everything a recovery could change.
fn state(repo: &TestRepo, spec: &str) -> (Vec<u8>, String, String, String, Vec<String>) {
    let dir = repo.spec_dir(spec);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    (
        std::fs::read(repo.plan_path(spec)).unwrap(),
        std::fs::read_to_string(dir.join("events.jsonl")).unwrap(),
        refs(repo),
        wt_git(repo, &["status", "--porcelain", "--untracked-files=all"]),
        names,
    )
}

#[test]
fn dry_run_reports_and_changes_nothing() {
    let spec = "020-dry";
    let repo = interrupted_core_a(spec, "uncommitted");
    let dead_temp = repo
        .spec_dir(spec)
        .join(".implementation_plan.json.tmp-999999999-0");
    std::fs::write(&dead_temp, "half").unwrap();
    let before = state(&repo, spec);

    let out = recover(&repo, &["--dry-run"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("020-dry: would be recovered"), "{text}");
    assert!(text.contains("chunk core-a: continue"), "{text}");
    assert!(
        text.contains(".implementation_plan.json.tmp-999999999-0"),
        "{text}"
    );
    let report = recover_json(&repo, &["--dry-run"], 0);
    assert_eq!(report["dry_run"], true);
    let kinds: Vec<&str> = report["specs"][0]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["removed_temp_file", "chunk"]);
    assert_eq!(report["specs"][0]["actions"][1]["decision"], "continue");
    assert_eq!(state(&repo, spec), before, "a dry run changed something");
    assert!(dead_temp.exists());
    assert_eq!(repo.chunk(spec, "core-a")["status"], "in_progress");

    // The real thing does change it.
    assert_exit(&recover(&repo, &[]), 0);
    assert_ne!(state(&repo, spec), before);
    assert!(!dead_temp.exists());
    assert_eq!(repo.chunk(spec, "core-a")["status"], "pending");
}

#[test]
fn retry_failed_sets_failed_chunks_back_to_pending_keeping_attempts() {
    let spec = "021-retry";
    let repo = repo_with_fixture_plan(spec);
    repo.write_config("[run]\nmax_attempts = 1\n");
    repo.script("core-a * fail not today\n");
    assert_exit(&repo.run_spec(spec, &[]), 3);
    assert_eq!(repo.chunk(spec, "core-a")["status"], "failed");

    // Without the flag a failed chunk stays failed.
    let plain = recover(&repo, &[]);
    assert_exit(&plain, 0);
    assert!(stdout(&plain).contains("Nothing to recover"));
    assert_eq!(repo.chunk(spec, "core-a")["status"], "failed");
    // A dry run says it would, and does not.
    let dry = recover_json(&repo, &["--retry-failed", "--dry-run"], 0);
    assert_eq!(dry["specs"][0]["actions"][0]["kind"], "retry_failed");
    assert_eq!(repo.chunk(spec, "core-a")["status"], "failed");

    let report = recover_json(&repo, &["--retry-failed"], 0);
    let action = &report["specs"][0]["actions"][0];
    assert_eq!(action["kind"], "retry_failed");
    assert_eq!(action["chunk"], "core-a");
    let a = repo.chunk(spec, "core-a");
    assert_eq!(a["status"], "pending");
    let attempts = a["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["outcome"], "failed");
    assert!(
        attempts[0]["reason"]
            .as_str()
            .unwrap()
            .contains("not today")
    );
    let back = events_of(&repo, spec, "chunk_status")
        .into_iter()
        .filter(|e| e["from"] == "failed" && e["to"] == "pending")
        .count();
    assert_eq!(back, 1);

    repo.script("");
    assert_exit(&repo.run_spec(spec, &[]), 0);
    let a = repo.chunk(spec, "core-a");
    assert_eq!(a["status"], "completed");
    assert_eq!(a["attempts"].as_array().unwrap().len(), 2);
}

#[test]
fn a_spec_being_run_is_busy() {
    let spec = "022-busy";
    let repo = repo_with_fixture_plan(spec);
    repo.add_spec("023-idle");
    repo.script("core-a * slow 3\n");
    let mut running = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the coder to start", || {
        repo.agent_log().iter().any(|l| l.starts_with("coder"))
    });

    let one = recover(&repo, &["--spec", spec]);
    assert_exit(&one, 4);
    assert!(
        stderr(&one).contains(&format!("pid {}", running.id())),
        "{}",
        stderr(&one)
    );
    let all = recover(&repo, &["--all", "--json"]);
    assert_exit(&all, 0);
    let report: Value = serde_json::from_str(&stdout(&all)).unwrap();
    let busy = report["specs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["spec"] == spec)
        .unwrap();
    assert_eq!(busy["outcome"], "busy");
    let text = stdout(&recover(&repo, &[]));
    assert!(
        text.contains(&format!("{spec}: skipped, a runner holds it")),
        "{text}"
    );
    // The run is not disturbed.
    assert!(running.wait().unwrap().success());
    assert!(
        repo.statuses(spec).iter().all(|(_, s)| s == "completed"),
        "{:?}",
        repo.statuses(spec)
    );
    assert!(events_of(&repo, spec, "recovery_decision").is_empty());
}

// ---------------------------------------------------------------------------------------------
// 3. Repairs.

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

// ---------------------------------------------------------------------------------------------
// 4. A corrupt plan.

/// A run that completed core-a and core-b and stopped on its session budget.
pub(crate) fn partial_run(spec: &str) -> TestRepo {
    let repo = repo_with_fixture_plan(spec);
    repo.write_config("[run]\nmax_sessions = 2\n");
    assert_exit(&repo.run_spec(spec, &[]), 5);
    repo.write_config("");
    assert_eq!(
        repo.statuses(spec),
        vec![
            ("core-a".to_string(), "completed".to_string()),
            ("core-b".into(), "completed".into()),
            ("polish".into(), "pending".into()),
        ]
    );
    repo
}

fn corrupt_copies(repo: &TestRepo, spec: &str) -> Vec<Vec<u8>> {
    files_starting(&repo.spec_dir(spec), "implementation_plan.json.corrupt-")
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

#[test]
fn a_corrupt_plan_is_restored_from_the_last_good_copy_the_journal_or_the_commits() {
    let spec = "040-corrupt";
    let repo = partial_run(spec);
    let expected = repo.statuses(spec);
    let last_good = repo
        .spec_dir(spec)
        .join("implementation_plan.json.last-good");
    assert!(last_good.is_file());

    // 1. From the last good copy.
    let garbage1 = b"{\"phases\": [ {\"id\": \"p1\",, ".to_vec();
    std::fs::write(repo.plan_path(spec), &garbage1).unwrap();
    // A dry run says where it would restore from, and leaves the broken file.
    let dry = recover_json(&repo, &["--dry-run"], 0);
    assert_eq!(dry["specs"][0]["plan_source"], "last_good");
    assert_eq!(dry["specs"][0]["actions"][0]["kind"], "plan_restored");
    assert_eq!(std::fs::read(repo.plan_path(spec)).unwrap(), garbage1);
    assert!(corrupt_copies(&repo, spec).is_empty());
    assert!(events_of(&repo, spec, "plan_restored").is_empty());
    let report = recover_json(&repo, &[], 0);
    let s = &report["specs"][0];
    assert_eq!(s["plan_source"], "last_good");
    assert_eq!(s["outcome"], "recovered");
    assert_eq!(s["actions"][0]["kind"], "plan_restored");
    assert_eq!(repo.statuses(spec), expected);
    // The restored plan kept everything, attempts included.
    assert_eq!(
        repo.chunk(spec, "core-a")["attempts"][0]["outcome"],
        "completed"
    );
    assert_eq!(corrupt_copies(&repo, spec), vec![garbage1.clone()]);
    let restored = events_of(&repo, spec, "plan_restored");
    assert_eq!(restored.len(), 1);
    assert_eq!(restored[0]["source"], "last_good");
    assert_eq!(
        std::fs::read(restored[0]["broken_copy"].as_str().unwrap()).unwrap(),
        garbage1
    );

    // 2. No last good copy: the journal's snapshot with the status changes replayed.
    std::fs::remove_file(&last_good).unwrap();
    let garbage2 = b"not a plan at all".to_vec();
    std::fs::write(repo.plan_path(spec), &garbage2).unwrap();
    let report = recover_json(&repo, &[], 0);
    assert_eq!(report["specs"][0]["plan_source"], "journal");
    assert_eq!(repo.statuses(spec), expected);
    assert!(corrupt_copies(&repo, spec).contains(&garbage2));
    assert_eq!(
        events_of(&repo, spec, "plan_restored").last().unwrap()["source"],
        "journal"
    );

    // 3. No status changes in the journal: the snapshot and the branch's commits.
    let journal = repo.spec_dir(spec).join("events.jsonl");
    let kept: Vec<String> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("\"event\":\"chunk_status\""))
        .map(str::to_string)
        .collect();
    assert!(
        kept.iter()
            .any(|l| l.contains("\"event\":\"plan_snapshot\""))
    );
    std::fs::write(&journal, kept.join("\n") + "\n").unwrap();
    std::fs::remove_file(&last_good).unwrap();
    let garbage3 = b"[1, 2".to_vec();
    std::fs::write(repo.plan_path(spec), &garbage3).unwrap();
    let report = recover_json(&repo, &[], 0);
    assert_eq!(report["specs"][0]["plan_source"], "commits");
    assert_eq!(repo.statuses(spec), expected);
    assert!(corrupt_copies(&repo, spec).contains(&garbage3));

    // The restored plan is good enough to finish on.
    assert_exit(&repo.run_spec(spec, &[]), 0);
    assert!(repo.statuses(spec).iter().all(|(_, s)| s == "completed"));
    assert_eq!(repo.branch_log(&format!("auto-claude/{spec}")).len(), 3);
}

#[test]
fn every_broken_plan_is_kept_even_two_in_the_same_second() {
    let spec = "041-twice";
    let repo = partial_run(spec);
    // Start early in a second so both restores fall in it.
    wait_for("the start of a second", || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_millis()
            < 300
    });
    let garbage1 = b"first broken plan {".to_vec();
    let garbage2 = b"second broken plan {".to_vec();
    std::fs::write(repo.plan_path(spec), &garbage1).unwrap();
    assert_exit(&recover(&repo, &[]), 0);
    std::fs::write(repo.plan_path(spec), &garbage2).unwrap();
    assert_exit(&recover(&repo, &[]), 0);
    let copies = corrupt_copies(&repo, spec);
    assert!(
        copies.contains(&garbage1) && copies.contains(&garbage2),
        "both broken plans should be kept; kept: {:?}",
        copies
            .iter()
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_corrupt_plan_without_any_copy_is_left_untouched_exit_2() {
    let spec = "042-nocopy";
    let repo = TestRepo::new();
    repo.add_spec(spec);
    let garbage = "{\n  \"phases\": [\n    {\"id\": \"p1\",, }\n  ]\n}\n";
    repo.write_plan(spec, garbage);
    let out = recover(&repo, &[]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("implementation_plan.json"), "{err}");
    assert_eq!(
        std::fs::read_to_string(repo.plan_path(spec)).unwrap(),
        garbage
    );
    assert!(corrupt_copies(&repo, spec).is_empty());
    assert!(events_of(&repo, spec, "plan_restored").is_empty());
}

#[test]
fn a_plan_that_cannot_be_restored_is_reported_once() {
    let spec = "045-once";
    let repo = TestRepo::new();
    repo.add_spec(spec);
    repo.write_plan(spec, "{bad");
    for out in [recover(&repo, &[]), repo.run_spec(spec, &[])] {
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert_eq!(
            err.matches("not valid JSON").count(),
            1,
            "the error is printed more than once:\n{err}"
        );
    }
}

#[test]
fn a_planned_spec_can_be_restored_from_the_journal() {
    // The planner wrote the plan in the spec's first run; the journal snapshots a plan "at
    // each run start and plan acceptance" (src/engine/recovery/restore.rs).
    let spec = "043-planned";
    let repo = TestRepo::new();
    repo.add_spec(spec);
    repo.write_config("[run]\nmax_sessions = 2\n");
    assert_exit(&repo.run_spec(spec, &[]), 5);
    assert_eq!(repo.chunk(spec, "core-a")["status"], "completed");
    std::fs::remove_file(
        repo.spec_dir(spec)
            .join("implementation_plan.json.last-good"),
    )
    .unwrap();
    std::fs::write(repo.plan_path(spec), "broken {").unwrap();
    let out = recover(&repo, &["--json"]);
    assert_exit(&out, 0);
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["specs"][0]["plan_source"], "journal");
    assert_eq!(repo.chunk(spec, "core-a")["status"], "completed");
}

#[test]
fn run_restores_a_corrupt_plan_it_has_a_copy_of_and_finishes() {
    let spec = "044-run-restores";
    let repo = partial_run(spec);
    let garbage = b"{\"phases\": oops".to_vec();
    std::fs::write(repo.plan_path(spec), &garbage).unwrap();
    let sessions = repo.agent_log().len();
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("Recovered {spec}")) && err.contains("last good copy"),
        "{err}"
    );
    assert!(repo.statuses(spec).iter().all(|(_, s)| s == "completed"));
    // Only polish ran: the completed chunks were not redone.
    let new: Vec<String> = repo.agent_log()[sessions..].to_vec();
    assert_eq!(new.len(), 1, "{new:?}");
    assert!(new[0].starts_with("coder polish "), "{new:?}");
    assert_eq!(corrupt_copies(&repo, spec), vec![garbage]);
    assert_eq!(
        events_of(&repo, spec, "plan_restored")[0]["source"],
        "last_good"
    );
}

// ---------------------------------------------------------------------------------------------
// 5. A leftover agent.

/// A run of `spec` whose agent hangs with a background child, killed (SIGKILL): the agent and
/// its child outlive it. Returns the child's pid.
fn killed_run_leaving_an_agent(repo: &TestRepo, spec: &str) -> i32 {
    repo.script("core-a * hang\n");
    let mut run = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid_file = repo.spec_dir(spec).join("fake-agent-child.pid");
    wait_for("the agent's background child", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n'))
    });
    let child: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    unsafe { libc::kill(run.id() as i32, libc::SIGKILL) };
    run.wait().unwrap();
    child
}

#[test]
fn an_agent_that_outlived_its_runner_is_stopped_first() {
    let spec = "050-leftover";
    let repo = repo_with_fixture_plan(spec);
    let child = killed_run_leaving_an_agent(&repo, spec);
    // The runner is gone; the agent's background child is not.
    std::thread::sleep(Duration::from_millis(100));
    assert!(alive(child), "the leftover {child} should still run");
    // A dry run says so and stops nothing.
    let dry = recover_json(&repo, &["--dry-run"], 0);
    assert_eq!(
        dry["specs"][0]["actions"][0]["kind"], "stopped_agent",
        "{dry}"
    );
    assert!(alive(child), "a dry run stopped {child}");

    let report = recover_json(&repo, &[], 0);
    assert!(
        !alive(child),
        "recovery left the agent's child {child} running"
    );
    let actions = report["specs"][0]["actions"].as_array().unwrap();
    assert_eq!(actions[0]["kind"], "stopped_agent", "{report}");
    assert!(
        actions[0]["detail"]
            .as_str()
            .unwrap()
            .contains("still running after its runner died")
    );
    // Stopped before the chunk was judged; the work it wrote is partial work.
    assert_eq!(actions[1]["kind"], "chunk");
    assert_eq!(actions[1]["decision"], "continue");
    let ended: Vec<Value> = events_of(&repo, spec, "process_ended")
        .into_iter()
        .filter(|e| e["why"] == "stopped by recovery")
        .collect();
    assert_eq!(ended.len(), 1);
    // Once stopped it is not reported again.
    let again = recover_json(&repo, &[], 0);
    assert_eq!(again["specs"][0]["outcome"], "clean", "{again}");
}

/// `recover` over every spec looks for live agents once through /proc instead of reading every
/// spec's journal: an agent left running by a dead run is still found when nothing else in the
/// spec needs recovering (no chunk in progress), and not found once it is gone.
#[test]
fn a_leftover_agent_of_a_spec_with_nothing_in_progress_is_still_found() {
    let spec = "051-leftover-quiet";
    let repo = repo_with_fixture_plan(spec);
    let child = killed_run_leaving_an_agent(&repo, spec);
    // Nothing in progress any more: only the journal and the live process tell.
    let mut plan = repo.plan(spec);
    for phase in plan["phases"].as_array_mut().unwrap() {
        for c in phase["subtasks"].as_array_mut().unwrap() {
            if c["status"] == "in_progress" {
                c["status"] = "pending".into();
            }
        }
    }
    repo.write_plan(spec, &serde_json::to_string_pretty(&plan).unwrap());
    let dry = recover_json(&repo, &["--dry-run"], 0);
    assert_eq!(
        dry["specs"][0]["actions"][0]["kind"], "stopped_agent",
        "{dry}"
    );
    // The whole group goes (the agent and its child).
    let group = unsafe { libc::getpgid(child) };
    assert!(group > 0);
    unsafe { libc::kill(-group, libc::SIGKILL) };
    wait_for("the leftover group to go", || unsafe {
        libc::kill(-group, 0) != 0
    });
    let dry = recover_json(&repo, &["--dry-run"], 0);
    assert_eq!(dry["specs"][0]["outcome"], "clean", "{dry}");
}

// ---------------------------------------------------------------------------------------------
// 6. Two recoveries at once.

#[test]
fn racing_recoveries_recover_a_chunk_exactly_once() {
    for round in 0..4 {
        let spec = format!("06{round}-race");
        let repo = interrupted_core_a(&spec, "uncommitted");
        let with_spec = round % 2 == 0;
        let args: Vec<&str> = if with_spec {
            vec!["recover", "--spec", &spec]
        } else {
            vec!["recover"]
        };
        let a = repo.cmd(&args).spawn_piped();
        let b = repo.cmd(&args).spawn_piped();
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let mut codes = [a.status.code(), b.status.code()];
        codes.sort();
        let ok = codes == [Some(0), Some(0)] || (with_spec && codes == [Some(0), Some(4)]);
        assert!(
            ok,
            "round {round}: exits {codes:?}\n{}\n{}\n{}\n{}",
            stdout(&a),
            stderr(&a),
            stdout(&b),
            stderr(&b)
        );
        let decisions = events_of(&repo, &spec, "recovery_decision");
        assert_eq!(decisions.len(), 1, "round {round}: {decisions:?}");
        assert_eq!(decisions[0]["chunk"], "core-a");
        assert_eq!(
            recovery_refs(&repo),
            vec![format!("refs/auto-claude/recovery/{spec}/core-a/1")],
            "round {round}"
        );
        let a = repo.chunk(&spec, "core-a");
        assert_eq!(a["status"], "pending");
        assert_eq!(a["attempts"].as_array().unwrap().len(), 1);
        assert!(repo.worktree().join("work/core-a.txt").is_file());
    }
}

trait SpawnPiped {
    fn spawn_piped(&mut self) -> std::process::Child;
}

impl SpawnPiped for std::process::Command {
    fn spawn_piped(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

// ---------------------------------------------------------------------------------------------
// 7. The agent as evaluator.

fn evaluator_repo(spec: &str, coder_action: &str, recovery_rule: &str) -> TestRepo {
    let repo = repo_with_fixture_plan(spec);
    repo.write_config(&format!(
        "[recovery]\nevaluator = \"agent\"\n\n[agent]\ncommand = [{:?}]\n",
        agent()
    ));
    repo.script(&format!(
        "core-a * {coder_action}\nrecovery * {recovery_rule}\n"
    ));
    run_killed_at(&repo, spec, "after_coder_session");
    assert_eq!(repo.chunk(spec, "core-a")["status"], "in_progress");
    repo
}

#[test]
fn the_agent_evaluator_decides_a_restart_and_the_work_is_saved_first() {
    let spec = "070-eval";
    let repo = evaluator_repo(spec, "uncommitted", "answer restart not worth it");
    let start = start_commit(&repo, spec, "core-a");
    // A tracked file changed too.
    std::fs::write(repo.worktree().join("README.md"), "half-rewritten\n").unwrap();
    let report = recover_json(&repo, &[], 0);
    let action = &report["specs"][0]["actions"][0];
    assert_eq!(action["decision"], "restart", "{report}");
    assert!(
        action["detail"]
            .as_str()
            .unwrap()
            .contains("decided by agent"),
        "{action}"
    );

    let a = repo.chunk(spec, "core-a");
    assert_eq!(a["status"], "pending");
    let rec = &a["attempts"][0]["recovery"];
    assert_eq!(rec["decision"], "restart");
    assert_eq!(rec["source"], "agent");
    assert_eq!(rec["reason"], "not worth it");
    let d = &events_of(&repo, spec, "recovery_decision")[0];
    assert_eq!(d["source"], "agent");
    assert_eq!(d["decision"], "restart");
    // The work was saved to a ref, then the worktree was reset to the start commit.
    let saved = format!("refs/auto-claude/recovery/{spec}/core-a/1");
    assert_eq!(d["saved_ref"], saved.as_str());
    assert_eq!(
        repo.git(&["show", &format!("{saved}:work/core-a.txt")]),
        "core-a attempt 1\n"
    );
    assert_eq!(
        repo.git(&["show", &format!("{saved}:README.md")]),
        "half-rewritten\n"
    );
    assert_eq!(repo.git(&["rev-parse", &format!("{saved}^")]).trim(), start);
    assert_eq!(wt_git(&repo, &["rev-parse", "HEAD"]).trim(), start);
    assert_eq!(
        std::fs::read_to_string(repo.worktree().join("README.md")).unwrap(),
        "# project\n"
    );
    // The agent was asked as the recovery role, with the recovery prompt.
    assert!(
        repo.agent_log()
            .iter()
            .any(|l| l.starts_with("recovery core-a ")),
        "{:?}",
        repo.agent_log()
    );
    let (_, prompt) = prompts(&repo)
        .into_iter()
        .find(|(n, _)| n.contains("recovery"))
        .expect("the recovery prompt");
    assert!(prompt.contains("judge interrupted work"), "{prompt}");
    assert!(prompt.contains("chunk core-a"), "{prompt}");
}

#[test]
fn a_restart_leaves_no_new_files_of_the_abandoned_attempt_in_the_worktree() {
    // "On a restart the worktree is then reset to the attempt's start commit" (recovery/mod.rs).
    let spec = "073-eval-untracked";
    let repo = evaluator_repo(spec, "uncommitted", "answer restart not worth it");
    let start = start_commit(&repo, spec, "core-a");
    let report = recover_json(&repo, &[], 0);
    assert_eq!(report["specs"][0]["actions"][0]["decision"], "restart");
    assert_eq!(wt_git(&repo, &["rev-parse", "HEAD"]).trim(), start);
    assert_eq!(
        wt_git(&repo, &["status", "--porcelain", "--untracked-files=all"]),
        "",
        "the abandoned attempt's new file is still in the worktree, where the next attempt \
         would build on it and runner would commit it as the chunk's work"
    );
}

#[test]
fn a_garbage_answer_from_the_evaluator_falls_back_to_the_rules() {
    let spec = "071-eval-garbage";
    let repo = evaluator_repo(spec, "uncommitted", "garbage");
    let report = recover_json(&repo, &[], 0);
    assert_eq!(report["specs"][0]["actions"][0]["decision"], "continue");
    let rec = &repo.chunk(spec, "core-a")["attempts"][0]["recovery"];
    assert_eq!(rec["decision"], "continue");
    let source = rec["source"].as_str().unwrap();
    assert!(
        source.starts_with("rules (the agent's answer was not used:")
            && source.contains("decision"),
        "{source}"
    );
    let d = &events_of(&repo, spec, "recovery_decision")[0];
    assert_eq!(d["source"], source);
    // The rules' continue: the work stays.
    assert!(repo.worktree().join("work/core-a.txt").is_file());
    assert!(
        repo.agent_log()
            .iter()
            .any(|l| l.starts_with("recovery core-a ")),
        "{:?}",
        repo.agent_log()
    );
}

#[test]
fn the_evaluator_is_not_asked_when_the_rules_are_clear() {
    // Nothing changed: a restart by the rules, whatever the agent would say.
    let spec = "072-eval-clear";
    let repo = evaluator_repo(spec, "noop", "answer next it is all there");
    let report = recover_json(&repo, &[], 0);
    assert_eq!(report["specs"][0]["actions"][0]["decision"], "restart");
    let rec = &repo.chunk(spec, "core-a")["attempts"][0]["recovery"];
    assert_eq!(rec["source"], "rules");
    assert!(
        !repo.agent_log().iter().any(|l| l.starts_with("recovery")),
        "{:?}",
        repo.agent_log()
    );
}

// ---------------------------------------------------------------------------------------------
// Ctrl-C: the run's own shutdown goes through the same rules.

#[test]
fn ctrl_c_during_a_session_puts_the_chunk_through_the_recovery_rules() {
    let spec = "080-sigint";
    let repo = repo_with_fixture_plan(spec);
    repo.script("core-a * hang\n");
    let run = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = repo.spec_dir(spec).join("fake-agent-child.pid");
    wait_for("the agent's background child", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n'))
    });
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    let out = run.wait_with_output().unwrap();
    assert_exit(&out, 130);
    assert!(
        stderr(&out).contains("Interrupted: chunk core-a: continue"),
        "{}",
        stderr(&out)
    );
    let saved = format!("refs/auto-claude/recovery/{spec}/core-a/1");
    let a = repo.chunk(spec, "core-a");
    assert_eq!(a["status"], "pending");
    assert_eq!(a["attempts"][0]["outcome"], "interrupted");
    assert_eq!(a["attempts"][0]["recovery"]["decision"], "continue");
    assert_eq!(a["attempts"][0]["recovery"]["saved_ref"], saved.as_str());
    assert_eq!(
        repo.git(&["show", &format!("{saved}:work/core-a.txt")]),
        "core-a attempt 1\n"
    );
    let d = events_of(&repo, spec, "recovery_decision");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["why"], "interrupted");
    // The session had ended within the drain: nothing is queued to be run again.
    assert!(!repo.path(".auto-claude/interrupted-sessions.json").exists());
    // Nothing is left for `runner recover`.
    let again = recover_json(&repo, &[], 0);
    assert_eq!(again["specs"][0]["outcome"], "clean", "{again}");
}

#[test]
fn the_evaluator_cannot_complete_a_chunk_whose_verification_fails() {
    // "A chunk is completed when the agent reports it done *and* its verification command (if
    // any) passes" (docs/commands.md, `runner run`); the rules never make such a chunk `next`.
    let spec = "074-eval-unverified";
    let repo = repo_with_fixture_plan(spec);
    repo.write_config(&format!(
        "[recovery]\nevaluator = \"agent\"\n\n[agent]\ncommand = [{:?}]\n",
        agent()
    ));
    repo.script("core-b * uncommitted\nrecovery * answer next looks complete to me\n");
    run_killed_at(&repo, spec, "after_coder_session@2");
    // The work is there but its verification (`test -f work/core-b.txt`) fails.
    std::fs::rename(
        repo.worktree().join("work/core-b.txt"),
        repo.worktree().join("work/core-b.draft"),
    )
    .unwrap();
    assert_exit(&recover(&repo, &[]), 0);
    assert!(
        repo.agent_log()
            .iter()
            .any(|l| l.starts_with("recovery core-b ")),
        "the agent was asked"
    );
    let b = repo.chunk(spec, "core-b");
    assert_ne!(
        b["status"], "completed",
        "completed although its verification fails: {}",
        b["attempts"][0]["recovery"]
    );
    assert_eq!(
        repo.branch_log(&format!("auto-claude/{spec}")),
        vec!["auto-claude: core-a - Build part A"]
    );
}

#[test]
fn a_plan_that_parses_but_breaks_a_rule_is_not_restored_over() {
    let spec = "050-rule";
    let repo = repo_with_fixture_plan(spec);
    assert_exit(&repo.run_spec(spec, &[]), 0);
    // A person edits the plan and leaves a chunk without a description.
    let text = std::fs::read_to_string(repo.plan_path(spec))
        .unwrap()
        .replace("\"description\": \"Polish it\"", "\"description\": \"\"");
    repo.write_plan(spec, &text);
    let out = recover(&repo, &["--spec", spec]);
    assert_exit(&out, 2);
    assert_eq!(
        std::fs::read_to_string(repo.plan_path(spec)).unwrap(),
        text,
        "left byte for byte"
    );
    assert!(corrupt_copies(&repo, spec).is_empty());
}

#[test]
fn a_new_plan_is_never_restored_from_the_old_plans_copies() {
    let spec = "051-replan";
    let repo = TestRepo::new();
    repo.add_spec(spec);
    assert_exit(&repo.run_spec(spec, &[]), 0);
    // The user moves the plan away to plan again; the planner writes garbage every time, as
    // its draft in the worktree: each is set aside, none becomes the spec's plan.
    std::fs::remove_file(repo.plan_path(spec)).unwrap();
    repo.script("planner * garbage\n");
    assert_exit(&repo.run_spec(spec, &[]), 3);
    assert!(!repo.plan_path(spec).exists());
    // Recovery must not bring the old, finished plan back in place of the new attempt.
    let out = recover(&repo, &["--spec", spec]);
    assert_exit(&out, 0);
    assert!(!repo.plan_path(spec).exists(), "{}", stdout(&out));
    assert!(events_of(&repo, spec, "plan_restored").is_empty());
    // Nor over a broken plan the planner wrote straight into the spec folder (an agent that
    // knows the Auto-Claude layout): that is left for the user, byte for byte.
    repo.script("planner * garbage-in-spec\n");
    assert_exit(&repo.run_spec(spec, &[]), 3);
    let out = recover(&repo, &["--spec", spec]);
    assert_exit(&out, 2);
    assert_eq!(
        std::fs::read_to_string(repo.plan_path(spec)).unwrap(),
        "{\"phases\": [ {\"id\": \"p1\", "
    );
    assert!(events_of(&repo, spec, "plan_restored").is_empty());
}
