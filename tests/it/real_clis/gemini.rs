//! Gemini CLI 0.61 against the scripted Gemini API.

use std::path::Path;

use serde_json::json;

use super::harness::{Case, Cli, Server};

/// `[agent]` lines of the test's config: none (the model is pinned in gemini's settings).
pub const CONFIG: &str = "";

/// gemini's own settings in `GEMINI_CLI_HOME`: an API-key login at the server, a pinned model
/// (no routing side requests), one attempt per request (a per-minute quota would otherwise be
/// retried for minutes), and no telemetry or update checks.
pub fn setup(home: &Path, server: &Server) -> Vec<(String, String)> {
    let dir = home.join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false,
                    "maxAttempts": 1},
        "model": {"name": "gemini-2.5-pro", "disableLoopDetection": true}
    });
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    vec![
        ("GEMINI_CLI_HOME".into(), home.display().to_string()),
        ("GOOGLE_GEMINI_BASE_URL".into(), server.url()),
        ("GEMINI_API_KEY".into(), "runner-test-key".into()),
    ]
}

#[test]
fn gemini_plans_and_builds_a_spec_and_the_ledger_is_what_the_server_served() {
    let case = Case::new(Cli::Gemini, json!([]));
    let out = case.run();
    case.assert_built(&out);
    let (_, tokens) = case.ledger();
    assert_eq!(tokens, case.server.tokens_served());
}

#[test]
fn gemini_daily_quota_pauses_until_the_reset_and_no_session_starts_before_it() {
    super::harness::limit_scenario(Cli::Gemini, 8, 1);
}

#[test]
fn gemini_killed_mid_chunk_resumes_its_session_and_the_ledger_counts_every_token() {
    super::harness::kill_and_resume_scenario(Cli::Gemini);
}

/// A CLI that refuses to start says why on stderr, in no event its parser reads: its words
/// reach the user, for the planner (here) as for coders, instead of only "the planner did not
/// write …".
#[test]
fn gemini_refusing_to_start_is_reported_in_its_own_words() {
    let mut case = Case::new(Cli::Gemini, json!([]));
    case.env.retain(|(k, _)| k != "GEMINI_API_KEY");
    let out = case
        .cmd(&["run", "--spec", super::harness::SPEC])
        .env_remove("GEMINI_API_KEY")
        .output()
        .unwrap();
    crate::common::assert_exit(&out, 3);
    let err = crate::common::stderr(&out);
    assert!(err.contains("the agent's CLI said: "), "{err}");
    assert!(err.contains("GEMINI_API_KEY"), "{err}");
    // Its colours are not shown as escapes.
    assert!(!err.contains("\\u{1b}"), "{err}");
    assert_eq!(case.server.count("request"), 0);
}

#[test]
fn gemini_judges_interrupted_work_as_the_recovery_evaluator() {
    super::harness::evaluator_scenario(Cli::Gemini);
}
