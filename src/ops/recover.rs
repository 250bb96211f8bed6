//! `runner recover`: put interrupted state right without running a coder, and report.

use crate::policy::outcome::RecoveryOutcome;
use std::path::Path;

use serde::Serialize;

use crate::engine::recovery::quiet::{QuietLook, on_every_core};
use crate::engine::recovery::{RecoverySettings, SpecRecovery, recover_spec, repair};
use crate::engine::run::recover_options;
use crate::error::RunnerError;
use crate::git::Slot;
use crate::store::guard::{self, Patience, new_holder};
use crate::store::workspace::{SpecPaths, Workspace};
use crate::store::{FileLock, Holder, Journal};

#[derive(Debug, Clone, Default)]
pub struct RecoverOptions {
    pub spec: Option<String>,
    pub dry_run: bool,
    pub retry_failed: bool,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
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
        self.specs.iter().any(|s| s.outcome.left_unusable())
    }
}

/// `runner recover`: every spec (or `spec`, named as `status --spec` names one: never asked).
pub fn recover(ctx: &super::Ctx, req: RecoverOptions) -> anyhow::Result<RecoverReport> {
    crate::engine::block_on(recover_async(ctx, req))
}

async fn recover_async(ctx: &super::Ctx, req: RecoverOptions) -> anyhow::Result<RecoverReport> {
    let started = ctx.now();
    let ws = &ctx.ws;
    let config = ws.config()?;
    let names = match &req.spec {
        Some(q) => vec![ctx.spec_named(q)?],
        None => crate::store::spec::list(&ws.specs_dir),
    };
    let agent = config
        .agent
        .choice()
        .and_then(|c| crate::agent::AgentSetup::resolve_or_as_given(c, &ws.root));
    let mut opts = recover_options(ws, &config, agent.as_ref(), req.dry_run, req.retry_failed);
    opts.interrupt = crate::agent::Interrupt::install()?;

    let run_id = crate::store::ids::run_id();
    // Every spec's folder opened once, on every core (a `Workspace` is not shared between
    // threads: its folders are); `--spec` takes the locked path directly.
    let (root, specs_dir) = (ws.root.as_path(), ws.specs_dir.as_path());
    let opened: Vec<Option<SpecPaths>> = match req.spec {
        Some(_) => names.iter().map(|_| None).collect(),
        None => on_every_core(&names, |name| {
            crate::store::workspace::spec_paths(root, specs_dir, name).ok()
        }),
    };
    // Interrupted merges, discards and undos first: they know what their half-done slots are.
    let mut lifecycle = match req.spec {
        // (One spec: its own folder, opened the careful way.)
        Some(_) => {
            let paths: Vec<Option<SpecPaths>> = names.iter().map(|n| ws.spec(n).ok()).collect();
            let pairs: Vec<_> = names.iter().zip(paths.iter().map(Option::as_ref)).collect();
            crate::engine::recovery::lifecycle::finish_all(ws, &pairs, &run_id, req.dry_run)?
        }
        None => {
            let pairs: Vec<_> = names
                .iter()
                .zip(opened.iter().map(Option::as_ref))
                .collect();
            crate::engine::recovery::lifecycle::finish_all(ws, &pairs, &run_id, req.dry_run)?
        }
    };
    let slots = repair_slots(ws, req.dry_run)?;
    let holder = new_holder(&run_id, None);
    // Every spec with certainly nothing to do is reported clean without a lock taken or
    // written (a write and an fdatasync per spec); any doubt takes the locked path. The
    // questions that need no git are asked on every core.
    let quiet = QuietLook::new(ws);
    let pairs: Vec<(&String, Option<SpecPaths>)> = names.iter().zip(opened).collect();
    let looked_at = std::time::Instant::now();
    let (opened, prepared): (Vec<Option<SpecPaths>>, Vec<_>) =
        on_every_core(&pairs, |(name, paths)| {
            let paths = paths.clone().filter(|_| !lifecycle.contains_key(*name));
            let prepared = paths.as_ref().map(|p| quiet.prepare(p, req.retry_failed));
            (paths, prepared)
        })
        .into_iter()
        .unzip();
    crate::failpoint::hit("recover_all_looked");
    let mut specs = Vec::new();
    // Whether a spec took the full (locked, maybe long) path since the look.
    let mut went_slow = false;
    for ((name, paths), prepared) in names.into_iter().zip(opened).zip(prepared) {
        // A look more than a moment old is taken again before it is reported.
        let look_again = went_slow || looked_at.elapsed() > LOOK_STANDS_FOR;
        if let (Some(paths), Some(prepared)) = (paths, prepared)
            && quiet.decide(ws, &paths, prepared, req.retry_failed, look_again)
        {
            specs.push(SpecRecovery {
                spec: name,
                outcome: RecoveryOutcome::Clean,
                ..SpecRecovery::default()
            });
            continue;
        }
        went_slow = true;
        let mut recovery = match recover_one(ws, &name, &req, &holder, &opts).await? {
            Ok(recovery) => recovery,
            Err(skipped) => {
                specs.push(skipped);
                continue;
            }
        };
        if let Some(action) = lifecycle.remove(&name) {
            crate::engine::recovery::lifecycle::add_to_report(&mut recovery, action);
        }
        // A spec recovery changed has a run record (`Recover`); a clean one none.
        if !req.dry_run
            && !recovery.actions.is_empty()
            && let Ok(paths) = ws.spec(&name)
        {
            crate::engine::track::RunTrack::finished(
                &paths.dir,
                &run_id,
                &name,
                crate::store::runs::RunKind::Recover,
                started,
                recovery.outcome.as_str(),
            );
        }
        specs.push(recovery);
    }
    Ok(RecoverReport {
        dry_run: req.dry_run,
        slots,
        specs,
    })
}

