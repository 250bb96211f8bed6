//! What recovery does with a chunk left `in_progress`: plain rules over the facts gathered from
//! git and the plan, unit-tested without a repository.
//!
//! The rules, in order:
//! 1. **human review** when the state does not add up: the spec's branch is gone, the worktree
//!    the attempt ran in is gone or cannot be opened as itself, HEAD is not a
//!    descendant of the attempt's start commit, a merge, rebase, cherry-pick or revert is half
//!    done, or there are conflicts (in the index, or conflict markers in changed files). The
//!    chunk becomes `blocked` and the run stops (exit 3) saying what to look at.
//! 2. **next** when the chunk's work is there and verified: the agent had reported it done and
//!    its verification (if it has one) ran and passed; or the agent *committed* work (new
//!    commits, nothing uncommitted) and the verification command passes. Uncommitted work the
//!    agent never reported is not enough, even when a check passes: a killed agent can leave
//!    half-written files that satisfy a weak check such as `test -f` (the crash tests found
//!    exactly that).
//!    Leftover changes are committed as the chunk's commit; the chunk becomes `completed`.
//! 3. **continue** when there is partial work (commits since the start commit, or uncommitted
//!    changes): uncommitted changes are saved to a recovery ref first (and stay in the
//!    worktree), the commits stay on the branch, the chunk becomes `pending`, and the next
//!    attempt's prompt says what exists and where.
//! 4. **restart** when nothing changed: the chunk becomes `pending`.

use serde::Serialize;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChunkFacts {
    /// The spec's branch exists.
    pub branch_exists: bool,
    /// HEAD is the start commit or a descendant of it (true when the start is unknown).
    pub head_descends_from_start: bool,
    /// Commits on the branch since the attempt's start commit.
    pub new_commits: usize,
    /// Uncommitted changes (untracked files included) in the worktree holding the branch.
    pub dirty: bool,
    /// A merge, rebase, cherry-pick or revert is in progress there.
    pub operation_in_progress: Option<String>,
    /// Files with conflicts or conflict markers.
    pub conflicts: Vec<String>,
    /// The worktree is on the spec's branch (an agent may have switched branches or detached
    /// HEAD; its commits would then not be on the spec's branch).
    pub on_branch: bool,
    /// The agent had reported the chunk done (`runner chunk done`).
    pub reported_done: bool,
    /// The chunk has a verification command runner can run.
    pub has_check: bool,
    /// The attempt's worktree is gone or cannot be opened as itself (its `.git` file deleted):
    /// what the agent left there cannot be seen, and no other repository may stand in for it.
    pub worktree_missing: bool,
}

impl ChunkFacts {
    pub fn has_work(&self) -> bool {
        self.new_commits > 0 || self.dirty
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Next,
    Continue,
    Restart,
    HumanReview,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Next => "next",
            Decision::Continue => "continue",
            Decision::Restart => "restart",
            Decision::HumanReview => "human_review",
        }
    }

    pub fn parse(text: &str) -> Option<Decision> {
        match text
            .trim()
            .to_ascii_lowercase()
            .replace(['-', ' '], "_")
            .as_str()
        {
            "next" => Some(Decision::Next),
            "continue" => Some(Decision::Continue),
            "restart" => Some(Decision::Restart),
            "human_review" | "human" => Some(Decision::HumanReview),
            _ => None,
        }
    }
}

