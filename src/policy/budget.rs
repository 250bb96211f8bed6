//! The spec's money and token budget (`[budget] max_usd`, `max_tokens`, `run --max-usd`):
//! what the ledger says was spent, what is left before a session, and the words of the stop.
//!
//! The ledger is the plan's attempt records (`cost_usd`, `tokens`; one session each) plus the
//! planner's sessions (`planner_ledger.json` in the spec folder). Those are files an agent can
//! edit, so a run never believes less than it saw itself: the spent figure is, field by field,
//! the larger of what the files say now and what they said at the run's start plus every
//! report this run read (`Spent::at_least`). Values are cleaned as they are read
//! (`clean_usd`): a negative, non-finite or non-number cost counts as nothing.

/// The budget of one spec; `None`: no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Budget {
    pub max_usd: Option<f64>,
    pub max_tokens: Option<u64>,
}

impl Budget {
    pub fn is_set(&self) -> bool {
        self.max_usd.is_some() || self.max_tokens.is_some()
    }
}

pub use crate::plan::session_facts::{Spent, clean_usd};

/// Below a cent nothing can be started: claude takes whole cents (`--max-budget-usd` is
/// rounded down), and a session costs more than that.
pub const MIN_USD: f64 = 0.01;

/// May another session start, and with how many dollars?
#[derive(Debug, Clone, PartialEq)]
pub enum Allowance {
    /// Yes; `usd_left` is what claude gets as `--max-budget-usd` (`None`: no dollar limit).
    Go { usd_left: Option<f64> },
    /// No: the budget is spent; the words say which part.
    Spent(String),
}

/// Before each session (planner or coder): what is left of `budget` after `spent`. A session
/// that starts with a little left may overshoot it (an agent stops between its own calls, and
/// an agent without a dollar limit of its own is only stopped between sessions); the next one
/// is then not started.
pub fn allowance(budget: &Budget, spent: &Spent) -> Allowance {
    if let Some(max) = budget.max_tokens
        && spent.tokens >= max
    {
        return Allowance::Spent(format!(
            "{} of budget.max_tokens {max} {} spent",
            crate::text::count(spent.tokens, "token"),
            if spent.tokens == 1 { "is" } else { "are" }
        ));
    }
    let usd_left = budget.max_usd.map(|max| {
        // Micro-dollars: 0.12 - 0.05 - 0.05 is 0.02, not 0.019999….
        ((clean_usd(max) - spent.usd) * 1e6).round() / 1e6
    });
    match (budget.max_usd, usd_left) {
        (Some(max), Some(left)) if left < MIN_USD => Allowance::Spent(format!(
            "${} of the ${} budget (budget.max_usd or --max-usd) are spent{}",
            dollars(spent.usd),
            dollars(max),
            if left > 0.0 {
                format!("; the ${} left is less than a cent", dollars(left))
            } else {
                String::new()
            }
        )),
        _ => Allowance::Go { usd_left },
    }
}

/// Dollars for people: four decimals at most, no trailing zeros past the cents.
pub fn dollars(usd: f64) -> String {
    let text = format!("{:.4}", clean_usd(usd));
    let trimmed = text.trim_end_matches('0');
    match trimmed.split_once('.') {
        Some((_, cents)) if cents.len() < 2 => {
            format!("{}{}", trimmed, "0".repeat(2 - cents.len()))
        }
        _ => trimmed.to_string(),
    }
}

/// One line of "what was spent on what": a chunk's sessions, or (`chunk` `None`) the
/// planner's.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub chunk: Option<String>,
    pub spent: Spent,
}

impl Item {
    /// `planner` or `chunk <id>`.
    pub fn label(&self) -> String {
        match &self.chunk {
            Some(id) => format!("chunk {id}"),
            None => "planner".to_string(),
        }
    }
}

