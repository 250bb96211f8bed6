//! Each parser on what the real CLIs printed (`fixtures/agent-output/<cli>/recorded/`: claude-code
//! 2.1.197, codex 0.171.0, gemini-cli 0.61.0, aider 0.86.2, each run against the real-CLI suite's
//! scripted model server), read as runner reads a session: its `output.log` holds what the CLI
//! printed on stdout and on stderr (here stdout, then stderr). The figures asserted are the
//! ones the server sent, as each CLI passed them on.

use chrono::{DateTime, TimeZone, Utc};

use super::*;

/// What runner's `output.log` of the recorded `case` of `cli` holds: stdout, then stderr.
fn session(cli: &str, case: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/agent-output")
        .join(cli)
        .join("recorded");
    let read = |ext: &str| {
        let path = dir.join(format!("{case}.{ext}"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let mut output = read("stdout");
    output.extend(read("stderr"));
    output
}

/// aider's `--analytics-log` of the recorded `case`.
fn analytics(case: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/agent-output/aider/recorded")
        .join(format!("{case}.analytics.jsonl"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn at(rfc3339: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(rfc3339)
        .unwrap()
        .with_timezone(&Utc)
}

fn tokens(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Tokens {
    Tokens {
        input,
        output,
        cache_read,
        cache_write,
    }
}

fn resets_at(report: &SessionFacts) -> Option<DateTime<Utc>> {
    report
        .usage_limit
        .unwrap_or_else(|| panic!("no usage limit in {report:?}"))
        .resets_at
}

// ---- claude ----

/// The server's usage for one response, as claude passes it on: 1200 input, 300 output, 5000
/// read from the cache. claude's `result.usage` sums its responses.
#[test]
fn claude_finished_sessions_report_their_id_model_cost_and_summed_usage() {
    for (case, id, responses, usd) in [
        (
            "coder-success",
            "aaaaaaaa-0000-4000-8000-000000000002",
            3,
            0.0288,
        ),
        (
            "verify-sandbox",
            "aaaaaaaa-0000-4000-8000-000000000003",
            3,
            0.0288,
        ),
        ("planner", "aaaaaaaa-0000-4000-8000-000000000005", 2, 0.0192),
        ("resumed", "aaaaaaaa-0000-4000-8000-000000000007", 2, 0.0192),
        (
            "recovery",
            "aaaaaaaa-0000-4000-8000-000000000008",
            1,
            0.0096,
        ),
    ] {
        let (r, unfinished) = claude::parse_unfinished(&session("claude", case));
        assert_eq!(r.agent_session_id.as_deref(), Some(id), "{case}");
        assert_eq!(
            r.model.as_deref(),
            Some("claude-sonnet-4-5-20250929"),
            "{case}"
        );
        assert_eq!(
            (r.cost_usd, r.cost_source),
            (Some(usd), CostSource::Reported),
            "{case}"
        );
        assert_eq!(
            r.tokens,
            tokens(1200 * responses, 300 * responses, 5000 * responses, 0),
            "{case}"
        );
        assert_eq!(r.turns, Some(responses as u32), "{case}");
        // Its `allowed` rate-limit events are no limit.
        assert_eq!(r.usage_limit, None, "{case}");
        assert_eq!(r.error, None, "{case}");
        assert!(!r.budget_reached, "{case}");
        assert_eq!(unfinished, None, "{case}: it printed its result");
    }
}

#[test]
fn claude_cost_is_what_claude_code_charges_for_the_usage() {
    // $3 / $15 / $0.30 per million input / output / cache-read tokens of Sonnet 4.5: runner's
    // own prices for a session killed before its result are the same.
    let r = claude::parse(&session("claude", "coder-success"));
    let prices = prices::of(r.model.as_deref().unwrap()).unwrap();
    assert!((compute_cost(&r.tokens, &prices) - r.cost_usd.unwrap()).abs() < 1e-12);
}

#[test]
fn claude_subscription_limit_resets_when_its_rate_limit_event_says() {
    let r = claude::parse(&session("claude", "usage-limit"));
    assert_eq!(
        r.agent_session_id.as_deref(),
        Some("aaaaaaaa-0000-4000-8000-000000000004")
    );
    // `resetsAt: 1795943936`, in seconds; the text's "9:18am (UTC)" is that minute.
    assert_eq!(resets_at(&r), Some(at("2026-11-29T09:18:56Z")));
    assert_eq!(
        r.error.as_deref(),
        Some("You've hit your session limit \u{b7} resets 9:18am (UTC)")
    );
    assert_eq!((r.cost_usd, r.tokens), (Some(0.0), Tokens::default()));
    assert_eq!(r.turns, Some(1));
    assert!(r.failed());
}

/// With an API key claude prints no `rate_limit_event`: the API's 429 (retried by claude first,
/// `system`/`api_retry`, when its retries are on) ends in a result whose words are the API's
/// and whose `api_error_status` is 429: a usage limit with no reset (the spec pauses for
/// `run.limit_wait_default` instead of failing the attempt), the API's words kept.
#[test]
fn claude_api_key_rate_limit_is_a_usage_limit_with_the_apis_words() {
    for (case, id, model) in [
        (
            "usage-limit-apikey",
            "aaaaaaaa-0000-4000-8000-000000000009",
            "claude-sonnet-4-5-20250929",
        ),
        (
            "usage-limit-apikey-retries",
            "66666666-6666-4666-8666-666666666666",
            "claude-opus-4-8[1m]",
        ),
    ] {
        let r = claude::parse(&session("claude", case));
        assert_eq!(r.agent_session_id.as_deref(), Some(id), "{case}");
        assert_eq!(r.model.as_deref(), Some(model), "{case}");
        assert_eq!(
            r.error.as_deref(),
            Some(
                "API Error: Request rejected (429) \u{b7} This request would exceed your \
                 account's rate limit. Please try again later."
            ),
            "{case}"
        );
        assert_eq!(
            r.usage_limit,
            Some(crate::agent::output::UsageLimit { resets_at: None }),
            "{case}"
        );
        assert_eq!((r.cost_usd, r.tokens), (Some(0.0), Tokens::default()));
    }
}

#[test]
fn claude_budget_stop_is_the_budget_reached_with_its_cost_and_usage() {
    let r = claude::parse(&session("claude", "budget"));
    assert_eq!(
        r.agent_session_id.as_deref(),
        Some("aaaaaaaa-0000-4000-8000-00000000000b")
    );
    assert!(r.budget_reached);
    assert_eq!(r.error.as_deref(), Some("Reached maximum budget ($0.01)"));
    assert_eq!(
        (r.cost_usd, r.cost_source),
        (Some(0.0192), CostSource::Reported)
    );
    assert_eq!(r.tokens, tokens(1200, 300, 5000, 0));
    assert_eq!(r.turns, Some(2));
    assert_eq!(r.usage_limit, None);
}

#[test]
fn claude_resume_of_an_unknown_session_fails_with_no_conversation_found() {
    let output = session("claude", "resume-unknown");
    let r = claude::parse(&output);
    let id = "bbbbbbbb-0000-4000-8000-00000000000f";
    assert_eq!(r.agent_session_id.as_deref(), Some(id));
    assert_eq!(
        r.error,
        Some(format!("No conversation found with session ID: {id}"))
    );
    assert_eq!(r.turns, Some(0));
    assert_eq!((r.cost_usd, r.tokens), (Some(0.0), Tokens::default()));
    assert_eq!(r.usage_limit, None);
    // Its stderr says the same, the CLI's last words.
    assert_eq!(
        read::last_words(&output),
        Some(format!("No conversation found with session ID: {id}"))
    );
}

#[test]
fn claude_killed_session_is_unfinished_with_its_transcript_and_streamed_usage_priced() {
    let (r, unfinished) = claude::parse_unfinished(&session("claude", "killed"));
    let id = "aaaaaaaa-0000-4000-8000-000000000007";
    let u = unfinished.clone().expect("killed: unfinished");
    assert_eq!(
        (u.cwd.as_str(), u.session_id.as_str()),
        ("/tmp/claude-t/wt", id)
    );
    assert_eq!(u.streamed.total(), Some(r.tokens));
    // Where claude keeps its transcript (its `init` names the same project folder for its
    // memory: /tmp/claude-t/home/.claude/projects/-tmp-claude-t-wt/memory/).
    assert_eq!(
        unfinished
            .unwrap()
            .transcript(std::path::Path::new("/tmp/claude-t/home/.claude")),
        std::path::Path::new(&format!(
            "/tmp/claude-t/home/.claude/projects/-tmp-claude-t-wt/{id}.jsonl"
        ))
    );
    assert_eq!(r.agent_session_id.as_deref(), Some(id));
    // One response streamed (two `assistant` events of the same message): its start shows
    // the input and 1 output token, priced at Sonnet's prices.
    assert_eq!(r.tokens, tokens(1200, 1, 5000, 0));
    assert_eq!(r.cost_source, CostSource::Computed);
    assert!((r.cost_usd.unwrap() - 0.005115).abs() < 1e-12, "{r:?}");
    assert_eq!((r.error.as_deref(), r.usage_limit), (None, None));
}

// ---- codex ----

/// The recordings' local time zone was UTC: codex's rollout of the `limit` case says the limit
/// resets at 1795936802 (07:20:02Z) and the message says `7:20 AM`.
fn codex_now(rfc3339: &str) -> DateTime<Utc> {
    at(rfc3339)
}

#[test]
fn codex_finished_sessions_report_their_thread_and_the_threads_running_total() {
    let now = codex_now("2026-11-29T06:20:00Z");
    for (case, thread, responses) in [
        ("success", "01a225f5-eb72-72a3-9bc4-d91658101f2a", 3),
        ("planner", "01a225f5-ef55-70f2-9a03-4ab0448fd79b", 2),
        ("recovery", "01a225f5-f590-7e53-82d7-5de991a559db", 1),
    ] {
        let r = codex::parse(&session("codex", case), None, &now);
        assert_eq!(r.agent_session_id.as_deref(), Some(thread), "{case}");
        // 1300 input of which 300 cached, 200 output a response; no dollars, no model.
        let used = tokens(1000 * responses, 200 * responses, 300 * responses, 0);
        assert_eq!(r.tokens, used, "{case}");
        assert_eq!(r.thread_total, Some(used), "{case}");
        assert_eq!((r.cost_usd, r.cost_source), (None, CostSource::None));
        assert_eq!((r.error.as_deref(), r.usage_limit), (None, None), "{case}");
    }
}

#[test]
fn codex_usage_limit_resets_at_the_end_of_the_printed_minute() {
    let output = session("codex", "limit");
    let text = String::from_utf8(output.clone()).unwrap();
    // codex 0.171's wording: a typographic apostrophe, `… or try again at`.
    assert!(
        text.contains("You\u{2019}ve hit your usage limit."),
        "{text}"
    );
    let r = codex::parse(&output, None, &codex_now("2026-11-29T06:20:11Z"));
    assert_eq!(
        r.agent_session_id.as_deref(),
        Some("01a225f5-f226-7233-a434-ad89b677a2f0")
    );
    assert_eq!(resets_at(&r), Some(at("2026-11-29T07:21:00Z")));
    assert_eq!(
        r.error.as_deref(),
        Some(
            "You\u{2019}ve hit your usage limit. Visit https://chatgpt.com/settings/usage to \
             purchase more credits or try again at 7:20 AM."
        )
    );
    assert_eq!((r.tokens, r.thread_total), (Tokens::default(), None));
    // Read in another zone's day, the same words are that zone's 7:20 AM.
    let paris = chrono::FixedOffset::east_opt(3600).unwrap();
    let r = codex::parse(
        &output,
        None,
        &paris.with_ymd_and_hms(2026, 11, 29, 7, 20, 11).unwrap(),
    );
    assert_eq!(resets_at(&r), Some(at("2026-11-29T06:21:00Z")));
}

#[test]
fn codex_killed_then_resumed_thread_counts_every_served_token_once() {
    let now = codex_now("2026-11-29T06:20:30Z");
    let thread = "01a225f5-f812-74e0-8a43-5e62cbaa26fb";
    let killed = codex::parse(&session("codex", "killed"), None, &now);
    assert_eq!(killed.agent_session_id.as_deref(), Some(thread));
    // Killed before its turn completed: no usage printed, no total to carry over.
    assert_eq!(
        (killed.tokens, killed.thread_total),
        (Tokens::default(), None)
    );
    assert_eq!((killed.error.as_deref(), killed.usage_limit), (None, None));
    // The resumed session's total is the thread's: the killed session's response (1300 / 300
    // cached / 200) and its own two.
    let resumed = codex::parse(&session("codex", "resumed"), killed.thread_total, &now);
    assert_eq!(resumed.agent_session_id.as_deref(), Some(thread));
    assert_eq!(resumed.tokens, tokens(3000, 600, 900, 0));
    assert_eq!(resumed.thread_total, Some(tokens(3000, 600, 900, 0)));
    assert!(!resumed.failed());
}

#[test]
fn codex_server_errors_that_outlast_its_reconnects_fail_the_session() {
    let r = codex::parse(
        &session("codex", "server_error_retried"),
        None,
        &codex_now("2026-11-29T06:19:00Z"),
    );
    assert_eq!(
        r.agent_session_id.as_deref(),
        Some("01a225f4-e3c9-7a31-8dec-32742d0a379f")
    );
    assert_eq!(
        r.error.as_deref(),
        Some("We\u{2019}re currently experiencing high demand, which may cause temporary errors.")
    );
    assert_eq!((r.usage_limit, r.tokens), (None, Tokens::default()));
}

// ---- gemini ----

#[test]
fn gemini_finished_sessions_report_their_id_model_and_tokens() {
    for (case, id, responses) in [
        ("coder-success", "2b5c28ee-3435-4a4a-944f-ea3452c9400d", 3),
        ("planner", "4b171b4e-4e98-4e2c-8d51-3f3dc4127494", 2),
        ("recovery", "13b1f35d-a8b5-41b3-b11a-ac6cefe41cf0", 1),
        ("resume-resumed", "4d912226-1b04-43ed-b491-82fd39045e1e", 2),
        // Its per-minute quota was retried by gemini itself, then the session went on.
        (
            "usage-limit-minute-retried",
            "2247b062-f70a-45de-90da-0268f91bda8c",
            3,
        ),
    ] {
        let (r, unfinished) = gemini::parse_unfinished(&session("gemini", case));
        assert_eq!(r.agent_session_id.as_deref(), Some(id), "{case}");
        assert_eq!(r.model.as_deref(), Some("gemini-2.5-pro"), "{case}");
        // 1100 input of which 100 cached, 200 output a response.
        assert_eq!(
            r.tokens,
            tokens(1000 * responses, 200 * responses, 100 * responses, 0),
            "{case}"
        );
        assert_eq!((r.cost_usd, r.cost_source), (None, CostSource::None));
        assert_eq!((r.error.as_deref(), r.usage_limit), (None, None), "{case}");
        assert_eq!(unfinished, None, "{case}: it printed its result");
    }
}

/// gemini 0.61 with an API key: `error.type` is `unknown`, the message says the daily quota is
/// exhausted and gives no delay; the delay is in the error gemini dumps on stderr (`Please
/// retry in 7197.934s.`), from the result's timestamp.
#[test]
fn gemini_daily_quota_resets_after_the_delay_its_stderr_gives() {
    for (case, id, reset) in [
        (
            "usage-limit-daily",
            "38288e1c-36c2-4c45-93a1-92c17b9e06ce",
            // 06:24:58.987Z + 7197.934 s
            "2026-11-29T08:24:56.921Z",
        ),
        (
            "usage-limit-daily-default-attempts",
            "3c870572-275c-43fe-b828-d112ca7732c4",
            // 06:25:44.259Z + 3596.207 s
            "2026-11-29T07:25:40.466Z",
        ),
    ] {
        let r = gemini::parse(&session("gemini", case));
        assert_eq!(r.agent_session_id.as_deref(), Some(id), "{case}");
        assert_eq!(resets_at(&r), Some(at(reset)), "{case}");
        assert_eq!(
            r.error.as_deref(),
            Some(
                "[API Error: You have exhausted your daily quota on this model.]\nPlease wait \
                 and try again later. To increase your limits, request a quota increase through \
                 AI Studio, or switch to another /auth method"
            ),
            "{case}"
        );
        assert_eq!(r.tokens, Tokens::default(), "{case}");
    }
    // stdout alone (no stderr in the log): the limit stands, its reset is unknown.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/agent-output/gemini/recorded/usage-limit-daily.stdout");
    let r = gemini::parse(&std::fs::read(path).unwrap());
    assert_eq!(resets_at(&r), None);
}

#[test]
fn gemini_per_minute_quota_resets_after_the_delay_in_its_result() {
    let r = gemini::parse(&session("gemini", "usage-limit-minute"));
    assert_eq!(
        r.agent_session_id.as_deref(),
        Some("5ac34520-0325-4bce-aedc-2d9d450f0349")
    );
    // 06:25:01.830Z + 34.780 s (`Please retry in 34.780s.`)
    assert_eq!(resets_at(&r), Some(at("2026-11-29T06:25:36.610Z")));
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .starts_with("[API Error: You exceeded your current quota")
    );
}

#[test]
fn gemini_server_error_is_an_error_not_a_usage_limit() {
    let r = gemini::parse(&session("gemini", "api-error-500"));
    assert_eq!(
        r.agent_session_id.as_deref(),
        Some("2543dee2-a01d-4cca-b941-28a031b6025c")
    );
    assert_eq!(
        r.error.as_deref(),
        Some(
            r#"[API Error: {"error":{"code":500,"message":"scripted failure","status":"INTERNAL"}}]"#
        )
    );
    assert_eq!(r.usage_limit, None);
}

#[test]
fn gemini_killed_session_is_unfinished_with_its_session_id() {
    let (r, unfinished) = gemini::parse_unfinished(&session("gemini", "resume-killed"));
    let id = "4d912226-1b04-43ed-b491-82fd39045e1e";
    assert_eq!(unfinished.as_deref(), Some(id));
    assert_eq!(r.agent_session_id.as_deref(), Some(id));
    // No result, no stats: its tokens are in its chat file (read by `read::read_session`).
    assert_eq!(r.tokens, Tokens::default());
    assert_eq!((r.error.as_deref(), r.usage_limit), (None, None));
}

#[test]
fn gemini_untrusted_folder_prints_no_event_and_its_last_words_say_why() {
    let output = session("gemini", "untrusted");
    // Exit 55, nothing on stdout: the parser has nothing to read.
    assert_eq!(gemini::parse(&output), SessionFacts::default());
    // gemini prints the trust message in red even into a pipe; its last words are the words,
    // without the colour codes.
    let text = String::from_utf8(output.clone()).unwrap();
    assert!(
        text.contains("\u{1b}[31mGemini CLI is not running"),
        "{text}"
    );
    let overridden =
        "Approval mode overridden to \"default\" because the current folder is not trusted.";
    assert_eq!(
        read::last_words(&output),
        Some(format!(
            "{overridden} / {overridden} / Gemini CLI is not running in a trusted directory. \
             To proceed, either use `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` \
             environment variable, or trust this directory in interactive mode. For more \
             details, see \
             https://geminicli.com/docs/cli/trusted-folders/#headless-and-automated-environments"
        ))
    );
}

// ---- aider ----

/// The end of a recorded aider session: the `time` of its analytics log's last entry.
fn aider_ended(case: &str) -> DateTime<Utc> {
    let log = analytics(case);
    let last = log
        .rsplit(|b| *b == b'\n')
        .find_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
        .unwrap();
    DateTime::from_timestamp(last["time"].as_i64().unwrap(), 0).unwrap()
}

#[test]
fn aider_sessions_report_their_calls_tokens_and_no_price_for_an_unknown_model() {
    for (case, calls) in [
        ("coder_success", 1),
        ("coder_yes_always", 1),
        ("planner", 1),
        ("recovery", 1),
        ("recovery_reflected", 2),
        ("resumed", 1),
    ] {
        let r = aider::parse_at(&session("aider", case), &analytics(case), aider_ended(case));
        // 1000 prompt and 200 completion tokens a call, as its `Tokens: 1.0k sent, 200
        // received.` says.
        assert_eq!(
            r.tokens,
            tokens(1000 * calls as u64, 200 * calls as u64, 0, 0),
            "{case}"
        );
        assert_eq!(r.turns, Some(calls), "{case}");
        // `openai/REDACTED` priced at $0 by aider: no price, not a free session.
        assert_eq!((r.cost_usd, r.cost_source), (None, CostSource::None));
        assert_eq!(r.model, None, "{case}");
        assert_eq!((r.error.as_deref(), r.usage_limit), (None, None), "{case}");
    }
}

#[test]
fn aider_rate_limit_resets_after_its_last_try_again_in_plus_a_second() {
    let case = "usage_limit";
    let ended = aider_ended(case);
    assert_eq!(ended, at("2026-11-29T06:23:54Z"));
    let r = aider::parse_at(&session("aider", case), &analytics(case), ended);
    // Nine calls, each told `Please try again in …`: the last one, that no retry followed, says
    // 2h8m49s; the second the provider rounded off is added.
    assert_eq!(resets_at(&r), Some(at("2026-11-29T08:32:44Z")));
    let error = r.error.unwrap();
    assert!(
        error.starts_with(
            "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for \
             scripted"
        ),
        "{error}"
    );
    assert!(error.contains("Please try again in 2h8m49s."), "{error}");
    assert!(
        error.ends_with(
            "The API provider has rate limited you. Try again later or check your quotas."
        ),
        "{error}"
    );
    assert_eq!((r.tokens, r.turns), (Tokens::default(), None));
}

#[test]
fn aider_exhausted_quota_is_a_usage_limit_with_no_reset() {
    let case = "usage_limit_quota";
    let r = aider::parse_at(&session("aider", case), &analytics(case), aider_ended(case));
    assert_eq!(resets_at(&r), None);
    let error = r.error.unwrap();
    assert!(
        error.starts_with(
            "litellm.RateLimitError: RateLimitError: OpenAIException - You exceeded your \
             current quota"
        ),
        "{error}"
    );
}

#[test]
fn aider_killed_before_any_answer_reports_nothing() {
    let case = "killed";
    let r = aider::parse_at(&session("aider", case), &analytics(case), aider_ended(case));
    assert_eq!(r, SessionFacts::default());
}

// ---- through the session folder ----

#[test]
fn a_recorded_session_folder_reads_as_its_output() {
    use crate::policy::invocation::Preset;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("output.log");
    std::fs::write(&log, session("claude", "usage-limit")).unwrap();
    let r = read::read_session(Preset::Claude, dir.path(), None, 1 << 20);
    assert_eq!(resets_at(&r), Some(at("2026-11-29T09:18:56Z")));
    std::fs::write(&log, session("gemini", "usage-limit-daily")).unwrap();
    let r = read::read_session(Preset::Gemini, dir.path(), None, 1 << 20);
    assert_eq!(resets_at(&r), Some(at("2026-11-29T08:24:56.921Z")));
    std::fs::write(&log, session("aider", "coder_success")).unwrap();
    std::fs::write(dir.path().join("aider.jsonl"), analytics("coder_success")).unwrap();
    let r = read::read_session(Preset::Aider, dir.path(), None, 1 << 20);
    assert_eq!(
        (r.tokens.input, r.tokens.output, r.turns),
        (1000, 200, Some(1))
    );
}