/// Rule 1, which needs no verification: `Some(reason)` if a person must look.
pub fn needs_human(f: &ChunkFacts) -> Option<String> {
    if !f.branch_exists {
        return Some("the spec's branch is gone".into());
    }
    if f.worktree_missing {
        return Some(
            "the worktree the attempt ran in is gone or cannot be opened: runner cannot see what the agent left there"
                .into(),
        );
    }
    if !f.on_branch {
        return Some(
            "the worktree is no longer on the spec's branch (a branch switch or a detached HEAD)"
                .into(),
        );
    }
    if let Some(op) = &f.operation_in_progress {
        return Some(format!("a {op} is half done in the worktree"));
    }
    if !f.conflicts.is_empty() {
        return Some(format!(
            "conflicts in {}",
            f.conflicts
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !f.head_descends_from_start {
        return Some(
            "the branch no longer contains the commit the attempt started from (history was rewritten)"
                .into(),
        );
    }
    None
}

/// Should the verification command be run before deciding? Only when it could make the chunk
/// `next`.
pub fn wants_check(f: &ChunkFacts) -> bool {
    f.has_check && needs_human(f).is_none() && (f.reported_done || f.has_work())
}

/// The decision and its reason. `verified` is the verification result when it was run.
pub fn decide(f: &ChunkFacts, verified: Option<bool>) -> (Decision, String) {
    if let Some(reason) = needs_human(f) {
        return (Decision::HumanReview, reason);
    }
    let work = match (f.new_commits, f.dirty) {
        (0, true) => "uncommitted changes".to_string(),
        (n, false) => crate::text::count(n, "new commit"),
        (n, true) => format!(
            "{} and uncommitted changes",
            crate::text::count(n, "new commit")
        ),
    };
    // A chunk with a verification command is only `next` once the command passed.
    let verified_or_none = if f.has_check {
        verified == Some(true)
    } else {
        true
    };
    if f.reported_done && verified_or_none {
        let how = if f.has_check {
            "and its verification passes"
        } else {
            "and it has no verification command"
        };
        return (
            Decision::Next,
            format!("the agent had reported it done {how}"),
        );
    }
    if f.new_commits > 0 && !f.dirty && verified == Some(true) {
        return (
            Decision::Next,
            format!("its work is committed ({work}) and its verification passes"),
        );
    }
    if f.has_work() {
        let why = match (f.reported_done, verified) {
            (true, Some(false)) => " (the agent had reported it done, but its verification fails)",
            (true, _) => " (the agent had reported it done, but its verification could not be run)",
            (false, Some(true)) => {
                " (its verification already passes, but the agent never reported it done)"
            }
            _ => "",
        };

        return (
            Decision::Continue,
            format!("partial work is there: {work}{why}"),
        );
    }
    (
        Decision::Restart,
        "nothing changed since the attempt started".into(),
    )
}

/// Whether an agent's report of "done" on a chunk's open attempt still speaks for the work
/// once the worktree is the published branch tip (a worker took the spec from the remote, and
/// made this clone's branch and folder the remote's): only when runner's own commit of the
/// chunk (`chunk_commit`, the message it commits the chunk with) is among the commits since the
/// attempt started (`since_start`, their messages; `None` when its start is not in that
/// history). Otherwise what the agent reported stayed uncommitted where it ran and was never
/// published: the report would make recovery complete the chunk with no commit of its work.
pub fn report_survives_adoption(chunk_commit: &str, since_start: Option<&[String]>) -> bool {
    since_start.is_some_and(|messages| {
        messages
            .iter()
            .any(|m| m.trim_end() == chunk_commit.trim_end())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean() -> ChunkFacts {
        ChunkFacts {
            branch_exists: true,
            head_descends_from_start: true,
            on_branch: true,
            ..ChunkFacts::default()
        }
    }

    #[test]
    fn a_missing_worktree_is_never_judged_by_the_branch_alone() {
        let f = ChunkFacts {
            worktree_missing: true,
            reported_done: true,
            ..clean()
        };
        assert_eq!(decide(&f, None).0, Decision::HumanReview);
    }

    #[test]
    fn nothing_changed_restarts() {
        assert_eq!(decide(&clean(), None).0, Decision::Restart);
        assert!(!wants_check(&ChunkFacts {
            has_check: true,
            ..clean()
        }));
    }

    #[test]
    fn partial_work_continues() {
        let dirty = ChunkFacts {
            dirty: true,
            ..clean()
        };
        assert_eq!(decide(&dirty, None).0, Decision::Continue);
        let committed = ChunkFacts {
            new_commits: 2,
            ..clean()
        };
        let (d, reason) = decide(&committed, None);
        assert_eq!(d, Decision::Continue);
        assert!(reason.contains("2 new commit"));
        // Work whose verification fails is partial.
        let checked = ChunkFacts {
            dirty: true,
            has_check: true,
            ..clean()
        };
        assert!(wants_check(&checked));
        assert_eq!(decide(&checked, Some(false)).0, Decision::Continue);
    }

    #[test]
    fn verified_work_or_a_done_report_is_next() {
        // Committed work that passes its check is done.
        let committed = ChunkFacts {
            new_commits: 1,
            has_check: true,
            ..clean()
        };
        assert_eq!(decide(&committed, Some(true)).0, Decision::Next);
        // Uncommitted, unreported work that passes a check is not: it may be half-written.
        let checked = ChunkFacts {
            dirty: true,
            has_check: true,
            ..clean()
        };
        let (d, reason) = decide(&checked, Some(true));
        assert_eq!(d, Decision::Continue);
        assert!(reason.contains("never reported"), "{reason}");
        let reported = ChunkFacts {
            reported_done: true,
            new_commits: 1,
            ..clean()
        };
        assert_eq!(decide(&reported, None).0, Decision::Next);
        // Reported done but the verification fails: the work is partial.
        let refuted = ChunkFacts {
            reported_done: true,
            dirty: true,
            has_check: true,
            ..clean()
        };
        let (d, reason) = decide(&refuted, Some(false));
        assert_eq!(d, Decision::Continue);
        assert!(reason.contains("verification fails"));
    }

    #[test]
    fn states_that_do_not_add_up_need_a_human() {
        let cases = [
            ChunkFacts {
                branch_exists: false,
                ..clean()
            },
            ChunkFacts {
                head_descends_from_start: false,
                ..clean()
            },
            ChunkFacts {
                operation_in_progress: Some("rebase".into()),
                reported_done: true,
                ..clean()
            },
            ChunkFacts {
                conflicts: vec!["src/a.rs".into()],
                dirty: true,
                has_check: true,
                ..clean()
            },
        ];
        for f in cases {
            assert_eq!(decide(&f, Some(true)).0, Decision::HumanReview, "{f:?}");
            assert!(!wants_check(&f));
        }
    }

    #[test]
    fn decisions_parse_from_agent_answers() {
        assert_eq!(Decision::parse("next"), Some(Decision::Next));
        assert_eq!(Decision::parse("Human Review"), Some(Decision::HumanReview));
        assert_eq!(Decision::parse("human-review"), Some(Decision::HumanReview));
        assert_eq!(Decision::parse("maybe"), None);
        for d in [
            Decision::Next,
            Decision::Continue,
            Decision::Restart,
            Decision::HumanReview,
        ] {
            assert_eq!(Decision::parse(d.as_str()), Some(d));
        }
    }

    #[test]
    fn a_report_survives_adoption_only_with_runners_commit_of_its_chunk_since_its_start() {
        let mine = "auto-claude: core-a - Build part A";
        let with = |m: &[&str]| m.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // runner committed the chunk before the publication: the report's work is there.
        assert!(report_survives_adoption(
            mine,
            Some(&with(&[&format!("{mine}\n")]))
        ));
        assert!(report_survives_adoption(
            mine,
            Some(&with(&["agent: wip", mine]))
        ));
        // Nothing since the start, only the agent's own commits, another chunk's commit, or
        // a start the published history lacks: the reported work was never published.
        assert!(!report_survives_adoption(mine, Some(&[])));
        assert!(!report_survives_adoption(
            mine,
            Some(&with(&["agent: wip"]))
        ));
        assert!(!report_survives_adoption(
            mine,
            Some(&with(&["auto-claude: core-b - Build part B"]))
        ));
        assert!(!report_survives_adoption(
            mine,
            Some(&with(&["auto-claude: core-a - Build part A, and more"]))
        ));
        assert!(!report_survives_adoption(mine, None));
    }
}
