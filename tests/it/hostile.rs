//! An agent that misbehaves — rewrites history, edits or deletes the plan, breaks its worktree,
//! leaves ignored files — cannot make runner lose or misreport work (issue 8 §1). The real
//! binary, real repositories, the fake agent's misbehaving actions.

use crate::common::*;
use serde_json::Value;

const BRANCH_OF: &str = "auto-claude/";

fn repo_with_spec(spec: &str) -> TestRepo {
    let repo = TestRepo::new();
    repo.add_spec(spec);
    repo
}

fn agent() -> String {
    fixture("fake-agent").display().to_string()
}

fn status_of(repo: &TestRepo, spec: &str) -> Value {
    let out = repo.runner(&["status", "--json"]);
    assert_exit(&out, 0);
    let st: Value = serde_json::from_str(&stdout(&out)).unwrap();
    st["specs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["spec"] == spec)
        .cloned()
        .unwrap()
}

/// The recorded commit of a completed chunk.
fn recorded_commit(repo: &TestRepo, spec: &str, chunk: &str) -> String {
    let attempts = repo.chunk(spec, chunk)["attempts"].clone();
    attempts
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find_map(|a| a["commit"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("chunk {chunk} records no commit: {attempts}"))
}

fn is_ancestor(repo: &TestRepo, a: &str, b: &str) -> bool {
    git_result(&repo.root, &["merge-base", "--is-ancestor", a, b]).is_ok()
}

fn recovery_refs(repo: &TestRepo) -> Vec<(String, String)> {
    repo.git(&[
        "for-each-ref",
        "--format=%(refname) %(objectname)",
        "refs/auto-claude/recovery/",
    ])
    .lines()
    .map(|l| {
        let (a, b) = l.split_once(' ').unwrap();
        (a.to_string(), b.to_string())
    })
    .collect()
}

// ---------------------------------------------------------------------------------------------
// History rewritten by the agent.

/// core-b's agent rewrites the branch so that core-a's commit is gone (or replaced), then does
/// its work and reports done.
fn history_rewrite_case(how: &str) {
    let spec = format!("010-{how}");
    let repo = repo_with_spec(&spec);
    repo.script(&format!("core-b * rewrite {how}\n"));
    let out = repo.run_spec(&spec, &["--json"]);
    assert_exit(&out, 3);
    let err = stderr(&out);

    // core-a's recorded commit is no longer on the branch; runner says so, blocks core-b, and
    // never calls the spec complete.
    let branch = format!("{BRANCH_OF}{spec}");
    let core_a = recorded_commit(&repo, &spec, "core-a");
    assert!(!is_ancestor(&repo, &core_a, &branch), "{how}: still there?");
    assert_eq!(repo.chunk(&spec, "core-b")["status"], "blocked", "{err}");
    assert_eq!(repo.chunk(&spec, "core-a")["status"], "completed");
    assert_eq!(repo.chunk(&spec, "polish")["status"], "pending");
    assert!(err.contains("core-a"), "{err}");
    assert_ne!(status_of(&repo, &spec)["status"], "complete");

    // The last tip runner knew is kept under a recovery ref, and the message gives the exact
    // command that puts it back.
    let refs = recovery_refs(&repo);
    let (saved, tip) = refs
        .iter()
        .find(|(_, oid)| is_ancestor(&repo, &core_a, oid))
        .unwrap_or_else(|| panic!("{how}: no recovery ref keeps {core_a}: {refs:?}\n{err}"));
    assert!(
        err.contains(saved.as_str()),
        "{how}: the ref is not named:\n{err}"
    );
    // The command names the commit, so it works even if an agent deletes the ref.
    let wt = repo.worktree().display().to_string();
    let command = format!("git -C {wt} reset --hard {tip}");
    assert!(err.contains(&command), "{how}: no `{command}` in:\n{err}");

    // A second run refuses too (the blocked chunk), and the restore command really restores,
    // also once the ref is gone.
    assert_exit(&repo.run_spec(&spec, &[]), 3);
    repo.git(&["update-ref", "-d", saved]);
    git_in(&repo.worktree(), &["reset", "-q", "--hard", tip]);
    assert!(is_ancestor(&repo, &core_a, &branch));
}

#[test]
fn an_agent_resetting_the_branch_cannot_drop_a_completed_chunk() {
    history_rewrite_case("reset");
}

#[test]
fn an_agent_amending_a_completed_chunks_commit_is_caught() {
    history_rewrite_case("amend");
}

#[test]
fn an_agent_moving_the_branch_with_branch_f_is_caught() {
    history_rewrite_case("branch-f");
}

#[test]
fn an_agent_moving_the_branch_with_update_ref_is_caught() {
    history_rewrite_case("update-ref");
}

/// `git reset --hard HEAD~1; git merge -s ours <old tip>`: core-a's commit stays an ancestor,
/// its content is gone. Caught by the content check, blocked with the way back.
#[test]
fn an_agent_hiding_a_reset_behind_a_merge_ours_is_caught() {
    let spec = "013-ours";
    let repo = repo_with_spec(spec);
    repo.script("core-b * rewrite ours\n");
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    let branch = format!("{BRANCH_OF}{spec}");
    let core_a = recorded_commit(&repo, spec, "core-a");
    assert!(
        is_ancestor(&repo, &core_a, &branch),
        "the rewrite kept the ancestry"
    );
    assert_eq!(repo.chunk(spec, "core-b")["status"], "blocked", "{err}");
    assert!(
        err.contains("core-a") && err.contains("work/core-a.txt"),
        "{err}"
    );
    assert_ne!(status_of(&repo, spec)["status"], "complete");
    let refs = recovery_refs(&repo);
    let (saved, _) = refs
        .iter()
        .find(|(_, oid)| {
            repo.git(&["ls-tree", "-r", "--name-only", oid])
                .lines()
                .any(|l| l == "work/core-a.txt")
        })
        .unwrap_or_else(|| panic!("no recovery ref keeps core-a's work: {refs:?}\n{err}"));
    assert!(err.contains(saved.as_str()), "{err}");
}

#[test]
fn a_rewrite_in_the_last_chunk_never_reports_the_spec_complete() {
    let spec = "011-last";
    let repo = repo_with_spec(spec);
    repo.script("polish * rewrite reset\n");
    let out = repo.run_spec(spec, &["--json"]);
    assert_exit(&out, 3);
    assert!(!stdout(&out).contains("\"complete\""), "{}", stdout(&out));
    assert_eq!(repo.chunk(spec, "polish")["status"], "blocked");
    assert_ne!(status_of(&repo, spec)["status"], "complete");
}

#[test]
fn recovery_after_a_crash_catches_a_rewrite_and_saves_the_old_tip() {
    let spec = "012-crash";
    let repo = repo_with_spec(spec);
    repo.script("core-b * rewrite reset\n");
    run_killed_at(&repo, spec, "after_coder_session@2");
    let core_a = recorded_commit(&repo, spec, "core-a");

    // A dry run says so and changes nothing.
    let dry = repo.runner(&["recover", "--spec", spec, "--dry-run"]);
    assert_exit(&dry, 3);
    assert!(stdout(&dry).contains("rewritten"), "{}", stdout(&dry));
    assert!(recovery_refs(&repo).is_empty());
    assert_eq!(repo.chunk(spec, "core-b")["status"], "in_progress");

    let out = repo.runner(&["recover", "--spec", spec]);
    assert_exit(&out, 3);
    let err = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(repo.chunk(spec, "core-b")["status"], "blocked", "{err}");
    let refs = recovery_refs(&repo);
    let (saved, tip) = refs
        .iter()
        .find(|(_, oid)| is_ancestor(&repo, &core_a, oid))
        .unwrap_or_else(|| panic!("no recovery ref keeps {core_a}: {refs:?}\n{err}"));
    assert!(err.contains(saved.as_str()), "{err}");
    assert!(err.contains(&format!("reset --hard {tip}")), "{err}");
    // Recovering again changes nothing more: no second ref for the same tip.
    repo.runner(&["recover", "--spec", spec]);
    assert_eq!(recovery_refs(&repo).len(), refs.len());
}

// ---------------------------------------------------------------------------------------------
// Plan edited, deleted or replaced by the agent.

#[test]
fn plan_statuses_an_agent_edits_directly_are_undone_but_a_persons_chunk_command_stands() {
    let spec = "020-edit";
    let repo = repo_with_spec(spec);
    // core-a's agent marks every other chunk completed (and drops their records) in the file,
    // then waits; meanwhile a person marks polish done with `runner chunk done`.
    repo.script("core-a * edit-plan 2\n");
    let child = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = repo.spec_dir(spec).join("fake-agent.pid");
    wait_for("the agent to edit the plan", || pid_file.exists());
    let person = repo.runner(&["chunk", "done", "polish", "--spec", spec]);
    assert_exit(&person, 0);
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 0);
    let err = stderr(&out);

    // core-b was built after all; polish, completed by the person, was not.
    let log = repo.agent_log();
    assert!(
        log.iter().any(|l| l.starts_with("coder core-b ")),
        "{log:?}"
    );
    assert!(
        !log.iter().any(|l| l.starts_with("coder polish ")),
        "{log:?}"
    );
    assert_eq!(
        repo.branch_log(&format!("{BRANCH_OF}{spec}")),
        vec![
            "auto-claude: core-a - Build part A",
            "auto-claude: core-b - Build part B"
        ]
    );
    assert_eq!(repo.chunk(spec, "core-b")["description"], "Build part B");
    assert_eq!(repo.chunk(spec, "polish")["status"], "completed");
    // Said in one line, and journaled.
    assert!(
        err.lines()
            .any(|l| l.contains("edited the plan") && l.contains("core-b")),
        "{err}"
    );
    assert!(
        repo.events(spec)
            .iter()
            .any(|e| e["event"] == "plan_edit_undone"),
        "no plan_edit_undone event"
    );
}

/// The agent edits the plan and runner dies before it settles it (killed right after the
/// session, as an agent could kill it): recovery settles the plan against runner's last-good
/// copy, so the chunks the agent marked completed are still built.
#[test]
fn plan_edits_of_a_session_whose_run_died_are_undone_by_recovery() {
    let spec = "021-edit-died";
    let repo = repo_with_spec(spec);
    repo.script("core-a * edit-plan\n");
    run_killed_at(&repo, spec, "after_coder_session@1");
    assert_eq!(repo.chunk(spec, "core-b")["status"], "completed");
    repo.script("");
    let out = repo.runner(&["recover", "--spec", spec, "--json"]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("plan_edit_undone"),
        "{}",
        stdout(&out)
    );
    assert_ne!(repo.chunk(spec, "core-b")["status"], "completed");
    assert_ne!(repo.chunk(spec, "polish")["status"], "completed");
    assert_eq!(repo.chunk(spec, "core-b")["description"], "Build part B");
    assert_exit(&repo.run_spec(spec, &[]), 0);
    let log = repo.agent_log();
    for chunk in ["core-b", "polish"] {
        assert!(
            log.iter()
                .any(|l| l.starts_with(&format!("coder {chunk} "))),
            "{chunk} was never built: {log:?}"
        );
    }
    assert_eq!(repo.branch_log(&format!("{BRANCH_OF}{spec}")).len(), 3);
}

/// The agent marks its OWN chunk completed in the file (as Auto-Claude's
/// `update_subtask_status` does; runner takes that for its report) and runner dies before the
/// session's end judges it: recovery must settle it as it settles other chunks' marks, not
/// leave the chunk completed with its work never committed.
#[test]
fn a_chunk_its_agent_marked_completed_before_its_run_died_is_not_left_completed_without_a_commit() {
    let spec = "021-own-mark-died";
    let repo = repo_with_spec(spec);
    repo.script(
        "core-a * update-subtask core-a completed
",
    );
    run_killed_at(&repo, spec, "after_coder_session@1");
    assert_eq!(repo.chunk(spec, "core-a")["status"], "completed");
    repo.script("");
    assert_exit(&repo.run_spec(spec, &[]), 0);
    let log = repo.branch_log(&format!("{BRANCH_OF}{spec}"));
    assert_eq!(
        log.first().map(String::as_str),
        Some("auto-claude: core-a - Build part A"),
        "core-a completed with no commit: {log:?}"
    );
}

/// The copy of the plan as the session started is one file beside the plan, written over for
/// each session. A copy where earlier builds kept it (the session's folder) is still used; a copy
/// that shows another session's attempt is not.
#[test]
fn recovery_settles_against_the_copy_of_this_session_wherever_it_is_kept() {
    let spec = "021-edit-died-old";
    let repo = repo_with_spec(spec);
    repo.script("core-a * edit-plan\n");
    run_killed_at(&repo, spec, "after_coder_session@1");
    let copy = repo
        .spec_dir(spec)
        .join("implementation_plan.json.before-session");
    let session = repo.chunk(spec, "core-a")["attempts"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Moved where earlier builds wrote it: recovery still undoes the agent's edit.
    let old_place = repo
        .spec_dir(spec)
        .join("sessions")
        .join(&session)
        .join("plan-before-session.json");
    let saved = std::fs::read(&copy).unwrap();
    std::fs::rename(&copy, &old_place).unwrap();
    let out = repo.runner(&["recover", "--spec", spec, "--dry-run"]);
    assert!(stdout(&out).contains("would undo"), "{}", stdout(&out));
    // A copy of another session (its attempt's session id changed) is not this one's: nothing
    // is settled against it.
    std::fs::remove_file(&old_place).unwrap();
    let other = String::from_utf8(saved)
        .unwrap()
        .replace(&session, "20200101T000000Z-0000-coder-core-a-a1");
    std::fs::write(&copy, other).unwrap();
    let out = repo.runner(&["recover", "--spec", spec, "--dry-run"]);
    assert!(!stdout(&out).contains("would undo"), "{}", stdout(&out));
}

#[test]
fn an_agent_passing_for_a_person_cannot_complete_another_chunk() {
    let spec = "026-spoof";
    let repo = repo_with_spec(spec);
    // core-a's agent unsets RUNNER_SESSION_ID and calls `runner chunk done polish`.
    repo.script("core-a * spoof-person polish\n");
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 0);
    let log = repo.agent_log();
    assert!(
        log.iter().any(|l| l.starts_with("coder polish ")),
        "{log:?}"
    );
    assert_eq!(repo.branch_log(&format!("{BRANCH_OF}{spec}")).len(), 3);
}

/// The plan replaced with a link to a FIFO: runner never blocks reading it; it stops with
/// exit 2 naming the plan.
#[test]
fn a_plan_replaced_with_a_fifo_never_hangs_runner() {
    let spec = "023-fifo";
    let repo = repo_with_spec(spec);
    repo.script("core-a * fifo-plan\n");
    let mut child = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("runner hangs on a plan that is a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("implementation_plan.json") && err.contains("not a regular file"),
        "{err}"
    );
    let status = repo.runner(&["status", "--json"]);
    assert!(status.status.code().is_some());
}

#[test]
fn attempts_records_an_agent_deletes_are_restored() {
    let spec = "021-attempts";
    let repo = repo_with_spec(spec);
    repo.write_config("[run]\nmax_attempts = 2\n");
    // core-b fails once (a record), then its second attempt edits the plan: the failed
    // record of attempt 1 must survive, so attempts keep counting.
    repo.script("core-b 1 fail not yet\ncore-b 2 edit-plan\n");
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 0);
    let attempts = repo.chunk(spec, "core-a")["attempts"].clone();
    assert_eq!(attempts.as_array().map(Vec::len), Some(1), "{attempts}");
    assert_eq!(attempts[0]["outcome"], "completed");
    let polish = repo.chunk(spec, "polish");
    assert_eq!(polish["attempts"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_plan_the_agent_deletes_is_restored_at_once_and_the_run_goes_on() {
    let spec = "022-deleted";
    let repo = repo_with_spec(spec);
    repo.script("core-b 1 delete-plan\n");
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 0);
    let st = repo.statuses(spec);
    assert!(st.iter().all(|(_, s)| s == "completed"), "{st:?}");
    // Planned once, core-a built once.
    let log = repo.agent_log();
    assert_eq!(log.iter().filter(|l| l.starts_with("planner")).count(), 1);
    assert_eq!(
        log.iter().filter(|l| l.starts_with("coder core-a")).count(),
        1
    );
    assert!(
        repo.events(spec)
            .iter()
            .any(|e| e["event"] == "plan_restored"),
        "no plan_restored event"
    );
}

#[test]
fn a_plan_the_agent_replaces_is_restored() {
    let spec = "023-replaced";
    let repo = repo_with_spec(spec);
    repo.script("core-b 1 replace-plan\n");
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 0);
    assert_eq!(repo.statuses(spec).len(), 3);
    assert_eq!(repo.branch_log(&format!("{BRANCH_OF}{spec}")).len(), 3);
}

#[test]
fn a_plan_deleted_during_a_run_that_died_is_restored_by_the_next_run() {
    let spec = "024-died";
    let repo = repo_with_spec(spec);
    repo.script("core-b 1 delete-plan\n");
    run_killed_at(&repo, spec, "after_coder_session@2");
    assert!(!repo.plan_path(spec).exists());
    repo.script("");
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 0);
    assert!(stderr(&out).contains("restored"), "{}", stderr(&out));
    let log = repo.agent_log();
    // No second planner, core-a not rebuilt.
    assert_eq!(log.iter().filter(|l| l.starts_with("planner")).count(), 1);
    assert_eq!(
        log.iter().filter(|l| l.starts_with("coder core-a")).count(),
        1
    );
    assert_eq!(repo.branch_log(&format!("{BRANCH_OF}{spec}")).len(), 3);

    // The rule's other half: a plan the user removes while nothing runs (the last run ended)
    // means "plan again".
    std::fs::remove_file(repo.plan_path(spec)).unwrap();
    assert_exit(&repo.run_spec(spec, &[]), 0);
    let log = repo.agent_log();
    assert_eq!(log.iter().filter(|l| l.starts_with("planner")).count(), 2);
}

