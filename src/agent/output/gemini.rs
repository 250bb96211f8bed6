//! Gemini CLI, `gemini --output-format stream-json`: one JSON event a line, each with a
//! `timestamp` (`packages/core/src/output/types.ts`).
//!
//! - `{"type":"init","session_id":…,"model":…}` opens the session;
//! - `{"type":"result","status":"success"|"error","error":{"type","message"},"stats":{
//!   "input_tokens","output_tokens","cached","input",…}}` closes it (`input_tokens` counts the
//!   cached input too; `input` is the rest). An error that ends the session, a quota error
//!   among them, is a `result` with `status: "error"` whose `error.type` is the error's class
//!   name: `TerminalQuotaError` or `RetryableQuotaError` for a quota
//!   (`packages/cli/src/utils/errors.ts`, `handleError`);
//! - `{"type":"error","severity":"warning"|"error","message":…}`: a problem during the session;
//!   `severity: "error"` fails it.
//!
//! A quota error's message carries the delay Google's API gave, `Please retry in 34.07s` or
//! `Your quota will reset after 2h30m41s.`: the reset time is the event's timestamp plus that.

use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use serde_json::Value;

use super::{SessionFacts, Tokens, count, event, lines, name, text};

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: Option<String>,
    timestamp: Option<Value>,
    session_id: Option<Value>,
    model: Option<Value>,
    status: Option<Value>,
    error: Option<Value>,
    severity: Option<Value>,
    message: Option<Value>,
    stats: Option<Value>,
}

const QUOTA_TYPES: [&str; 2] = ["TerminalQuotaError", "RetryableQuotaError"];

/// What gemini 0.61's quota errors say (lower-cased). With an API key the `result`'s
/// `error.type` is `"unknown"` (the API's error is a plain object, not its class), so the
/// message is what tells: `[API Error: You have exhausted your daily quota on this model.]`,
/// `You exceeded your current quota …`.
const QUOTA_WORDS: [&str; 5] = [
    "exhausted your daily quota",
    "exceeded your current quota",
    "quota exceeded for metric",
    "exhausted your capacity",
    "resource_exhausted",
];

pub fn parse(output: &[u8]) -> SessionFacts {
    parse_unfinished(output).0
}

/// [`parse`], and the session id of a session with no `result` (killed before gemini printed
/// its stats): its tokens are then in gemini's chat file ([`chat_tokens`]).
pub fn parse_unfinished(output: &[u8]) -> (SessionFacts, Option<String>) {
    let mut report = SessionFacts::default();
    let mut ended_at = None;
    let mut finished = false;
    for line in lines(output) {
        let Some(ev) = event::<Event>(line) else {
            continue;
        };
        let at = text(ev.timestamp.as_ref())
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc));
        match ev.kind.as_deref() {
            Some("init") => {
                if let Some(id) = name(ev.session_id.as_ref()) {
                    report.agent_session_id = Some(id);
                }
                if let Some(model) = name(ev.model.as_ref()) {
                    report.model = Some(model);
                }
            }
            Some("result") => {
                finished = true;
                ended_at = at;
                if let Some(stats) = ev.stats.as_ref() {
                    let cached = count(stats.get("cached"));
                    let input = match stats.get("input") {
                        Some(v) => count(Some(v)),
                        None => count(stats.get("input_tokens")).saturating_sub(cached),
                    };
                    report.tokens = Tokens {
                        input,
                        output: count(stats.get("output_tokens")),
                        cache_read: cached,
                        cache_write: 0,
                    };
                }
                if text(ev.status.as_ref()) == Some("error") {
                    failure(&mut report, ev.error.as_ref(), at);
                }
            }
            Some("error") => {
                if ev.error.is_some() {
                    failure(&mut report, ev.error.as_ref(), at);
                } else if text(ev.severity.as_ref()) != Some("warning") {
                    report.set_error(text(ev.message.as_ref()).unwrap_or("error"));
                }
            }
            _ => {}
        }
    }
    // A daily quota's delay is not in the `result` (gemini drops the API's RetryInfo for
    // per-day quotas) but in the error it prints on stderr: `… Please retry in 3593.418s.`
    if report.usage_limit.is_some_and(|l| l.resets_at.is_none())
        && let Some(at) = ended_at
    {
        let delay = lines(output)
            .filter(|l| !l.trim_ascii_start().starts_with(b"{"))
            .filter_map(|l| retry_delay(&String::from_utf8_lossy(l)))
            .last();
        if let Some(delay) = delay {
            report.limit(at.checked_add_signed(delay));
        }
    }
    let unfinished = (!finished)
        .then(|| report.agent_session_id.clone())
        .flatten();
    (report, unfinished)
}

