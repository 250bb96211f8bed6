//! Decisions as plain functions over data, unit-tested without a repository: what a session's
//! end means for its chunk, when to give up, which base branch a spec uses; and, in their own
//! modules, the recovery rules (recovery.rs) and the one table of legal chunk status changes
//! (transition.rs). No I/O here: the engine gathers the facts and acts on the answer.

pub mod account;
pub mod age;
pub mod agent_choice;
pub mod agent_rules;
pub mod agreement;
pub mod attempt_count;
pub mod budget;
pub mod confidence;
pub mod invocation;
pub mod last_run;
pub mod lease;
pub mod live;
pub mod new_spec;
pub mod next_command;
pub mod notify;
pub mod outcome;
pub mod pause;
pub mod pr;
pub mod reattach;
pub mod recovery;
pub mod resolve;
pub mod runs;
pub mod set_aside;
pub mod similar;
pub mod spec_choice;
pub mod transition;

/// How an agent session's process ended (the mechanism in `agent/` reports it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Exited(i32),
    Signaled(i32),
    TimedOut,
    /// runner was interrupted; `drained` says whether the child ended within the drain
    /// timeout (true) or was killed when it ran out (false).
    Interrupted {
        drained: bool,
    },
}

impl Ended {
    pub fn describe(&self) -> String {
        match self {
            Ended::Exited(code) => format!("exited with status {code}"),
            Ended::Signaled(sig) => format!("killed by signal {sig}"),
            Ended::TimedOut => "timed out and was killed".to_string(),
            Ended::Interrupted { drained: true } => {
                "stopped after runner was interrupted".to_string()
            }
            Ended::Interrupted { drained: false } => {
                "was killed: runner was interrupted and the drain timeout ran out".to_string()
            }
        }
    }
}

/// What the agent said about its chunk, read back from the plan after the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Done,
    Fail(String),
    Silent,
}

/// The result of the chunk's verification command, when it was run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckResult {
    pub command: String,
    pub passed: bool,
    /// How it ended and what was missing (`exited with status 1; its output lacks "ok"`).
    pub detail: String,
    /// Its whole output (capped, head and tail kept).
    pub log: Option<std::path::PathBuf>,
    /// The last lines of its output as a terminal showed them, for a check that failed.
    pub tail: Vec<String>,
}

