//! Chunk ids that hold ` - ` read back from commits, and hostile chunk ids in the agent's
//! prompt (slot creation's crash safety is tested in tests/crash.rs).

use crate::common::*;
use serde_json::json;

/// A plan is rebuilt from the branch's commits only when neither its last-good copy nor a
/// journaled status change is there: the commit `auto-claude: x - y - first` is chunk `x - y`'s,
/// not chunk `x`'s.
#[test]
fn a_plan_rebuilt_from_commits_completes_the_chunk_whose_id_holds_the_separator() {
    let repo = TestRepo::new();
    let spec = "001-dash";
    repo.add_spec(spec);
    let plan = json!({
        "feature": "Dashes",
        "base_branch": "main",
        "phases": [{"id": "p", "name": "P", "subtasks": [
            {"id": "x", "description": "second", "status": "pending"},
            {"id": "x - y", "description": "first", "status": "pending"}
        ]}]
    });
    let snapshot = json!({"time": "2026-01-01T00:00:00Z", "run_id": "r1",
        "event": "plan_snapshot", "plan": plan});
    std::fs::write(
        repo.spec_dir(spec).join("events.jsonl"),
        format!("{snapshot}\n"),
    )
    .unwrap();
    // The branch holds chunk `x - y`'s commit, made as runner makes it.
    repo.git(&["branch", "auto-claude/001-dash", "main"]);
    let wt = repo.tmp.path().join("wt");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        wt.to_str().unwrap(),
        "auto-claude/001-dash",
    ]);
    std::fs::write(wt.join("first.txt"), "first\n").unwrap();
    git_in(&wt, &["add", "-A"]);
    git_in(&wt, &["commit", "-q", "-m", "auto-claude: x - y - first"]);
    // A torn plan, and no last-good copy.
    std::fs::write(repo.plan_path(spec), "{\"feature\": \"Dash").unwrap();

    let out = repo.runner(&["recover", "--spec", spec]);
    assert!(
        stdout(&out).contains("commits") || stderr(&out).contains("commits"),
        "the plan should be rebuilt from the commits:\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let statuses = repo.statuses(spec);
    assert_eq!(
        statuses,
        vec![
            ("x".to_string(), "pending".to_string()),
            ("x - y".to_string(), "completed".to_string())
        ],
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
}

/// Files named `pwned*` anywhere under `dir`: what a chunk id run as a command would make.
fn pwned_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p);
            } else if e.file_name().to_string_lossy().starts_with("pwned") {
                out.push(p);
            }
        }
    }
    out
}

/// A hostile plan's chunk ids reach the agent's shell only as one quoted word: the coder's
/// prompt quotes them in every command it gives, and an agent that runs the report command
/// as told reports the right chunk (spaces, `;`, `$( )`, a quote, a leading dash) and runs
/// nothing else.
#[test]
fn hostile_chunk_ids_are_quoted_in_the_commands_the_prompt_gives() {
    let repo = TestRepo::new();
    let spec = "001-hostile";
    repo.add_spec(spec);
    let ids = [
        "x; touch pwned-semicolon",
        "two words",
        "it's $(touch pwned-subst)",
        "-n `touch pwned-backtick`",
    ];
    let plan = json!({
        "feature": "Hostile ids",
        "phases": [{"id": "p", "name": "P", "subtasks": ids.iter().map(|id| json!({
            "id": id, "description": "do it", "status": "pending"
        })).collect::<Vec<_>>()}]
    });
    repo.write_plan(spec, &serde_json::to_string_pretty(&plan).unwrap());
    repo.script("");
    let agent = fixture("fake-agent").display().to_string();
    let out = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent])
        .env("FAKE_AGENT_DEFAULT", "as-told")
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let statuses = repo.statuses(spec);
    assert!(
        statuses.iter().all(|(_, s)| s == "completed"),
        "{statuses:?}\n{}",
        stderr(&out)
    );
    assert_eq!(
        pwned_files(repo.tmp.path()),
        Vec::<std::path::PathBuf>::new()
    );

    let prompts: Vec<String> = std::fs::read_dir(repo.tmp.path().join("prompts"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    // runner by its absolute path, one shell word.
    let runner = runner_word();
    let done = format!(
        "- Report success with: `{runner} chunk done --notes \"what you did\" -- 'x; touch pwned-semicolon'`"
    );
    assert!(
        prompts.iter().any(|p| p.contains(&done)),
        "no prompt has the line {done}"
    );
    let fail = format!("`{runner} chunk fail --reason \"why\" -- 'it'\\''s $(touch pwned-subst)'`");
    assert!(
        prompts.iter().any(|p| p.contains(&fail)),
        "no prompt has {fail}"
    );
}

/// `recover --dry-run` names a slot registration a crash left unfinished and leaves it; `recover`
/// removes it.
#[test]
fn recover_reports_an_unfinished_slot_registration_and_dry_run_keeps_it() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    let admin = repo.root.join(".git/worktrees/auto-claude");
    std::fs::create_dir_all(&admin).unwrap();
    std::fs::create_dir_all(repo.root.join(".worktrees/auto-claude")).unwrap();
    let out = repo.runner(&["recover", "--dry-run"]);
    assert!(
        stdout(&out).contains("registration in .git/worktrees was left unfinished")
            && stdout(&out).contains("(would be done)"),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(admin.is_dir());
    let out = repo.runner(&["recover"]);
    assert!(!admin.exists(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(!repo.root.join(".worktrees/auto-claude").exists());
}
