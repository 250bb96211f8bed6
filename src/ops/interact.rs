//! Questions on a terminal, and the rule for when runner may ask at all.
//!
//! runner asks only when stdin and stderr are both terminals and no `--yes`/`--auto-continue`
//! says not to. inquire would otherwise still reach `/dev/tty` with stdin redirected, so the
//! check is done here, before any question.

use std::io::IsTerminal;

use crate::error::RunnerError;

pub fn can_ask() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Esc or Ctrl-C at a question: a clean cancel (exit 130), nothing changed, and it says so
/// (not "interrupted … resume", which is for a run that was working).
pub fn cancelled(e: inquire::InquireError) -> anyhow::Error {
    match e {
        inquire::InquireError::OperationCanceled | inquire::InquireError::OperationInterrupted => {
            RunnerError::Cancelled.into()
        }
        other => anyhow::anyhow!("asking on the terminal: {other}"),
    }
}

/// "Type the spec name to confirm."
pub fn confirm_by_name(question: &str, name: &str) -> anyhow::Result<bool> {
    let answer = inquire::Text::new(question)
        .with_help_message(&format!("type {name} to confirm, Esc to cancel"))
        .prompt()
        .map_err(cancelled)?;
    Ok(answer.trim() == name)
}

pub fn confirm(question: &str) -> anyhow::Result<bool> {
    inquire::Confirm::new(question)
        .with_default(false)
        .prompt()
        .map_err(cancelled)
}

/// Refuse to go on without a terminal: name the flag that answers the question.
pub fn needs_flag(what: &str, flag: &str) -> anyhow::Error {
    RunnerError::bad_input(format!(
        "{what} needs a confirmation and there is no terminal to ask on: pass {flag}"
    ))
    .into()
}
