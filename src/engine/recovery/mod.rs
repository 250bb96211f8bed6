//! Recovery: put interrupted state right without running a coder. Used by `runner recover` and,
//! for its own spec, by `runner run` before it starts. The caller holds the spec's run lock.

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

pub use decide::{ChunkFacts, Decision};

use crate::error::RunnerError;
use crate::git::{branch_for, commit_all, slot_holding};
use crate::store::{SpecPaths, Workspace};
use crate::plan::{Chunk, PlanError, Status, verification};
use crate::store::{Journal, read_events, read_events_containing};

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
        ws.main.repo.commondir(),
        wt.as_ref().map(|w| w.path()),
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

/// Decide and apply the rules for one chunk left `in_progress`; `why` says how it was left
/// (`interrupted` by a dead run, or by a shutdown of this one).
pub async fn recover_chunk(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
    chunk: &Chunk,
    wt: Option<&git2::Repository>,
    opts: &RecoverOptions,
    why: &str,
) -> anyhow::Result<Action> {
    let facts = inspect::chunk_facts(&ws.main, &paths.name, chunk, wt);
    let id = chunk.id.as_str();
    let checks = decide::wants_check(&facts) && wt.is_some();
    if opts.dry_run {
        return Ok(predict_chunk(&facts, checks, opts.evaluator.is_some(), id));
    }
    // An interrupted check (or one cut short by a shutdown's budget) decides nothing: the
    // chunk stays in progress for the next recovery, which runs it again.
    let verified = match wt {
        Some(wt) if checks => run_check(paths, chunk, wt, opts).await?,
        _ => None,
    };
    let (rule_decision, rule_reason) = decide::decide(&facts, verified);
    // The agent is asked only where the rules weigh partial work.
    let ambiguous = rule_decision == Decision::Continue
        || (rule_decision == Decision::Next && !facts.reported_done);
    // (A `next` from the agent still needs the chunk's check passing; see below.)
    let (decision, reason, source) = match (&opts.evaluator, wt, ambiguous) {
        (Some(ev), Some(wt_repo), true) => {
            let session_id = crate::engine::run::session_id("recovery", Some(id), 0);
            let workdir = wt_repo.workdir().unwrap_or(std::path::Path::new("."));
            match evaluator::ask(
                ev,
                paths,
                chunk,
                &facts,
                (rule_decision, &rule_reason),
                workdir,
                &session_id,
                &opts.interrupt,
            )
            .await
            {
                // The agent may not complete a chunk whose verification does not pass.
                Ok((Decision::Next, r)) if facts.has_check && verified != Some(true) => (
                    Decision::Continue,
                    format!(
                        "{rule_reason} (the agent said next: {r}; but the chunk's verification does not pass)"
                    ),
                    "rules (the agent's next was refused: verification)".to_string(),
                ),
                Ok((d, r)) => (d, r, "agent".to_string()),
                Err(evaluator::Unanswered::Interrupted) => {
                    return Err(RunnerError::Interrupted.into());
                }
                Err(evaluator::Unanswered::Unusable(why)) => (
                    rule_decision,
                    rule_reason.clone(),
                    format!("rules (the agent's answer was not used: {why})"),
                ),
            }
        }
        _ => (rule_decision, rule_reason.clone(), "rules".to_string()),
    };
    let mut detail = reason.clone();
    if source != "rules" {
        detail.push_str(&format!(" [decided by {source}]"));
    }
    let mut saved_ref = None;
    let mut commit = None;
    // (A dry run returned its prediction above; kept as a guard: nothing below may run in one.)
    if !opts.dry_run {
        match decision {
            Decision::Next => {
                if let Some(wt) = wt {
                    let message = chunk.commit_message();
                    commit = commit_all(wt, &message)?.map(|oid| oid.to_string());
                    // The agent's own commits since the start are the attempt's work too;
                    // without any, no commit is claimed (the start is an earlier chunk's).
                    if commit.is_none() && facts.new_commits > 0 {
                        commit = crate::git::head_commit(wt).ok().map(|o| o.to_string());
                    }
                }
            }
            Decision::Continue | Decision::Restart if facts.has_work() => {
                if let Some(wt) = wt {
                    saved_ref = save_partial_work(wt, &paths.name, chunk, &facts, decision)?;
                }
            }
            _ => {}
        }
        // After recovery's git changes (the chunk's commit, or the recovery ref), before the plan.
        crate::failpoint::hit("after_recovery_ref");
        if let Some(r) = &saved_ref {
            // A restart reset the worktree to the attempt's start (save_partial_work).
            let reset = decision == Decision::Restart
                && chunk.last_attempt().and_then(|a| a.start_commit).is_some();
            detail.push_str(&if reset {
                format!("; the attempt's work saved at {r}, and the worktree reset to where the attempt started")
            } else {
                format!("; uncommitted changes saved at {r} and left in the worktree")
            });
        }
        let now = crate::clock::now();
        let record = json!({
            "decision": decision.as_str(), "reason": reason, "source": source,
            "new_commits": facts.new_commits, "dirty": facts.dirty, "saved_ref": saved_ref,
        });
        paths.plan.update(|plan| {
            let Some(pos) = plan.find_chunk(id) else {
                return Ok(());
            };
            let c = plan.chunk_mut(pos);
            c.update_last_attempt(|a| {
                a.outcome = Some(match decision {
                    Decision::Next => "completed".into(),
                    _ => why.to_string(),
                });
                a.reason = Some(format!("recovery: {}: {reason}", decision.as_str()));
                a.ended_at = Some(now.clone());
                if let Some(c) = &commit {
                    a.commit = Some(c.clone());
                }
                a.extra.insert("recovery".into(), record.clone());
            });
            match decision {
                Decision::Next => {
                    c.set_status(Status::Completed);
                    c.set_str("completed_at", &now);
                }
                Decision::Continue | Decision::Restart => c.set_status(Status::Pending),
                Decision::HumanReview => {
                    c.set_status(Status::Blocked);
                    c.set_str("blocked_reason", &reason);
                }
            }
            Ok(())
        })?;
        crate::failpoint::hit("after_recovery_decision");
        let to = match decision {
            Decision::Next => "completed",
            Decision::Continue | Decision::Restart => "pending",
            Decision::HumanReview => "blocked",
        };
        journal.record(
            "recovery_decision",
            Some(id),
            json!({"decision": decision.as_str(), "reason": reason, "source": source, "saved_ref": saved_ref, "commit": commit, "why": why}),
        )?;
        journal.record(
            "chunk_status",
            Some(id),
            json!({"from": "in_progress", "to": to, "why": format!("recovery: {}", decision.as_str())}),
        )?;
    }
    Ok(Action {
        kind: "chunk".into(),
        chunk: Some(id.to_string()),
        decision: Some(decision),
        if_verification: None,
        detail,
    })
}

