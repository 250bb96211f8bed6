//! A plan that no longer parses is never overwritten in place. Recovery rebuilds it from the
//! best source it has, keeps the broken file as `implementation_plan.json.corrupt-<time>`, and
//! says which source it used:
//!
//! 1. `last_good`: the copy runner keeps beside the plan on every write;
//! 2. `journal`: the plan snapshot the journal records at each run start and plan acceptance,
//!    with the chunk status changes journaled after it replayed on top;
//! 3. `commits`: the same snapshot, with every chunk that has an `auto-claude: <chunk-id> - …`
//!    commit on the spec's branch marked completed (when the journal has no status changes).

use std::path::Path;

use serde_json::Value;

use crate::git::{MainRepo, branch_for};
use crate::plan::{LAST_GOOD_FILE, Plan, Status, parse_plan};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    LastGood,
    Journal,
    Commits,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::LastGood => "last_good",
            Source::Journal => "journal",
            Source::Commits => "commits",
        }
    }

    /// In words, for a report line.
    pub fn describe(self) -> &'static str {
        match self {
            Source::LastGood => "the last good copy",
            Source::Journal => "the journal",
            Source::Commits => "the journal's snapshot and the branch's commits",
        }
    }
}

/// The plan rebuilt from the best available source, or `None` if runner has no copy.
pub fn rebuild(
    spec_dir: &Path,
    spec: &str,
    events: &[Value],
    main: Option<&MainRepo>,
) -> Option<(Plan, Source)> {
    let last_good = spec_dir.join(LAST_GOOD_FILE);
    if let Ok(bytes) = crate::store::safe::read(&last_good)
        && let Ok(plan) = parse_plan(&last_good, &bytes)
    {
        return Some((plan, Source::LastGood));
    }
    // Snapshots from before the last plan reset belong to an earlier plan.
    let reset = events
        .iter()
        .rposition(|e| e["event"] == "plan_reset")
        .map(|i| i + 1)
        .unwrap_or(0);
    let at = reset
        + events[reset..]
            .iter()
            .rposition(|e| e["event"] == "plan_snapshot" && e["plan"].is_object())?;
    let bytes = serde_json::to_vec(&events[at]["plan"]).ok()?;
    let mut plan = parse_plan(Path::new("journal plan snapshot"), &bytes).ok()?;
    let changes: Vec<(&str, Status)> = events[at + 1..]
        .iter()
        .filter(|e| e["event"] == "chunk_status")
        .filter_map(|e| Some((e["chunk"].as_str()?, Status::parse(e["to"].as_str()?)?)))
        .collect();
    if !changes.is_empty() {
        for (id, status) in changes {
            if let Some(pos) = plan.find_chunk(id) {
                plan.chunk_mut(pos).set_status(status);
            }
        }
        return Some((plan, Source::Journal));
    }
    let main = main?;
    let tip = main.branch_tip(&branch_for(spec))?;
    let base = plan
        .str_field("base_branch")
        .and_then(|b| main.branch_tip(b));
    for message in crate::git::history::messages_since(&main.repo, tip, base, 100_000)? {
        // Matched against the plan's own ids: an id may hold the ` - ` that ends it.
        let Some(pos) = plan.chunk_of_commit(&message) else {
            continue;
        };
        plan.chunk_mut(pos).set_status(Status::Completed);
    }
    Some((plan, Source::Commits))
}
