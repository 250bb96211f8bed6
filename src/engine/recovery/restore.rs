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

use crate::git::{MainRepo, branch_for};
use crate::plan::{LAST_GOOD_FILE, Plan, Status, parse_plan};
use crate::store::Event;

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
    events: &[Event],
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
        .rposition(|e| matches!(e, Event::PlanReset(_)))
        .map(|i| i + 1)
        .unwrap_or(0);
    let (at, snapshot) = events[reset..]
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, e)| match e {
            Event::PlanSnapshot(s) if s.plan.is_object() => Some((reset + i, &s.plan)),
            _ => None,
        })?;
    let bytes = serde_json::to_vec(snapshot).ok()?;
    let mut plan = parse_plan(Path::new("journal plan snapshot"), &bytes).ok()?;
    if replay_status_changes(&mut plan, &events[at + 1..]) {
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
        // Not a transition: the record is rebuilt from git, whatever the snapshot said.
        plan.chunk_mut(pos).set_status(Status::Completed);
    }
    Some((plan, Source::Commits))
}

/// Set each chunk to the status the journal's status changes (`chunk_status`, from
/// `policy::transition`) last gave it. Not a transition itself: the journal records the
/// outcome of each, which is replayed as it is. Whether there was any change to replay.
pub fn replay_status_changes(plan: &mut Plan, events: &[Event]) -> bool {
    let mut any = false;
    for event in events {
        if let Event::ChunkStatus(e) = event {
            any = true;
            if let Some(pos) = plan.find_chunk(&e.chunk) {
                plan.chunk_mut(pos).set_status(e.change.to);
            }
        }
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_sets_each_chunk_to_its_last_journaled_status() {
        let mut plan = parse_plan(
            Path::new("p"),
            br#"{"phases":[{"id":"1","chunks":[
                {"id":"a","description":"a","status":"pending"},
                {"id":"b","description":"b","status":"pending"}]}]}"#,
        )
        .unwrap();
        let line = |chunk: &str, from: &str, to: &str| -> Event {
            serde_json::from_value(serde_json::json!(
                {"event": "chunk_status", "chunk": chunk, "from": from, "to": to}
            ))
            .unwrap()
        };
        assert!(!replay_status_changes(&mut plan, &[]));
        let events = [
            line("a", "pending", "in_progress"),
            line("a", "in_progress", "completed"),
            // A person's `runner chunk fail` on a pending chunk.
            line("b", "pending", "failed"),
            // A chunk the plan does not have changes nothing.
            line("zz", "pending", "completed"),
        ];
        assert!(replay_status_changes(&mut plan, &events));
        let statuses: Vec<Status> = plan.chunks().map(|c| c.status).collect();
        assert_eq!(statuses, [Status::Completed, Status::Failed]);
    }
}
