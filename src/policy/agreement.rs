//! Whether a chunk status `runner resume` rebuilt from the checkpoint or the journal agrees with
//! the plan and with git, what to believe when it does not, and what that costs the
//! confidence. Pure: `engine::resume::witness` gathers each chunk's facts and applies the
//! verdicts.
//!
//! Three witnesses: the source (checkpoint or journal), the plan, and git (is the commit the
//! source records for a completed chunk on the spec's branch; does a chunk commit naming it,
//! `auto-claude: <id> - …`, sit there). Whether the work is done is git's to say when it can;
//! what is still to do, the plan's (a person sets a failed or blocked chunk back to pending by
//! editing it, as the docs say, and the next run reads it so). The plan judged against is the
//! one the continued run reads: after its recovery, which undoes an agent's edits of a session
//! whose run died (`engine::recovery::plan_after_recovery`), so a set-back still standing then is
//! a person's, and the run does the chunk again:
//!
//! | the source says | git | the plan | counted as | doubt |
//! |---|---|---|---|---|
//! | completed | its commit left the branch, a chunk commit naming it is there (a rebase) | any | completed, with that commit | 10 |
//! | completed | its commit left the branch, none names it | not completed | the plan's status | 10 |
//! | completed | its commit left the branch, none names it | completed | pending: not done | 25 |
//! | completed | has its commit | in progress (the run died before marking it) | completed | 10 |
//! | completed | has its commit | pending, failed or blocked | the plan's status (set back by hand: the run does it again) | 10 |
//! | completed | no commit recorded or naming it | not completed | the plan's status | 25 |
//! | not completed | has the plan's commit, or one naming it | completed | completed (the source lags) | 25 |
//! | not completed | has no commit for it | completed | completed (as a run reads the plan) | 50 |
//! | another status than the plan's | cannot tell | | the plan's (an edit between runs stands, as a run reads it) | 25 |
//!
//! A chunk's *doubt* is how likely (in percent) the status counted is wrong; the confidence
//! loses the chunks' doubts over the number of chunks, rounded up ([`penalty`]): never 100 with
//! a contradiction named. Each contradiction is named in a warning ([`warnings`]).
//!
//! The doubts are measured, not guessed: the calibration suite (`tests/it/calibration.rs`) has
//! a status kept against the plan with git's backing right for 26 of 29 chunks (a hostile plan
//! reset against a person's set-back), and every status git decided right.

use crate::plan::Status;

/// What git says of one chunk's work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GitFacts {
    /// The commit the source records for the chunk is on the spec's branch (`Some(true)`), is
    /// not (`Some(false)`: history rewritten, or a commit id that is no commit), or none is
    /// recorded (`None`). With the branch gone: whether the repository still has it.
    pub recorded_on_branch: Option<bool>,
    /// A chunk commit naming the chunk is on the branch.
    pub chunk_commit: bool,
    /// The commit the plan records for the chunk's last attempt is on the branch.
    pub plan_commit_on_branch: bool,
}

/// One chunk's witnesses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Witnesses {
    /// What the source (checkpoint or journal) says.
    pub source: Status,
    /// What the plan says (`None`: no plan to compare with, or the chunk is not in it).
    pub plan: Option<Status>,
    pub git: GitFacts,
}

/// A contradiction, by what was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Finding {
    /// Completed, its commit no longer on the branch, and no chunk commit names it; the plan
    /// still says completed. Not done.
    CommitGone,
    /// The same, but the plan already says it is not done (the docs' way to accept the loss).
    CommitGoneAccepted,
    /// Completed, its commit no longer on the branch, a chunk commit naming it there (the
    /// branch was rebased or amended). Completed, with that commit.
    CommitReplaced,
    /// Completed, with its commit on the branch, but not by the plan the run reads (set back
    /// by a person). The plan's status: the run does the chunk again.
    PlanBehind,
    /// Completed, with its commit on the branch; the plan still has it in progress (the run
    /// died before marking it; its recovery decides). Kept completed.
    PlanInProgress,
    /// Completed by the source alone: no commit recorded or on the branch, and the plan says
    /// otherwise. The plan's status.
    Unconfirmed,
    /// Completed by the plan, its commit on the branch, not by the source. Completed.
    PlanAhead,
    /// Completed by the plan with no commit recorded or on the branch, not by the source.
    /// Completed, as a run reads it, in doubt.
    PlanAheadUnconfirmed,
    /// Neither says completed, and they differ (failed or blocked set back to pending by a
    /// person). The plan's.
    PlanDiffers,
}

