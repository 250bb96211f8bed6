//! Recovery: put interrupted state right without running a coder. Used by `runner recover` and,
//! for its own spec, by `runner run` before it starts. The caller holds the spec's run lock.

mod chunk;
pub mod decide;
pub mod evaluator;
pub mod inspect;
pub mod integrity;
pub mod interrupted;
pub mod lifecycle;
pub mod procs;
pub mod repair;
pub mod restore;

use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use serde_json::{Value, json};

pub use chunk::{partial_work_note, predict_chunk, recover_chunk};
pub use decide::{ChunkFacts, Decision};

use crate::error::RunnerError;
use crate::git::{branch_for, commit_all, slot_holding};
use crate::plan::{Chunk, PlanError, Status, verification};
use crate::store::{Journal, read_events, read_events_containing};
use crate::store::{SpecPaths, Workspace};

/// How long a leftover agent group gets between SIGTERM and SIGKILL.
const LEFTOVER_GRACE: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, Default)]
pub struct RecoverOptions {
    pub dry_run: bool,
    pub retry_failed: bool,
    pub verification_timeout: Duration,
    /// `agent.max_log_bytes`: a check's log keeps at most this much (0: the default).
    pub max_log_bytes: u64,
    /// Set when `[recovery] evaluator = "agent"`.
    pub evaluator: Option<evaluator::AgentEvaluator>,
    /// The run's Ctrl-C/SIGTERM: checks and the evaluator stop with it.
    pub interrupt: crate::agent::Interrupt,
    /// Recovery during a shutdown (`run` after its first Ctrl-C): the check's timeout is the
    /// drain's budget, so a check that runs out of it decides nothing (it did not fail).
    pub shutdown: bool,
}

/// One thing recovery found and did (or, in a dry run, would do).
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Action {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<String>,
    /// For a chunk: the decision. `None` in a dry run where it depends on a verification the
    /// dry run did not run; `if_verification` then names both outcomes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub if_verification: Option<IfVerification>,
    pub detail: String,
}

/// What recovery will decide for a chunk whose verification a dry run did not run (a check may
/// change files, and a dry run changes nothing).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct IfVerification {
    pub passes: Decision,
    pub fails: Decision,
}

impl Action {
    fn new(kind: &str, chunk: Option<&str>, detail: impl Into<String>) -> Action {
        Action {
            kind: kind.into(),
            chunk: chunk.map(str::to_string),
            detail: detail.into(),
            ..Action::default()
        }
    }

