//! Commands printed for a person to run next.

use super::*;
use crate::policy::next_command::{AgentFlag, run_command};

/// What to do about chunks that failed for good: a command, never a hand edit of the plan.
/// `agent`: the agent flag the run was given, if any. The spec has work by then, so the run
/// that follows is the continue command (a plain `run` would ask what to do with that work).
pub fn retry_failed_hint(spec: &str, agent: Option<&AgentFlag>) -> String {
    format!(
        "after fixing the cause, `runner recover --spec {} --retry-failed` sets them back to pending (their attempts are kept); then `{}` again",
        crate::sh(spec),
        run_command(spec, agent, true)
    )
}

/// The command that runs `spec` again as this run did, to print for a person: the agent given
/// with `--agent-command` is part of it (without, there may be no agent at all), and
/// `--auto-continue` where existing work would otherwise need a question on a terminal
/// (`true`: the one continue command, `policy::next_command::continue_command`).
pub fn run_again_command(spec: &str, agent_command: Option<&str>, auto_continue: bool) -> String {
    let agent = agent_command.map(|c| AgentFlag::Command(c.to_string()));
    run_command(spec, agent.as_ref(), auto_continue)
}

/// The command that resumes the spec this process ran last, once a run got that far.
pub fn resume_command() -> Option<String> {
    RESUME_COMMAND
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// Say that `command` continues the spec this process runs now (each spec of `run
/// --auto-continue` in turn: the hint names the one that was interrupted).
pub(super) fn set_resume_command(command: String) {
    *RESUME_COMMAND.lock().unwrap_or_else(|e| e.into_inner()) = Some(command);
}
