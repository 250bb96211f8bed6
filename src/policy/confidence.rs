//! How sure `runner resume` is of the chunk statuses it rebuilt (0–100), and why, in words.
//! Pure functions over the facts reconstruction gathered (`engine::resume`):
//!
//! - **checkpoint**: 100 when it is younger than 5 minutes, 90 younger than an hour, 70 older;
//!   −10 when files of completed chunks are missing (see `engine::resume::validate` for exactly
//!   which files count), −5 when the spec's branch is gone;
//! - **events** (the journal's replay): 100, −5 for every full 30 minutes since the last event
//!   (0–29 min 59 s: 100; 30 min: 95; 2 h: 80; never below 0). Full periods, not started ones:
//!   a run interrupted a moment ago is as sure from its journal as from a fresh checkpoint;
//! - **commits** (the branch's chunk commits and the plan alone): a fixed [`COMMITS_SCORE`];
//!
//! An age below zero (the clock moved back, or a file's time was edited forward) counts as 0:
//! nothing says the state is old. Below [`LOW`] the reason ends with [`LOW_NOTE`].

/// Below this, the reason tells the person to check by hand.
pub const LOW: u8 = 80;

/// Said with every score below [`LOW`].
pub const LOW_NOTE: &str = "Low confidence recovery. Verify manually.";

/// The score of a reconstruction from the branch's commits and the plan alone: a chunk with its
/// commit on the branch is surely completed, but which chunk was in progress, which failed and
/// which were set back by hand is not in git.
pub const COMMITS_SCORE: u8 = 50;

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

/// "3 min", "2 h 5 min", "4 d 3 h": an age in words.
pub fn age_words(secs: i64) -> String {
    let secs = secs.max(0);
    let (d, h, m, s) = (
        secs / 86_400,
        secs % 86_400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, 0) => format!("{h} h"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, 0, _) => format!("{d} d"),
        (d, h, _) => format!("{d} d {h} h"),
    }
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
    let written = facts.age_secs.max(0);
    let age = match facts.replayed {
        Some((_, newest)) => written.min(newest.max(0)),
        None => written,
    };
    let (base, band) = if age < 5 * 60 {
        (100, "under 5 minutes")
    } else if age < 3600 {
        (90, "under an hour")
    } else {
        (70, "over an hour")
    };
    let mut score = i64::from(base);
    let mut reason = match facts.replayed {
        Some((n, _)) => format!(
            "From the checkpoint, written {} ago, with {n} later journal event{} replayed on top, \
             the last {} ago ({band}: {base})",
            age_words(written),
            if n == 1 { "" } else { "s" },
            age_words(age)
        ),
        None => format!(
            "From the checkpoint, written {} ago ({band}: {base})",
            age_words(written)
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
    let age = age_secs.max(0);
    let periods = age / 1800;
    let mut reason = format!("From the journal's events, the last {} ago", age_words(age));
    if periods > 0 {
        reason.push_str(&format!(
            " (−5 for each full 30 minutes: −{})",
            (periods * 5).min(100)
        ));
    }
    finish(100 - periods.saturating_mul(5), reason)
}

/// The score of a reconstruction from the branch's chunk commits and the plan alone.
pub fn from_commits() -> Confidence {
    finish(
        i64::from(COMMITS_SCORE),
        format!(
            "From the branch's chunk commits and the plan alone ({COMMITS_SCORE}): no usable \
             checkpoint or journal; chunks in progress or failed cannot be told from git"
        ),
    )
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
        // A time in the future is no age.
        assert_eq!(cp(-5000, 0, false).score, 100);
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
    fn commits_are_low_confidence_and_say_so() {
        let c = from_commits();
        assert!(c.score <= 50);
        assert!(c.reason.contains("commits"));
        assert!(c.reason.ends_with(LOW_NOTE));
    }

    #[test]
    fn ages_read_as_words() {
        assert_eq!(age_words(0), "0 s");
        assert_eq!(age_words(59), "59 s");
        assert_eq!(age_words(60), "1 min");
        assert_eq!(age_words(3600 + 120), "1 h 2 min");
        assert_eq!(age_words(86_400 * 2 + 3600 * 5 + 7), "2 d 5 h");
        assert_eq!(age_words(86_400), "1 d");
        assert_eq!(age_words(-3), "0 s");
    }
}