/// What `recover_chunk` will do, without doing it: the same rules over the same facts. The
/// verification is not run (it may change files); where its result matters, both outcomes are
/// named. `checks`: the real recovery would run the chunk's verification.
pub fn predict_chunk(facts: &ChunkFacts, checks: bool, evaluator: bool, id: &str) -> Action {
    let (passes, pass_reason) = decide::decide(facts, checks.then_some(true));
    let (fails, fail_reason) = decide::decide(facts, checks.then_some(false));
    let mut action = Action {
        kind: "chunk".into(),
        chunk: Some(id.to_string()),
        ..Action::default()
    };
    if passes == fails {
        action.decision = Some(fails);
        action.detail = fail_reason;
        if checks {
            action.detail.push_str(
                " (dry run: the verification command was not run; the decision is the same either way)",
            );
        }
    } else {
        action.if_verification = Some(IfVerification { passes, fails });
        action.detail = format!(
            "if it passes: {pass_reason}; if it fails: {fail_reason} (dry run: the verification command was not run)"
        );
    }
    // The agent evaluator is asked only where the rules weigh partial work (see recover_chunk).
    let ambiguous =
        |d: Decision| d == Decision::Continue || (d == Decision::Next && !facts.reported_done);
    if evaluator && (ambiguous(passes) || ambiguous(fails)) {
        action.detail.push_str(
            " (with [recovery] evaluator = \"agent\", recover asks the agent here, which may decide otherwise)",
        );
    }
    action
}

