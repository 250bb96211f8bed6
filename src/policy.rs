//! Decisions as plain functions over data, unit-tested without a repository: what a session's
//! end means for its chunk, when to give up, which base branch a spec uses.

use crate::session::Ended;

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
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Completed,
    Failed(String),
}

/// Should runner run the chunk's verification command? Only when the agent claims success.
pub fn needs_check(report: &Report) -> bool {
    *report == Report::Done
}

/// A chunk is completed when the agent reported it done and its verification (if any) passed;
/// anything else is a failed attempt, with a reason a person can act on.
pub fn judge(report: &Report, ended: &Ended, check: Option<&CheckResult>) -> Verdict {
    match report {
        Report::Done => match check {
            Some(c) if !c.passed => Verdict::Failed(format!(
                "the agent reported the chunk done, but its verification `{}` failed: {}",
                c.command, c.detail
            )),
            _ => Verdict::Completed,
        },
        Report::Fail(reason) => Verdict::Failed(format!("the agent reported failure: {reason}")),
        Report::Silent => Verdict::Failed(match ended {
            Ended::TimedOut => "the session timed out and was killed".to_string(),
            Ended::Exited(0) => {
                "the agent ended without reporting the chunk (`runner chunk done` or `runner chunk fail`)"
                    .to_string()
            }
            other => format!("the agent {} without reporting the chunk", other.describe()),
        }),
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

/// The base branch: pinned in the plan, else `--base-branch`, else the config, else the branch
/// checked out now. A flag that contradicts the pin is an error, not a silent switch.
pub fn choose_base(
    pinned: Option<&str>,
    flag: Option<&str>,
    config: Option<&str>,
    checked_out: Option<&str>,
) -> Result<String, String> {
    if let Some(pinned) = pinned {
        return match flag {
            Some(f) if f != pinned => Err(format!(
                "this spec is pinned to base branch {pinned:?} (since its first run); --base-branch {f:?} would change where its work merges. Drop the flag, or start a new spec"
            )),
            _ => Ok(pinned.to_string()),
        };
    }
    flag.or(config)
        .or(checked_out)
        .map(str::to_string)
        .ok_or_else(|| {
            "no base branch: HEAD is detached and none is configured. Pass --base-branch NAME or set [git] base_branch in .auto-claude/config.toml".to_string()
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
        }
    }

    #[test]
    fn done_and_verified_is_completed() {
        assert_eq!(
            judge(&Report::Done, &Ended::Exited(0), Some(&check(true))),
            Verdict::Completed
        );
        assert_eq!(
            judge(&Report::Done, &Ended::Exited(0), None),
            Verdict::Completed
        );
        // The report counts even if the agent crashed after making it.
        assert_eq!(
            judge(&Report::Done, &Ended::Exited(1), None),
            Verdict::Completed
        );
    }

    #[test]
    fn done_but_verification_failed_is_a_failed_attempt() {
        let v = judge(&Report::Done, &Ended::Exited(0), Some(&check(false)));
        assert!(
            matches!(v, Verdict::Failed(r) if r.contains("make test") && r.contains("exit status 2"))
        );
    }

    #[test]
    fn silence_and_failure_are_failed_attempts_with_reasons() {
        let r = |v| match v {
            Verdict::Failed(r) => r,
            Verdict::Completed => panic!("should fail"),
        };
        assert!(r(judge(&Report::Silent, &Ended::TimedOut, None)).contains("timed out"));
        assert!(r(judge(&Report::Silent, &Ended::Exited(7), None)).contains("status 7"));
        assert!(r(judge(&Report::Silent, &Ended::Exited(0), None)).contains("without reporting"));
        assert!(
            r(judge(
                &Report::Fail("no API key".into()),
                &Ended::Exited(0),
                None
            ))
            .contains("no API key")
        );
        assert!(!needs_check(&Report::Silent));
        assert!(needs_check(&Report::Done));
    }

    #[test]
    fn gives_up_after_max_attempts() {
        assert_eq!(after_failure(1, 3), AfterFailure::Retry);
        assert_eq!(after_failure(2, 3), AfterFailure::Retry);
        assert_eq!(after_failure(3, 3), AfterFailure::GiveUp);
        assert_eq!(after_failure(1, 1), AfterFailure::GiveUp);
    }

    #[test]
    fn base_branch_precedence_and_pin() {
        assert_eq!(
            choose_base(None, Some("f"), Some("c"), Some("h")).unwrap(),
            "f"
        );
        assert_eq!(choose_base(None, None, Some("c"), Some("h")).unwrap(), "c");
        assert_eq!(choose_base(None, None, None, Some("h")).unwrap(), "h");
        assert!(choose_base(None, None, None, None).is_err());
        assert_eq!(
            choose_base(Some("p"), None, Some("c"), Some("h")).unwrap(),
            "p"
        );
        assert_eq!(choose_base(Some("p"), Some("p"), None, None).unwrap(), "p");
        assert!(choose_base(Some("p"), Some("other"), None, None).is_err());
    }
}
