//! The cost ledger: what each chunk's sessions cost (its attempt records in the plan, one
//! session each: `cost_usd`, `tokens`) and what the planner's sessions cost. The planner has no
//! attempt records and its first sessions run before there is a plan, so its figures are kept
//! in `planner_ledger.json` in the spec folder (written atomically after each planner session:
//! `{"sessions": N, "cost_usd": X, "tokens": T}`). The journal's `session_end` reports are the
//! advisory copy of both.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::plan::{Attempt, Plan};
use crate::policy::budget::{Item, Spent, clean_usd};

pub const PLANNER_LEDGER: &str = "planner_ledger.json";

/// A ledger file larger than this is not one runner wrote: it reads as nothing.
const MAX_LEDGER_BYTES: u64 = 4096;

#[derive(Debug, Default, Serialize, Deserialize)]
struct PlannerLedger {
    #[serde(default)]
    sessions: u64,
    #[serde(default)]
    cost_usd: f64,
    #[serde(default)]
    tokens: u64,
}

/// What the planner's sessions of the spec in `spec_dir` cost (nothing without a readable
/// ledger: a missing, oversized, non-JSON or hostile file counts as nothing spent, and the run
/// that sees it keeps its own floor, see `policy::budget`).
pub fn planner(spec_dir: &Path) -> Spent {
    let path = spec_dir.join(PLANNER_LEDGER);
    let Ok(file) = super::safe::open_read(&path) else {
        return Spent::default();
    };
    // Read from the one open file, never more than the limit (a file swapped in after a size
    // check by path could be any size).
    let mut bytes = Vec::new();
    let read = std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_LEDGER_BYTES + 1),
        &mut bytes,
    );
    if read.is_err() || bytes.len() as u64 > MAX_LEDGER_BYTES {
        return Spent::default();
    }
    let ledger: PlannerLedger = serde_json::from_slice(&bytes).unwrap_or_default();
    Spent {
        usd: clean_usd(ledger.cost_usd),
        tokens: ledger.tokens,
        sessions: ledger.sessions,
    }
}

/// Add one planner session's figures to the spec's planner ledger (atomic and durable).
pub fn add_planner(spec_dir: &Path, session: &Spent) -> std::io::Result<()> {
    let mut total = planner(spec_dir);
    total.add(session);
    let ledger = PlannerLedger {
        sessions: total.sessions,
        cost_usd: total.usd,
        tokens: total.tokens,
    };
    let bytes = serde_json::to_vec_pretty(&ledger).map_err(std::io::Error::other)?;
    super::atomic::write_atomic(&spec_dir.join(PLANNER_LEDGER), &bytes)
}

/// One attempt's session as the ledger counts it.
pub fn attempt(a: &Attempt) -> Spent {
    Spent::session(a.cost_usd().map(|(usd, _)| usd), a.tokens().total())
}

/// What was spent on what: the planner, then each chunk with attempt records, in plan order.
pub fn items(plan: Option<&Plan>, planner: Spent) -> Vec<Item> {
    let mut items = vec![Item {
        chunk: None,
        spent: planner,
    }];
    for chunk in plan.into_iter().flat_map(Plan::chunks) {
        let mut spent = Spent::default();
        for a in chunk.attempts() {
            spent.add(&attempt(&a));
        }
        if spent.sessions > 0 {
            items.push(Item {
                chunk: Some(chunk.id.clone()),
                spent,
            });
        }
    }
    items
}

/// The sum of `items`.
pub fn total(items: &[Item]) -> Spent {
    let mut sum = Spent::default();
    for i in items {
        sum.add(&i.spent);
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_planner_ledger_adds_up_and_garbage_reads_as_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(planner(dir.path()), Spent::default());
        add_planner(dir.path(), &Spent::session(Some(0.05), 100)).unwrap();
        add_planner(dir.path(), &Spent::session(Some(0.05), 100)).unwrap();
        let s = planner(dir.path());
        assert_eq!((s.sessions, s.tokens), (2, 200));
        assert!((s.usd - 0.10).abs() < 1e-12);
        let path = dir.path().join(PLANNER_LEDGER);
        for garbage in [
            &b"{\"cost_usd\": \"lots\"}"[..],
            b"{\"cost_usd\": -3, \"sessions\": 1}",
            b"not json",
            &[b' '; 5000][..],
        ] {
            std::fs::write(&path, garbage).unwrap();
            assert_eq!(planner(dir.path()).usd, 0.0);
        }
        // Valid, but over the size limit: not read.
        let padded = format!("{{\"sessions\": 1, {}\"cost_usd\": 1.5}}", " ".repeat(5000));
        std::fs::write(&path, padded).unwrap();
        assert_eq!(planner(dir.path()), Spent::default());
    }
}
