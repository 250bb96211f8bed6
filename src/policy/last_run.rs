//! What a spec's newest run records say of where its work stands, for `runner status`: its
//! last run did not end (whatever stopped it: Ctrl-C, a closed terminal, kill -9, a crash), or
//! its work was thrown away since. Pure: the mechanism reads the records, newest first.

/// What kind of work a record stands for, as this rule tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// `runner run` (or `resume`, `start_run`): an agent worked on the spec.
    Agent,
    /// `runner recover`: it puts state right, and continues nothing.
    Recover,
    /// Merge, discard or undo: the spec's work was landed, thrown away or brought back.
    Lifecycle,
}

/// One run record, as [`last_run`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub work: Work,
    /// The record says the run ended.
    pub ended: bool,
    /// How it ended (`interrupted`, `complete`, `discarded`, …).
    pub outcome: Option<String>,
}

/// Where the newest records leave the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LastRun {
    /// No record says anything (none, or only recovers).
    #[default]
    Unknown,
    /// The last agent run ended by itself (complete, failed, a budget, a usage limit …), or a
    /// merge or an undo came after it.
    Ended,
    /// The last agent run did not end: stopped by a signal (its record says `interrupted`) or
    /// killed (no end recorded), and nothing but recovers since. (A run that holds the spec's
    /// lock is running: the caller knows that first.)
    Interrupted,
    /// The last thing done was a discard: the spec's build was thrown away.
    Discarded,
}

/// The outcomes of an agent run that stopped before it worked on the spec: a question
/// cancelled, the spec or its slot busy, a refusal or an error of its own checks. Such a run
/// says nothing of where the spec stands: the record before it does.
const DID_NOTHING: &[&str] = &["cancelled", "busy", "error"];

/// Where `newest_first` (the spec's records, newest first) leaves the spec: the first record
/// that is not a recover, nor an agent run that did nothing, decides. An agent run that never
/// ended (killed), was stopped by a signal (`interrupted`) or was found killed by a later run
/// (`cut_off`) left the spec interrupted.
pub fn last_run(newest_first: impl IntoIterator<Item = Record>) -> LastRun {
    newest_first
        .into_iter()
        .find_map(|r| decided_by(&r))
        .unwrap_or(LastRun::Unknown)
}

/// Where record `r` leaves the spec, or `None` when it says nothing of it (a recover, an agent
/// run that did nothing): then the record before it decides ([`last_run`]).
pub fn decided_by(r: &Record) -> Option<LastRun> {
    let outcome = r.outcome.as_deref().unwrap_or("");
    Some(match r.work {
        Work::Recover => return None,
        Work::Agent if !r.ended || matches!(outcome, "interrupted" | "cut_off") => {
            LastRun::Interrupted
        }
        Work::Agent if DID_NOTHING.contains(&outcome) => return None,
        Work::Agent => LastRun::Ended,
        Work::Lifecycle if r.ended && outcome == "discarded" => LastRun::Discarded,
        Work::Lifecycle => LastRun::Ended,
    })
}

/// `status`'s word for a spec (`state`, from its plan and lock) as the newest run records
/// correct it: a spec whose last run did not end is `interrupted` (whatever stopped it: the
/// plan alone shows only a kill, which leaves a chunk in progress), and one whose build was
/// thrown away since is `discarded`. A spec that is running, done, failed or broken keeps its
/// word.
pub fn status_word(state: &'static str, last: LastRun) -> &'static str {
    match (last, state) {
        (LastRun::Interrupted, "not_planned" | "planned" | "in_progress") => "interrupted",
        (LastRun::Discarded, "not_planned" | "planned" | "in_progress") => "discarded",
        _ => state,
    }
}

/// A spec whose work is over one way or the other (its `status` word): merged, or discarded.
/// The listings and the pickers leave it out unless asked (`--all`, or named).
pub fn is_finished(status: &str) -> bool {
    matches!(status, "merged" | "discarded")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(work: Work, ended: bool, outcome: Option<&str>) -> Record {
        Record {
            work,
            ended,
            outcome: outcome.map(str::to_string),
        }
    }

    #[test]
    fn the_newest_record_but_recovers_decides() {
        use LastRun::*;
        let killed = r(Work::Agent, false, None);
        let stopped = r(Work::Agent, true, Some("interrupted"));
        let complete = r(Work::Agent, true, Some("complete"));
        let recover = r(Work::Recover, true, Some("recovered"));
        let discard = r(Work::Lifecycle, true, Some("discarded"));
        let merge = r(Work::Lifecycle, true, Some("merged"));
        assert_eq!(last_run([]), Unknown);
        assert_eq!(last_run([recover.clone()]), Unknown);
        // Killed or stopped by a signal: interrupted, a recover since changing nothing.
        assert_eq!(last_run([killed, complete.clone()]), Interrupted);
        assert_eq!(last_run([stopped.clone()]), Interrupted);
        assert_eq!(last_run([recover, stopped.clone()]), Interrupted);
        // A run that ended by itself, or a lifecycle operation after the interruption.
        assert_eq!(last_run([complete.clone(), stopped.clone()]), Ended);
        assert_eq!(
            last_run([r(Work::Agent, true, Some("usage_limited"))]),
            Ended
        );
        assert_eq!(last_run([merge, stopped.clone()]), Ended);
        // Found killed by a later run: interrupted all the same.
        assert_eq!(
            last_run([r(Work::Agent, true, Some("cut_off"))]),
            Interrupted
        );
        // A run that did nothing (a question cancelled, busy, its checks refused) says nothing.
        for nothing in ["cancelled", "busy", "error"] {
            let r = r(Work::Agent, true, Some(nothing));
            assert_eq!(last_run([r.clone(), stopped.clone()]), Interrupted);
            assert_eq!(last_run([r.clone(), complete.clone()]), Ended);
            assert_eq!(last_run([r]), Unknown);
        }
        assert_eq!(last_run([discard, stopped]), Discarded);
        // A discard that did not happen (it failed, or was cut off) threw nothing away.
        assert_eq!(
            last_run([r(Work::Lifecycle, true, Some("error")), complete]),
            Ended
        );
        assert_eq!(last_run([r(Work::Lifecycle, false, None)]), Ended);
    }

    #[test]
    fn the_last_run_corrects_only_a_spec_at_rest() {
        use LastRun::*;
        assert_eq!(status_word("in_progress", Interrupted), "interrupted");
        assert_eq!(status_word("planned", Interrupted), "interrupted");
        assert_eq!(status_word("planned", Discarded), "discarded");
        for kept in ["running", "complete", "merged", "failed", "invalid_plan"] {
            assert_eq!(status_word(kept, Interrupted), kept);
            assert_eq!(status_word(kept, Discarded), kept);
        }
        assert_eq!(status_word("in_progress", Ended), "in_progress");
        assert!(is_finished("merged") && is_finished("discarded"));
        assert!(!is_finished("complete"));
    }
}
