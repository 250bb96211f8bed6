//! Recovery end to end: `runner recover` and the recovery `runner run` does before it starts,
//! on real repositories left interrupted for real (the debug binary's failpoints SIGKILL it).

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

mod corrupt_plan;
mod evaluator;
mod leftover_agents;
mod needs_a_human;
mod options;
mod repairs;

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
        action["detail"].as_str().unwrap().contains("1 new commit"),
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
            .contains("its work is committed (1 new commit) and its verification passes"),
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