// ---------------------------------------------------------------------------------------------
// A worktree runner cannot open.

fn broken_worktree_case(action: &str) {
    let spec = format!("030-{action}");
    let repo = repo_with_spec(&spec);
    repo.script(&format!("core-b * {action}\n"));
    let out = repo.run_spec(&spec, &[]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert_eq!(repo.chunk(&spec, "core-b")["status"], "blocked", "{err}");
    // Never judged by the main repository: nothing committed for core-b, and whatever the
    // folder holds is kept in a recovery ref.
    let branch = format!("{BRANCH_OF}{spec}");
    assert_eq!(repo.branch_log(&branch).len(), 1, "{err}");
    let refs = recovery_refs(&repo);
    let saved = refs
        .iter()
        .find(|(_, oid)| {
            repo.git(&["ls-tree", "-r", "--name-only", oid])
                .lines()
                .any(|l| l == "work/core-b.txt")
        })
        .unwrap_or_else(|| panic!("no recovery ref holds the worktree's files: {refs:?}\n{err}"));
    assert!(err.contains(&saved.0), "{err}");
    assert_ne!(status_of(&repo, &spec)["status"], "complete");
    // recover agrees: still a person's job.
    assert_exit(&repo.runner(&["recover", "--spec", &spec]), 3);
}

#[test]
fn a_worktree_whose_git_file_the_agent_deleted_goes_to_human_review() {
    broken_worktree_case("break-git");
}

/// A `.git` file pointing at the main repository makes the folder look like the main
/// repository's working tree: it is not the spec's linked worktree, so it is never judged.
#[test]
fn a_worktree_whose_git_file_points_at_the_main_repository_goes_to_human_review() {
    broken_worktree_case("gitdir-main");
}

#[test]
fn a_worktree_the_agent_emptied_goes_to_human_review() {
    broken_worktree_case("empty-worktree");
}

#[test]
fn recovery_never_judges_an_unopenable_worktree_by_the_main_repository() {
    let spec = "031-recover";
    let repo = repo_with_spec(spec);
    repo.script("core-b * break-git\n");
    run_killed_at(&repo, spec, "after_coder_session@2");
    let out = repo.runner(&["recover", "--spec", spec]);
    assert_exit(&out, 3);
    assert_eq!(repo.chunk(spec, "core-b")["status"], "blocked");
    assert!(
        recovery_refs(&repo).iter().any(|(_, oid)| {
            repo.git(&["ls-tree", "-r", "--name-only", oid])
                .lines()
                .any(|l| l == "work/core-b.txt")
        }),
        "{}",
        stdout(&out)
    );
}

/// The agent checks out another branch, deletes the `.git` file and kills runner: recovery
/// still knows the slot as the spec's (its last run worked there) and saves its files.
#[test]
fn recovery_saves_a_broken_worktree_the_agent_moved_to_another_branch() {
    let spec = "033-away";
    let repo = repo_with_spec(spec);
    repo.script("core-b * away-and-kill\n");
    let out = repo.run_spec(spec, &[]);
    assert_eq!(
        out.status.code(),
        None,
        "runner was not killed: {}",
        stderr(&out)
    );
    let out = repo.runner(&["recover", "--spec", spec]);
    assert_exit(&out, 3);
    assert_eq!(
        repo.chunk(spec, "core-b")["status"],
        "blocked",
        "{}",
        stdout(&out)
    );
    assert!(
        recovery_refs(&repo).iter().any(|(_, oid)| {
            repo.git(&["ls-tree", "-r", "--name-only", oid])
                .lines()
                .any(|l| l == "work/core-b.txt")
        }),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_chunk_whose_worktree_vanished_is_not_completed_from_the_branch_alone() {
    let spec = "032-vanished";
    let repo = repo_with_spec(spec);
    // polish (no verification) reports done; runner dies before committing; the folder goes.
    run_killed_at(&repo, spec, "after_coder_session@3");
    std::fs::remove_dir_all(repo.worktree()).unwrap();
    let out = repo.runner(&["recover", "--spec", spec]);
    assert_exit(&out, 3);
    assert_eq!(
        repo.chunk(spec, "polish")["status"],
        "blocked",
        "{}",
        stdout(&out)
    );
    assert_ne!(status_of(&repo, spec)["status"], "complete");
}

// ---------------------------------------------------------------------------------------------
// Truthful commits.

#[test]
fn commits_of_agent_work_leave_out_what_the_users_ignore_rules_hide() {
    ignored_files_case("040-ignored", "ignored");
}

/// The agent stages the hidden files with `git add -f`: runner's commit of its leftovers still
/// leaves them out (they stay in the worktree, unstaged).
#[test]
fn ignored_files_the_agent_force_adds_are_left_out_of_runners_commit() {
    ignored_files_case("041-forced", "ignored-forced");
}

fn ignored_files_case(spec: &str, action: &str) {
    let repo = repo_with_spec(spec);
    repo.write(".gitignore", "ignored/\n");
    repo.git(&["add", ".gitignore"]);
    repo.git(&["commit", "-q", "-m", "ignore"]);
    repo.write(".git/info/exclude", "*.key\n");
    let global = repo.tmp.path().join("global-ignore");
    std::fs::write(&global, "*.tmp\n").unwrap();
    repo.git(&["config", "core.excludesFile", global.to_str().unwrap()]);
    repo.script(&format!("core-a * {action}\n"));
    assert_exit(&repo.run_spec(spec, &[]), 0);
    let tree = repo.git(&[
        "ls-tree",
        "-r",
        "--name-only",
        &format!("{BRANCH_OF}{spec}"),
    ]);
    assert!(tree.lines().any(|l| l == "work/core-a.txt"), "{tree}");
    for hidden in ["ignored/x.log", "secret.key", "cache.tmp"] {
        assert!(
            !tree.lines().any(|l| l == hidden),
            "{hidden} committed:\n{tree}"
        );
    }
}

/// The agent commits its own work under another chunk's subject: `review` attributes the
/// commit to the chunk whose attempt recorded it, not to the chunk the subject names.
#[test]
fn review_attributes_commits_by_runners_records_not_by_forged_subjects() {
    let spec = "042-forged";
    let repo = repo_with_spec(spec);
    repo.script("core-b * forge-subject polish\n");
    assert_exit(&repo.run_spec(spec, &[]), 0);
    let out = repo.runner(&["review", "--spec", spec, "--json"]);
    assert_exit(&out, 0);
    let review: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let commits = review["commits"].as_array().unwrap();
    let forged = commits
        .iter()
        .find(|c| c["summary"] == "auto-claude: polish - forged")
        .unwrap_or_else(|| panic!("no forged commit in {commits:?}"));
    assert_eq!(forged["chunk"], "core-b", "{commits:?}");
    let polish: Vec<&Value> = commits.iter().filter(|c| c["chunk"] == "polish").collect();
    assert_eq!(polish.len(), 1, "{commits:?}");
}

#[test]
fn a_chunk_whose_session_changed_nothing_says_so_and_records_no_commit() {
    let spec = "041-nothing";
    let repo = repo_with_spec(spec);
    repo.script("polish * empty-done\n");
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.contains("polish completed"))
        .unwrap();
    assert!(!line.contains("committed its own work"), "{line}");
    assert!(line.contains("no changes"), "{line}");
    let attempt = repo.chunk(spec, "polish")["attempts"][0].clone();
    // Not core-b's commit (the start commit) claimed as core-b's own.
    assert!(attempt["commit"].is_null(), "{attempt}");
}

// ---------------------------------------------------------------------------------------------
// Crashes in the middle of the checks: the next recovery finishes the job, once.

#[test]
fn a_crash_after_saving_the_old_tip_is_finished_by_recovery() {
    let spec = "050-crash-history";
    let repo = repo_with_spec(spec);
    repo.script("core-b * rewrite reset\n");
    run_killed_at(&repo, spec, "after_history_ref");
    assert_eq!(repo.chunk(spec, "core-b")["status"], "in_progress");
    let core_a = recorded_commit(&repo, spec, "core-a");
    let out = repo.runner(&["recover", "--spec", spec]);
    assert_exit(&out, 3);
    assert_eq!(repo.chunk(spec, "core-b")["status"], "blocked");
    // The old tip is kept by exactly one ref (the one saved before the crash is reused).
    let keeping: Vec<_> = recovery_refs(&repo)
        .into_iter()
        .filter(|(_, oid)| *oid == core_a)
        .collect();
    assert_eq!(keeping.len(), 1, "{keeping:?}");
    assert!(stdout(&out).contains(&keeping[0].0), "{}", stdout(&out));
}

#[test]
fn a_crash_after_saving_an_unopenable_worktree_is_finished_by_recovery() {
    let spec = "051-crash-worktree";
    let repo = repo_with_spec(spec);
    repo.script("core-b * break-git\n");
    run_killed_at(&repo, spec, "after_unopenable_saved");
    assert_eq!(repo.chunk(spec, "core-b")["status"], "in_progress");
    let before = recovery_refs(&repo);
    assert_eq!(before.len(), 1, "{before:?}");
    let out = repo.runner(&["recover", "--spec", spec]);
    assert_exit(&out, 3);
    assert_eq!(repo.chunk(spec, "core-b")["status"], "blocked");
    // Same files, same ref: nothing piles up.
    assert_eq!(recovery_refs(&repo), before);
    assert_eq!(repo.branch_log(&format!("{BRANCH_OF}{spec}")).len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Completed work lost after the run (a job the agent left behind, or a person).

/// The branch is reset to its base after a complete run: every completed chunk's commit is gone.
/// `status` shows the missing work, `merge` refuses (never "already merged"), and `run` stops
/// for a person, each with the command that puts the last tip runner knew back.
#[test]
fn completed_work_missing_from_the_branch_is_never_reported_complete() {
    let spec = "015-lost";
    let repo = repo_with_spec(spec);
    assert_exit(&repo.run_spec(spec, &[]), 0);
    assert_eq!(status_of(&repo, spec)["status"], "complete");
    let core_a = recorded_commit(&repo, spec, "core-a");
    let branch = format!("{BRANCH_OF}{spec}");
    git_in(&repo.worktree(), &["reset", "-q", "--hard", "main"]);

    let st = status_of(&repo, spec);
    assert_eq!(st["status"], "missing_work", "{st}");
    assert!(st["problem"].as_str().unwrap().contains("core-a"), "{st}");
    let human = stdout(&repo.runner(&["status"]));
    assert!(
        human.contains("missing_work") && human.contains("runner recover"),
        "{human}"
    );

    let out = repo.runner(&["merge", "--spec", spec, "--yes"]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(!stdout(&out).contains("already merged"), "{}", stdout(&out));
    let refs = recovery_refs(&repo);
    let (saved, _) = refs
        .iter()
        .find(|(_, oid)| is_ancestor(&repo, &core_a, oid))
        .unwrap_or_else(|| panic!("no recovery ref keeps {core_a}: {refs:?}\n{err}"));
    assert!(err.contains(saved.as_str()), "{err}");

    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains(saved.as_str()) && err.contains("core-a"),
        "{err}"
    );
    assert!(!stdout(&out).contains("are completed"), "{}", stdout(&out));

    // The printed way back restores the work; then all is complete again.
    git_in(&repo.worktree(), &["reset", "-q", "--hard", saved]);
    assert!(is_ancestor(&repo, &core_a, &branch));
    assert_eq!(status_of(&repo, spec)["status"], "complete");
    assert_exit(&repo.run_spec(spec, &[]), 0);
}

// ---------------------------------------------------------------------------------------------
// Processes that leave the agent's process group (`setsid`).

/// An agent that calls `runner chunk done polish` from a new session and process group, with
/// RUNNER_SESSION_ID unset, is still inside the run (its process tree says so): refused, and
/// polish is really worked on later.
#[test]
fn an_agent_escaping_its_process_group_cannot_pass_for_a_person() {
    let spec = "027-setsid";
    let repo = repo_with_spec(spec);
    repo.script("core-a * setsid-person polish\n");
    assert_exit(&repo.run_spec(spec, &[]), 0);
    let log = repo.agent_log();
    assert!(
        log.iter().any(|l| l.starts_with("coder polish ")),
        "polish was completed by the agent of core-a: {log:?}"
    );
    assert_eq!(repo.branch_log(&format!("{BRANCH_OF}{spec}")).len(), 3);
}

/// A job the agent leaves behind in its own session does not outlive the agent's session.
#[test]
fn a_setsid_job_the_agent_leaves_behind_is_killed_when_the_session_ends() {
    let spec = "028-late";
    let repo = repo_with_spec(spec);
    repo.script("core-a * late-job 1\n");
    assert_exit(&repo.run_spec(spec, &[]), 0);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let marker = repo.spec_dir(spec).join("late-job.txt");
    assert!(
        !marker.exists(),
        "the agent's setsid job outlived its session"
    );
    let killed = repo
        .events(spec)
        .iter()
        .any(|e| e["event"] == "leftovers_killed");
    assert!(killed, "no leftovers_killed event");
}

// ---------------------------------------------------------------------------------------------
// A person's change, proven by the run rather than read from a file.

/// The agent edits the plan and forges the journal line a person's `runner chunk done` writes:
/// the edit is undone all the same (the run knows a person's changes only from its socket).
#[test]
fn a_forged_journal_line_does_not_make_an_agents_plan_edit_stand() {
    let spec = "029-forge";
    let repo = repo_with_spec(spec);
    repo.script("core-a * forge-person polish\n");
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 0);
    let log = repo.agent_log();
    assert!(
        log.iter().any(|l| l.starts_with("coder polish ")),
        "polish, completed by a forged line, was never built: {log:?}\n{}",
        stderr(&out)
    );
    assert_eq!(repo.branch_log(&format!("{BRANCH_OF}{spec}")).len(), 3);
}

/// A request to the run's socket from inside the run (the agent) is refused, whatever it says;
/// the socket is gone when the run ends.
#[test]
fn the_run_refuses_a_persons_request_sent_by_its_agent() {
    let spec = "030-sock";
    let repo = repo_with_spec(spec);
    repo.script("core-a * sock-person polish\n");
    assert_exit(&repo.run_spec(spec, &[]), 0);
    let reply = repo.read(&format!(".auto-claude/specs/{spec}/sock-reply.txt"));
    assert!(reply.contains("refused"), "{reply}");
    let log = repo.agent_log();
    assert!(
        log.iter().any(|l| l.starts_with("coder polish ")),
        "{log:?}"
    );
    assert!(!repo.spec_dir(spec).join("run.sock").exists());
}

// ---------------------------------------------------------------------------------------------
// Recorded ids that are not commit ids.

/// A start commit that is not a commit id (non-ASCII text) is a problem for a person, never a
/// panic.
#[test]
fn a_recorded_start_commit_that_is_not_an_id_never_panics() {
    let spec = "016-badid";
    let repo = repo_with_spec(spec);
    run_killed_at(&repo, spec, "after_coder_session@2");
    let mut plan = repo.plan(spec);
    for phase in plan["phases"].as_array_mut().unwrap() {
        for c in phase["subtasks"].as_array_mut().unwrap() {
            if c["id"] == "core-b" {
                let attempts = c["attempts"].as_array_mut().unwrap();
                attempts.last_mut().unwrap()["start_commit"] =
                    format!("a{}", "é".repeat(20)).into();
            }
        }
    }
    let text = serde_json::to_string_pretty(&plan).unwrap();
    repo.write_plan(spec, &text);
    // With the plan as the session started (kept in the session's folder), recovery puts the
    // edited record back, as an agent's edit of runner's records, and goes on.
    let out = repo.runner(&["recover", "--spec", spec, "--dry-run"]);
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!all.contains("panicked"), "{all}");
    assert!(all.contains("would undo"), "{all}");
    // Without that copy, the bad id itself is met: a problem for a person, never a panic.
    let copy = repo
        .spec_dir(spec)
        .join("implementation_plan.json.before-session");
    std::fs::remove_file(&copy).unwrap();
    let out = repo.runner(&["recover", "--spec", spec]);
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!all.contains("panicked"), "{all}");
    assert_exit(&out, 3);
    assert_exit(&repo.runner(&["status"]), 0);
}

// ---------------------------------------------------------------------------------------------
// Printed commands a person copies.

/// In a repository whose path has a space, the printed restore command works as printed.
#[test]
fn the_printed_restore_command_works_in_a_path_with_a_space() {
    let repo = TestRepo::in_folder("my project");
    let spec = "017-space";
    repo.add_spec(spec);
    repo.script("core-b * rewrite reset\n");
    let out = repo.run_spec(spec, &[]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    let command = err
        .lines()
        .skip_while(|l| !l.contains("restore it with:"))
        .nth(1)
        .unwrap_or_else(|| panic!("no restore command in:\n{err}"))
        .trim()
        .to_string();
    let ran = crate::common::isolated("sh")
        .args(["-c", &command])
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "`{command}` failed: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let core_a = recorded_commit(&repo, spec, "core-a");
    assert!(is_ancestor(&repo, &core_a, &format!("{BRANCH_OF}{spec}")));
}

/// The agent stages an entry naming an object the repository does not have (`git update-index
/// --cacheinfo`), or a blob entry naming a tree: runner's commit fails, with a message naming
/// the path, and no commit referring to a missing or mistyped object is made; the chunk stays
/// for a person. A gitlink (a submodule's commit, mode 160000) is not looked for, as git does
/// not: its commit lives in another repository.
#[test]
fn an_index_entry_naming_a_missing_object_is_never_committed() {
    let ghost = "0123456789abcdef0123456789abcdef01234567";
    for (spec, entry) in [
        ("043-ghost", format!("100644 {ghost} ghost.txt")),
        ("044-mistyped", "100644 TREE work/mistyped.txt".to_string()),
    ] {
        let repo = repo_with_spec(spec);
        let entry = entry.replace("TREE", repo.git(&["rev-parse", "HEAD^{tree}"]).trim());
        repo.script(&format!("core-a * stage-entry {entry}\n"));
        let out = repo.run_spec(spec, &[]);
        assert_exit(&out, 3);
        let path = entry.rsplit(' ').next().unwrap();
        assert!(stderr(&out).contains(path), "{spec}: {}", stderr(&out));
        let branch = format!("{BRANCH_OF}{spec}");
        let tree = repo.git(&["ls-tree", "-r", "--name-only", &branch]);
        assert!(!tree.lines().any(|l| l == path), "{spec}: {tree}");
        let touching = repo.git(&["log", "--format=%H", &branch, "--", path]);
        assert!(touching.is_empty(), "{spec}: {touching}");
        let objects = git_result(&repo.root, &["rev-list", "--objects", &branch]);
        assert!(objects.is_ok(), "{spec}: {objects:?}");
        assert_ne!(repo.chunk(spec, "core-a")["status"], "completed", "{spec}");
    }
    let spec = "045-gitlink";
    let repo = repo_with_spec(spec);
    repo.script(&format!("core-a * stage-entry 160000 {ghost} sub\n"));
    assert_exit(&repo.run_spec(spec, &[]), 0);
    let branch = format!("{BRANCH_OF}{spec}");
    let entry = repo.git(&["ls-tree", &branch, "sub"]);
    assert_eq!(entry.trim(), format!("160000 commit {ghost}\tsub"));
}
