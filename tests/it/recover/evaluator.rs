//! The agent as evaluator of an interrupted chunk (its answer checked against the rules), and
//! Ctrl-C during a session going through the same rules.

use super::*;

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
