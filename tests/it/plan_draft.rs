//! The planner's draft in the worktree (`.auto-claude/plan-draft.json`) against planners that
//! misbehave: runner installs only a regular file of a sane size read through a real folder.

use std::os::unix::fs::PermissionsExt;

use crate::common::*;

const SPEC: &str = "001-draft";

/// A repository whose agent is the shell script `body` (run for every session, with runner's
/// variables), and one planner attempt.
fn repo_with_planner(body: &str) -> (TestRepo, String) {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    repo.write_config("[run]\nmax_attempts = 1\n");
    let agent = repo.tmp.path().join("agent.sh");
    std::fs::write(
        &agent,
        format!("#!/bin/bash\nset -e\ncat >/dev/null\n{body}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    (repo, agent.display().to_string())
}

#[test]
fn a_draft_behind_a_linked_folder_is_not_read() {
    let (repo, agent) = repo_with_planner(&format!(
        "outside={tmp}/outside; mkdir -p \"$outside\"\n\
         cp {plan} \"$outside/plan-draft.json\"\n\
         d=$(dirname \"$RUNNER_PLAN_FILE\"); rm -rf \"$d\"; ln -s \"$outside\" \"$d\"",
        tmp = "$(dirname \"$RUNNER_REPO\")",
        plan = fixture("plans/two-phases.json").display()
    ));
    let out = repo.runner(&["run", "--spec", SPEC, "--agent-command", &agent]);
    assert_exit(&out, 3);
    assert!(
        stderr(&out).contains("no longer a folder"),
        "{}",
        stderr(&out)
    );
    assert!(
        !repo.plan_path(SPEC).exists(),
        "a plan from outside was installed"
    );
}

#[test]
fn a_draft_too_large_to_be_a_plan_is_rejected_not_read() {
    let (repo, agent) = repo_with_planner("truncate -s 65M \"$RUNNER_PLAN_FILE\"");
    let out = repo.runner(&["run", "--spec", SPEC, "--agent-command", &agent]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(err.contains("larger than 64 MiB"), "{err}");
    assert!(!repo.plan_path(SPEC).exists());
    // Set aside into the spec folder, as every rejected draft.
    let kept = std::fs::read_dir(repo.spec_dir(SPEC))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("plan-draft.json.rejected-")
        })
        .count();
    assert_eq!(kept, 1, "{err}");
}

/// A codex `safe` session's temp folder (`.auto-claude/tmp` in the worktree) is removed after
/// the session only if it is still the folder runner made: an agent that put a link in place
/// of `.auto-claude` never makes runner delete the `tmp` of the folder it points to; one that
/// put a file in place of `tmp` does not stop the next sessions.
#[test]
fn a_codex_sessions_temp_folder_swapped_by_the_agent_is_never_removed_through_a_link() {
    let victim = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(victim.path().join("tmp/sub")).unwrap();
    std::fs::write(victim.path().join("tmp/precious.txt"), "keep me").unwrap();
    let (repo, agent) = repo_with_planner(&format!(
        "if [ \"$RUNNER_ROLE\" = planner ]; then cp {plan} \"$RUNNER_PLAN_FILE\"; exit 0; fi\n\
         mv .auto-claude .auto-claude.moved; ln -s {victim} .auto-claude",
        plan = fixture("plans/two-phases.json").display(),
        victim = victim.path().display()
    ));
    repo.write_config(&format!(
        "[agent]\npreset = \"codex\"\nprogram = \"{agent}\"\n[run]\nmax_attempts = 1\n"
    ));
    let out = repo.runner(&["run", "--spec", SPEC]);
    assert!(out.status.code() != Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(victim.path().join("tmp/precious.txt")).unwrap(),
        "keep me"
    );
    assert!(victim.path().join("tmp/sub").is_dir());
}

#[test]
fn a_file_in_place_of_a_codex_sessions_temp_folder_does_not_stop_the_next_session() {
    let (repo, agent) = repo_with_planner(&format!(
        "if [ \"$RUNNER_ROLE\" = planner ]; then cp {plan} \"$RUNNER_PLAN_FILE\"; exit 0; fi\n\
         rm -rf .auto-claude/tmp; echo x > .auto-claude/tmp",
        plan = fixture("plans/two-phases.json").display()
    ));
    repo.write_config(&format!(
        "[agent]\npreset = \"codex\"\nprogram = \"{agent}\"\n[run]\nmax_attempts = 1\n"
    ));
    let first = repo.runner(&["run", "--spec", SPEC]);
    assert_exit(&first, 3);
    repo.runner(&["recover", "--spec", SPEC, "--retry-failed"]);
    let again = repo.runner(&["run", "--spec", SPEC]);
    // The session ran (and failed as silent), not the run stopped on the file.
    assert_exit(&again, 3);
    assert!(
        !stderr(&again).contains("File exists"),
        "{}",
        stderr(&again)
    );
}
