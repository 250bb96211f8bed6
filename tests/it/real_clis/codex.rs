//! Codex 0.171 against the scripted OpenAI Responses API.

use std::path::Path;

use super::harness::{Cli, Server};

/// `[agent]` lines of the test's config: none (the model is in codex's own config).
pub const CONFIG: &str = "";

/// codex's own config in `$CODEX_HOME` (its HOME's `.codex`): the server as a provider of the
/// Responses API (codex ignores `OPENAI_BASE_URL`), a model codex knows (for an unknown one it
/// offers no `apply_patch`), no retries (a 500 would take 25 s), and nothing that reaches the
/// network (update checks, analytics, the plugins' GitHub look-ups).
pub fn setup(home: &Path, server: &Server) -> Vec<(String, String)> {
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            r#"model = "gpt-5.5"
model_provider = "scripted"
check_for_update_on_startup = false
[analytics]
enabled = false
[feedback]
enabled = false
[history]
persistence = "none"
[features]
plugins = false
unbounded_connection_retries = false
[model_providers.scripted]
name = "scripted"
base_url = "{}/v1"
env_key = "SCRIPTED_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 600000
"#,
            server.url()
        ),
    )
    .unwrap();
    // codex will not put its sandbox helper in a CODEX_HOME under the temp folder: the
    // test's temp folder for everyone is one beside it.
    let tmp = home.with_file_name("codex-tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    vec![
        ("CODEX_HOME".into(), codex_home.display().to_string()),
        ("SCRIPTED_API_KEY".into(), "sk-runner-test".into()),
        ("TMPDIR".into(), tmp.display().to_string()),
    ]
}

#[test]
fn codex_plans_and_builds_a_spec_and_the_ledger_is_what_the_server_served() {
    super::harness::build_scenario(Cli::Codex);
}

/// codex prints only the minute of the reset (`try again at 6:25 AM`), read as that minute's
/// end and never as tomorrow; its session file has the exact time, which runner takes.
#[test]
fn codex_usage_limit_pauses_until_the_exact_reset_from_its_session_file_not_a_day() {
    super::harness::limit_scenario(Cli::Codex, 8, 0);
}

#[test]
fn codex_killed_mid_chunk_resumes_its_thread_and_the_ledger_counts_every_token() {
    super::harness::kill_and_resume_scenario(Cli::Codex);
}

#[test]
fn codex_judges_interrupted_work_as_the_recovery_evaluator() {
    super::harness::evaluator_scenario(Cli::Codex);
}

#[test]
fn codex_under_safe_writes_nothing_outside_the_worktree() {
    super::harness::escape_scenario(Cli::Codex);
}

/// Under `safe` the temp folders are out of codex's reach, but its commands get a temp folder
/// of their own in the worktree (git-ignored, removed after the session): a project's tests
/// that write temporary files still run.
#[test]
fn codex_commands_have_a_temp_folder_inside_the_worktree() {
    let case = super::harness::Case::with_script(
        Cli::Codex,
        serde_json::json!({
            "rules": [{"who": "chunk-1", "step": 0, "do": "shell", "times": 1,
                "command": "echo $((6*7))-tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\""}],
            "watch": ["42-tmp"],
        }),
    );
    let out = case.run();
    // The command's output came back to the model (in every later request of the thread).
    assert!(
        case.server.count("seen") >= 1,
        "{}",
        crate::common::stderr(&out)
    );
    assert!(!case.repo.worktree().join(".auto-claude/tmp").exists());
}