impl Finding {
    /// How likely (in percent of one chunk) the status counted is wrong.
    pub fn doubt(self) -> u32 {
        match self {
            Finding::CommitReplaced
            | Finding::CommitGoneAccepted
            | Finding::PlanBehind
            | Finding::PlanInProgress => 10,
            Finding::CommitGone | Finding::Unconfirmed | Finding::PlanAhead => 25,
            Finding::PlanDiffers => 25,
            Finding::PlanAheadUnconfirmed => 50,
        }
    }
}

/// What to count a chunk as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub status: Status,
    /// Its commit is the chunk commit on the branch that names it (not the recorded one).
    pub use_chunk_commit: bool,
    pub finding: Option<Finding>,
}

/// The status to count for one chunk (see the module's table).
pub fn judge(w: Witnesses) -> Verdict {
    let keep = |finding| Verdict {
        status: w.source,
        use_chunk_commit: false,
        finding,
    };
    let plan_done = w.plan == Some(Status::Completed);
    let plan_not_done = w.plan.filter(|p| *p != Status::Completed);
    if w.source == Status::Completed {
        return match (w.git.recorded_on_branch, w.git.chunk_commit) {
            (Some(false), true) => Verdict {
                use_chunk_commit: true,
                ..keep(Some(Finding::CommitReplaced))
            },
            (Some(false), false) => match plan_not_done {
                Some(p) => Verdict {
                    status: p,
                    use_chunk_commit: false,
                    finding: Some(Finding::CommitGoneAccepted),
                },
                None => Verdict {
                    status: Status::Pending,
                    use_chunk_commit: false,
                    finding: Some(Finding::CommitGone),
                },
            },
            // The run reads the plan, not git: a chunk set back stays to do whatever git has,
            // and counting it done would say the run skips work it then does.
            (Some(true), _) | (None, true) => match plan_not_done {
                Some(Status::InProgress) => keep(Some(Finding::PlanInProgress)),
                Some(p) => Verdict {
                    status: p,
                    use_chunk_commit: false,
                    finding: Some(Finding::PlanBehind),
                },
                None => keep(None),
            },
            (None, false) => match plan_not_done {
                Some(p) => Verdict {
                    status: p,
                    use_chunk_commit: false,
                    finding: Some(Finding::Unconfirmed),
                },
                None => keep(None),
            },
        };
    }
    match w.plan {
        Some(p) if p == w.source => keep(None),
        None => keep(None),
        Some(_) if plan_done && (w.git.plan_commit_on_branch || w.git.chunk_commit) => Verdict {
            status: Status::Completed,
            use_chunk_commit: !w.git.plan_commit_on_branch,
            finding: Some(Finding::PlanAhead),
        },
        Some(p) if p != Status::Completed => Verdict {
            status: p,
            use_chunk_commit: false,
            finding: Some(Finding::PlanDiffers),
        },
        // The plan says completed, and git cannot back it (a chunk that changed nothing, or
        // one marked done by hand): the plan's, as a run reads it.
        Some(p) => Verdict {
            status: p,
            use_chunk_commit: false,
            finding: Some(Finding::PlanAheadUnconfirmed),
        },
    }
}

/// The points the confidence loses for `findings` among `total` chunks: their doubts over the
/// number of chunks, rounded up (at least 1 for any finding), at most 100.
pub fn penalty(findings: &[Finding], total: usize) -> u8 {
    if findings.is_empty() {
        return 0;
    }
    let doubt: u64 = findings.iter().map(|f| u64::from(f.doubt())).sum();
    let total = total.max(findings.len()).max(1) as u64;
    doubt.div_ceil(total).clamp(1, 100) as u8
}

/// One chunk's contradiction, for its warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Noted {
    pub chunk: String,
    pub finding: Finding,
    /// What the source said.
    pub source: Status,
    /// What the plan says.
    pub plan: Option<Status>,
}

/// How many chunks one warning names before it says "and N more".
const NAMED: usize = 10;

