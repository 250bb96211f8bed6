//! The branch's history against the work runner recorded: on a breach, both histories are kept
//! under recovery refs, the chunk in progress is blocked and the way back is spelled out.

use super::*;

/// The last tip runner knew to hold all of the spec's work: the attempt's start commit if it
/// contains every recorded commit, else the recorded commit that contains the most others.
fn last_known_tip(repo: &Repository, facts: &HistoryFacts) -> Option<Oid> {
    let recorded: Vec<Oid> = facts
        .recorded
        .iter()
        .filter_map(|(_, o, _)| crate::git::commit_id(o))
        .collect();
    let holds = |tip: Oid, oid: Oid| history::contains_or_false(repo, tip, oid);
    let score = |tip: Oid| recorded.iter().filter(|&&o| holds(tip, o)).count();
    let start = facts
        .start
        .as_ref()
        .and_then(|(_, s, _)| crate::git::commit_id(s))
        .filter(|o| history::commit_exists(repo, *o));
    if let Some(start) = start
        && score(start) == recorded.len()
    {
        return Some(start);
    }
    recorded.iter().copied().max_by_key(|&o| score(o)).or(start)
}

/// Point a recovery ref of `spec` at `oid`, unless one already does (recovering twice must not
/// pile up refs for the same commit).
fn keep_at_recovery_ref(
    repo: &Repository,
    spec: &str,
    label: &str,
    oid: Oid,
    why: &str,
) -> anyhow::Result<String> {
    if let Some((name, _)) = crate::git::refs::recovery_refs(repo, spec)
        .into_iter()
        .find(|(_, o)| *o == oid)
    {
        return Ok(name);
    }
    let refname = crate::git::refs::next_recovery_ref(repo, spec, label)?;
    crate::git::refs::create(repo, &refname, oid, why)?;
    Ok(refname)
}

/// Another recovery ref of `spec` holding the same tree on the same parent as the snapshot just
/// made at `refname` (which is then removed), if any.
fn same_state_kept(
    repo: &Repository,
    spec: &str,
    refname: &str,
    oid: Oid,
) -> anyhow::Result<Option<String>> {
    let key = |o: Oid| history::tree_and_parents(repo, o);
    let mine = key(oid);
    let Some((name, _)) = crate::git::refs::recovery_refs(repo, spec)
        .into_iter()
        .find(|(n, o)| n != refname && key(*o) == mine)
    else {
        return Ok(None);
    };
    crate::git::refs::delete(repo, refname)?;
    Ok(Some(name))
}

/// A breach found and made safe: the refs saved, the chunk blocked, the message written.
pub struct Guarded {
    pub message: String,
    pub blocked: Option<String>,
    /// The recovery ref holding the last tip runner knew.
    pub saved_ref: Option<String>,
}

