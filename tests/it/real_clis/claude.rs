//! Claude Code 2.1.197 against the scripted Anthropic Messages API.

use std::path::Path;

use super::harness::{Cli, Server};

/// The environment of a claude session: the server as its API, a subscription login (the only
/// one whose usage limit is a `rate_limit_event` with its reset time, and that is not retried),
/// and nothing that reaches the network.
pub fn setup(_home: &Path, server: &Server) -> Vec<(String, String)> {
    [
        ("ANTHROPIC_BASE_URL", server.url()),
        ("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-runner-test".into()),
        ("NO_PROXY", "127.0.0.1,localhost".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("DISABLE_UPDATES", "1".into()),
        ("DISABLE_TELEMETRY", "1".into()),
        ("DISABLE_ERROR_REPORTING", "1".into()),
        ("DISABLE_INSTALLATION_CHECKS", "1".into()),
        ("CLAUDE_CODE_MAX_RETRIES", "2".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// `[agent]` lines of the test's config: the model claude is told to use (runner passes the
/// user's `args`), priced at $3 / $15 per million input / output tokens.
pub const CONFIG: &str = "args = [\"--model\", \"claude-sonnet-4-5-20250929\"]\n";

/// Dollars claude charges for the server's usage of one response (1000 input and 200 output
/// tokens at the model's prices).
const USD_PER_RESPONSE: f64 = (1000.0 * 3.0 + 200.0 * 15.0) / 1e6;

/// The spec's ledger in dollars is what claude charges for every response the server made.
fn assert_dollars_are_claudes_price(case: &super::harness::Case) {
    let (usd, _) = case.ledger();
    let responses = case.server.count("response") as f64;
    assert!(
        (usd - responses * USD_PER_RESPONSE).abs() < 1e-6,
        "{usd} for {responses} responses"
    );
}

#[test]
fn claude_plans_and_builds_a_spec_and_the_ledger_is_what_the_server_served() {
    assert_dollars_are_claudes_price(&super::harness::build_scenario(Cli::Claude));
}

#[test]
fn claude_usage_limit_pauses_until_the_reset_and_no_session_starts_before_it() {
    super::harness::limit_scenario(Cli::Claude, 8, 0);
}

#[test]
fn claude_killed_mid_chunk_resumes_its_session_and_the_ledger_keeps_the_killed_sessions_cost() {
    assert_dollars_are_claudes_price(&super::harness::kill_and_resume_scenario(Cli::Claude));
}

#[test]
fn claude_judges_interrupted_work_as_the_recovery_evaluator() {
    super::harness::evaluator_scenario(Cli::Claude);
}

#[test]
fn claude_under_safe_writes_nothing_outside_the_worktree() {
    super::harness::escape_scenario(Cli::Claude);
}
