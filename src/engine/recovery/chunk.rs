//! One chunk left in progress: decide, save its partial work, re-check it, report.

use super::*;
use crate::policy::transition::{self, ChunkEvent};
use crate::store::event::{self as ev, Event};

/// Decide and apply the rules for one chunk left `in_progress`; `why` says how it was left
/// (`interrupted` by a dead run, or by a shutdown of this one).
pub async fn recover_chunk(
    ws: &Workspace,
    paths: &SpecPaths,
    journal: &Journal,
    chunk: &Chunk,
    wt: Option<&crate::git::Repository>,
    opts: &RecoverySettings,
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
    let decided = decide_chunk(paths, chunk, &facts, verified, wt, opts).await?;
    let mut detail = decided.reason.clone();
    if decided.source != "rules" {
        detail.push_str(&format!(" [decided by {}]", decided.source));
    }
    let (commit, saved_ref) = keep_the_work(paths, chunk, &facts, decided.decision, wt)?;
    // After recovery's git changes (the chunk's commit, or the recovery ref), before the plan.
    crate::failpoint::hit("after_recovery_ref");
    if let Some(r) = &saved_ref {
        // A restart reset the worktree to the attempt's start (save_partial_work).
        let reset = decided.decision == Decision::Restart
            && chunk.last_attempt().and_then(|a| a.start_commit).is_some();
        detail.push_str(&if reset {
            format!("; the attempt's work saved at {r}, and the worktree reset to where the attempt started")
        } else {
            format!("; uncommitted changes saved at {r} and left in the worktree")
        });
    }
    record_decision(paths, journal, id, &facts, &decided, commit, saved_ref, why)?;
    Ok(Action {
        kind: "chunk".into(),
        chunk: Some(id.to_string()),
        decision: Some(decided.decision),
        if_verification: None,
        detail,
    })
}

/// A decision for a chunk left in progress, and who reached it.
struct Decided {
    decision: Decision,
    reason: String,
    /// `rules`, `agent`, or the rules with why the agent's answer was not used.
    source: String,
}

/// The rules' decision over the facts, or the agent evaluator's where the rules weigh partial
/// work (`[recovery] evaluator = "agent"`).
async fn decide_chunk(
    paths: &SpecPaths,
    chunk: &Chunk,
    facts: &ChunkFacts,
    verified: Option<bool>,
    wt: Option<&crate::git::Repository>,
    opts: &RecoverySettings,
) -> anyhow::Result<Decided> {
    let id = chunk.id.as_str();
    let (rule_decision, rule_reason) = decide::decide(facts, verified);
    // The agent is asked only where the rules weigh partial work.
    let ambiguous = rule_decision == Decision::Continue
        || (rule_decision == Decision::Next && !facts.reported_done);
    let rules = |source: String| Decided {
        decision: rule_decision,
        reason: rule_reason.clone(),
        source,
    };
    // (A `next` from the agent still needs the chunk's check passing; see below.)
    let (Some(ev), Some(wt_repo), true) = (&opts.evaluator, wt, ambiguous) else {
        return Ok(rules("rules".to_string()));
    };
    let session_id = crate::store::ids::session_id("recovery", Some(id), 0);
    let workdir = crate::git::repo::work_folder(wt_repo).unwrap_or(std::path::Path::new("."));
    let answer = evaluator::ask(
        ev,
        paths,
        chunk,
        facts,
        (rule_decision, &rule_reason),
        workdir,
        &session_id,
        &opts.interrupt,
    )
    .await;
    Ok(match answer {
        // The agent may not complete a chunk whose verification does not pass.
        Ok((Decision::Next, r)) if facts.has_check && verified != Some(true) => Decided {
            decision: Decision::Continue,
            reason: format!(
                "{rule_reason} (the agent said next: {r}; but the chunk's verification does not pass)"
            ),
            source: "rules (the agent's next was refused: verification)".to_string(),
        },
        Ok((decision, reason)) => Decided {
            decision,
            reason,
            source: "agent".to_string(),
        },
        Err(evaluator::Unanswered::Interrupted) => return Err(RunnerError::Interrupted.into()),
        Err(evaluator::Unanswered::Unusable(why)) => {
            rules(format!("rules (the agent's answer was not used: {why})"))
        }
    })
}

/// Recovery's git changes for `decision`: a `next` commits what the agent left (the chunk's
/// commit); a continue or restart with work keeps it under a recovery ref. Returns (the
/// chunk's commit, the saved ref).
fn keep_the_work(
    paths: &SpecPaths,
    chunk: &Chunk,
    facts: &ChunkFacts,
    decision: Decision,
    wt: Option<&crate::git::Repository>,
) -> anyhow::Result<(Option<String>, Option<String>)> {
    let Some(wt) = wt else {
        return Ok((None, None));
    };
    match decision {
        Decision::Next => {
            let mut commit = commit_all(wt, &chunk.commit_message())?.map(|oid| oid.to_string());
            // The agent's own commits since the start are the attempt's work too; without any,
            // no commit is claimed (the start is an earlier chunk's).
            if commit.is_none() && facts.new_commits > 0 {
                commit = crate::git::head_commit(wt).ok().map(|o| o.to_string());
            }
            Ok((commit, None))
        }
        Decision::Continue | Decision::Restart if facts.has_work() => Ok((
            None,
            save_partial_work(wt, &paths.name, chunk, facts, decision)?,
        )),
        _ => Ok((None, None)),
    }
}

