//! What an agent session said about itself, as the plan keeps it with each attempt (and the
//! journal and ledger with each session): tokens, dollars, the agent's own session id, a usage
//! limit, its error. Plain data; the parsers that fill it in from a CLI's output are
//! `agent::output`'s.

use chrono::{DateTime, Utc};
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
pub struct SessionFacts {
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

impl SessionFacts {
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

    /// [`SessionFacts::failure`], else the CLI's [`SessionFacts::last_words`].
    pub fn said(&self) -> Option<String> {
        self.failure().or_else(|| self.last_words.clone())
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

/// What was spent: dollars (as reported, or computed), tokens, sessions.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Spent {
    pub usd: f64,
    pub tokens: u64,
    pub sessions: u64,
}

impl Spent {
    /// One session's figures, cleaned.
    pub fn session(usd: Option<f64>, tokens: u64) -> Spent {
        Spent {
            usd: usd.map_or(0.0, clean_usd),
            tokens,
            sessions: 1,
        }
    }

    pub fn add(&mut self, other: &Spent) {
        // Two huge figures stay huge (an overflow to infinity must not clean to nothing).
        let sum = clean_usd(self.usd) + clean_usd(other.usd);
        self.usd = if sum.is_finite() { sum } else { f64::MAX };
        self.tokens = self.tokens.saturating_add(other.tokens);
        self.sessions = self.sessions.saturating_add(other.sessions);
    }

    /// Field by field the larger of the two: what the ledger says now, and what it said at
    /// the run's start plus what this run saw (an edit cannot lower a run's spending).
    pub fn at_least(&self, floor: &Spent) -> Spent {
        Spent {
            usd: self.usd.max(floor.usd),
            tokens: self.tokens.max(floor.tokens),
            sessions: self.sessions.max(floor.sessions),
        }
    }
}

/// A cost as the ledger counts it: a negative, NaN or infinite figure is nothing (an agent's
/// garbage must not give it more budget: `Spent::at_least` keeps what runner saw).
pub fn clean_usd(usd: f64) -> f64 {
    if usd.is_finite() && usd > 0.0 {
        usd
    } else {
        0.0
    }
}
