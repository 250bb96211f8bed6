//! aider, with `--analytics-log FILE`: aider's output is plain text for a person; what it
//! spent is in the analytics log, one JSON object a line, `{"event":…,"properties":{…},
//! "user_id":…,"time":…}` (`aider/analytics.py`, `Analytics.event`; `--no-analytics` turns off
//! the upload only, the log is still written).
//!
//! - `message_send` (one per model call, `aider/coders/base_coder.py`): `properties.cost`,
//!   `total_cost` (the process's running total), `prompt_tokens`, `completion_tokens`,
//!   `main_model`;
//! - `message_send_exception` (`properties.exception`): the call raised an unexpected error.
//!
//! aider exits 0 even when the model call failed: it prints the error and goes on. A failure is
//! recognised from the output: a litellm exception (`litellm.RateLimitError: …`), one of the
//! explanations aider prints for one (`aider/exceptions.py`), or a token limit
//! (`has hit a token limit!`). A retryable error is followed by `Retrying in N seconds...`; only
//! an error that no retry follows fails the session. A rate limit or an exhausted quota that
//! ends the session is a usage limit; OpenAI's rate-limit message gives its reset as a delay.

use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use serde_json::Value;

use super::{CostSource, SessionFacts, count, dollars, event, lines, name, text};

#[derive(Deserialize)]
struct Entry {
    event: Option<Value>,
    properties: Option<Value>,
}

/// Words of aider's output that say a model call failed.
const FAILURES: [&str; 7] = [
    "The API provider is not able to authenticate you",
    "The API provider has rate limited you",
    "The API provider's servers are down or overloaded",
    "The API provider timed out",
    "The API provider has refused the request",
    "Permission was denied. Check your API key",
    "has hit a token limit!",
];

/// Words of a failure that make it a usage limit.
const LIMITS: [&str; 6] = [
    "ratelimiterror",
    "rate limited you",
    "insufficient_quota",
    "quota exceeded",
    "exceeded your current quota",
    "resource_exhausted",
];

pub fn parse(output: &[u8], analytics_jsonl: &[u8]) -> SessionFacts {
    parse_at(output, analytics_jsonl, Utc::now())
}

/// [`parse`], `now` being when the session ended: an OpenAI rate limit's message says when it
/// lifts as a delay from the failed call, `Please try again in 2h9m53s.` (aider's last call
/// comes right before it gives up and exits).
pub fn parse_at(output: &[u8], analytics_jsonl: &[u8], now: DateTime<Utc>) -> SessionFacts {
    let mut report = SessionFacts::default();
    let mut summed = 0.0;
    let mut total_cost = None;
    let mut any_cost = false;
    let mut calls: u32 = 0;
    let mut unpriced = false;
    let mut exception = None;
    for line in lines(analytics_jsonl) {
        let Some(entry) = event::<Entry>(line) else {
            continue;
        };
        let props = entry.properties.as_ref().filter(|p| p.is_object());
        match text(entry.event.as_ref()) {
            Some("message_send") if props.is_none() => {}
            Some("message_send") => {
                calls = calls.saturating_add(1);
                let get = |k: &str| props.and_then(|p| p.get(k));
                if let Some(cost) = dollars(get("cost")) {
                    summed += cost;
                    any_cost = true;
                }
                if let Some(total) = dollars(get("total_cost")) {
                    total_cost = Some(total);
                    any_cost = true;
                }
                report.tokens.input = report
                    .tokens
                    .input
                    .saturating_add(count(get("prompt_tokens")));
                report.tokens.output = report
                    .tokens
                    .output
                    .saturating_add(count(get("completion_tokens")));
                // aider names a model it has no metadata for `openai/REDACTED` and prices
                // it at $0: that is no price.
                let known = name(get("main_model")).filter(|m| !m.ends_with("/REDACTED"));
                unpriced |= known.is_none();
                if let Some(model) = known {
                    report.model = Some(model);
                }
            }
            Some("message_send_exception") => {
                let said = props
                    .and_then(|p| p.get("exception"))
                    .and_then(Value::as_str)
                    .unwrap_or("message_send_exception");
                exception = Some(said.to_string());
            }
            _ => {}
        }
    }
    if any_cost && !(unpriced && summed == 0.0 && total_cost.is_none_or(|t| t == 0.0)) {
        report.cost_usd = Some(total_cost.unwrap_or(summed));
        report.cost_source = CostSource::Reported;
    }
    if calls > 0 {
        report.turns = Some(calls);
    }
    let failed = last_unretried_error(output).or(exception);
    if let Some(message) = failed {
        let lower = message.to_ascii_lowercase();
        if LIMITS.iter().any(|w| lower.contains(w)) {
            // Whole seconds, rounded down by the provider: one more, so that the pause never
            // ends before the limit lifts.
            let reset = lower
                .find("try again in ")
                .and_then(|at| super::gemini::duration(&lower[at + "try again in ".len()..]))
                .and_then(|d| now.checked_add_signed(d + Duration::seconds(1)));
            report.limit(reset);
        }
        report.set_error(&message);
    }
    report
}

/// The failure lines of the output since the last `Retrying in` line (at most the last four,
/// joined), or `None` when there are none.
fn last_unretried_error(output: &[u8]) -> Option<String> {
    let mut pending: Vec<String> = Vec::new();
    for line in lines(output) {
        let line = String::from_utf8_lossy(line);
        let line = line.trim();
        if line.starts_with("Retrying in ") {
            pending.clear();
        } else if names_litellm_error(line) || FAILURES.iter().any(|w| line.contains(w)) {
            if pending.len() == 4 {
                pending.remove(0);
            }
            pending.push(line.to_string());
        }
    }
    (!pending.is_empty()).then(|| pending.join(" "))
}

/// `litellm.RateLimitError: …`, `litellm.exceptions.Timeout`: a litellm exception's name.
fn names_litellm_error(line: &str) -> bool {
    line.match_indices("litellm.").any(|(at, m)| {
        let name: String = line[at + m.len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
            .collect();
        let last = name.rsplit('.').next().unwrap_or("");
        last.ends_with("Error") || last.ends_with("Exception") || last == "Timeout"
    })
}
