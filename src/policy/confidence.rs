//! How sure `runner resume` is of the chunk statuses it rebuilt (0–100), and why, in words.
//! Pure functions over the facts reconstruction gathered (`engine::resume`):
//!
//! - **checkpoint**: 100 when it is younger than 5 minutes, 90 younger than an hour, 70 older;
//!   −10 when files of completed chunks are missing (see `engine::resume::validate` for exactly
//!   which files count), −5 when the spec's branch is gone;
//! - **events** (the journal's replay): 100, −5 for every full 30 minutes since the last event
//!   (0–29 min 59 s: 100; 30 min: 95; 2 h: 80; never below 0). Full periods, not started ones:
//!   a run interrupted a moment ago is as sure from its journal as from a fresh checkpoint;
//! - **commits** (the branch's chunk commits and the plan alone): the share of chunks whose
//!   status git confirms, at most [`COMMITS_MAX`], and always marked low confidence. (Not a
//!   fixed low number: the calibration suite, `tests/it/calibration.rs`, measured this source
//!   right about 96 % of chunks, and a fixed 50 stated 46 points under it.)
//!
//! A time ahead of now is said to be in the future (`policy::age`); up to
//! [`FUTURE_SLACK`](super::age::FUTURE_SLACK) ahead (clocks of two machines, a second's rounding) it scores as now.
//! Further ahead it is not believed (a clock far off, or a file an agent edited to look fresh):
//! it scores as the oldest band, 70 (events: as 2 h old, 80), and the reason says why.
//!
//! Chunk statuses the plan or git contradict (`policy::agreement`) take points off any source's
//! score ([`doubted`]). Below [`LOW`] the reason ends with [`LOW_NOTE`].

use super::age::{ago, believed};

/// Below this, the reason tells the person to check by hand.
pub const LOW: u8 = 80;

/// Said with every score below [`LOW`].
pub const LOW_NOTE: &str = "Low confidence recovery. Verify manually.";

/// The highest score of a reconstruction from the branch's chunk commits and the plan alone: a
/// chunk with its commit on the branch is surely completed, but which chunk was in progress
/// and which failed is not in git (a chunk set back by hand is the plan's, as the run reads
/// it). 95, not 90: with set-backs followed, the calibration suite measured this source right
/// on every chunk, and 90 stated it more than 10 points under that.
pub const COMMITS_MAX: u8 = 95;

/// A score and its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confidence {
    pub score: u8,
    pub reason: String,
}

/// The facts about a valid checkpoint that its score depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointFacts {
    pub age_secs: i64,
    /// Files of completed chunks missing from the worktree (see `engine::resume::validate`).
    pub missing_files: usize,
    pub branch_gone: bool,
    /// Journal events newer than the checkpoint, replayed on top of it: how many, and the age of
    /// the last one. The state is then as new as that event, and scores by its age.
    pub replayed: Option<(usize, i64)>,
}

fn finish(score: i64, mut reason: String) -> Confidence {
    let score = score.clamp(0, 100) as u8;
    if score < LOW {
        reason.push_str(". ");
        reason.push_str(LOW_NOTE);
    }
    Confidence { score, reason }
}

/// The score of a checkpoint that passed validation.
pub fn from_checkpoint(facts: CheckpointFacts) -> Confidence {
    let future = believed(facts.age_secs).is_none()
        || facts
            .replayed
            .is_some_and(|(_, newest)| believed(newest).is_none());
    let written = facts.age_secs.max(0);
    let age = match facts.replayed {
        Some((_, newest)) => written.min(newest.max(0)),
        None => written,
    };
    let (base, band) = if future {
        (
            70,
            "a time too far in the future to believe, scored as over an hour",
        )
    } else if age < 5 * 60 {
        (100, "under 5 minutes")
    } else if age < 3600 {
        (90, "under an hour")
    } else {
        (70, "over an hour")
    };
    let mut score = i64::from(base);
    let mut reason = match facts.replayed {
        Some((n, newest)) => format!(
            "From the checkpoint, written {}, with {n} later journal event{} replayed on top, \
             the last {} ({band}: {base})",
            ago(facts.age_secs),
            if n == 1 { "" } else { "s" },
            ago(newest.min(facts.age_secs))
        ),
        None => format!(
            "From the checkpoint, written {} ({band}: {base})",
            ago(facts.age_secs)
        ),
    };
    if facts.missing_files > 0 {
        score -= 10;
        let files = if facts.missing_files == 1 {
            "1 file".to_string()
        } else {
            format!("{} files", facts.missing_files)
        };
        reason.push_str(&format!(
            "; {files} of completed chunks missing from the worktree (−10)"
        ));
    }
    if facts.branch_gone {
        score -= 5;
        reason.push_str("; the spec's branch is gone (−5)");
    }
    finish(score, reason)
}