/// How long `recover --all`'s read-only look at a quiet spec stands without being taken again
/// (its locks and stamps): a spec that changes later than this after the look is seen as it is
/// then, by the full path.
const LOOK_STANDS_FOR: std::time::Duration = std::time::Duration::from_secs(1);

/// Put right what interrupted work left in the worktree slots a live run does not hold: an
/// unfinished creation, git's leftovers, a half-done switch between specs.
fn repair_slots(ws: &Workspace, dry_run: bool) -> anyhow::Result<Vec<String>> {
    let mut slots = Vec::new();
    for slot in Slot::all(&ws.main) {
        // A slot in use by a live run is that run's business.
        let Some(_slot_lock) = guard::try_take(&ws.slot_lock(&slot.name), Patience::Once)? else {
            continue;
        };
        let creating = ws.slot_create_marker(&slot.name);
        if let Some(what) = repair::unfinished_creation(&ws.main, &slot, &creating, dry_run)? {
            slots.push(what);
        }
        if let Some(r) = repair::repair_slot(&ws.main, &slot, dry_run)? {
            slots.push(r.describe());
        }
        let marker = ws.slot_switch_marker(&slot.name);
        if marker.exists() && matches!(slot.inspect(&ws.main), crate::git::SlotState::Ready { .. })
        {
            if dry_run {
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
    Ok(slots)
}

/// A spec that was not recovered, as the report shows it: `outcome` and, for a refusal or an
/// invalid plan, the why.
fn skipped(spec: &str, outcome: RecoveryOutcome, detail: Option<String>) -> SpecRecovery {
    SpecRecovery {
        spec: spec.to_string(),
        outcome,
        actions: detail
            .map(|detail| crate::engine::recovery::Action {
                kind: outcome.as_str().into(),
                detail,
                ..Default::default()
            })
            .into_iter()
            .collect(),
        ..SpecRecovery::default()
    }
}

/// Recover one spec under its locks: `Ok(Err(skipped))` for a spec left alone (busy, refused,
/// an invalid plan) when every spec is recovered; with a single `--spec` those are errors.
async fn recover_one(
    ws: &Workspace,
    name: &str,
    req: &RecoverOptions,
    holder: &Holder,
    opts: &RecoverySettings,
) -> anyhow::Result<Result<SpecRecovery, SpecRecovery>> {
    let one = req.spec.is_some();
    let paths = match ws.spec(name) {
        Ok(paths) => paths,
        // With several specs, one whose folder links outside the repository is refused
        // and the others are recovered.
        Err(e) if !one => {
            let detail = crate::error::ErrorReport::inline(&e.into());
            return Ok(Err(skipped(name, RecoveryOutcome::Refused, Some(detail))));
        }
        Err(e) => return Err(e.into()),
    };
    let locks = match lock_spec(ws, &paths, req, holder) {
        Ok(Some(locks)) => locks,
        Ok(None) => return Ok(Err(skipped(name, RecoveryOutcome::Busy, None))),
        // With several specs, one whose lock cannot be taken (a folder in its lock file's
        // place) is refused with the reason, and the others are recovered.
        Err(e) if !one => {
            let detail = crate::error::ErrorReport::inline(&e);
            return Ok(Err(skipped(name, RecoveryOutcome::Refused, Some(detail))));
        }
        Err(e) => return Err(e),
    };
    let journal = Journal::new(&paths.dir, &holder.run_id);
    let result = match recover_spec(ws, &paths, &journal, opts).await {
        Ok(r) => Ok(r),
        // With several specs, one plan that cannot be restored does not stop the others.
        Err(e) if !one && crate::error::exit_code_of(&e) == crate::error::exit::BAD_INPUT => {
            Err(skipped(
                name,
                RecoveryOutcome::InvalidPlan,
                Some(crate::error::ErrorReport::inline(&e)),
            ))
        }
        Err(e) => return Err(e),
    };
    drop(locks);
    Ok(result)
}

/// The spec's run lock and the lock of the slot holding it (its worktree may be changed:
/// commit, snapshot). `None`: busy, when every spec is recovered; with a single `--spec`,
/// busy is the error (exit 4). A dry run only looks: it lets go of the locks it just proved
/// free, so a run starting meanwhile is never turned away (exit 4) by it, and the holder
/// record stays the last run's.
fn lock_spec(
    ws: &Workspace,
    paths: &SpecPaths,
    req: &RecoverOptions,
    holder: &Holder,
) -> anyhow::Result<Option<Vec<FileLock>>> {
    let (one, name) = (req.spec.is_some(), &paths.name);
    let Some(lock) = acquire(&paths.run_lock, one)? else {
        return match one {
            true => Err(guard::busy(
                &paths.run_lock,
                &format!("spec {name} is being run or recovered"),
            )),
            false => Ok(None),
        };
    };
    let mut locks = Vec::new();
    if req.dry_run {
        drop(lock);
    } else {
        lock.write_holder(&Holder {
            spec: Some(name.clone()),
            ..holder.clone()
        })?;
        locks.push(lock);
    }
    if let Some(slot) = crate::git::slot_holding(&ws.main, &crate::git::branch_for(name)) {
        match acquire(&ws.slot_lock(&slot.name), one)? {
            Some(slot_lock) if !req.dry_run => locks.push(slot_lock),
            Some(_) => {}
            None if one => {
                return Err(RunnerError::Busy(format!(
                    "the worktree of spec {name} ({}) is in use by a run of another spec",
                    slot.path.display()
                ))
                .with_hint(guard::BUSY_HINT)
                .into());
            }
            None => return Ok(None),
        }
    }
    Ok(Some(locks))
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