/// The tokens gemini's chat file of a session records (`~/.gemini/tmp/<project>/chats/
/// session-<time>-<id prefix>.jsonl`: the session's header line, then its messages, each
/// `gemini` message with its `tokens` {input (cached included), output, cached, …}, written
/// again as it grows: the last line of each message id counts). `None` when the file is not
/// the session's (`session_id`) or records no tokens.
pub fn chat_tokens(chat: &[u8], session_id: &str) -> Option<Tokens> {
    let mut by_message: std::collections::HashMap<String, Tokens> = Default::default();
    let mut note = |m: &Value| {
        let (Some(id), Some(t)) = (m.get("id").and_then(Value::as_str), m.get("tokens")) else {
            return;
        };
        if m.get("type").and_then(Value::as_str) != Some("gemini") {
            return;
        }
        let cached = count(t.get("cached"));
        let tokens = Tokens {
            input: count(t.get("input")).saturating_sub(cached),
            output: count(t.get("output")),
            cache_read: cached,
            cache_write: 0,
        };
        if by_message.len() < 100_000 || by_message.contains_key(id) {
            by_message.insert(id.to_string(), tokens);
        }
    };
    let mut first = true;
    for line in lines(chat) {
        let Some(v) = event::<Value>(line) else {
            continue;
        };
        if first {
            if v.get("sessionId").and_then(Value::as_str) != Some(session_id) {
                return None;
            }
            first = false;
            continue;
        }
        match v
            .get("$set")
            .and_then(|s| s.get("messages"))
            .and_then(Value::as_array)
        {
            Some(messages) => messages.iter().for_each(&mut note),
            None => note(&v),
        }
    }
    (!by_message.is_empty()).then(|| {
        by_message
            .values()
            .fold(Tokens::default(), |a, t| a.plus(t))
    })
}

/// An error object `{"type","message"}` that ended the session.
fn failure(report: &mut SessionFacts, error: Option<&Value>, at: Option<DateTime<Utc>>) {
    let kind = error.and_then(|e| e.get("type")).and_then(Value::as_str);
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("");
    report.set_error(if message.is_empty() {
        kind.unwrap_or("error")
    } else {
        message
    });
    let folded = super::folded(message);
    if kind.is_some_and(|k| QUOTA_TYPES.contains(&k))
        || QUOTA_WORDS.iter().any(|w| folded.contains(w))
    {
        let delay = retry_delay(message);
        report.limit(at.zip(delay).and_then(|(at, d)| at.checked_add_signed(d)));
    }
}

/// `Please retry in 34.07s` / `900ms`, or `reset after 2h30m41s`.
fn retry_delay(message: &str) -> Option<Duration> {
    for marker in ["retry in ", "reset after "] {
        if let Some(at) = message.find(marker) {
            return duration(&message[at + marker.len()..]);
        }
    }
    None
}

/// A duration written as `1h2m3.5s`, `34.07s` or `900ms`, up to the first other character.
pub(super) fn duration(text: &str) -> Option<Duration> {
    let mut millis: f64 = 0.0;
    let mut rest = text;
    let mut any = false;
    loop {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            break;
        }
        let Ok(n) = rest[..digits].parse::<f64>() else {
            break;
        };
        rest = &rest[digits..];
        let (per, len) = if rest.starts_with("ms") {
            (1.0, 2)
        } else if rest.starts_with('h') {
            (3_600_000.0, 1)
        } else if rest.starts_with('m') {
            (60_000.0, 1)
        } else if rest.starts_with('s') {
            (1000.0, 1)
        } else {
            break;
        };
        millis += n * per;
        rest = &rest[len..];
        any = true;
    }
    if !any || !millis.is_finite() || millis > 1e13 {
        return None;
    }
    Duration::try_milliseconds(millis.round() as i64)
}