/// Keep a chunk's partial work where the user and the next attempt can see it:
/// uncommitted changes go to a recovery ref (and stay in the worktree). On a restart the
/// worktree is then reset to the attempt's start commit, so the ref also keeps the commits made
/// since; nothing is lost.
fn save_partial_work(
    wt: &git2::Repository,
    spec: &str,
    chunk: &Chunk,
    facts: &ChunkFacts,
    decision: Decision,
) -> anyhow::Result<Option<String>> {
    let refname = crate::git::refs::next_recovery_ref(wt, spec, &chunk.id)?;
    let message = format!("auto-claude: partial work of {} (recovered)", chunk.id);
    let mut saved = crate::git::refs::snapshot_worktree(wt, &refname, &message)?;
    if saved.is_none() && facts.new_commits > 0 {
        // Nothing uncommitted: the ref keeps the commits.
        let head = crate::git::head_commit(wt)?;
        wt.reference(&refname, head, false, &message)?;
        saved = Some(head);
    }
    if decision == Decision::Restart
        && let Some(start) = chunk
            .last_attempt()
            .and_then(|a| a.start_commit)
            .and_then(|s| crate::git::commit_id(&s))
    {
        let target = wt.find_object(start, None)?;
        wt.reset(&target, git2::ResetType::Hard, None)?;
        // A hard reset keeps untracked files (libgit2 ignores remove_untracked there); the
        // attempt's new files are saved in the ref, so they go too.
        let mut checkout = git2::build::CheckoutBuilder::new();
        checkout.force().remove_untracked(true);
        wt.checkout_head(Some(&mut checkout))?;
    }
    Ok(saved.map(|_| refname))
}

/// Run the chunk's verification command in the worktree: `Some(passed)`, or `None` if it could
/// not be run; `RunnerError::Interrupted` if a signal (or a shutdown's budget) cut it short,
/// which says nothing about the work.
async fn run_check(
    paths: &SpecPaths,
    chunk: &Chunk,
    wt: &git2::Repository,
    opts: &RecoverOptions,
) -> anyhow::Result<Option<bool>> {
    let Some(check) = verification::command_check(chunk) else {
        return Ok(None);
    };
    let Some(dir) = wt.workdir() else {
        return Ok(None);
    };
    let session = crate::engine::run::session_id("recovery-check", Some(&chunk.id), 0);
    let Ok(log_dir) = paths.session_dir(&session) else {
        return Ok(None);
    };
    let log_path = log_dir.join("verification.log");
    // Like every child runner starts: its own process group, killed whole on a timeout or
    // Ctrl-C, so nothing it started goes on writing while recovery commits or saves.
    let spec = crate::agent::ChildSpec {
        argv: vec!["sh".into(), "-c".into(), check.command.clone()],
        cwd: dir.to_path_buf(),
        env: vec![("RUNNER_SESSION_ID".into(), session.clone())],
        stdin: None,
        log_path: log_path.clone(),
        timeout: opts.verification_timeout,
        drain: Duration::from_secs(1),
        max_log_bytes: match opts.max_log_bytes {
            0 => crate::config::DEFAULT_MAX_LOG_BYTES,
            n => n,
        },
        watch_for: check.expect_output.clone(),
    };
    let Ok(end) = crate::agent::run_child(&spec, &opts.interrupt, &mut |_| {}).await else {
        return Ok(None);
    };
    if check_cut_short(&end.ended, opts.shutdown) {
        return Err(RunnerError::Interrupted.into());
    }
    // The expected output was searched in the whole stream, as bytes.
    Ok(Some(
        end.ended == crate::agent::Ended::Exited(check.expect_status) && end.output.found,
    ))
}

/// A check stopped by a signal, or by a shutdown's budget (its timeout), did not fail: it
/// did not finish.
fn check_cut_short(ended: &crate::agent::Ended, shutdown: bool) -> bool {
    use crate::agent::Ended;
    matches!(ended, Ended::Interrupted { .. }) || (shutdown && *ended == Ended::TimedOut)
}

/// Partial work a chunk's last finished attempt left, for the next attempt's prompt.
pub fn partial_work_note(chunk: &Chunk) -> Option<Value> {
    // The most recent attempt that ended (a new attempt may already be open).
    let last = chunk
        .attempts()
        .into_iter()
        .rev()
        .find(|a| a.outcome.is_some())?;
    let rec = last.extra.get("recovery")?;
    if rec["decision"] != "continue" {
        return None;
    }
    // Both go into git commands the prompt gives the agent, and come from the plan, which
    // anyone can edit: only a commit id and one of runner's recovery refs are passed on (the
    // template also quotes them), never an option such as `--output=...`.
    let start_commit = last
        .start_commit
        .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_hexdigit()));
    let saved_ref = rec["saved_ref"].as_str().filter(|r| {
        r.starts_with(crate::git::refs::RECOVERY_PREFIX) && git2::Reference::is_valid_name(r)
    });
    Some(json!({
        "attempt": last.n,
        "new_commits": rec["new_commits"],
        "start_commit": start_commit,
        "saved_ref": saved_ref,
        "dirty": rec["dirty"],
    }))
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
