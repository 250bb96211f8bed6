//! Codex, `codex exec --json`: one JSON event a line (`codex-rs/exec/src/exec_events.rs`).
//!
//! - `{"type":"thread.started","thread_id":…}`: the thread, what `codex exec resume` takes;
//! - `{"type":"turn.completed","usage":{"input_tokens","cached_input_tokens","output_tokens"}}`:
//!   the usage is the thread's running total (codex copies its last `total_token_usage`), so a
//!   resumed thread's figures include every earlier session's: this session's tokens are the
//!   last total minus the total the previous session of the thread ended with;
//! - `{"type":"turn.failed","error":{"message":…}}`: the turn failed;
//! - `{"type":"error","message":…}`: an error of the stream; it may be followed by a retry that
//!   succeeds, so it fails the session only when no `turn.completed` comes after it;
//! - a usage limit is only a message: `You've hit your usage limit. … Try again at 3:28 PM.`
//!   (`or try again at …` for some plans), the time in the machine's local time zone, with the
//!   date (`Aug 8th, 2026 12:30 PM`) when it is not today (`codex-rs/core/src/error.rs`,
//!   `format_retry_timestamp`); `Try again later.` gives no time.

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use serde::Deserialize;
use serde_json::Value;

use super::{SessionFacts, Tokens, count, event, lines, name, text};

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: Option<String>,
    thread_id: Option<Value>,
    usage: Option<Value>,
    error: Option<Value>,
    message: Option<Value>,
}

/// `previous_thread_total` is the `thread_total` of the report of the previous session of the
/// same thread (for a resumed thread), `None` for a new one. `now` is the time the output was
/// read, in the time zone codex printed its times in (the machine's local zone).
pub fn parse<Tz: TimeZone>(
    output: &[u8],
    previous_thread_total: Option<Tokens>,
    now: &DateTime<Tz>,
) -> SessionFacts {
    let mut report = SessionFacts::default();
    let mut total: Option<Tokens> = None;
    let mut failed: Option<String> = None;
    let mut stream_error: Option<String> = None;
    for line in lines(output) {
        let Some(ev) = event::<Event>(line) else {
            continue;
        };
        match ev.kind.as_deref() {
            Some("thread.started") => {
                if let Some(id) = name(ev.thread_id.as_ref()) {
                    report.agent_session_id = Some(id);
                }
            }
            Some("turn.completed") => {
                if let Some(usage) = ev.usage.as_ref() {
                    let input = count(usage.get("input_tokens"));
                    let cached = count(usage.get("cached_input_tokens"));
                    total = Some(Tokens {
                        input: input.saturating_sub(cached),
                        output: count(usage.get("output_tokens")),
                        cache_read: cached,
                        cache_write: 0,
                    });
                }
                stream_error = None;
            }
            Some("turn.failed") => {
                let message = ev
                    .error
                    .as_ref()
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("turn failed");
                failed = Some(message.to_string());
            }
            Some("error") => {
                let message = text(ev.message.as_ref()).unwrap_or("error");
                stream_error = Some(message.to_string());
            }
            _ => {}
        }
    }
    for message in [&failed, &stream_error].into_iter().flatten() {
        if let Some(reset) = usage_limit(message, now) {
            report.limit(reset);
        }
    }
    if let Some(message) = failed.or(stream_error) {
        report.set_error(&message);
    }
    if let Some(total) = total {
        report.tokens = total.since(&previous_thread_total.unwrap_or_default());
        report.thread_total = Some(total);
    }
    report
}

/// The exact reset of a usage limit, from the session file codex keeps of the thread
/// (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`): its last
/// `token_count` event's `rate_limits`, whose `primary` and `secondary` windows carry
/// `used_percent` and `resets_at` (Unix seconds). The limit lifts when the last of the spent
/// (100 %) windows resets; `None` when no window is spent or the file says nothing.
pub fn rollout_reset(rollout: &[u8]) -> Option<DateTime<Utc>> {
    let mut last = None;
    for line in lines(rollout) {
        let Some(v) = event::<Value>(line) else {
            continue;
        };
        let payload = v.get("payload");
        if payload.and_then(|p| p.get("type")).and_then(Value::as_str) != Some("token_count") {
            continue;
        }
        if let Some(limits) = payload
            .and_then(|p| p.get("rate_limits"))
            .filter(|l| l.is_object())
        {
            last = Some(limits.clone());
        }
    }
    let limits = last?;
    ["primary", "secondary"]
        .iter()
        .filter_map(|w| limits.get(*w))
        .filter(|w| {
            w.get("used_percent")
                .and_then(Value::as_f64)
                .is_some_and(|p| p >= 100.0)
        })
        .filter_map(|w| w.get("resets_at").and_then(Value::as_f64))
        .filter_map(super::epoch)
        .max()
}

