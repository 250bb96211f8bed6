//! What an agent CLI said about its session, read from its output: one pure parser per preset
//! (`claude`, `codex`, `gemini`, `aider`), each a function from the bytes the session printed
//! (and, for aider, its analytics log) to an [`AgentReport`].
//!
//! The parsers never fail and never panic: an unknown event type, a line that is not JSON, a
//! line cut in its middle by a capped log, a byte that is not UTF-8 are all skipped. They read
//! the output one line at a time and keep only the few fields they need, so the memory they use
//! is bounded by the longest line of the slice they are given. Where each event shape comes
//! from (repository, path, version) is written in `fixtures/agent-output/README.md`.

pub mod aider;
pub mod answer;
pub mod claude;
pub mod codex;
pub mod gemini;
pub mod prices;
pub mod read;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Where `cost_usd` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// The agent itself said how many dollars the session cost (for a subscription login this
    /// is a notional figure).
    Reported,
    /// runner computed it from the tokens and a known price of the model ([`compute_cost`]).
    Computed,
    /// Nobody knows.
    #[default]
    None,
}

/// Tokens a session used. `input` is the input billed at the full price: it does NOT include
/// `cache_read` (input served from the prompt cache) nor `cache_write` (input written to it),
/// whatever convention the agent's own figures use (OpenAI and Gemini count cached input inside
/// their input total; the parsers take it out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Tokens {
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }

    /// Field by field `self + other`, never past the largest count.
    pub fn plus(&self, other: &Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
            cache_read: self.cache_read.saturating_add(other.cache_read),
            cache_write: self.cache_write.saturating_add(other.cache_write),
        }
    }

    /// Field by field `self - earlier`, never below zero.
    pub fn since(&self, earlier: &Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_sub(earlier.input),
            output: self.output.saturating_sub(earlier.output),
            cache_read: self.cache_read.saturating_sub(earlier.cache_read),
            cache_write: self.cache_write.saturating_sub(earlier.cache_write),
        }
    }
}

/// The agent hit its usage limit (a subscription window, a quota). `resets_at` is when it says
/// the limit lifts; `None` when it did not say in a form that can be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UsageLimit {
    pub resets_at: Option<DateTime<Utc>>,
}

/// What one agent session said about itself.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AgentReport {
    /// The agent's own session id (claude's `session_id`, codex's `thread_id`, gemini's
    /// `session_id`): what `--resume` takes.
    pub agent_session_id: Option<String>,
    pub cost_usd: Option<f64>,
    pub cost_source: CostSource,
    /// Tokens of this session only.
    pub tokens: Tokens,
    pub model: Option<String>,
    pub turns: Option<u32>,
    pub usage_limit: Option<UsageLimit>,
    /// The agent says the session failed (its own words); `None` when it did not say so.
    pub error: Option<String>,
    /// codex only: the thread's running token total at the end of this session, for the caller
    /// to record and pass back as `previous_thread_total` when the thread is resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_total: Option<Tokens>,
    /// The agent stopped because it reached the dollar limit runner gave it (claude's result
    /// `subtype: "error_max_budget_usd"`): the spec's budget is spent, the attempt did not fail.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub budget_reached: bool,
    /// The CLI's own last lines of text (not its JSON events), kept when its session failed
    /// without an error its parser reads (a CLI that refuses to start: gemini's untrusted
    /// folder, a missing login): what the user is shown as the CLI's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_words: Option<String>,
}

impl AgentReport {
    /// The agent said the session did not succeed (an error, or a usage limit).
    pub fn failed(&self) -> bool {
        self.error.is_some() || self.usage_limit.is_some()
    }

    /// Why the agent's CLI says the session failed, in words; `None` when it did not say so.
    pub fn failure(&self) -> Option<String> {
        match (&self.error, self.usage_limit) {
            (Some(error), _) => Some(error.clone()),
            (
                None,
                Some(UsageLimit {
                    resets_at: Some(at),
                }),
            ) => Some(format!(
                "the agent hit its usage limit; it resets at {}",
                at.to_rfc3339()
            )),
            (None, Some(UsageLimit { resets_at: None })) => {
                Some("the agent hit its usage limit".to_string())
            }
            (None, None) => None,
        }
    }

    /// [`AgentReport::failure`], else the CLI's [`AgentReport::last_words`].
    pub fn said(&self) -> Option<String> {
        self.failure().or_else(|| self.last_words.clone())
    }

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

/// USD per million tokens of a model.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// The cost in USD of `tokens` at `prices` (the caller sets `cost_source = Computed`).
pub fn compute_cost(tokens: &Tokens, prices: &Prices) -> f64 {
    (tokens.input as f64 * prices.input
        + tokens.output as f64 * prices.output
        + tokens.cache_read as f64 * prices.cache_read
        + tokens.cache_write as f64 * prices.cache_write)
        / 1_000_000.0
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