/// The top `top` items by dollars then tokens, one line each, and a line for the rest.
pub fn spending_lines(items: &[Item], top: usize) -> Vec<String> {
    let mut sorted: Vec<&Item> = items.iter().filter(|i| i.spent.sessions > 0).collect();
    sorted.sort_by(|a, b| {
        b.spent
            .usd
            .total_cmp(&a.spent.usd)
            .then(b.spent.tokens.cmp(&a.spent.tokens))
    });
    let line = |what: &str, s: &Spent| {
        format!(
            "{what}: ${}, {}, {}",
            dollars(s.usd),
            crate::text::count(s.tokens, "token"),
            crate::text::count(s.sessions, "session")
        )
    };
    let mut lines: Vec<String> = sorted
        .iter()
        .take(top)
        .map(|i| line(&i.label(), &i.spent))
        .collect();
    if sorted.len() > top {
        let mut rest = Spent::default();
        for i in &sorted[top..] {
            rest.add(&i.spent);
        }
        lines.push(line(&format!("{} more", sorted.len() - top), &rest));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spent(usd: f64, tokens: u64) -> Spent {
        Spent {
            usd,
            tokens,
            sessions: 1,
        }
    }

    #[test]
    fn no_budget_always_goes_without_a_dollar_limit() {
        let b = Budget::default();
        assert_eq!(
            allowance(&b, &spent(1e9, u64::MAX)),
            Allowance::Go { usd_left: None }
        );
    }

    #[test]
    fn dollars_left_decrease_and_stop_below_a_cent() {
        let b = Budget {
            max_usd: Some(0.12),
            max_tokens: None,
        };
        let mut s = Spent::default();
        let mut lefts = Vec::new();
        loop {
            match allowance(&b, &s) {
                Allowance::Go { usd_left } => lefts.push(usd_left.unwrap()),
                Allowance::Spent(why) => {
                    assert!(why.contains("$0.12 of the $0.12"), "{why}");
                    break;
                }
            }
            s.add(&Spent::session(
                Some(0.05_f64.min(*lefts.last().unwrap())),
                0,
            ));
        }
        assert_eq!(lefts, [0.12, 0.07, 0.02]);
        // An overshoot is counted, and nothing more starts.
        let over = spent(0.30, 0);
        assert!(matches!(allowance(&b, &over), Allowance::Spent(_)));
        // Less than a cent left: spent, and the words say so.
        let Allowance::Spent(why) = allowance(&b, &spent(0.115, 0)) else {
            panic!()
        };
        assert!(why.contains("less than a cent"), "{why}");
    }

    #[test]
    fn a_zero_budget_starts_nothing() {
        let b = Budget {
            max_usd: Some(0.0),
            max_tokens: Some(0),
        };
        assert!(matches!(
            allowance(&b, &Spent::default()),
            Allowance::Spent(_)
        ));
        let b = Budget {
            max_usd: Some(0.0),
            max_tokens: None,
        };
        assert!(matches!(
            allowance(&b, &Spent::default()),
            Allowance::Spent(_)
        ));
    }

    #[test]
    fn tokens_stop_between_sessions() {
        let b = Budget {
            max_usd: Some(10.0),
            max_tokens: Some(3000),
        };
        assert_eq!(
            allowance(&b, &spent(0.0, 2999)),
            Allowance::Go {
                usd_left: Some(10.0)
            }
        );
        let Allowance::Spent(why) = allowance(&b, &spent(0.0, 3000)) else {
            panic!()
        };
        assert!(why.contains("3000 tokens"), "{why}");
    }

    #[test]
    fn garbage_costs_count_as_nothing_and_never_lower_what_was_seen() {
        assert_eq!(clean_usd(-5.0), 0.0);
        assert_eq!(clean_usd(f64::NAN), 0.0);
        assert_eq!(clean_usd(f64::INFINITY), 0.0);
        assert_eq!(Spent::session(Some(-1.0), 5).usd, 0.0);
        let mut huge = spent(f64::MAX, u64::MAX);
        huge.add(&spent(f64::MAX, 1));
        assert_eq!(huge.tokens, u64::MAX);
        assert_eq!(huge.usd, f64::MAX, "an overflow stays the largest figure");
        // An edited ledger (lowered) does not lower the run's floor.
        let now = spent(0.01, 10);
        let floor = spent(0.10, 500);
        assert_eq!(now.at_least(&floor), floor);
    }

    #[test]
    fn the_spending_lines_name_the_biggest_first() {
        let items = vec![
            Item {
                chunk: None,
                spent: spent(0.05, 100),
            },
            Item {
                chunk: Some("a".into()),
                spent: Spent {
                    usd: 0.10,
                    tokens: 200,
                    sessions: 2,
                },
            },
            Item {
                chunk: Some("b".into()),
                spent: spent(0.01, 5),
            },
            Item {
                chunk: Some("c".into()),
                spent: Spent::default(),
            },
        ];
        let lines = spending_lines(&items, 2);
        assert_eq!(
            lines,
            [
                "chunk a: $0.10, 200 tokens, 2 sessions",
                "planner: $0.05, 100 tokens, 1 session",
                "1 more: $0.01, 5 tokens, 1 session",
            ]
        );
        assert_eq!(dollars(0.123456), "0.1235");
        assert_eq!(dollars(2.0), "2.00");
    }
}
