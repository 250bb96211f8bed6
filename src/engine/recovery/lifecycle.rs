//! `runner recover`'s part in interrupted merges, discards and undos: every spec's intent
//! record looked at (on every core), each cut-off operation finished or rolled back by
//! `engine::lifecycle::intent`, and what was done added to the spec's recovery report.

use crate::engine::lifecycle::intent::*;
use crate::policy::outcome::RecoveryOutcome;
use crate::store::{Journal, SpecPaths, Workspace};

/// `runner recover`, before it repairs slots: finish or roll back every spec's interrupted
/// merge, discard or undo, each under the spec's run lock (a spec being run is skipped: its
/// holder finishes it). Returns one action per spec that had one; a cut-off operation that
/// needs a person gives a `lifecycle_needs_human` action, not an error.
pub fn finish_all(
    ws: &Workspace,
    opened: &[(&String, Option<&SpecPaths>)],
    run_id: &str,
    dry_run: bool,
) -> anyhow::Result<std::collections::BTreeMap<String, crate::engine::recovery::Action>> {
    let mut out = std::collections::BTreeMap::new();
    // Which specs have an intent file, asked on every core (most have none), of the specs as
    // the caller opened them. A spec folder refused (linked outside the repository: `None`) is
    // reported by the caller.
    let with_intent = crate::engine::recovery::quiet::on_every_core(opened, |(_, paths)| {
        paths.is_some_and(|paths| intent_path(paths).symlink_metadata().is_ok())
    });
    for ((name, _), _) in opened.iter().zip(with_intent).filter(|(_, has)| *has) {
        let Ok(paths) = ws.spec(name) else {
            continue;
        };
        if intent_path(&paths).symlink_metadata().is_err() {
            continue;
        }
        let Some(_lock) = crate::store::FileLock::try_acquire(&paths.run_lock)? else {
            continue;
        };
        let journal = Journal::new(&paths.dir, run_id);
        let (kind, detail) = match finish_interrupted(ws, &paths, &journal, dry_run) {
            Ok(Some(done)) => ("lifecycle", done.message),
            Ok(None) => continue,
            Err(e) if crate::error::exit_code_of(&e) == crate::error::exit::NEEDS_HUMAN => {
                ("lifecycle_needs_human", format!("{e:#}"))
            }
            Err(e) if crate::error::exit_code_of(&e) == crate::error::exit::BUSY => {
                ("lifecycle_busy", format!("{e:#}"))
            }
            // One spec's failure is reported with it; the others are still recovered.
            Err(e) => (
                "lifecycle_needs_human",
                format!(
                    "finishing its interrupted {} failed: {e:#}. Fix that, then `runner recover --spec {}` tries again",
                    load(&paths)
                        .ok()
                        .flatten()
                        .map_or("operation", |i| op_name(i.op)),
                    crate::sh(name)
                ),
            ),
        };
        out.insert(
            (*name).clone(),
            crate::engine::recovery::Action {
                kind: kind.into(),
                chunk: None,
                decision: None,
                detail,
                if_verification: None,
            },
        );
    }
    Ok(out)
}

/// Put `action` (from `finish_all`) first in the spec's report.
pub fn add_to_report(
    report: &mut crate::engine::recovery::SpecRecovery,
    action: crate::engine::recovery::Action,
) {
    if action.kind == "lifecycle_needs_human" {
        report.outcome = RecoveryOutcome::NeedsHuman;
    } else if action.kind == "lifecycle_busy" {
        report.outcome = RecoveryOutcome::Busy;
    } else if report.outcome == RecoveryOutcome::Clean {
        report.outcome = RecoveryOutcome::Recovered;
    }
    report.actions.insert(0, action);
}