/// Whether a session file's reset `at` is believed, given the reset codex printed (`printed`:
/// the end of the printed minute, see `reset_at`). The file is the agent's to write (it is in
/// its HOME): believed only within the printed minute, or, with no time printed, when it is
/// still to come.
pub fn rollout_agrees(
    at: DateTime<Utc>,
    printed: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> bool {
    match printed {
        Some(end) => at <= end && at > end - Duration::seconds(61),
        None => at > now,
    }
}

/// `Some(reset)` when `message` says the usage limit was hit.
fn usage_limit<Tz: TimeZone>(message: &str, now: &DateTime<Tz>) -> Option<Option<DateTime<Utc>>> {
    // ASCII lower-casing keeps byte offsets, so they index `message` too.
    let lower = message.to_ascii_lowercase();
    if !lower.contains("hit your usage limit") {
        return None;
    }
    if let Some(at) = lower.find("try again at ") {
        return Some(reset_at(&message[at + "try again at ".len()..], now));
    }
    if let Some(at) = lower.find("try again in ") {
        return Some(reset_in(&lower[at + "try again in ".len()..], now));
    }
    Some(None)
}

/// `3:28 PM.` or `Aug 8th, 2026 12:30 PM.`, in `now`'s time zone, as the instant the limit
/// surely lifted by: the end of the printed minute (codex rounds its exact reset down to the
/// minute, so a pause until the minute's start could end up to 59 s early and meet the limit
/// again).
///
/// A time without a date is the day codex printed it (it adds the date otherwise), and codex
/// printed it moments before `now`: of that time yesterday, today and tomorrow, the one
/// nearest `now` is meant. A minute already begun is today's, never tomorrow's (a reset 20 s
/// away is not a day away); one read just after midnight is yesterday's.
fn reset_at<Tz: TimeZone>(rest: &str, now: &DateTime<Tz>) -> Option<DateTime<Utc>> {
    let end = rest.find(['\n', '(']).unwrap_or(rest.len());
    let when = rest[..end].trim().trim_end_matches('.').trim();
    let upper = when.to_ascii_uppercase();
    let (time_at, date) = match upper.rfind(':') {
        Some(colon) if colon >= 1 => {
            // The time starts at the last word before the colon.
            let start = upper[..colon].rfind(' ').map_or(0, |s| s + 1);
            (start, upper[..start].trim().trim_end_matches(',').trim())
        }
        _ => return None,
    };
    let time = NaiveTime::parse_from_str(upper[time_at..].trim(), "%I:%M %p").ok()?;
    let tz = now.timezone();
    let minute_start = if date.is_empty() {
        let today = now.naive_local().date();
        let now_utc = now.with_timezone(&Utc);
        [today.pred_opt(), Some(today), today.succ_opt()]
            .into_iter()
            .flatten()
            .filter_map(|day| tz.from_local_datetime(&day.and_time(time)).earliest())
            .map(|t| t.with_timezone(&Utc))
            .min_by_key(|t| (*t - now_utc).num_seconds().abs())?
    } else {
        let date = parse_date(date)?;
        tz.from_local_datetime(&NaiveDateTime::new(date, time))
            .earliest()?
            .with_timezone(&Utc)
    };
    minute_start.checked_add_signed(Duration::seconds(60))
}

/// `AUG 8TH, 2026` (upper-cased).
fn parse_date(date: &str) -> Option<NaiveDate> {
    let (month_day, year) = date.split_once(',')?;
    let month_day = month_day.trim();
    let digits_end = month_day.trim_end_matches(char::is_alphabetic).len();
    let plain = format!("{} {}", &month_day[..digits_end], year.trim());
    NaiveDate::parse_from_str(&plain, "%b %d %Y").ok()
}

/// `2 hours 5 minutes.`, `3 days 6 hours 57 minutes`, from `now`.
fn reset_in<Tz: TimeZone>(rest: &str, now: &DateTime<Tz>) -> Option<DateTime<Utc>> {
    let mut seconds: i64 = 0;
    let mut words = rest.split_whitespace();
    let mut any = false;
    while let Some(word) = words.next() {
        let Ok(n) = word.parse::<i64>() else { break };
        let unit = words.next()?.trim_end_matches(['.', ',']);
        let per = match unit.trim_end_matches('s') {
            "day" => 86_400,
            "hour" => 3_600,
            "minute" | "min" => 60,
            "second" | "sec" => 1,
            _ => return None,
        };
        seconds = seconds.checked_add(n.checked_mul(per)?)?;
        any = true;
    }
    if !any {
        return None;
    }
    now.with_timezone(&Utc)
        .checked_add_signed(Duration::try_seconds(seconds)?)
}
