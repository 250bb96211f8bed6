//! Agents' reports in a plan just made the remote's (a spec a worker took). A report of "done"
//! describes the worktree where the agent ran: its commits reached the remote, what it left
//! uncommitted never did. Once this clone's branch is the published tip, a report whose work
//! runner had not committed before the publication speaks for nothing here; left standing,
//! recovery would complete the chunk with no commit of its work (a chunk lost, found by the
//! chaos proof). Such a report is withdrawn: the attempt reads as one that left nothing, and
//! the chunk is built again.

use serde_json::Value;

use crate::git::Oid;
use crate::git::history;
use crate::plan::Status;
use crate::store::workspace::{SpecPaths, Workspace};

/// Commits looked at since an attempt's start: runner's commit of the chunk is its last one.
const COMMITS_LOOKED_AT: usize = 1000;

/// What an attempt whose report was withdrawn says, in the plan (`report_withdrawn`).
const WITHDRAWN: &str = "taken from the remote: the work this attempt reported was not committed where it ran, so it was never published";

/// Withdraw the reports of `paths`' plan that the branch at `tip` (the published tip, now this
/// clone's) does not hold the work of (see the module); the chunks whose report was withdrawn.
/// A spec with no plan yet has none.
pub fn withdraw_unpublished(
    ws: &Workspace,
    paths: &SpecPaths,
    tip: Option<Oid>,
) -> anyhow::Result<Vec<String>> {
    if paths.plan.path().symlink_metadata().is_err() {
        return Ok(Vec::new());
    }
    let repo = &ws.main.repo;
    paths.plan.update_if(|plan| {
        let mut withdrawn = Vec::new();
        let positions: Vec<_> = plan.positions().collect();
        for pos in positions {
            let chunk = plan.chunk(pos);
            let Some(attempt) = chunk.last_attempt() else {
                continue;
            };
            let open_report = chunk.status == Status::InProgress
                && attempt.outcome.is_none()
                && attempt.reported.as_deref() == Some("done");
            if !open_report {
                continue;
            }
            let start = attempt
                .start_commit
                .as_deref()
                .and_then(crate::git::commit_id);
            let since_start = match (tip, start) {
                (Some(tip), Some(start))
                    if tip == start || history::strictly_descends(repo, tip, start) =>
                {
                    history::messages_since(repo, tip, Some(start), COMMITS_LOOKED_AT)
                }
                _ => None,
            };
            if crate::policy::recovery::report_survives_adoption(
                &chunk.commit_message(),
                since_start.as_deref(),
            ) {
                continue;
            }
            withdrawn.push(chunk.id.clone());
            plan.chunk_mut(pos).update_last_attempt(|a| {
                a.reported = None;
                a.extra
                    .insert("report_withdrawn".into(), Value::String(WITHDRAWN.into()));
            });
        }
        let changed = !withdrawn.is_empty();
        Ok((withdrawn, changed))
    })
}