/// The score of a replay of the journal whose last event is `age_secs` old.
pub fn from_events(age_secs: i64) -> Confidence {
    if believed(age_secs).is_none() {
        return finish(
            80,
            format!(
                "From the journal's events, the last {}: a clock far off or an edited journal, \
                 scored as 2 h old (80)",
                ago(age_secs)
            ),
        );
    }
    let age = age_secs.max(0);
    let periods = age / 1800;
    let mut reason = format!("From the journal's events, the last {}", ago(age_secs));
    if periods > 0 {
        reason.push_str(&format!(
            " (−5 for each full 30 minutes: −{})",
            (periods * 5).min(100)
        ));
    }
    finish(100 - periods.saturating_mul(5), reason)
}

/// The score of a reconstruction from the branch's chunk commits and the plan alone, where git
/// confirms the status of `total − unconfirmed` of the `total` chunks (see
/// `engine::resume::commits::unconfirmed`): that share, at most [`COMMITS_MAX`]. Always marked
/// low confidence, whatever the number: nothing but git and a file any agent can edit says it.
pub fn from_commits(total: usize, unconfirmed: usize) -> Confidence {
    let total = total.max(1);
    let confirmed = total.saturating_sub(unconfirmed);
    let share = (confirmed * 100 + total / 2) / total;
    let score = share.min(usize::from(COMMITS_MAX)) as u8;
    let capped = if share > usize::from(COMMITS_MAX) {
        format!(", at most {COMMITS_MAX}")
    } else {
        String::new()
    };
    let mut c = finish(
        i64::from(score),
        format!(
            "From the branch's chunk commits and the plan alone (no usable checkpoint or \
             journal): git confirms {confirmed} of {total} chunks ({share}{capped}); a chunk in \
             progress or failed cannot be told from git"
        ),
    );
    if !c.reason.ends_with(LOW_NOTE) {
        c.reason.push_str(". ");
        c.reason.push_str(LOW_NOTE);
    }
    c
}