impl CheckResult {
    /// The detail with its log, as the journal, the checkpoint and the attempt's reason keep it.
    pub fn detail_with_log(&self) -> String {
        match &self.log {
            Some(log) => format!("{} (log: {})", self.detail, log.display()),
            None => self.detail.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Completed,
    Failed(String),
}

/// What an agent that cannot run runner's report command (aider: `Preset::can_report`)
/// reports: a clean exit after which its CLI said nothing failed (`cli_failed`: an error, a
/// usage limit — aider exits 0 after both) is its "done" where there is something to judge
/// (`judgeable`: it left work, or the chunk has a verification), then judged by the chunk's
/// verification as any report; any other end says nothing. Agents that can report are taken
/// at their word only.
pub fn report_by_exit(
    report: Report,
    can_report: bool,
    ended: &Ended,
    cli_failed: bool,
    judgeable: bool,
) -> Report {
    match (report, can_report, ended, cli_failed, judgeable) {
        (Report::Silent, false, Ended::Exited(0), false, true) => Report::Done,
        (report, ..) => report,
    }
}

/// Should runner run the chunk's verification command? Only when the agent claims success and
/// its CLI did not say the session failed.
pub fn needs_check(report: &Report, agent_failure: Option<&str>) -> bool {
    *report == Report::Done && agent_failure.is_none()
}

/// A chunk is completed when the agent reported it done, its CLI did not say the session
/// failed (`agent_failure`: claude's `is_error`, even with `subtype: "success"`; codex's
/// `turn.failed`; a usage limit), and its verification (if any) passed; anything else is a
/// failed attempt, with a reason a person can act on.
pub fn judge(
    report: &Report,
    ended: &Ended,
    check: Option<&CheckResult>,
    agent_failure: Option<&str>,
) -> Verdict {
    let said = |reason: String| match agent_failure {
        Some(error) => format!("{reason}; the agent's CLI said: {error}"),
        None => reason,
    };
    match report {
        Report::Done => match (agent_failure, check) {
            (Some(error), _) => Verdict::Failed(format!(
                "the agent reported the chunk done, but its CLI said the session failed: {error}"
            )),
            (None, Some(c)) if !c.passed => Verdict::Failed(format!(
                "the agent reported the chunk done, but its verification `{}` failed: {}",
                c.command, c.detail
            )),
            _ => Verdict::Completed,
        },
        Report::Fail(reason) => {
            Verdict::Failed(said(format!("the agent reported failure: {reason}")))
        }
        Report::Silent => Verdict::Failed(said(match ended {
            Ended::TimedOut => "the session timed out and was killed".to_string(),
            Ended::Exited(0) => {
                "the agent ended without reporting the chunk (`runner chunk done` or `runner chunk fail`)"
                    .to_string()
            }
            other => format!("the agent {} without reporting the chunk", other.describe()),
        })),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    Retry,
    GiveUp,
}

/// `failed_attempts` counts the attempt that just failed.
pub fn after_failure(failed_attempts: u32, max_attempts: u32) -> AfterFailure {
    if failed_attempts >= max_attempts {
        AfterFailure::GiveUp
    } else {
        AfterFailure::Retry
    }
}

/// What the repository says about the base branch candidates.
#[derive(Debug, Clone, Copy, Default)]
pub struct BaseFacts<'a> {
    /// The base pinned in the plan (since the spec's first run).
    pub pinned: Option<&'a str>,
    /// The pinned branch still exists.
    pub pinned_exists: bool,
    pub flag: Option<&'a str>,
    pub config: Option<&'a str>,
    pub checked_out: Option<&'a str>,
    /// The repository has no commit at all (a fresh `git init`).
    pub no_commits: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseChoice {
    Use(String),
    /// The pinned branch is gone and `--base-branch` names another: pin that one instead, once
    /// the user confirms.
    Repin {
        from: String,
        to: String,
    },
}

/// Why no base branch can be chosen (`fact`), and what the user can do about it (`advice`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseRefusal {
    pub fact: String,
    pub advice: String,
}

fn refuse(fact: impl Into<String>, advice: impl Into<String>) -> BaseRefusal {
    BaseRefusal {
        fact: fact.into(),
        advice: advice.into(),
    }
}

/// The base branch: pinned in the plan, else `--base-branch`, else the config, else the branch
/// checked out now. A flag that contradicts the pin is an error, not a silent switch, unless the
/// pinned branch no longer exists: then it is the way forward (re-pinning, confirmed).
pub fn choose_base(f: BaseFacts) -> Result<BaseChoice, BaseRefusal> {
    if f.no_commits {
        return Err(refuse(
            "this repository has no commits yet; a spec's branch starts from a commit of its base branch",
            "make a first commit (for example `git commit --allow-empty -m \"initial commit\"`), then run again",
        ));
    }
    if let Some(pinned) = f.pinned {
        return match f.flag {
            Some(flag) if flag != pinned && !f.pinned_exists => Ok(BaseChoice::Repin {
                from: pinned.to_string(),
                to: flag.to_string(),
            }),
            Some(flag) if flag != pinned => Err(refuse(
                format!(
                    "this spec is pinned to base branch {pinned:?} (since its first run); --base-branch {flag:?} would change where its work merges"
                ),
                "drop the flag, or start a new spec",
            )),
            _ => Ok(BaseChoice::Use(pinned.to_string())),
        };
    }
    f.flag
        .or(f.config)
        .or(f.checked_out)
        .map(|b| BaseChoice::Use(b.to_string()))
        .ok_or_else(|| {
            refuse(
                "no base branch: HEAD is detached and none is configured",
                "pass --base-branch NAME or set [git] base_branch in .auto-claude/config.toml",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(passed: bool) -> CheckResult {
        CheckResult {
            command: "make test".into(),
            passed,
            detail: "exit status 2".into(),
            log: None,
            tail: Vec::new(),
        }
    }

    #[test]
    fn done_and_verified_is_completed() {
        assert_eq!(
            judge(&Report::Done, &Ended::Exited(0), Some(&check(true)), None),
            Verdict::Completed
        );
        assert_eq!(
            judge(&Report::Done, &Ended::Exited(0), None, None),
            Verdict::Completed
        );
        // The report counts even if the agent crashed after making it.
        assert_eq!(
            judge(&Report::Done, &Ended::Exited(1), None, None),
            Verdict::Completed
        );
    }

    #[test]
    fn done_but_verification_failed_is_a_failed_attempt() {
        let v = judge(&Report::Done, &Ended::Exited(0), Some(&check(false)), None);
        assert!(
            matches!(v, Verdict::Failed(r) if r.contains("make test") && r.contains("exit status 2"))
        );
    }

    #[test]
    fn an_agent_that_cannot_report_is_done_by_a_clean_exit_only() {
        let fail = || Report::Fail("stuck".into());
        // aider (cannot report): its clean exit is its "done"…
        assert_eq!(
            report_by_exit(Report::Silent, false, &Ended::Exited(0), false, true),
            Report::Done
        );
        // …unless its CLI said the session failed (aider exits 0 after an error or a limit),
        // and no other end is a report.
        assert_eq!(
            report_by_exit(Report::Silent, false, &Ended::Exited(0), true, true),
            Report::Silent
        );
        for ended in [
            Ended::Exited(1),
            Ended::Signaled(9),
            Ended::TimedOut,
            Ended::Interrupted { drained: true },
        ] {
            assert_eq!(
                report_by_exit(Report::Silent, false, &ended, false, true),
                Report::Silent,
                "{ended:?}"
            );
        }
        // …and only where there is something to judge: no work left and no verification.
        assert_eq!(
            report_by_exit(Report::Silent, false, &Ended::Exited(0), false, false),
            Report::Silent
        );
        // A report it did make (a person's `runner chunk fail`, a fake) stands.
        assert_eq!(
            report_by_exit(fail(), false, &Ended::Exited(0), false, true),
            fail()
        );
        // An agent that can report is taken at its word only: its silence stays silence.
        assert_eq!(
            report_by_exit(Report::Silent, true, &Ended::Exited(0), false, true),
            Report::Silent
        );
        assert_eq!(
            report_by_exit(Report::Done, true, &Ended::Exited(1), true, true),
            Report::Done
        );
        assert_eq!(
            report_by_exit(fail(), true, &Ended::Exited(0), false, true),
            fail()
        );
    }

    #[test]
    fn silence_and_failure_are_failed_attempts_with_reasons() {
        let r = |v| match v {
            Verdict::Failed(r) => r,
            Verdict::Completed => panic!("should fail"),
        };
        assert!(r(judge(&Report::Silent, &Ended::TimedOut, None, None)).contains("timed out"));
        assert!(r(judge(&Report::Silent, &Ended::Exited(7), None, None)).contains("status 7"));
        assert!(
            r(judge(&Report::Silent, &Ended::Exited(0), None, None)).contains("without reporting")
        );
        assert!(
            r(judge(
                &Report::Fail("no API key".into()),
                &Ended::Exited(0),
                None,
                None
            ))
            .contains("no API key")
        );
        assert!(!needs_check(&Report::Silent, None));
        assert!(needs_check(&Report::Done, None));
    }

    #[test]
    fn a_chunk_reported_done_fails_when_the_agents_cli_says_the_session_failed() {
        // claude's `is_error: true` with `subtype: "success"`: the chunk is not completed, and
        // its verification is not even run.
        let error = Some("API Error: 500");
        assert!(!needs_check(&Report::Done, error));
        let v = judge(&Report::Done, &Ended::Exited(0), Some(&check(true)), error);
        assert!(
            matches!(&v, Verdict::Failed(r) if r.contains("API Error: 500") && r.contains("reported the chunk done")),
            "{v:?}"
        );
        // Without a report, the CLI's words are added to the reason.
        let v = judge(&Report::Silent, &Ended::Exited(1), None, error);
        assert!(
            matches!(&v, Verdict::Failed(r) if r.contains("status 1") && r.contains("API Error: 500")),
            "{v:?}"
        );
    }

    #[test]
    fn gives_up_after_max_attempts() {
        assert_eq!(after_failure(1, 3), AfterFailure::Retry);
        assert_eq!(after_failure(2, 3), AfterFailure::Retry);
        assert_eq!(after_failure(3, 3), AfterFailure::GiveUp);
        assert_eq!(after_failure(1, 1), AfterFailure::GiveUp);
    }

    fn base(
        pinned: Option<&'static str>,
        flag: Option<&'static str>,
        config: Option<&'static str>,
        checked_out: Option<&'static str>,
    ) -> Result<BaseChoice, BaseRefusal> {
        choose_base(BaseFacts {
            pinned,
            pinned_exists: true,
            flag,
            config,
            checked_out,
            no_commits: false,
        })
    }

    fn use_(b: &str) -> Result<BaseChoice, BaseRefusal> {
        Ok(BaseChoice::Use(b.into()))
    }

    #[test]
    fn base_branch_precedence_and_pin() {
        assert_eq!(base(None, Some("f"), Some("c"), Some("h")), use_("f"));
        assert_eq!(base(None, None, Some("c"), Some("h")), use_("c"));
        assert_eq!(base(None, None, None, Some("h")), use_("h"));
        assert!(base(None, None, None, None).is_err());
        assert_eq!(base(Some("p"), None, Some("c"), Some("h")), use_("p"));
        assert_eq!(base(Some("p"), Some("p"), None, None), use_("p"));
        assert!(base(Some("p"), Some("other"), None, None).is_err());
    }

    #[test]
    fn a_deleted_pinned_base_may_be_repinned_and_no_commits_says_so() {
        let gone = BaseFacts {
            pinned: Some("p"),
            pinned_exists: false,
            flag: Some("new"),
            ..BaseFacts::default()
        };
        assert_eq!(
            choose_base(gone),
            Ok(BaseChoice::Repin {
                from: "p".into(),
                to: "new".into()
            })
        );
        // Without a flag the pin stands (the caller then says it is gone and how to re-pin).
        assert_eq!(
            choose_base(BaseFacts { flag: None, ..gone }),
            Ok(BaseChoice::Use("p".into()))
        );
        let empty = BaseFacts {
            no_commits: true,
            checked_out: Some("main"),
            ..BaseFacts::default()
        };
        assert!(
            choose_base(empty)
                .unwrap_err()
                .advice
                .contains("make a first commit")
        );
    }
}
