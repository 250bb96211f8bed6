//! Every parser on every recorded sample of `fixtures/agent-output/`, and on garbage.

use chrono::{DateTime, FixedOffset, TimeZone, Utc};

use super::*;

fn fixture(rel: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/agent-output")
        .join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn utc(seconds: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(seconds, 0)
}

fn limited_at(report: &SessionFacts) -> Option<DateTime<Utc>> {
    report
        .usage_limit
        .expect("a usage limit is reported")
        .resets_at
}

// ---- claude ----

#[test]
fn claude_success() {
    let r = claude::parse(&fixture("claude/success.jsonl"));
    assert_eq!(
        r.agent_session_id.as_deref(),
        Some("3f0c2a8e-6b1d-4c51-9a57-1b2f8d9e0c11")
    );
    assert_eq!(r.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    assert_eq!(r.cost_usd, Some(0.4231));
    assert_eq!(r.cost_source, CostSource::Reported);
    assert_eq!(
        r.tokens,
        Tokens {
            input: 1234,
            output: 1213,
            cache_read: 91011,
            cache_write: 5678
        }
    );
    assert_eq!(r.turns, Some(7));
    assert_eq!(
        r.usage_limit, None,
        "an `allowed` rate-limit event is no limit"
    );
    assert_eq!(r.error, None);
    assert!(!r.failed());
}

#[test]
fn claude_is_error_with_subtype_success_is_a_failure() {
    let r = claude::parse(&fixture("claude/is_error.jsonl"));
    assert!(r.error.as_deref().unwrap().starts_with("API Error: 500"));
    assert_eq!(r.usage_limit, None);
    assert_eq!(r.cost_usd, Some(0.0912));
    assert_eq!(r.turns, Some(3));
    assert!(r.failed());
}

#[test]
fn claude_error_subtype_without_text_says_the_subtype() {
    let r = claude::parse(&fixture("claude/error_max_turns.jsonl"));
    assert_eq!(r.error.as_deref(), Some("error_max_turns"));
    assert_eq!(r.turns, Some(30));
}

#[test]
fn claude_rejected_rate_limit_in_seconds_and_in_milliseconds() {
    for case in ["claude/limit_seconds.jsonl", "claude/limit_millis.jsonl"] {
        let r = claude::parse(&fixture(case));
        assert_eq!(limited_at(&r), utc(1_778_565_600), "{case}");
        assert!(r.error.is_some(), "{case}");
    }
}

#[test]
fn claude_usage_limit_text_with_an_epoch() {
    let r = claude::parse(&fixture("claude/limit_text_epoch.jsonl"));
    assert_eq!(limited_at(&r), utc(1_755_615_600));
}

#[test]
fn claude_usage_limit_text_without_a_time_is_a_limit_with_no_reset() {
    let r = claude::parse(&fixture("claude/limit_text_only.jsonl"));
    assert_eq!(limited_at(&r), None);
    assert!(r.error.as_deref().unwrap().contains("hit your limit"));
}

#[test]
fn claude_a_successful_result_that_talks_of_limits_is_no_limit() {
    let line = br#"{"type":"result","subtype":"success","is_error":false,"result":"Added a check: Claude AI usage limit reached|1755615600 is parsed"}"#;
    assert_eq!(claude::parse(line).usage_limit, None);
}

#[test]
fn claude_ignores_unknown_events_garbage_and_a_cut_line() {
    let r = claude::parse(&fixture("claude/unknown_events.jsonl"));
    let clean = claude::parse(&fixture("claude/success.jsonl"));
    assert_eq!(r, clean);
}

// ---- codex ----

fn paris_noon() -> DateTime<FixedOffset> {
    FixedOffset::east_opt(3600)
        .unwrap()
        .with_ymd_and_hms(2026, 8, 7, 12, 0, 0)
        .unwrap()
}

#[test]
fn codex_success_takes_cached_input_out_of_input() {
    let r = codex::parse(&fixture("codex/success.jsonl"), None, &paris_noon());
    assert_eq!(
        r.agent_session_id.as_deref(),
        Some("0199a213-81c0-7800-8aa1-bbab2a035a53")
    );
    let want = Tokens {
        input: 315,
        output: 122,
        cache_read: 24448,
        cache_write: 0,
    };
    assert_eq!(r.tokens, want);
    assert_eq!(r.thread_total, Some(want));
    assert_eq!(r.cost_usd, None);
    assert_eq!(r.cost_source, CostSource::None);
    assert!(!r.failed());
}

#[test]
fn codex_resumed_thread_counts_only_its_own_tokens() {
    let first = codex::parse(&fixture("codex/success.jsonl"), None, &paris_noon());
    let r = codex::parse(
        &fixture("codex/resumed.jsonl"),
        first.thread_total,
        &paris_noon(),
    );
    let total = Tokens {
        input: 5100,
        output: 300,
        cache_read: 35000,
        cache_write: 0,
    };
    assert_eq!(r.thread_total, Some(total));
    assert_eq!(
        r.tokens,
        Tokens {
            input: 5100 - 315,
            output: 300 - 122,
            cache_read: 35000 - 24448,
            cache_write: 0
        }
    );
    // Without the earlier total, the session is charged the whole thread.
    let alone = codex::parse(&fixture("codex/resumed.jsonl"), None, &paris_noon());
    assert_eq!(alone.tokens, total);
}

#[test]
fn codex_usage_limit_at_a_time_is_the_end_of_that_minute_nearest_now() {
    let out = fixture("codex/limit_time.jsonl");
    let paris = |h, m, s| {
        FixedOffset::east_opt(3600)
            .unwrap()
            .with_ymd_and_hms(2026, 8, 7, h, m, s)
            .unwrap()
    };
    // 3:28 PM is still to come at noon: today, and the limit surely lifted when that minute
    // ends (codex rounds its exact reset down to the minute).
    let r = codex::parse(&out, None, &paris_noon());
    let end_of_minute = paris(15, 29, 0);
    assert_eq!(limited_at(&r), Some(end_of_minute.with_timezone(&Utc)));
    assert!(r.error.as_deref().unwrap().contains("usage limit"));
    // Read within that very minute: 20 s away, not tomorrow.
    let r = codex::parse(&out, None, &paris(15, 28, 40));
    assert_eq!(limited_at(&r), Some(end_of_minute.with_timezone(&Utc)));
    // Read a little after: the reset has passed (no pause), it is not tomorrow's.
    let r = codex::parse(&out, None, &paris(16, 0, 0));
    assert_eq!(limited_at(&r), Some(end_of_minute.with_timezone(&Utc)));
    // Late in the evening, a time early in the morning is tomorrow's.
    let morning = br#"{"type":"turn.failed","error":{"message":"You've hit your usage limit. Try again at 12:05 AM."}}"#;
    let r = codex::parse(morning, None, &paris(23, 58, 0));
    let tomorrow = FixedOffset::east_opt(3600)
        .unwrap()
        .with_ymd_and_hms(2026, 8, 8, 0, 6, 0)
        .unwrap();
    assert_eq!(limited_at(&r), Some(tomorrow.with_timezone(&Utc)));
    // Read just after midnight, 11:59 PM was yesterday's (passed), not tonight's.
    let late = br#"{"type":"turn.failed","error":{"message":"You've hit your usage limit. Try again at 11:59 PM."}}"#;
    let after_midnight = FixedOffset::east_opt(3600)
        .unwrap()
        .with_ymd_and_hms(2026, 8, 8, 0, 0, 30)
        .unwrap();
    let r = codex::parse(late, None, &after_midnight);
    assert_eq!(
        limited_at(&r),
        Some(paris(23, 59, 0).with_timezone(&Utc) + chrono::Duration::seconds(60))
    );
}

#[test]
fn codex_usage_limit_with_a_date() {
    let r = codex::parse(&fixture("codex/limit_date.jsonl"), None, &paris_noon());
    let at = FixedOffset::east_opt(3600)
        .unwrap()
        .with_ymd_and_hms(2026, 8, 8, 12, 31, 0)
        .unwrap();
    assert_eq!(limited_at(&r), Some(at.with_timezone(&Utc)));
}

#[test]
fn codex_usage_limit_later_has_no_reset() {
    let r = codex::parse(&fixture("codex/limit_later.jsonl"), None, &paris_noon());
    assert_eq!(limited_at(&r), None);
}

#[test]
fn codex_usage_limit_in_a_duration() {
    let line = br#"{"type":"turn.failed","error":{"message":"You've hit your usage limit. Try again in 2 hours 5 minutes."}}"#;
    let r = codex::parse(line, None, &paris_noon());
    let want = paris_noon() + chrono::Duration::minutes(125);
    assert_eq!(limited_at(&r), Some(want.with_timezone(&Utc)));
}

#[test]
fn codex_turn_failed_is_a_failure_without_limit() {
    let r = codex::parse(&fixture("codex/turn_failed.jsonl"), None, &paris_noon());
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .starts_with("stream disconnected")
    );
    assert_eq!(r.usage_limit, None);
    assert_eq!(r.thread_total, None);
}

#[test]
fn codex_stream_error_followed_by_a_completed_turn_is_no_failure() {
    let r = codex::parse(
        &fixture("codex/stream_error_retried.jsonl"),
        None,
        &paris_noon(),
    );
    assert_eq!(r.error, None);
    assert_eq!(r.tokens.input, 1000);
}

#[test]
fn codex_ignores_unknown_events_garbage_and_a_cut_line() {
    let r = codex::parse(&fixture("codex/unknown_events.jsonl"), None, &paris_noon());
    assert_eq!(
        r.agent_session_id.as_deref(),
        Some("0199a213-81c0-7800-8aa1-bbab2a035a53")
    );
    assert_eq!(
        r.tokens,
        Tokens {
            input: 400,
            output: 20,
            cache_read: 100,
            cache_write: 0
        }
    );
    assert_eq!(r.error, None);
}

// ---- gemini ----

#[test]
fn gemini_success() {
    let r = gemini::parse(&fixture("gemini/success.jsonl"));
    assert_eq!(
        r.agent_session_id.as_deref(),
        Some("c9d6f3a2-5d1e-4f8b-9a0c-7e1b2d3c4f50")
    );
    assert_eq!(r.model.as_deref(), Some("gemini-2.5-pro"));
    assert_eq!(
        r.tokens,
        Tokens {
            input: 8800,
            output: 744,
            cache_read: 12000,
            cache_write: 0
        }
    );
    assert_eq!(r.cost_source, CostSource::None);
    assert!(!r.failed());
}

#[test]
fn gemini_quota_errors_are_usage_limits_from_the_event_time() {
    let at = |s: &str| Some(DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc));
    let r = gemini::parse(&fixture("gemini/terminal_quota.jsonl"));
    assert_eq!(limited_at(&r), at("2026-11-23T16:30:42Z"));
    assert!(r.error.as_deref().unwrap().contains("exhausted"));
    let r = gemini::parse(&fixture("gemini/retryable_quota.jsonl"));
    assert_eq!(limited_at(&r), at("2026-11-23T14:00:35.075Z"));
    let r = gemini::parse(&fixture("gemini/daily_quota.jsonl"));
    assert_eq!(limited_at(&r), None);
}