    /// One line for a person.
    pub fn line(&self) -> String {
        match (&self.chunk, self.decision) {
            (Some(c), Some(d)) => format!("chunk {c}: {} — {}", d.as_str(), self.detail),
            (Some(c), None) if let Some(v) = self.if_verification => format!(
                "chunk {c}: {} if its verification passes, {} if it fails — {}",
                v.passes.as_str(),
                v.fails.as_str(),
                self.detail
            ),
            (Some(c), None) => format!("chunk {c}: {}", self.detail),
            _ => self.detail.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct SpecRecovery {
    pub spec: String,
    /// `clean`, `recovered`, `needs_human`, `busy`
    pub outcome: String,
    pub actions: Vec<Action>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_source: Option<String>,
}

impl SpecRecovery {
    pub fn needs_human(&self) -> bool {
        self.outcome == "needs_human"
    }
}

/// What an action's text says it did: in a dry run, what it would do (it did nothing).
fn said<'a>(dry_run: bool, done: &'a str, would: &'a str) -> &'a str {
    if dry_run { would } else { done }
}

/// Everything recovery does for one spec. The run lock must be held by the caller.
pub async fn recover_spec(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
    opts: &RecoverOptions,
) -> anyhow::Result<SpecRecovery> {
    let mut actions = Vec::new();

    // 1. Nothing may go on editing the worktree while recovery looks at it.
    for leftover in procs::leftovers(&read_events_containing(&paths.dir, "\"process_")) {
        let alive = !procs::members_of_session(leftover.pgid, &leftover.session_id).is_empty();
        if !alive {
            continue;
        }
        if !opts.dry_run {
            procs::stop_leftover(&leftover, LEFTOVER_GRACE);
            journal.record(
                "process_ended",
                None,
                json!({"pgid": leftover.pgid, "session_id": leftover.session_id, "why": "stopped by recovery"}),
            )?;
        }
        actions.push(Action::new(
            "stopped_agent",
            None,
            format!(
                "{} the agent of session {} (process group {}), still running after its runner died",
                said(opts.dry_run, "stopped", "would stop"),
                leftover.session_id,
                leftover.pgid
            ),
        ));
    }

    // 2. Temp files of writes that never finished.
    for path in repair::stale_temp_files(&paths.dir, opts.dry_run) {
        actions.push(Action::new(
            "removed_temp_file",
            None,
            format!(
                "{} {} left by an interrupted write",
                said(opts.dry_run, "removed", "would remove"),
                path.display()
            ),
        ));
    }

    // 3. A plan that does not parse: restore it, keeping the broken file.
    let mut plan_source = None;
    let mut plan = match paths.plan.load() {
        Ok(Some(plan)) => Some(plan),
        Ok(None) => {
            restore_vanished_plan(ws, paths, journal, opts, &mut actions, &mut plan_source)?
        }
        Err(e) => {
            let plan_err = e.downcast::<PlanError>()?;
            // A plan that is not even JSON (torn, garbled) is restored. A plan that parses but
            // breaks a rule is restored only if that happened while a run was running (its
            // run never ended); otherwise someone wrote it that way: it is theirs to fix.
            let events = read_events(&paths.dir);
            let on_disk = if plan_err.line.is_none() {
                integrity::PlanOnDisk::Invalid
            } else {
                integrity::PlanOnDisk::Unparsable
            };
            if !integrity::restore_missing_plan(
                on_disk,
                integrity::last_run_unfinished(&events),
                true,
            ) {
                return Err(RunnerError::InvalidPlan(plan_err).into());
            }
            let Some((plan, source)) =
                restore::rebuild(&paths.dir, &paths.name, &events, Some(&ws.main))
            else {
                return Err(RunnerError::InvalidPlan(plan_err).into());
            };
            let aside = crate::store::unused_path(&paths.plan.path().with_file_name(format!(
                "{}.corrupt-{}",
                crate::plan::PLAN_FILE,
                crate::clock::stamp()
            )));
            if !opts.dry_run {
                // Copy, then replace atomically: there is a plan file at every moment.
                crate::store::safe::copy_new(paths.plan.path(), &aside)
                    .with_context(|| format!("keeping the broken plan as {}", aside.display()))?;
                paths.plan.replace(&plan)?;
                journal.record(
                    "plan_restored",
                    None,
                    json!({"source": source.as_str(), "broken_copy": aside, "problems": plan_err.problems}),
                )?;
            }
            actions.push(Action::new(
                "plan_restored",
                None,
                format!(
                    "the plan did not parse ({}); {} it from {} and {} the broken file as {}",
                    plan_err
                        .problems
                        .first()
                        .map(String::as_str)
                        .unwrap_or("invalid"),
                    said(opts.dry_run, "restored", "would restore"),
                    source.describe(),
                    said(opts.dry_run, "kept", "would keep"),
                    aside.display()
                ),
            ));
            plan_source = Some(source.as_str().to_string());
            Some(plan)
        }
    };

    // 3b. A run that died during (or right after) a session never settled the plan: an agent
    //     that edited it directly and then killed runner would keep its edits. The plan is
    //     settled here against the plan as the session started, by the session end's rules.
    if let Some(found) = &plan
        && let Some((settled, undone)) = settle_interrupted_session(paths, found)
    {
        if !opts.dry_run {
            paths.plan.replace(&settled)?;
            journal.record(
                "plan_edit_undone",
                None,
                json!({"undone": undone, "why": "recovery: the session's run died before it settled the plan"}),
            )?;
        }
        actions.push(Action::new(
            "plan_edit_undone",
            None,
            format!(
                "the plan was edited directly during a session whose run died; {} {}",
                said(opts.dry_run, "undone:", "would undo:"),
                if undone.is_empty() {
                    "changes to other chunks or to runner's records".to_string()
                } else {
                    undone.join(", ")
                }
            ),
        ));
        plan = Some(settled);
    }

    // 4. Stale git lock files in the spec's worktree and refs.
    let slot = slot_holding(&ws.main, &branch_for(&paths.name));
    let wt = slot.as_ref().and_then(|s| s.open(&ws.main).ok());
    let candidates = repair::lock_candidates(
        ws.main.common_dir(),
        wt.as_ref().map(crate::git::repo::git_folder),
        &paths.name,
    );
    for candidate in candidates {
        if let Some(lock) = repair::stale_lock(&candidate, opts.dry_run) {
            actions.push(Action::new(
                "removed_git_lock",
                None,
                format!(
                    "{} a stale {} left by a killed git write",
                    said(opts.dry_run, "removed", "would remove"),
                    lock.display()
                ),
            ));
        }
    }

    // 5. What an agent left unwatched (its run died): a worktree that no longer opens as
    //    itself, or a branch whose history lost recorded work. Both need a person.
    let mut needs_human = false;
    let mut handled: Vec<String> = Vec::new();
    let in_progress: Vec<Chunk> = plan
        .iter()
        .flat_map(|p| p.chunks())
        .filter(|c| c.status == Status::InProgress)
        .cloned()
        .collect();
    // The slot the last run worked in, for a chunk it left in progress (see `unopenable_slot`).
    let last_slot = (!in_progress.is_empty())
        .then(|| {
            read_events(&paths.dir)
                .iter()
                .rev()
                .find(|e| e["event"] == "run_start")
                .and_then(|e| e["slot"].as_str().map(str::to_string))
        })
        .flatten();
    if let Some((slot, why)) =
        integrity::unopenable_slot(&ws.main, &paths.name, last_slot.as_deref())
    {
        let chunk = in_progress.first().map(|c| c.id.clone());
        let detail = integrity::unopenable_worktree(
            &ws.main,
            paths,
            journal,
            &slot.path,
            &why,
            chunk.as_deref(),
            opts.dry_run,
        )?;
        handled.extend(in_progress.iter().map(|c| c.id.clone()));
        needs_human = true;
        if let (Some(id), false) = (chunk.as_deref(), opts.dry_run) {
            integrity::note_recovery_decision(paths, journal, id, &detail, None)?;
        }
        actions.push(Action {
            kind: "worktree_unopenable".into(),
            chunk,
            decision: Some(Decision::HumanReview),
            detail,
            if_verification: None,
        });
    } else if let Some(plan) = &plan {
        // Every completed chunk's commit is checked even with nothing in progress: a branch
        // reset after the run ended (by a job the agent left, or a person) loses work too.
        let currents: Vec<Option<&Chunk>> = if in_progress.is_empty() {
            vec![None]
        } else {
            in_progress.iter().map(Some).collect()
        };
        for chunk in currents {
            if let Some(guarded) = integrity::guard_history(
                &ws.main,
                paths,
                journal,
                plan,
                chunk,
                wt.as_ref(),
                slot.as_ref().map(|s| s.path.as_path()),
                opts.dry_run,
            )? {
                needs_human = true;
                if let Some(chunk) = chunk {
                    handled.push(chunk.id.clone());
                    if !opts.dry_run {
                        integrity::note_recovery_decision(
                            paths,
                            journal,
                            &chunk.id,
                            &guarded.message,
                            guarded.saved_ref.as_deref(),
                        )?;
                    }
                }
                actions.push(Action {
                    kind: "history_rewritten".into(),
                    chunk: chunk.map(|c| c.id.clone()),
                    decision: Some(Decision::HumanReview),
                    detail: guarded.message,
                    if_verification: None,
                });
            }
        }
    }

    // 6. Chunks left in progress.
    if let Some(plan) = &plan {
        let stuck: Vec<Chunk> = plan
            .chunks()
            .filter(|c| c.status == Status::InProgress && !handled.contains(&c.id))
            .cloned()
            .collect();
        for chunk in stuck {
            let action =
                recover_chunk(ws, paths, journal, &chunk, wt.as_ref(), opts, "interrupted").await?;
            needs_human |= action.decision == Some(Decision::HumanReview);
            actions.push(action);
        }
        if opts.retry_failed && plan.count(Status::Failed) > 0 {
            let retried = if opts.dry_run {
                plan.chunks()
                    .filter(|c| c.status == Status::Failed)
                    .map(|c| c.id.clone())
                    .collect()
            } else {
                paths.plan.update(|plan| {
                    let mut ids = Vec::new();
                    for pos in plan.positions().collect::<Vec<_>>() {
                        let chunk = plan.chunk_mut(pos);
                        if chunk.status == Status::Failed {
                            chunk.set_status(Status::Pending);
                            ids.push(chunk.id.clone());
                        }
                    }
                    Ok(ids)
                })?
            };
            for id in retried {
                if !opts.dry_run {
                    journal.record(
                        "chunk_status",
                        Some(&id),
                        json!({"from": "failed", "to": "pending", "why": "recover --retry-failed"}),
                    )?;
                }
                actions.push(Action::new(
                    "retry_failed",
                    Some(&id),
                    said(
                        opts.dry_run,
                        "failed chunk set back to pending (its attempts are kept)",
                        "failed chunk would be set back to pending (its attempts are kept)",
                    ),
                ));
            }
        }
    }

    let outcome = if needs_human {
        "needs_human"
    } else if actions.is_empty() {
        "clean"
    } else {
        "recovered"
    };
    if !opts.dry_run && !actions.is_empty() {
        journal.record(
            "recovered",
            None,
            json!({"outcome": outcome, "actions": actions}),
        )?;
    }
    Ok(SpecRecovery {
        spec: paths.name.clone(),
        outcome: outcome.into(),
        actions,
        plan_source,
    })
}

/// A plan that is gone: restored from runner's copies if it vanished while a run was running
/// (the journal's last run never ended), else `None` (the user removed it: plan again). See
/// `integrity::restore_missing_plan`.
fn restore_vanished_plan(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
    opts: &RecoverOptions,
    actions: &mut Vec<Action>,
    plan_source: &mut Option<String>,
) -> anyhow::Result<Option<crate::plan::Plan>> {
    let events = read_events(&paths.dir);
    let unfinished = integrity::last_run_unfinished(&events);
    if !unfinished {
        return Ok(None);
    }
    let Some((plan, source)) = restore::rebuild(&paths.dir, &paths.name, &events, Some(&ws.main))
    else {
        return Ok(None);
    };
    if !integrity::restore_missing_plan(integrity::PlanOnDisk::Missing, unfinished, true) {
        return Ok(None);
    }
    if !opts.dry_run {
        paths.plan.replace(&plan)?;
        journal.record(
            "plan_restored",
            None,
            json!({"source": source.as_str(), "why": "the plan vanished while a run was running"}),
        )?;
    }
    actions.push(Action::new(
        "plan_restored",
        None,
        format!(
            "the plan was gone after a run that did not end; {} it from {}",
            said(opts.dry_run, "restored", "would restore"),
            source.describe()
        ),
    ));
    *plan_source = Some(source.as_str().to_string());
    Ok(Some(plan))
}

/// The plan as runner wrote it when a coder session started, in the session's folder.
pub const PLAN_BEFORE_SESSION: &str = "plan-before-session.json";

/// The plan settled against the plan as it was when the session started, when a run died with exactly one chunk in
/// progress and a session of it started: `None` when there is nothing to undo, or when that
/// copy does not show the same attempt in progress. Person changes are those the journal
/// names (the run that could have heard them is gone).
fn settle_interrupted_session(
    paths: &SpecPaths,
    found: &crate::plan::Plan,
) -> Option<(crate::plan::Plan, Vec<String>)> {
    // The plan first: most specs have nothing in progress, and the journal is not read for
    // them (`recover --all` over many specs).
    let mut in_progress = found.chunks().filter(|c| c.status == Status::InProgress);
    let own = in_progress.next()?;
    if in_progress.next().is_some() {
        return None;
    }
    let session = own.last_attempt()?.session_id?;
    let events = read_events(&paths.dir);
    if !integrity::last_run_unfinished(&events) {
        return None;
    }
    let path = paths.sessions_dir.join(&session).join(PLAN_BEFORE_SESSION);
    let bytes = crate::store::safe::read(&path).ok()?;
    let before = crate::plan::parse_plan(&path, &bytes).ok()?;
    let was = before.chunk(before.find_chunk(&own.id)?);
    if was.status != Status::InProgress
        || was.last_attempt()?.session_id.as_deref() != Some(session.as_str())
    {
        return None;
    }
    let by_person = integrity::changed_by_person(&events, &session);
    let (settled, undone) = integrity::settle_plan(&before, found, &own.id, &session, &by_person);
    (settled.to_value() != found.to_value()).then_some((settled, undone))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reported_with_check() -> ChunkFacts {
        ChunkFacts {
            branch_exists: true,
            head_descends_from_start: true,
            on_branch: true,
            reported_done: true,
            has_check: true,
            dirty: true,
            ..ChunkFacts::default()
        }
    }

    #[test]
    fn a_prediction_names_both_outcomes_only_where_the_check_decides() {
        let a = predict_chunk(&reported_with_check(), true, false, "c");
        assert_eq!(a.decision, None);
        assert_eq!(
            a.if_verification,
            Some(IfVerification {
                passes: Decision::Next,
                fails: Decision::Continue
            })
        );
        assert!(
            a.line()
                .contains("next if its verification passes, continue if it fails")
        );
        // Without a worktree the real recovery runs no check either: one decision.
        let a = predict_chunk(&reported_with_check(), false, false, "c");
        assert_eq!(a.decision, Some(Decision::Continue));
        assert_eq!(a.if_verification, None);
        // Unreported uncommitted work stays partial whatever the check says.
        let facts = ChunkFacts {
            reported_done: false,
            ..reported_with_check()
        };
        let a = predict_chunk(&facts, true, true, "c");
        assert_eq!(a.decision, Some(Decision::Continue));
        assert!(a.detail.contains("evaluator"), "{}", a.detail);
    }
}
