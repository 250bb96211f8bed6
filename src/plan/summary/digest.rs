//! What `runner status` and the quiet check of `runner recover --all` read of a plan the light
//! read answered for: the counts per status, the chunk in progress and the next one, the
//! warnings, `merged`, and each completed chunk's recorded commit. Small enough to be kept in
//! the status cache (`store::status_cache`) and read back instead of the plan.

use serde_json::{Map, Value, json};

use super::PlanSummary;
use crate::plan::model::{Chunk, Phase, PhaseKey, Plan, PlanShape};
use crate::plan::{Status, next_chunk_id};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Digest {
    /// Chunks per status, in the order of `Status::ALL`.
    pub counts: [u32; 5],
    /// The first chunk in progress, in file order.
    pub current_chunk: Option<String>,
    /// The chunk a run would take next (`next_chunk_id`).
    pub next_chunk: Option<String>,
    pub warnings: Vec<String>,
    pub merged: bool,
    /// Each completed chunk with a recorded commit, in file order: (chunk id, commit).
    pub recorded: Vec<(String, String)>,
    /// runner's mark of a run stopped by the spec's budget (`budget_exhausted`).
    pub exhausted: bool,
    /// The attempt records summed as the cost ledger counts them (`PlanSummary::spent`).
    pub spent: crate::plan::session_facts::Spent,
}

impl Digest {
    /// The digest of a plan the light read answered for.
    pub fn of(summary: &PlanSummary) -> Digest {
        Digest {
            spent: summary.spent(),
            ..Digest::of_plan(summary.plan())
        }
    }

    fn of_plan(plan: &Plan) -> Digest {
        let mut counts = [0u32; 5];
        for chunk in plan.chunks() {
            counts[index(chunk.status)] += 1;
        }
        Digest {
            counts,
            current_chunk: plan
                .chunks()
                .find(|c| c.status == Status::InProgress)
                .map(|c| c.id.clone()),
            next_chunk: next_chunk_id(plan).map(str::to_string),
            warnings: plan.warnings.clone(),
            merged: plan.raw.contains_key("merged"),
            exhausted: plan.raw.contains_key("budget_exhausted"),
            spent: Default::default(),
            recorded: plan
                .chunks()
                .filter(|c| c.status == Status::Completed)
                .filter_map(|c| Some((c.id.clone(), last_completed_commit(c)?)))
                .collect(),
        }
    }

    pub fn count(&self, status: Status) -> usize {
        self.counts[index(status)] as usize
    }

    pub fn total(&self) -> usize {
        self.counts.iter().map(|&n| n as usize).sum()
    }

    /// The plan as the history check (`integrity::history_facts`) reads it: the completed
    /// chunks with their recorded commits, in file order, and `merged`. Not the plan (no
    /// phases, no other chunk): never written, never shown.
    pub fn history_plan(&self) -> Plan {
        let chunks: Vec<Chunk> = self
            .recorded
            .iter()
            .map(|(id, commit)| {
                let attempts = json!([{"n": 1, "outcome": "completed", "commit": commit}]);
                let raw = Map::from_iter([("attempts".to_string(), attempts)]);
                Chunk::from_map(raw, id.clone(), Status::Completed)
            })
            .collect();
        let mut raw = Map::new();
        if self.merged {
            raw.insert("merged".into(), Value::Null);
        }
        Plan {
            raw,
            phases: vec![Phase {
                raw: Map::new(),
                key: PhaseKey::default(),
                depends_on: Vec::new(),
                chunks_key: Some("subtasks"),
                mirror_key: None,
                chunks: chunks.into(),
            }],
            shape: PlanShape::Phases,
            warnings: Vec::new(),
        }
    }
}

/// Where a status is counted in `Digest::counts`.
fn index(status: Status) -> usize {
    Status::ALL
        .iter()
        .position(|&s| s == status)
        .unwrap_or_default()
}

/// The commit of the last completed attempt, as the light read keeps it (and as
/// `integrity::recorded_commit` reads it from a full plan).
fn last_completed_commit(chunk: &Chunk) -> Option<String> {
    let Some(Value::Array(records)) = chunk.raw().get("attempts") else {
        return None;
    };
    records
        .iter()
        .rev()
        .find(|r| r.get("outcome").and_then(Value::as_str) == Some("completed"))
        .and_then(|r| r.get("commit")?.as_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_counts_and_keeps_the_recorded_commits() {
        let bytes = br#"{"phases": [{"id": "p1", "subtasks": [
            {"id": "a", "description": "a", "status": "completed",
             "attempts": [{"n": 1, "outcome": "completed", "commit": "c1"}]},
            {"id": "b", "description": "b", "status": "completed"},
            {"id": "c", "description": "c", "status": "in_progress"},
            {"id": "d", "description": "d", "status": "pending"},
            {"id": "e", "description": "e", "status": "failed"}]}], "merged": {"at": "x"}}"#;
        let summary = super::super::summarize(bytes).expect("the light read answers");
        let d = Digest::of(&summary);
        assert_eq!(d.count(Status::Completed), 2);
        assert_eq!(d.count(Status::InProgress), 1);
        assert_eq!(d.count(Status::Pending), 1);
        assert_eq!(d.count(Status::Failed), 1);
        assert_eq!(d.count(Status::Blocked), 0);
        assert_eq!(d.total(), 5);
        assert_eq!(d.current_chunk.as_deref(), Some("c"));
        assert!(d.merged);
        assert_eq!(d.recorded, vec![("a".to_string(), "c1".to_string())]);
        // The history plan gives the same digest of what the history check reads.
        let again = Digest::of_plan(&d.history_plan());
        assert_eq!(again.recorded, d.recorded);
        assert_eq!(again.merged, d.merged);
    }
}
