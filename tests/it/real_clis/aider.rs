//! aider 0.86.2 against the scripted OpenAI chat completions API.

use std::path::Path;

use serde_json::json;

use super::harness::{Case, Cli, Server};

/// `[agent]` lines are written by `setup` (they name the server); none here.
pub const CONFIG: &str = "";

/// aider's HOME: a local copy of litellm's model price map (else aider fetches it), the
/// server as an OpenAI-compatible API, and the model settings that stop litellm's own
/// retries. Returns the environment; the command-line options go into `AIDER_*` variables,
/// which aider reads as its options.
pub fn setup(home: &Path, server: &Server) -> Vec<(String, String)> {
    let caches = home.join(".aider/caches");
    std::fs::create_dir_all(&caches).unwrap();
    std::fs::write(
        caches.join("model_prices_and_context_window.json"),
        "{\"_\": {}}",
    )
    .unwrap();
    let settings = home.join("model-settings.yml");
    std::fs::write(
        &settings,
        "- name: aider/extra_params\n  extra_params: {max_retries: 0}\n",
    )
    .unwrap();
    [
        ("AIDER_OPENAI_API_BASE", format!("{}/v1", server.url())),
        ("AIDER_OPENAI_API_KEY", "sk-runner-test".into()),
        ("AIDER_MODEL", "openai/scripted".into()),
        ("AIDER_EDIT_FORMAT", "diff".into()),
        ("AIDER_MODEL_SETTINGS_FILE", settings.display().to_string()),
        ("AIDER_SHOW_MODEL_WARNINGS", "false".into()),
        ("LITELLM_LOCAL_MODEL_COST_MAP", "True".into()),
        ("BROWSER", "true".into()),
        ("COLUMNS", "1000".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

#[test]
fn aider_plans_and_builds_a_spec_and_the_ledger_is_what_the_server_served() {
    super::harness::build_scenario(Cli::Aider);
}

/// aider retries a rate limit itself for about a minute (its fixed `RETRY_TIMEOUT`), then gives
/// up and exits 0: a reset further away than that is runner's to wait for, read from OpenAI's
/// `Please try again in …` (aider prints no reset of its own).
#[test]
fn aider_rate_limit_pauses_until_the_reset_and_no_session_starts_before_it() {
    let resets_at =
        chrono::DateTime::from_timestamp(chrono::Utc::now().timestamp() + 85, 0).unwrap();
    let case = Case::new(
        Cli::Aider,
        json!([{"who": "chunk-1", "do": "limit", "resets_at": resets_at.timestamp()}]),
    );
    let out = case.run();
    crate::common::assert_exit(&out, 6);
    let until = case.paused_until().expect("the spec is paused");
    assert!(
        until >= resets_at && until <= resets_at + chrono::Duration::seconds(3),
        "paused until {until}, the reset is at {resets_at}\n{}",
        crate::common::stderr(&out)
    );
    assert_eq!(case.statuses(), ["pending", "pending"]);
    super::harness::record(
        &case,
        Cli::Aider,
        "limit",
        &[("coder", "coder", Some("chunk-1"), 0)],
    );
    let requests = case.server.count("request");
    crate::common::assert_exit(&case.run(), 6);
    assert_eq!(case.server.count("request"), requests, "a session started");
    if let Ok(wait) = (until - chrono::Utc::now() + chrono::Duration::milliseconds(500)).to_std() {
        std::thread::sleep(wait);
    }
    case.assert_built(&case.run());
}

#[test]
fn aider_judges_interrupted_work_as_the_recovery_evaluator() {
    super::harness::evaluator_scenario(Cli::Aider);
}

/// A rate limit that lifts within the minute is waited out by aider's own retries (about a
/// minute of them): the chunk is built in the same run, not paused for a day.
#[test]
fn aider_rate_limit_within_the_minute_is_waited_out_by_aider_itself() {
    let case = Case::new(
        Cli::Aider,
        json!([{"who": "chunk-1", "do": "limit", "lasts": 8}]),
    );
    let out = case.run();
    case.assert_built(&out);
    assert!(case.server.count("limit") >= 1, "no limit was met");
    assert_eq!(case.paused_until(), None);
}