#[test]
fn gemini_error_event_fails_a_warning_does_not() {
    let r = gemini::parse(&fixture("gemini/error_event.jsonl"));
    assert_eq!(r.error.as_deref(), Some("Maximum session turns exceeded"));
    assert_eq!(r.usage_limit, None);
    let r = gemini::parse(&fixture("gemini/failed.jsonl"));
    assert!(r.error.as_deref().unwrap().starts_with("Failed to login"));
    assert_eq!(r.usage_limit, None);
}

#[test]
fn gemini_ignores_unknown_events_garbage_and_a_cut_line() {
    let r = gemini::parse(&fixture("gemini/unknown_events.jsonl"));
    assert_eq!(r, gemini::parse(&fixture("gemini/success.jsonl")));
}

// ---- aider ----

fn aider_case(case: &str) -> SessionFacts {
    aider::parse(
        &fixture(&format!("aider/{case}.txt")),
        &fixture(&format!("aider/{case}.analytics.jsonl")),
    )
}

#[test]
fn aider_success() {
    let r = aider_case("success");
    assert_eq!(r.cost_usd, Some(0.075882));
    assert_eq!(r.cost_source, CostSource::Reported);
    assert_eq!(
        r.tokens,
        Tokens {
            input: 21234,
            output: 812,
            cache_read: 0,
            cache_write: 0
        }
    );
    assert_eq!(r.model.as_deref(), Some("anthropic/claude-sonnet-4-5"));
    assert_eq!(r.turns, Some(2));
    assert_eq!(r.agent_session_id, None);
    assert!(!r.failed());
}

