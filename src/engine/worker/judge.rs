//! Where a published spec stands, read from its folder's commit without writing anything:
//! its plan (parsed by the one full parser) and its newest run records (a discard).

use crate::git::{Oid, Repository};
use crate::plan::Status;
use crate::policy::last_run::{LastRun, Record, Work};
use crate::policy::lease::{PlanFacts, Published};
use crate::store::runs::{RunKind, RunRecord};

/// A plan or a run record larger than this is not read (the published folder's own caps are
/// smaller; this only keeps a hostile commit from costing memory).
const MAX_FILE: usize = 64 * 1024 * 1024;

/// The plan's file name in a spec folder.
const PLAN: &str = "implementation_plan.json";

/// Where the spec whose folder was published as `folder` stands.
pub fn published(repo: &Repository, spec: &str, folder: Oid) -> Published {
    let top = crate::git::history::files_at(repo, folder, "", MAX_FILE);
    let plan = top.iter().find(|(name, _)| name == PLAN).map(|(_, bytes)| {
        let path = std::path::Path::new(PLAN);
        crate::plan::parse_plan(path, bytes)
            .map(|plan| PlanFacts {
                total: plan.total(),
                completed: plan.count(Status::Completed),
                failed: plan.count(Status::Failed),
                blocked: plan.count(Status::Blocked),
                merged: plan.raw.contains_key("merged"),
                exhausted: plan.raw.contains_key(crate::engine::run::EXHAUSTED_KEY),
            })
            .map_err(|e| e.to_string())
    });
    crate::policy::lease::published(plan, discarded(repo, spec, folder))
}

/// Whether the newest run records published say the spec's build was thrown away since its
/// last run (the rule `runner status` applies, over the records' own start times: a commit
/// keeps no file times).
fn discarded(repo: &Repository, spec: &str, folder: Oid) -> bool {
    let mut records: Vec<RunRecord> = crate::git::history::files_at(repo, folder, "runs", MAX_FILE)
        .into_iter()
        .filter(|(name, _)| name.ends_with(".json"))
        .filter_map(|(_, bytes)| serde_json::from_slice::<RunRecord>(&bytes).ok())
        // A record that names another spec is not this spec's (a copy, a forgery).
        .filter(|r| r.spec == spec)
        .collect();
    records.sort_by_key(|r| std::cmp::Reverse(r.started));
    let newest_first = records.into_iter().map(|r| Record {
        work: match r.kind {
            RunKind::Run => Work::Agent,
            RunKind::Recover => Work::Recover,
            RunKind::Merge | RunKind::Discard | RunKind::Undo => Work::Lifecycle,
        },
        ended: r.ended.is_some(),
        outcome: r.outcome,
    });
    crate::policy::last_run::last_run(newest_first) == LastRun::Discarded
}