/// `c` with `penalty` points off for `chunks` chunk statuses the plan or git contradict
/// (`policy::agreement::penalty`), the reason saying how many and how much.
pub fn doubted(c: Confidence, chunks: usize, penalty: u8) -> Confidence {
    if chunks == 0 {
        return c;
    }
    let mut reason = c
        .reason
        .strip_suffix(LOW_NOTE)
        .and_then(|r| r.strip_suffix(". "))
        .unwrap_or(&c.reason)
        .to_string();
    reason.push_str(&format!(
        "; {chunks} chunk status{} the plan or git contradict{} (−{penalty})",
        if chunks == 1 { "" } else { "es" },
        if chunks == 1 { "s" } else { "" },
    ));
    let mut out = finish(i64::from(c.score) - i64::from(penalty), reason);
    // The commits source is marked low whatever its score.
    if c.reason.ends_with(LOW_NOTE) && !out.reason.ends_with(LOW_NOTE) {
        out.reason.push_str(". ");
        out.reason.push_str(LOW_NOTE);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(age_secs: i64, missing_files: usize, branch_gone: bool) -> Confidence {
        from_checkpoint(CheckpointFacts {
            age_secs,
            missing_files,
            branch_gone,
            replayed: None,
        })
    }

    #[test]
    fn a_checkpoint_scores_by_its_age_and_loses_points_for_missing_files_and_branch() {
        assert_eq!(cp(0, 0, false).score, 100);
        assert_eq!(cp(299, 0, false).score, 100);
        assert_eq!(cp(300, 0, false).score, 90);
        assert_eq!(cp(3599, 0, false).score, 90);
        assert_eq!(cp(3600, 0, false).score, 70);
        assert_eq!(cp(86_400 * 30, 0, false).score, 70);
        assert_eq!(cp(10, 3, false).score, 90);
        assert_eq!(cp(10, 0, true).score, 95);
        assert_eq!(cp(10, 1, true).score, 85);
        assert_eq!(cp(4000, 1, true).score, 55);
        // A time a little ahead is now; far ahead is not believed (a forged fresh checkpoint).
        assert_eq!(cp(-120, 0, false).score, 100);
        assert_eq!(cp(-121, 0, false).score, 70);
        assert!(cp(-5000, 0, false).reason.contains("future"));
        let replayed_ahead = from_checkpoint(CheckpointFacts {
            age_secs: 10,
            missing_files: 0,
            branch_gone: false,
            replayed: Some((1, -86_400)),
        });
        assert_eq!(replayed_ahead.score, 70);
        assert_eq!(from_events(-60).score, 100);
        assert_eq!(from_events(-86_400).score, 80);
        assert!(from_events(-86_400).reason.contains("future"));
    }

    #[test]
    fn the_checkpoint_reason_names_the_source_its_age_and_each_deduction() {
        let c = cp(7200, 2, true);
        assert_eq!(
            c.reason,
            "From the checkpoint, written 2 h ago (over an hour: 70); 2 files of completed \
             chunks missing from the worktree (−10); the spec's branch is gone (−5). \
             Low confidence recovery. Verify manually."
        );
        let c = cp(90, 0, false);
        assert_eq!(
            c.reason,
            "From the checkpoint, written 1 min ago (under 5 minutes: 100)"
        );
        assert!(!c.reason.contains(LOW_NOTE));
        assert!(cp(10, 1, false).reason.contains("1 file of"));
    }

    #[test]
    fn events_replayed_on_a_checkpoint_make_it_as_new_as_the_last_of_them() {
        let c = from_checkpoint(CheckpointFacts {
            age_secs: 7200,
            missing_files: 0,
            branch_gone: false,
            replayed: Some((3, 60)),
        });
        assert_eq!(c.score, 100);
        assert_eq!(
            c.reason,
            "From the checkpoint, written 2 h ago, with 3 later journal events replayed on top, \
             the last 1 min ago (under 5 minutes: 100)"
        );
        // A replayed event older than the checkpoint (clocks) does not age it.
        let c = from_checkpoint(CheckpointFacts {
            age_secs: 60,
            missing_files: 1,
            branch_gone: false,
            replayed: Some((1, 9000)),
        });
        assert_eq!(c.score, 90);
        assert!(c.reason.contains("1 later journal event replayed"));
    }

    #[test]
    fn a_time_in_the_future_is_said_so_never_zero_seconds_ago() {
        let c = cp(-3 * 3600, 0, false);
        assert_eq!(
            c.reason,
            "From the checkpoint, written 3 h in the future (clock skew) (a time too far in the \
             future to believe, scored as over an hour: 70). Low confidence recovery. Verify \
             manually."
        );
        // A little ahead: said, and scored as now.
        let c = cp(-30, 0, false);
        assert_eq!(c.score, 100);
        assert!(
            c.reason.contains("written 30 s in the future (clock skew)"),
            "{c:?}"
        );
        let e = from_events(-7200);
        assert!(
            e.reason
                .starts_with("From the journal's events, the last 2 h in the future (clock skew)"),
            "{e:?}"
        );
        assert!(!from_events(-30).reason.contains("0 s ago"));
    }

    #[test]
    fn contradicted_statuses_take_points_off_and_say_how_many() {
        let c = doubted(cp(10, 0, false), 2, 13);
        assert_eq!(c.score, 87);
        assert_eq!(
            c.reason,
            "From the checkpoint, written 10 s ago (under 5 minutes: 100); 2 chunk statuses the \
             plan or git contradict (−13)"
        );
        // Below 80 the note comes once, at the end.
        let c = doubted(cp(4000, 0, false), 1, 5);
        assert_eq!(c.score, 65);
        assert_eq!(c.reason.matches(LOW_NOTE).count(), 1);
        assert!(
            c.reason
                .ends_with("contradicts (−5). Low confidence recovery. Verify manually.")
        );
        // The commits source stays marked low.
        let c = doubted(from_commits(8, 0), 1, 3);
        assert_eq!(c.score, 92);
        assert!(c.reason.ends_with(LOW_NOTE), "{c:?}");
        assert_eq!(doubted(cp(10, 0, false), 0, 0), cp(10, 0, false));
    }

    #[test]
    fn events_lose_five_points_per_full_half_hour() {
        assert_eq!(from_events(0).score, 100);
        assert_eq!(from_events(1799).score, 100);
        assert_eq!(from_events(1800).score, 95);
        assert_eq!(from_events(3599).score, 95);
        assert_eq!(from_events(7200).score, 80);
        assert_eq!(from_events(7200 + 1800).score, 75);
        assert_eq!(from_events(-100).score, 100);
        assert_eq!(from_events(i64::MAX).score, 0);
        assert_eq!(from_events(86_400).score, 0);
        let r = from_events(9000).reason;
        assert_eq!(
            r,
            "From the journal's events, the last 2 h 30 min ago (−5 for each full 30 minutes: \
             −25). Low confidence recovery. Verify manually."
        );
        assert!(!from_events(7200).reason.contains(LOW_NOTE));
    }

    #[test]
    fn commits_score_the_share_git_confirms_and_are_always_marked_low() {
        let c = from_commits(8, 1);
        assert_eq!(c.score, 88);
        assert_eq!(
            c.reason,
            "From the branch's chunk commits and the plan alone (no usable checkpoint or \
             journal): git confirms 7 of 8 chunks (88); a chunk in progress or failed cannot be \
             told from git. Low confidence recovery. Verify manually."
        );
        let all = from_commits(8, 0);
        assert_eq!(all.score, COMMITS_MAX);
        assert!(all.reason.contains("(100, at most 95)"));
        assert!(all.reason.ends_with(LOW_NOTE));
        let low = from_commits(4, 3);
        assert_eq!(low.score, 25);
        assert_eq!(low.reason.matches(LOW_NOTE).count(), 1);
        assert_eq!(from_commits(0, 0).score, COMMITS_MAX);
        assert_eq!(from_commits(2, 5).score, 0);
    }
}