#[test]
fn aider_failed_model_call_is_a_failure() {
    let r = aider_case("model_fail");
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .starts_with("litellm.AuthenticationError")
    );
    assert_eq!(r.usage_limit, None);
    assert_eq!(r.cost_usd, None);
}

#[test]
fn aider_rate_limit_that_outlasts_the_retries_is_a_usage_limit() {
    let r = aider_case("rate_limit");
    assert_eq!(limited_at(&r), None);
    assert!(r.error.is_some());
}

#[test]
fn aider_error_followed_by_a_retry_is_no_failure() {
    let r = aider_case("retried_ok");
    assert_eq!(r.error, None);
    assert_eq!(r.cost_usd, Some(0.038382));
}

#[test]
fn aider_message_send_exception_is_a_failure() {
    let r = aider_case("exception");
    assert!(r.error.as_deref().unwrap().contains("NoneType"));
}

#[test]
fn aider_ignores_unknown_events_garbage_and_a_cut_line() {
    let r = aider_case("unknown_events");
    assert_eq!(r.turns, Some(2));
    assert_eq!(r.tokens.input, 10234);
    assert_eq!(r.cost_usd, Some(0.038382));
    assert_eq!(r.error, None);
}

// ---- cost, shapes, garbage ----

#[test]
fn compute_cost_is_per_million_tokens() {
    let tokens = Tokens {
        input: 1_000_000,
        output: 500_000,
        cache_read: 2_000_000,
        cache_write: 100_000,
    };
    let prices = Prices {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
    };
    let cost = compute_cost(&tokens, &prices);
    assert!((cost - (3.0 + 7.5 + 0.6 + 0.375)).abs() < 1e-9, "{cost}");
    assert_eq!(compute_cost(&Tokens::default(), &prices), 0.0);
}

