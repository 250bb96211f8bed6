//! The one verification runner: a chunk's verification command run as runner runs every child
//! (`sh -c` in the worktree, its own process group killed whole on a timeout or Ctrl-C, the
//! output capped in a log and searched as bytes for the expected text), and its result.
//! A run verifies a chunk the agent reported done; recovery verifies an interrupted chunk's
//! work. What a result then means for the chunk is decided in `policy`.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use crate::agent::{ChildEnd, ChildSpec, Ended};
use crate::plan::verification::CommandCheck;
use crate::policy::CheckResult;

/// Where and how long a check runs.
pub struct Place {
    pub worktree: PathBuf,
    pub env: Vec<(String, String)>,
    pub log_path: PathBuf,
    pub timeout: Duration,
    pub drain: Duration,
    pub max_log_bytes: u64,
}

/// A check that ran to its end (or was cut short: see [`Checked::cut_short`]).
pub struct Checked {
    pub end: ChildEnd,
    pub result: CheckResult,
}

impl Checked {
    /// Stopped by a signal, or (`shutdown`) by a shutdown's budget, its timeout: the check did
    /// not fail, it did not finish, and says nothing about the work.
    pub fn cut_short(&self, shutdown: bool) -> bool {
        matches!(self.end.ended, Ended::Interrupted { .. })
            || (shutdown && self.end.ended == Ended::TimedOut)
    }
}

/// Run `check` at `place`. `launch` starts the child and waits for it: the run journals its
/// process group through it; recovery starts it plainly (`agent::run_child`).
pub async fn run<F, Fut>(check: &CommandCheck, place: Place, launch: F) -> anyhow::Result<Checked>
where
    F: FnOnce(ChildSpec) -> Fut,
    Fut: Future<Output = anyhow::Result<ChildEnd>>,
{
    let log_path = place.log_path.clone();
    let end = launch(child_spec(check, place)).await?;
    let result = judge(check, &end, &log_path);
    Ok(Checked { end, result })
}

fn child_spec(check: &CommandCheck, place: Place) -> ChildSpec {
    ChildSpec {
        argv: vec!["sh".into(), "-c".into(), check.command.clone()],
        cwd: place.worktree,
        env: place.env,
        stdin: None,
        log_path: place.log_path,
        timeout: place.timeout,
        drain: place.drain,
        max_log_bytes: match place.max_log_bytes {
            0 => crate::config::DEFAULT_MAX_LOG_BYTES,
            n => n,
        },
        watch_for: check.expect_output.clone(),
    }
}

/// Passed: the expected exit status, and the expected output anywhere in the whole output as
/// it streamed (as bytes: a part cut from the capped log or a non-UTF-8 byte cannot hide it).
/// The detail says how it ended, what output was missing, and where the log is.
fn judge(check: &CommandCheck, end: &ChildEnd, log_path: &std::path::Path) -> CheckResult {
    let status_ok = end.ended == Ended::Exited(check.expect_status);
    let output_ok = end.output.found;
    let mut detail = end.ended.describe();
    if let Some(want) = check.expect_output.as_deref().filter(|_| !output_ok) {
        detail.push_str(&format!("; its output lacks {want:?}"));
    }
    detail.push_str(&format!(" (log: {})", log_path.display()));
    if let Some(e) = &end.output.log_incomplete {
        // Judged on every byte all the same; only the log misses some.
        detail.push_str(&format!("; the log is incomplete: {e}"));
    }
    CheckResult {
        command: check.command.clone(),
        passed: status_ok && output_ok,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::capture::OutputSummary;

    fn end(ended: Ended, found: bool) -> ChildEnd {
        ChildEnd {
            ended,
            duration: Duration::ZERO,
            pgid: None,
            output: OutputSummary {
                found,
                ..Default::default()
            },
        }
    }

    fn check(expect_output: Option<&str>) -> CommandCheck {
        CommandCheck {
            command: "make test".into(),
            expect_status: 0,
            expect_output: expect_output.map(str::to_string),
        }
    }

    #[test]
    fn passes_only_with_the_expected_status_and_output() {
        let log = std::path::Path::new("/s/verification.log");
        let ok = judge(&check(Some("ok")), &end(Ended::Exited(0), true), log);
        assert!(ok.passed);
        assert_eq!(ok.detail, "exited with status 0 (log: /s/verification.log)");
        let lacks = judge(&check(Some("ok")), &end(Ended::Exited(0), false), log);
        assert!(!lacks.passed);
        assert!(
            lacks.detail.contains("its output lacks \"ok\""),
            "{}",
            lacks.detail
        );
        let status = judge(&check(None), &end(Ended::Exited(1), true), log);
        assert!(!status.passed);
    }

    #[test]
    fn a_check_stopped_by_a_signal_or_a_shutdown_budget_is_cut_short_not_failed() {
        let checked = |ended| Checked {
            end: end(ended, true),
            result: judge(&check(None), &end(Ended::Exited(1), true), "l".as_ref()),
        };
        assert!(checked(Ended::Interrupted { drained: true }).cut_short(false));
        assert!(checked(Ended::TimedOut).cut_short(true));
        assert!(!checked(Ended::TimedOut).cut_short(false));
        assert!(!checked(Ended::Exited(1)).cut_short(true));
    }
}
