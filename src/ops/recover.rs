//! `runner recover`: put interrupted state right without running a coder, and report.

use std::path::Path;

use serde::Serialize;

use crate::engine::recovery::{SpecRecovery, recover_spec, repair};
use crate::engine::run::recover_options;
use crate::error::RunnerError;
use crate::git::Slot;
use crate::store::guard::{self, Patience, new_holder};
use crate::store::workspace::Workspace;
use crate::store::{FileLock, Journal};

#[derive(Debug, Clone, Default)]
pub struct RecoverRequest {
    pub spec: Option<String>,
    pub dry_run: bool,
    pub retry_failed: bool,
}

#[derive(Debug, Serialize)]
pub struct RecoverReport {
    pub dry_run: bool,
    /// Repairs of worktree slots (not tied to one spec).
    pub slots: Vec<String>,
    pub specs: Vec<SpecRecovery>,
}

impl RecoverReport {
    pub fn needs_human(&self) -> bool {
        self.specs.iter().any(SpecRecovery::needs_human)
    }

    /// A spec whose plan or folder runner could not work with (exit 2; the why is on stderr).
    pub fn has_invalid_plan(&self) -> bool {
        self.specs
            .iter()
            .any(|s| s.outcome == "invalid_plan" || s.outcome == "refused")
    }
}

pub fn recover(cwd: &Path, req: RecoverRequest) -> anyhow::Result<RecoverReport> {
    crate::engine::block_on(recover_async(cwd, req))
}

