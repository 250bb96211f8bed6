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
/// The detail says how it ended and what output was missing; a check that failed keeps the
/// last lines of its output, for the person to read where it failed.
fn judge(check: &CommandCheck, end: &ChildEnd, log_path: &std::path::Path) -> CheckResult {
    let status_ok = end.ended == Ended::Exited(check.expect_status);
    let output_ok = end.output.found;
    let mut detail = end.ended.describe();
    if let Some(want) = check.expect_output.as_deref().filter(|_| !output_ok) {
        detail.push_str(&format!("; its output lacks {want:?}"));
    }
    if let Some(e) = &end.output.log_incomplete {
        // Judged on every byte all the same; only the log misses some.
        detail.push_str(&format!("; the log is incomplete: {e}"));
    }
    let passed = status_ok && output_ok;
    let tail = if passed {
        Vec::new()
    } else {
        crate::agent::output::read::last_lines(log_path, TAIL_LINES, TAIL_WIDTH, false)
    };
    CheckResult {
        command: check.command.clone(),
        passed,
        detail,
        log: Some(log_path.to_path_buf()),
        tail,
    }
}

/// How many of a failed check's last lines are shown, and how wide each may be: a test
/// runner's summary and the failure just above it, as `cargo test` shows a failing test.
const TAIL_LINES: usize = 20;
const TAIL_WIDTH: usize = 200;

/// The end of a failed check's output for a person, its log named once: a heading at `indent`,
/// then the lines further in. `None` for a check that passed.
pub fn output_block(check: &CheckResult, indent: &str) -> Option<String> {
    if check.passed {
        return None;
    }
    let log = check.log.as_ref().map(|l| l.display().to_string());
    if check.tail.is_empty() {
        return Some(match log {
            Some(log) => format!("{indent}It printed nothing (log: {log})."),
            None => format!("{indent}It printed nothing."),
        });
    }
    let mut block = match log {
        Some(log) => format!("{indent}The end of its output (all of it in {log}):"),
        None => format!("{indent}The end of its output:"),
    };
    for line in &check.tail {
        block.push_str(&format!("\n{indent}    {line}"));
    }
    Some(block)
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
        assert_eq!(ok.detail, "exited with status 0");
        assert_eq!(
            ok.detail_with_log(),
            "exited with status 0 (log: /s/verification.log)"
        );
        assert_eq!(output_block(&ok, ""), None);
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
    fn a_failed_check_shows_the_end_of_its_output_and_names_its_log_once() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("verification.log");
        std::fs::write(&log, "collected 3 items\n\x1b[31mFAILED\x1b[0m test_a\n\n").unwrap();
        let failed = judge(&check(None), &end(Ended::Exited(1), true), &log);
        let block = output_block(&failed, "  ").unwrap();
        assert_eq!(
            block,
            format!(
                "  The end of its output (all of it in {}):\n      collected 3 items\n      FAILED test_a",
                log.display()
            )
        );
        std::fs::write(&log, "").unwrap();
        let silent = judge(&check(None), &end(Ended::Exited(1), true), &log);
        assert_eq!(
            output_block(&silent, ""),
            Some(format!("It printed nothing (log: {}).", log.display()))
        );
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