/// One warning per kind of contradiction, naming its chunks. `source` names where the status
/// came from ("checkpoint", "journal"), `branch` the spec's branch, `recover` the command that
/// keeps the last tip runner knew and prints the way back.
pub fn warnings(noted: &[Noted], source: &str, branch: &str, recover: &str) -> Vec<String> {
    let mut kinds: Vec<Finding> = noted.iter().map(|n| n.finding).collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .map(|kind| {
            let of: Vec<&Noted> = noted.iter().filter(|n| n.finding == kind).collect();
            let one = of.len() == 1;
            let chunks = names(&of, |n| match kind {
                Finding::PlanBehind
                | Finding::PlanInProgress
                | Finding::Unconfirmed
                | Finding::PlanAhead
                | Finding::PlanAheadUnconfirmed
                | Finding::PlanDiffers
                | Finding::CommitGoneAccepted => format!(
                    "{} ({} by the {source}, {} by the plan)",
                    crate::text::for_terminal(&n.chunk),
                    n.source.as_str(),
                    n.plan.map_or("-", Status::as_str)
                ),
                _ => crate::text::for_terminal(&n.chunk).into_owned(),
            });
            let (chunk, its, them) = match one {
                true => ("Chunk", "its commit is", "it"),
                false => ("Chunks", "their commits are", "them"),
            };
            match kind {
                Finding::CommitGone => format!(
                    "{chunk} {chunks}: completed by the {source}, but {its} no longer on {branch} \
                     (its history was rewritten): counted as not done; `{recover}` keeps the \
                     last tip runner knew and prints the way back"
                ),
                Finding::CommitGoneAccepted => format!(
                    "{chunk} {chunks}: {its} no longer on {branch}: counted as the plan says"
                ),
                Finding::CommitReplaced => format!(
                    "{chunk} {chunks}: {its} no longer on {branch}, but a chunk commit naming \
                     {} is (the branch was rebased or amended): counted as completed",
                    if one { "it" } else { "each" }
                ),
                Finding::PlanBehind => format!(
                    "{chunk} {chunks}: git has the commit, but the plan sets {them} back and the run \
                     reads the plan: counted as the plan says, the run will do {them} again (set \
                     {them} back to completed in the plan to keep the work as done)",
                ),
                Finding::PlanInProgress => format!(
                    "{chunk} {chunks}: the plan disagrees; git has the commit, so {} counted \
                     as completed: check by hand",
                    if one { "it is" } else { "they are" }
                ),
                Finding::Unconfirmed => format!(
                    "{chunk} {chunks}: neither the plan nor git confirms completed: counted as \
                     the plan says"
                ),
                Finding::PlanAhead => format!(
                    "{chunk} {chunks}: the plan's completed is on {branch}: counted as completed"
                ),
                Finding::PlanAheadUnconfirmed => format!(
                    "{chunk} {chunks}: the plan says completed but git has no commit for {}: \
                     counted as the plan says (a run reads it so); check by hand",
                    if one { "it" } else { "them" }
                ),
                Finding::PlanDiffers => format!(
                    "{chunk} {chunks}: the plan disagrees and git cannot tell: counted as the \
                     plan says (a run reads it so)"
                ),
            }
        })
        .collect()
}