async fn recover_async(cwd: &Path, req: RecoverRequest) -> anyhow::Result<RecoverReport> {
    let ws = Workspace::open(cwd)?;
    let config = ws.config()?;
    let names = match &req.spec {
        Some(q) => vec![crate::store::spec::resolve(&ws.specs_dir, q)?],
        None => crate::store::spec::list(&ws.specs_dir),
    };
    let mut opts = recover_options(
        &ws,
        &config,
        &config.agent.command,
        req.dry_run,
        req.retry_failed,
    );
    opts.interrupt = crate::agent::Interrupt::install()?;

    let run_id = crate::store::ids::run_id();
    // Interrupted merges, discards and undos first: they know what their half-done slots are.
    let mut lifecycle =
        crate::engine::recovery::lifecycle::finish_all(&ws, &names, &run_id, req.dry_run)?;
    let mut slots = Vec::new();
    for slot in Slot::all(&ws.main) {
        // A slot in use by a live run is that run's business.
        let Some(_slot_lock) = guard::try_take(&ws.slot_lock(&slot.name), Patience::Once)? else {
            continue;
        };
        let creating = ws.slot_create_marker(&slot.name);
        if let Some(what) = repair::unfinished_creation(&ws.main, &slot, &creating, req.dry_run)? {
            slots.push(what);
        }
        if let Some(r) = repair::repair_slot(&ws.main, &slot, req.dry_run)? {
            slots.push(r.describe());
        }
        let marker = ws.slot_switch_marker(&slot.name);
        if marker.exists() && matches!(slot.inspect(&ws.main), crate::git::SlotState::Ready { .. })
        {
            if req.dry_run {
                slots.push(format!(
                    "{}: an interrupted switch would be finished",
                    slot.path.display()
                ));
            } else if let Some(to) = slot.finish_interrupted_switch(&ws.main, &marker)? {
                slots.push(format!(
                    "{}: finished an interrupted switch to {to}",
                    slot.path.display()
                ));
            }
        }
    }

    let holder = new_holder(&run_id, None);
    let mut specs = Vec::new();
    for name in names {
        let paths = match ws.spec(&name) {
            Ok(paths) => paths,
            // With several specs, one whose folder links outside the repository is refused
            // and the others are recovered.
            Err(e) if req.spec.is_none() => {
                specs.push(SpecRecovery {
                    spec: name,
                    outcome: "refused".into(),
                    actions: vec![crate::engine::recovery::Action {
                        kind: "refused".into(),
                        chunk: None,
                        decision: None,
                        detail: e.to_string(),
                        if_verification: None,
                    }],
                    plan_source: None,
                });
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let Some(lock) = acquire(&paths.run_lock, req.spec.is_some())? else {
            if req.spec.is_some() {
                return Err(guard::busy(
                    &paths.run_lock,
                    &format!("spec {name} is being run or recovered"),
                ));
            }
            specs.push(SpecRecovery {
                spec: name,
                outcome: "busy".into(),
                ..SpecRecovery::default()
            });
            continue;
        };
        // A dry run only looks: it lets go of the lock it just proved free, so a run starting
        // meanwhile is never turned away (exit 4) by it, and the holder record stays the last
        // run's.
        let _lock = if req.dry_run {
            drop(lock);
            None
        } else {
            lock.write_holder(&crate::store::Holder {
                spec: Some(name.clone()),
                ..holder.clone()
            })?;
            Some(lock)
        };
        // The worktree holding the spec may be changed (commit, snapshot): hold its slot too.
        let slot_lock = match crate::git::slot_holding(&ws.main, &crate::git::branch_for(&name)) {
            Some(slot) => match acquire(&ws.slot_lock(&slot.name), req.spec.is_some())? {
                Some(_) if req.dry_run => None,
                Some(l) => Some(l),
                None if req.spec.is_some() => {
                    return Err(RunnerError::Busy(format!(
                        "the worktree of spec {name} ({}) is in use by a run of another spec",
                        slot.path.display()
                    ))
                    .into());
                }
                None => {
                    specs.push(SpecRecovery {
                        spec: name,
                        outcome: "busy".into(),
                        ..SpecRecovery::default()
                    });
                    continue;
                }
            },
            None => None,
        };
        let journal = Journal::new(&paths.dir, &run_id);
        match recover_spec(&ws, &paths, &journal, &opts).await {
            Ok(mut r) => {
                if let Some(action) = lifecycle.remove(&name) {
                    crate::engine::recovery::lifecycle::add_to_report(&mut r, action);
                }
                specs.push(r)
            }
            // With several specs, one plan that cannot be restored does not stop the others.
            Err(e)
                if req.spec.is_none()
                    && crate::error::exit_code_of(&e) == crate::error::exit::BAD_INPUT =>
            {
                specs.push(SpecRecovery {
                    spec: name,
                    outcome: "invalid_plan".into(),
                    actions: vec![crate::engine::recovery::Action {
                        kind: "invalid_plan".into(),
                        chunk: None,
                        detail: format!("{e:#}"),
                        ..Default::default()
                    }],
                    plan_source: None,
                });
            }
            Err(e) => return Err(e),
        }
        drop(slot_lock);
    }
    Ok(RecoverReport {
        dry_run: req.dry_run,
        slots,
        specs,
    })
}

/// A single `--spec`, where busy means exit 4, waits a moment first: another `recover` or a
/// `status` probe holds these locks only for an instant, and two recovers that each met the
/// other's instant must not both give up.
fn acquire(path: &Path, patient: bool) -> std::io::Result<Option<FileLock>> {
    guard::try_take(
        path,
        if patient {
            Patience::Moment
        } else {
            Patience::Once
        },
    )
}

/// The human form of the report.
pub fn render(report: &RecoverReport) -> String {
    let mut out = String::new();
    let would = if report.dry_run { "would be " } else { "" };
    for s in &report.slots {
        out.push_str(&format!("slot: {s}\n"));
    }
    for spec in &report.specs {
        match spec.outcome.as_str() {
            "clean" => continue,
            "busy" => out.push_str(&format!("{}: skipped, a runner holds it\n", spec.spec)),
            "invalid_plan" => out.push_str(&format!(
                "{}: its plan is invalid and runner has no copy to restore it from (the error is on stderr)\n",
                spec.spec
            )),
            "refused" => out.push_str(&format!(
                "{}: not recovered: runner will not work in its folder (the error is on stderr)\n",
                spec.spec
            )),
            _ => {
                let what = match (spec.outcome.as_str(), report.dry_run) {
                    ("needs_human", true) => "would need a person".to_string(),
                    ("needs_human", false) => "needs a person".to_string(),
                    (o, _) => format!("{would}{}", o.replace('_', " ")),
                };
                out.push_str(&format!("{}: {what}\n", spec.spec));
                for a in &spec.actions {
                    out.push_str(&format!("  - {}\n", a.line()));
                }
            }
        }
    }
    if out.is_empty() {
        out.push_str("Nothing to recover.\n");
    }
    out
}
