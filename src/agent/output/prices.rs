//! Known prices of models, for a session whose CLI died before it said what it cost: its
//! tokens (read from what it streamed) are priced here as the CLI itself would have priced
//! them, so that `--max-usd` still counts a session cut off by a crash.
//!
//! Claude's prices are the ones Claude Code 2.1.197 applies (per million tokens: input,
//! output, cache read, cache write of the 5-minute cache), matched on the model's name as it
//! matches them. Other CLIs report no dollars at all (codex, gemini) or price the session
//! themselves after it ends (aider): nothing here for them.

use super::Prices;

/// The prices of `model`, if it is one runner knows.
pub fn of(model: &str) -> Option<Prices> {
    let m = model.to_ascii_lowercase();
    let p = |input: f64, output: f64, cache_read: f64, cache_write: f64| Prices {
        input,
        output,
        cache_read,
        cache_write,
    };
    if !m.contains("claude") {
        return None;
    }
    // Opus 4.5 and later are priced lower than Opus 4 and 4.1.
    let new_opus = ["opus-4-5", "opus-4-6", "opus-4-7", "opus-4-8"];
    if new_opus.iter().any(|o| m.contains(o)) {
        return Some(p(5.0, 25.0, 0.5, 6.25));
    }
    if m.contains("opus") {
        return Some(p(15.0, 75.0, 1.5, 18.75));
    }
    if m.contains("sonnet") {
        return Some(p(3.0, 15.0, 0.3, 3.75));
    }
    if m.contains("haiku-4-5") {
        return Some(p(1.0, 5.0, 0.1, 1.25));
    }
    if m.contains("haiku") {
        return Some(p(0.8, 4.0, 0.08, 1.0));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::output::{Tokens, compute_cost};

    #[test]
    fn claude_models_are_priced_as_claude_code_prices_them() {
        let t = Tokens {
            input: 1000,
            output: 200,
            cache_read: 5000,
            cache_write: 300,
        };
        let usd = |m: &str| compute_cost(&t, &of(m).unwrap());
        // $3 / $15 / $0.30 / $3.75 per million.
        assert!(
            (usd("claude-sonnet-4-5-20250929") - (0.003 + 0.003 + 0.0015 + 0.001125)).abs() < 1e-9
        );
        assert!((usd("claude-opus-4-8[1m]") - (0.005 + 0.005 + 0.0025 + 0.001875)).abs() < 1e-9);
        assert!(
            (usd("claude-opus-4-1-20250805") - (0.015 + 0.015 + 0.0075 + 0.005625)).abs() < 1e-9
        );
        assert!((usd("claude-haiku-4-5") - (0.001 + 0.001 + 0.0005 + 0.000375)).abs() < 1e-9);
        assert_eq!(of("gpt-5.5"), None);
        assert_eq!(of("<synthetic>"), None);
    }
}