/// Check the spec's branch against the work runner recorded. On a breach: keep the last tip
/// runner knew under a recovery ref (and the rewritten state under another), block `current`
/// (the chunk whose attempt is in progress) for a person, journal it, and return a message with
/// the exact command to restore. `wt` is the worktree, when it can be opened. `plan` is the
/// plan as the caller holds it (a dry run's restored plan exists only in memory). `memo`: a run's
/// record of the last tip that passed, so that only what came after it is looked at.
#[allow(clippy::too_many_arguments)]
pub fn guard_history(
    main: &MainRepo,
    paths: &SpecPaths,
    journal: &Journal,
    plan: &crate::plan::Plan,
    current: Option<&Chunk>,
    wt: Option<&Repository>,
    worktree_path: Option<&Path>,
    dry_run: bool,
    memo: Option<&HistoryMemo>,
) -> anyhow::Result<Option<Guarded>> {
    let tip = main.branch_tip(&branch_for(&paths.name));
    let quick = memo
        .zip(tip)
        .and_then(|(m, t)| m.facts(main, t, plan, current));
    let facts = quick.unwrap_or_else(|| history_facts_at(main, tip, plan, current));
    let Some(breach) = judge_history(&facts) else {
        if let (Some(memo), Some(tip)) = (memo, tip) {
            memo.remember(tip, &facts);
        }
        return Ok(None);
    };
    let branch = branch_for(&paths.name);
    let mut message = breach.describe(&branch);
    if dry_run {
        return Ok(Some(Guarded {
            message,
            blocked: None,
            saved_ref: None,
        }));
    }
    let label = current.map(|c| c.id.as_str()).unwrap_or("branch");
    let kept = keep_both_histories(main, &paths.name, label, &facts, wt)?;
    if let (Some(old), Some(tip)) = (&kept.old, kept.old_tip) {
        let on_branch =
            wt.is_some_and(|w| crate::git::head_branch(w).as_deref() == Some(branch.as_str()));
        let command = restore_command(main, &branch, tip, worktree_path, on_branch);
        message.push_str(&format!(
            ". The last tip runner knew is saved at {old}; restore it with:\n    {command}"
        ));
    }
    if let Some(r) = &kept.rewritten {
        message.push_str(&format!(
            "\nThe rewritten history and any uncommitted changes are kept at {r}."
        ));
    }
    let blocked = current.map(|c| c.id.clone());
    let mut change = None;
    if let Some(id) = &blocked {
        message.push_str(&format!(
            "\nChunk {id} is blocked: after restoring, set it back to \"pending\" in {} and run again. To accept the loss instead, also set {} back to \"pending\".",
            paths.plan.path().display(),
            breach.lost_chunks().unwrap_or_else(|| "nothing".to_string())
        ));
        change = block_chunk(paths, id, &breach.describe(&branch), "history rewritten")?;
    }
    journal.write(&Event::HistoryRewritten(ev::HistoryRewritten {
        chunk: blocked.clone(),
        missing: breach
            .missing
            .iter()
            .map(|(c, o)| ev::MissingCommit {
                chunk: c.clone(),
                commit: o.clone(),
            })
            .collect(),
        start_lost: breach.start_lost.clone(),
        branch_gone: breach.branch_gone,
        saved_ref: kept.old.clone(),
        rewritten_ref: kept.rewritten.clone(),
    }))?;
    if let (Some(id), Some(change)) = (&blocked, change) {
        journal.status(id, change)?;
    }
    Ok(Some(Guarded {
        message,
        blocked,
        saved_ref: kept.old,
    }))
}

/// What `keep_both_histories` kept.
struct KeptHistories {
    /// The last tip runner knew, and the recovery ref holding it.
    old_tip: Option<Oid>,
    old: Option<String>,
    /// The recovery ref holding the rewritten state (commits and uncommitted changes).
    rewritten: Option<String>,
}

/// Keep the last tip runner knew under a recovery ref, and the rewritten state (commits and
/// uncommitted changes of `wt`) under another, so that the restore command loses nothing.
fn keep_both_histories(
    main: &MainRepo,
    spec: &str,
    label: &str,
    facts: &HistoryFacts,
    wt: Option<&Repository>,
) -> anyhow::Result<KeptHistories> {
    let repo = &main.repo;
    let old_tip = last_known_tip(repo, facts);
    let old = match old_tip {
        Some(oid) => Some(keep_at_recovery_ref(
            repo,
            spec,
            label,
            oid,
            "runner: the branch's tip before its history was rewritten",
        )?),
        None => None,
    };
    crate::failpoint::hit("after_history_ref");
    let mut rewritten = None;
    if let Some(wt) = wt {
        let refname = crate::git::refs::next_recovery_ref(repo, spec, label)?;
        let saved = crate::git::refs::snapshot_worktree(
            wt,
            &refname,
            "auto-claude: the worktree as the agent left it after rewriting history",
        )?;
        rewritten = match saved {
            // The same state kept by an earlier check (recovering twice) is not kept twice.
            Some(oid) => Some(same_state_kept(repo, spec, &refname, oid)?.unwrap_or(refname)),
            None => match crate::git::head_commit(wt) {
                Ok(head) => Some(keep_at_recovery_ref(
                    repo,
                    spec,
                    label,
                    head,
                    "runner: the rewritten history",
                )?),
                Err(_) => None,
            },
        };
    }
    Ok(KeptHistories {
        old_tip,
        old,
        rewritten,
    })
}

/// The command that puts `branch` back at `tip`: a hard reset in the worktree when it is on
/// the branch, else a `git branch -f` in the main repository.
fn restore_command(
    main: &MainRepo,
    branch: &str,
    tip: Oid,
    worktree_path: Option<&Path>,
    on_branch: bool,
) -> String {
    // The command names the commit itself, not the ref: a ref under refs/auto-claude/ is one an
    // agent can delete (or planted, and recovery reused), a commit id stays true.
    let tip = tip.to_string();
    match (worktree_path, on_branch) {
        (Some(p), true) => format!(
            "git -C {} reset --hard {tip}",
            crate::sh(p.to_string_lossy())
        ),
        _ => format!(
            "git -C {} branch -f {} {tip}",
            crate::sh(main.root.to_string_lossy()),
            crate::sh(branch)
        ),
    }
}