/// The decision on the chunk's attempt and status (through `policy::transition`), then in the
/// journal.
#[allow(clippy::too_many_arguments)]
fn record_decision(
    paths: &SpecPaths,
    journal: &Journal,
    id: &str,
    facts: &ChunkFacts,
    decided: &Decided,
    commit: Option<String>,
    saved_ref: Option<String>,
    why: &str,
) -> anyhow::Result<()> {
    let Decided {
        decision,
        reason,
        source,
    } = decided;
    let decision = *decision;
    let now = crate::clock::now();
    let record = json!({
        "decision": decision.as_str(), "reason": reason, "source": source,
        "new_commits": facts.new_commits, "dirty": facts.dirty, "saved_ref": saved_ref,
    });
    let because = format!("recovery: {}", decision.as_str());
    let event = match decision {
        Decision::Next => ChunkEvent::Complete {
            attempt: None,
            commit: commit.clone(),
            verified: None,
            why: Some(because),
        },
        Decision::Continue | Decision::Restart => ChunkEvent::Release {
            why: because,
            reason: None,
        },
        Decision::HumanReview => ChunkEvent::Block { why: because },
    };
    let change = paths.plan.update(|plan| {
        let Some(pos) = plan.find_chunk(id) else {
            return Ok(None);
        };
        let c = plan.chunk_mut(pos);
        let change = transition::apply(c, &event)?;
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
            Decision::Next => c.set_str("completed_at", &now),
            Decision::HumanReview => c.set_str("blocked_reason", reason),
            Decision::Continue | Decision::Restart => {}
        }
        Ok(Some(change))
    })?;
    crate::failpoint::hit("after_recovery_decision");
    journal.write(&Event::RecoveryDecision(ev::RecoveryDecision {
        chunk: id.to_string(),
        decision: decision.as_str().to_string(),
        reason: reason.clone(),
        source: source.clone(),
        saved_ref,
        commit,
        why: why.to_string(),
    }))?;
    if let Some(change) = change {
        journal.status(id, change)?;
    }
    Ok(())
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
pub(super) fn save_partial_work(
    wt: &crate::git::Repository,
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
        crate::git::refs::create(wt, &refname, head, &message)?;
        saved = Some(head);
    }
    if decision == Decision::Restart
        && let Some(start) = chunk
            .last_attempt()
            .and_then(|a| a.start_commit)
            .and_then(|s| crate::git::commit_id(&s))
    {
        crate::git::tree::reset_hard(wt, start)?;
        // A hard reset keeps untracked files; the attempt's new files are saved in the ref,
        // so they go too.
        crate::git::tree::clean_to_head(wt)?;
    }
    Ok(saved.map(|_| refname))
}

/// Run the chunk's verification command in the worktree: `Some(passed)`, or `None` if it could
/// not be run; `RunnerError::Interrupted` if a signal (or a shutdown's budget) cut it short,
/// which says nothing about the work.
pub(super) async fn run_check(
    paths: &SpecPaths,
    chunk: &Chunk,
    wt: &crate::git::Repository,
    opts: &RecoverySettings,
) -> anyhow::Result<Option<bool>> {
    let Some(check) = verification::command_check(chunk) else {
        return Ok(None);
    };
    let Some(dir) = crate::git::repo::work_folder(wt) else {
        return Ok(None);
    };
    let session = crate::store::ids::session_id("recovery-check", Some(&chunk.id), 0);
    let Ok(log_dir) = paths.session_dir(&session) else {
        return Ok(None);
    };
    let place = crate::engine::verify::Place {
        worktree: dir.to_path_buf(),
        env: vec![("RUNNER_SESSION_ID".into(), session.clone())],
        log_path: log_dir.join("verification.log"),
        timeout: opts.verification_timeout,
        drain: Duration::from_secs(1),
        max_log_bytes: opts.max_log_bytes,
    };
    let launch =
        |spec| async move { crate::agent::run_child(&spec, &opts.interrupt, &mut |_| {}).await };
    let Ok(checked) = crate::engine::verify::run(&check, place, launch).await else {
        return Ok(None);
    };
    if checked.cut_short(opts.shutdown) {
        return Err(RunnerError::Interrupted.into());
    }
    Ok(Some(checked.result.passed))
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
        r.starts_with(crate::git::refs::RECOVERY_PREFIX) && crate::git::refs::is_valid_name(r)
    });
    Some(json!({
        "attempt": last.n,
        "new_commits": rec["new_commits"],
        "start_commit": start_commit,
        "saved_ref": saved_ref,
        "dirty": rec["dirty"],
    }))
}