#[test]
fn report_round_trips_through_json_with_snake_case_source() {
    let r = claude::parse(&fixture("claude/limit_seconds.jsonl"));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["cost_source"], "reported");
    assert_eq!(json["usage_limit"]["resets_at"], "2026-05-12T06:00:00Z");
    assert!(json.get("thread_total").is_none());
    let back: SessionFacts = serde_json::from_value(json).unwrap();
    assert_eq!(back, r);
}

#[test]
fn epochs_in_seconds_and_milliseconds_agree() {
    assert_eq!(epoch(1_778_565_600.0), epoch(1_778_565_600_000.0));
    assert_eq!(epoch(0.0), None);
    assert_eq!(epoch(-5.0), None);
    assert_eq!(epoch(f64::NAN), None);
    assert_eq!(epoch(1e300), None);
}

#[test]
fn a_long_error_is_clipped_on_a_character_boundary() {
    let long = format!(
        r#"{{"type":"turn.failed","error":{{"message":"{}"}}}}"#,
        "é".repeat(5000)
    );
    let r = codex::parse(long.as_bytes(), None, &paris_noon());
    let error = r.error.unwrap();
    assert!(error.len() <= MAX_ERROR + "…".len());
    assert!(error.ends_with('…'));
}

/// A small xorshift generator: the fuzz loop is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn all_parsers(bytes: &[u8]) {
    let _ = claude::parse(bytes);
    let _ = codex::parse(bytes, Some(Tokens::default()), &paris_noon());
    let _ = gemini::parse(bytes);
    let _ = aider::parse(bytes, bytes);
}

