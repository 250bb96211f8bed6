//! `runner recover`: put interrupted state right without running a coder, and report.

use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use super::run::{new_holder, recover_options};
use super::workspace::Workspace;
use crate::error::RunnerError;
use crate::git::Slot;
use crate::recovery::{SpecRecovery, recover_spec, repair};
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
}

pub fn recover(cwd: &Path, req: RecoverRequest) -> anyhow::Result<RecoverReport> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(recover_async(cwd, req))
}

async fn recover_async(cwd: &Path, req: RecoverRequest) -> anyhow::Result<RecoverReport> {
    let ws = Workspace::open(cwd)?;
    let config = ws.config()?;
    let names = match &req.spec {
        Some(q) => vec![crate::spec::resolve(&ws.specs_dir, q)?],
        None => crate::spec::list(&ws.specs_dir),
    };
    let opts = recover_options(
        &ws,
        &config,
        &config.agent.command,
        req.dry_run,
        req.retry_failed,
    );

    let mut slots = Vec::new();
    for slot in Slot::all(&ws.main) {
        // A slot in use by a live run is that run's business.
        let Some(_slot_lock) = FileLock::try_acquire(&ws.slot_lock(&slot.name))? else {
            continue;
        };
        if let Some(r) = repair::repair_slot(&ws.main, &slot, req.dry_run)? {
            slots.push(r.describe());
        }
    }

    let run_id = format!("recover-{}-{}", crate::clock::stamp(), std::process::id());
    let holder = new_holder(&run_id, None);
    let mut specs = Vec::new();
    for name in names {
        let paths = ws.spec(&name);
        let Some(lock) = FileLock::try_acquire(&paths.run_lock)? else {
            if req.spec.is_some() {
                return Err(RunnerError::Busy(format!(
                    "spec {name} is being run or recovered: {}",
                    super::run::describe_holder(&paths.run_lock)
                ))
                .into());
            }
            specs.push(SpecRecovery {
                spec: name,
                outcome: "busy".into(),
                ..SpecRecovery::default()
            });
            continue;
        };
        lock.write_holder(&crate::store::Holder {
            spec: Some(name.clone()),
            ..holder.clone()
        })?;
        // The worktree holding the spec may be changed (commit, snapshot): hold its slot too.
        let slot_lock = match crate::git::slot_holding(&ws.main, &crate::git::branch_for(&name)) {
            Some(slot) => match FileLock::try_acquire(&ws.slot_lock(&slot.name))? {
                Some(l) => Some(l),
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
        specs.push(recover_spec(&ws, &paths, &journal, &opts).await?);
        drop(slot_lock);
    }
    Ok(RecoverReport {
        dry_run: req.dry_run,
        slots,
        specs,
    })
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
            _ => {
                out.push_str(&format!(
                    "{}: {}{}\n",
                    spec.spec,
                    would,
                    spec.outcome.replace('_', " ")
                ));
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
