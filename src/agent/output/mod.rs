//! What an agent CLI said about its session, read from its output: one pure parser per preset
//! (`claude`, `codex`, `gemini`, `aider`), each a function from the bytes the session printed
//! (and, for aider, its analytics log) to an [`SessionFacts`].
//!
//! The parsers never fail and never panic: an unknown event type, a line that is not JSON, a
//! line cut in its middle by a capped log, a byte that is not UTF-8 are all skipped. They read
//! the output one line at a time and keep only the few fields they need, so the memory they use
//! is bounded by the longest line of the slice they are given. Where each event shape comes
//! from (repository, path, version) is written in `fixtures/agent-output/README.md`.

pub mod activity;
pub mod aider;
pub mod answer;
pub mod claude;
pub mod codex;
pub mod gemini;
pub mod prices;
pub mod read;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;

pub use crate::plan::session_facts::{
    CostSource, Prices, SessionFacts, Tokens, UsageLimit, compute_cost,
};

// The parsers' own ways of filling a report in (the report is the plan's data).
impl SessionFacts {
    /// Tokens of a session whose CLI said no cost (it was killed before its summary): the
    /// dollars computed at the model's known prices (`prices::of`), if any.
    pub fn set_tokens_priced(&mut self, tokens: Tokens) {
        self.tokens = tokens;
        if let Some(prices) = self.model.as_deref().and_then(prices::of) {
            self.cost_usd = Some(compute_cost(&tokens, &prices));
            self.cost_source = CostSource::Computed;
        }
    }

    fn set_error(&mut self, message: &str) {
        let message = message.trim();
        self.error = Some(if message.is_empty() {
            "the agent reported an error".to_string()
        } else {
            clip(message)
        });
    }

    /// Record a usage limit; a reset time already known is kept when this one has none.
    fn limit(&mut self, resets_at: Option<DateTime<Utc>>) {
        let known = self.usage_limit.and_then(|l| l.resets_at);
        self.usage_limit = Some(UsageLimit {
            resets_at: resets_at.or(known),
        });
    }
}

/// The longest error message a report keeps (an agent may print a novel as its error).
const MAX_ERROR: usize = 2000;

fn clip(text: &str) -> String {
    if text.len() <= MAX_ERROR {
        return text.to_string();
    }
    let mut end = MAX_ERROR;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Each line of `output` (without its `\n` and a trailing `\r`).
fn lines(output: &[u8]) -> impl Iterator<Item = &[u8]> {
    output
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
}

/// The line as an event of type `T`, or `None` for anything else (not JSON, cut short, not
/// UTF-8, not an object). Fields `T` does not name are skipped without being kept.
fn event<T: DeserializeOwned>(line: &[u8]) -> Option<T> {
    let start = line.iter().position(|b| !b.is_ascii_whitespace())?;
    if line[start] != b'{' {
        return None;
    }
    serde_json::from_slice(&line[start..]).ok()
}

/// A JSON value as a non-negative integer (a float is truncated; anything else is 0).
fn count(value: Option<&serde_json::Value>) -> u64 {
    match value {
        Some(v) => v
            .as_u64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .map(|f| f as u64)
            })
            .unwrap_or(0),
        None => 0,
    }
}

fn number(value: Option<&serde_json::Value>) -> Option<f64> {
    value?.as_f64().filter(|f| f.is_finite())
}

/// A JSON value as dollars spent: a negative figure is none (it would lower what a spec is
/// said to have spent).
fn dollars(value: Option<&serde_json::Value>) -> Option<f64> {
    number(value).filter(|usd| *usd >= 0.0)
}

/// The longest model name or session id a report keeps. A longer one is not a name (a broken
/// or hostile CLI): kept, it would be written on every attempt record of the plan, which is
/// rewritten whole at each step of a run, and in the journal.
const MAX_NAME: usize = 200;

/// A JSON string as a model name or a session id, if it can be one.
fn name(value: Option<&serde_json::Value>) -> Option<String> {
    text(value)
        .filter(|t| !t.is_empty() && t.len() <= MAX_NAME)
        .map(str::to_string)
}

fn text(value: Option<&serde_json::Value>) -> Option<&str> {
    value?.as_str()
}

/// A Unix time in seconds or milliseconds (agents print both): a value too large to be
/// seconds before the year 5000 is taken as milliseconds.
fn epoch(value: f64) -> Option<DateTime<Utc>> {
    if !value.is_finite() || value <= 0.0 {
        return None;
    }
    let millis = if value >= 1e11 { value } else { value * 1000.0 };
    if millis > 1e15 {
        return None;
    }
    DateTime::from_timestamp_millis(millis as i64)
}

/// `text` with ASCII letters lower-cased and the typographic apostrophe made plain, for
/// matching messages whose case and quotes vary between versions.
fn folded(text: &str) -> String {
    text.to_ascii_lowercase().replace('\u{2019}', "'")
}

#[cfg(test)]
mod recorded_tests;
#[cfg(test)]
mod tests;
