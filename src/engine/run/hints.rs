//! Commands printed for a person to run next.

use super::*;

/// What to do about chunks that failed for good: a command, never a hand edit of the plan.
/// `agent_flag`: the run's `--agent-command`, if the agent came from it.
pub fn retry_failed_hint(spec: &str, agent_flag: Option<&str>) -> String {
    format!(
        "after fixing the cause, `runner recover --spec {} --retry-failed` sets them back to pending (their attempts are kept); then `{}` again",
        crate::sh(spec),
        run_again_command(spec, agent_flag, false)
    )
}

/// The command that runs `spec` again as this run did, to print for a person: the agent given
/// with `--agent-command` is part of it (without, there may be no agent at all), and
/// `--auto-continue` where existing work would otherwise need a question on a terminal.
pub fn run_again_command(spec: &str, agent_flag: Option<&str>, auto_continue: bool) -> String {
    let mut command = format!("runner run --spec {}", crate::sh(spec));
    if auto_continue {
        command.push_str(" --auto-continue");
    }
    if let Some(agent) = agent_flag {
        command.push_str(&format!(" --agent-command {}", crate::sh(agent)));
    }
    command
}

/// The command that resumes the spec this process ran, once a run got that far.
pub fn resume_command() -> Option<&'static str> {
    RESUME_COMMAND.get().map(String::as_str)
}