#[test]
fn no_parser_panics_on_garbage_truncation_or_non_utf8() {
    // Every file under each CLI's fixtures, its recordings of the real CLIs (`recorded/`) too.
    fn read_all(dir: &std::path::Path, samples: &mut Vec<Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                read_all(&path, samples);
            } else {
                samples.push(std::fs::read(path).unwrap());
            }
        }
    }
    let mut samples: Vec<Vec<u8>> = Vec::new();
    for dir in ["claude", "codex", "gemini", "aider"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/agent-output")
            .join(dir);
        read_all(&path, &mut samples);
    }
    assert!(samples.len() >= 30, "{} samples", samples.len());
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for sample in &samples {
        // Every cut of the sample (a capped log stops anywhere).
        for cut in (0..sample.len()).step_by(7) {
            all_parsers(&sample[..cut]);
            all_parsers(&sample[cut..]);
        }
        // Random bytes flipped, dropped, or made non-UTF-8.
        for _ in 0..200 {
            let mut bytes = sample.clone();
            for _ in 0..1 + rng.next() % 8 {
                if bytes.is_empty() {
                    break;
                }
                let at = (rng.next() as usize) % bytes.len();
                match rng.next() % 3 {
                    0 => bytes[at] = rng.next() as u8,
                    1 => {
                        bytes.remove(at);
                    }
                    _ => bytes.insert(at, 0x80 | (rng.next() as u8 & 0x3f)),
                }
            }
            all_parsers(&bytes);
        }
    }
    // Pure noise, deep nesting, huge numbers.
    for _ in 0..200 {
        let len = (rng.next() % 512) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        all_parsers(&bytes);
    }
    all_parsers(&[b'['; 100_000]);
    all_parsers(format!("{{\"type\":\"result\",\"x\":{}", "[".repeat(100_000)).as_bytes());
    all_parsers(
        br#"{"type":"result","total_cost_usd":1e999,"num_turns":99999999999,"usage":{"input_tokens":-4,"output_tokens":1.5e30}}"#,
    );
    all_parsers(
        br#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":9e307}}"#,
    );
    all_parsers(br#"{"type":"turn.failed","error":{"message":"You've hit your usage limit. Try again at 99:99 PM."}}"#);
    all_parsers(br#"{"type":"turn.failed","error":{"message":"You've hit your usage limit. Try again in 99999999999999 days."}}"#);
    all_parsers(br#"{"type":"result","status":"error","timestamp":"2026-11-23T14:00:00Z","error":{"type":"TerminalQuotaError","message":"reset after 99999999999999999h"}}"#);
}

#[test]
fn claude_unknown_resume_id_says_so() {
    let r = claude::parse(&fixture("claude/resume_unknown.jsonl"));
    assert_eq!(
        r.error.as_deref(),
        Some("No conversation found with session ID: 9d1e0000-0000-4000-8000-00000000dead")
    );
    assert_eq!(r.turns, Some(0));
    assert_eq!(r.usage_limit, None);
}

#[test]
fn a_codex_session_files_reset_is_believed_only_within_the_printed_minute() {
    let end = DateTime::from_timestamp(1_800_000_060, 0).unwrap();
    let now = end - chrono::Duration::hours(3);
    assert!(codex::rollout_agrees(
        end - chrono::Duration::seconds(17),
        Some(end),
        now
    ));
    assert!(codex::rollout_agrees(end, Some(end), now));
    // An hour ago, or later than codex said: a stale or forged file.
    assert!(!codex::rollout_agrees(
        now - chrono::Duration::hours(1),
        Some(end),
        now
    ));
    assert!(!codex::rollout_agrees(
        end + chrono::Duration::seconds(1),
        Some(end),
        now
    ));
    assert!(!codex::rollout_agrees(
        end - chrono::Duration::seconds(62),
        Some(end),
        now
    ));
    // No time printed: a reset still to come.
    assert!(codex::rollout_agrees(
        now + chrono::Duration::seconds(5),
        None,
        now
    ));
    assert!(!codex::rollout_agrees(
        now - chrono::Duration::seconds(5),
        None,
        now
    ));
}

#[test]
fn a_killed_claude_sessions_transcript_can_raise_its_streamed_usage_never_lower_it() {
    let init = r#"{"type":"system","subtype":"init","cwd":"/w/t","session_id":"3f0c2a8e-6b1d-4c51-9a57-1b2f8d9e0c11","model":"claude-sonnet-4-5"}"#;
    let msg = |id: &str, out: u64| {
        format!(
            r#"{{"type":"assistant","message":{{"id":"{id}","usage":{{"input_tokens":1000,"output_tokens":{out},"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}}}}"#
        )
    };
    let output = format!(
        "{init}\n{}\n{}\n{}\n",
        msg("m1", 1),
        msg("m1", 1),
        msg("m2", 5000)
    );
    let (report, unfinished) = claude::parse_unfinished(output.as_bytes());
    let unfinished = unfinished.expect("no result: unfinished");
    // Per message, counted once: 2000 input, 5001 output, priced at sonnet's $3 / $15.
    assert_eq!((report.tokens.input, report.tokens.output), (2000, 5001));
    assert_eq!(
        report.cost_source,
        crate::agent::output::CostSource::Computed
    );
    assert!((report.cost_usd.unwrap() - (0.006 + 5001.0 * 15.0 / 1e6)).abs() < 1e-9);
    assert_eq!(
        unfinished.transcript(std::path::Path::new("/h/.claude")),
        std::path::Path::new("/h/.claude/projects/-w-t/3f0c2a8e-6b1d-4c51-9a57-1b2f8d9e0c11.jsonl")
    );
    // The transcript's final figures raise m1's output; its lower m2 does not lower it.
    let transcript = format!("{}\n{}\n", msg("m1", 200), msg("m2", 1));
    let t = claude::transcript_tokens(transcript.as_bytes(), &unfinished.streamed).unwrap();
    assert_eq!((t.input, t.output), (2000, 5200));
    // A session id that is not a UUID names no transcript (it could be a path).
    let forged = output.replace("3f0c2a8e-6b1d-4c51-9a57-1b2f8d9e0c11", "../../etc/x");
    assert_eq!(claude::parse_unfinished(forged.as_bytes()).1, None);
    // A finished session is its result's.
    let done = format!(
        "{output}{}\n",
        r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5,"usage":{"input_tokens":7,"output_tokens":8}}"#
    );
    let (r, u) = claude::parse_unfinished(done.as_bytes());
    assert_eq!((u, r.tokens.input, r.cost_usd), (None, 7, Some(0.5)));
}