/// The first [`NAMED`] of `of`, each as `name` says, and how many more.
fn names(of: &[&Noted], name: impl Fn(&Noted) -> String) -> String {
    let mut out: Vec<String> = of.iter().take(NAMED).map(|n| name(n)).collect();
    if of.len() > NAMED {
        out.push(format!("and {} more", of.len() - NAMED));
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use Status::*;

    fn git(recorded: Option<bool>, chunk_commit: bool, plan_commit: bool) -> GitFacts {
        GitFacts {
            recorded_on_branch: recorded,
            chunk_commit,
            plan_commit_on_branch: plan_commit,
        }
    }

    fn counted(source: Status, plan: Option<Status>, g: GitFacts) -> (Status, Option<Finding>) {
        let v = judge(Witnesses {
            source,
            plan,
            git: g,
        });
        (v.status, v.finding)
    }

    #[test]
    fn a_completed_chunk_whose_commit_left_the_branch_is_not_done() {
        let gone = git(Some(false), false, false);
        assert_eq!(
            counted(Completed, Some(Completed), gone),
            (Pending, Some(Finding::CommitGone))
        );
        assert_eq!(
            counted(Completed, None, gone),
            (Pending, Some(Finding::CommitGone))
        );
        // The person accepted the loss as the docs say (set it back): the plan's status.
        assert_eq!(
            counted(Completed, Some(Pending), gone),
            (Pending, Some(Finding::CommitGoneAccepted))
        );
        // Rebased: a chunk commit naming it is on the branch.
        let v = judge(Witnesses {
            source: Completed,
            plan: Some(Completed),
            git: git(Some(false), true, false),
        });
        assert_eq!(
            (v.status, v.use_chunk_commit, v.finding),
            (Completed, true, Some(Finding::CommitReplaced))
        );
    }

    #[test]
    fn a_source_ahead_of_the_plan_is_kept_only_when_git_backs_it() {
        // Set back by a person, its commit on the branch: the run reads the plan and does it
        // again, so the plan's status is what it will do.
        assert_eq!(
            counted(Completed, Some(Pending), git(Some(true), true, false)),
            (Pending, Some(Finding::PlanBehind))
        );
        assert_eq!(
            counted(Completed, Some(Failed), git(None, true, false)),
            (Failed, Some(Finding::PlanBehind))
        );
        // Still in progress by the plan (the run died before marking it): git's, named.
        assert_eq!(
            counted(Completed, Some(InProgress), git(Some(true), true, false)),
            (Completed, Some(Finding::PlanInProgress))
        );
        // Forged: completed with no commit anywhere, the plan says in progress.
        assert_eq!(
            counted(Completed, Some(InProgress), git(None, false, false)),
            (InProgress, Some(Finding::Unconfirmed))
        );
        // A chunk that changed nothing: completed by both, no commit: agreed.
        assert_eq!(
            counted(Completed, Some(Completed), git(None, false, false)),
            (Completed, None)
        );
    }

    #[test]
    fn a_source_behind_the_plan_or_beside_it_takes_the_plan() {
        let v = judge(Witnesses {
            source: InProgress,
            plan: Some(Completed),
            git: git(None, true, true),
        });
        assert_eq!(
            (v.status, v.use_chunk_commit, v.finding),
            (Completed, false, Some(Finding::PlanAhead))
        );
        // Done by the plan alone (a chunk that changed nothing, or marked by hand): the plan's,
        // as a run reads it, in doubt.
        assert_eq!(
            counted(InProgress, Some(Completed), git(None, false, false)),
            (Completed, Some(Finding::PlanAheadUnconfirmed))
        );
        // Set back by a person, as the docs say: the plan's.
        assert_eq!(
            counted(Failed, Some(Pending), git(None, false, false)),
            (Pending, Some(Finding::PlanDiffers))
        );
        assert_eq!(
            counted(Pending, Some(Pending), GitFacts::default()),
            (Pending, None)
        );
        assert_eq!(counted(Blocked, None, GitFacts::default()), (Blocked, None));
    }

    #[test]
    fn the_penalty_is_the_doubt_over_the_chunks_rounded_up() {
        assert_eq!(penalty(&[], 8), 0);
        assert_eq!(penalty(&[Finding::CommitGone], 3), 9);
        assert_eq!(penalty(&[Finding::CommitGone, Finding::CommitGone], 8), 7);
        assert_eq!(penalty(&[Finding::PlanDiffers], 8), 4);
        assert_eq!(penalty(&[Finding::PlanAheadUnconfirmed], 8), 7);
        assert_eq!(penalty(&[Finding::CommitReplaced], 1000), 1);
        assert_eq!(penalty(&[Finding::PlanAheadUnconfirmed; 4], 0), 50);
    }

    #[test]
    fn each_kind_of_contradiction_is_one_warning_naming_its_chunks() {
        let n = |chunk: &str, finding, source, plan| Noted {
            chunk: chunk.into(),
            finding,
            source,
            plan,
        };
        let noted = [
            n("core-a", Finding::CommitGone, Completed, Some(Completed)),
            n("core-b", Finding::CommitGone, Completed, Some(Completed)),
            n("polish", Finding::PlanBehind, Completed, Some(Pending)),
        ];
        let w = warnings(
            &noted,
            "journal",
            "auto-claude/001-a",
            "runner recover --spec 001-a",
        );
        assert_eq!(
            w,
            vec![
                "Chunks core-a, core-b: completed by the journal, but their commits are no \
                 longer on auto-claude/001-a (its history was rewritten): counted as not done; \
                 `runner recover --spec 001-a` keeps the last tip runner knew and prints the way \
                 back",
                "Chunk polish (completed by the journal, pending by the plan): git has the \
                 commit, but the plan sets it back and the run reads the plan: counted as the \
                 plan says, the run will do it again (set it back to completed in the plan to \
                 keep the work as done)"
            ]
        );
        let many: Vec<Noted> = (0..12)
            .map(|i| {
                n(
                    &format!("c{i}"),
                    Finding::Unconfirmed,
                    Completed,
                    Some(Pending),
                )
            })
            .collect();
        let w = warnings(&many, "checkpoint", "b", "r");
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("c9 (completed by the checkpoint, pending by the plan), and 2 more"));
        // A chunk id is made safe for a terminal.
        let w = warnings(
            &[n("a\u{1b}[2J", Finding::CommitGone, Completed, None)],
            "journal",
            "b",
            "r",
        );
        assert!(!w[0].contains('\u{1b}'), "{w:?}");
    }
}
