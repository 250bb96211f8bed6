//! The terminal's answers to a run's questions (inquire). Without a terminal (stdin and stderr
//! both must be one) every question is refused the way [`NeverAsk`] refuses it.

use super::interact::{ask, can_ask, confirm, confirm_by_name};
use runner::engine::ask::{Asker, NeverAsk, RepinQuestion, WorkAnswer, WorkQuestion};

pub struct TerminalAsker;

const CONTINUE: &str = "Continue";
const REVIEW: &str = "Review";
const MERGE: &str = "Merge";
const DISCARD: &str = "Discard and start fresh";

impl Asker for TerminalAsker {
    fn can_ask(&self) -> bool {
        can_ask()
    }

    fn confirm_repin(&self, q: &RepinQuestion<'_>) -> anyhow::Result<bool> {
        if !can_ask() {
            return NeverAsk.confirm_repin(q);
        }
        confirm(&q.text())
    }

    /// The summary, then the choice; "Review" shows the work and asks again.
    fn existing_work(&self, q: &WorkQuestion<'_>) -> anyhow::Result<WorkAnswer> {
        if !can_ask() {
            return NeverAsk.existing_work(q);
        }
        loop {
            eprintln!("{}", q.summary());
            let picked = ask(|| {
                inquire::Select::new("What now?", vec![CONTINUE, REVIEW, MERGE, DISCARD])
                    .with_starting_cursor(0)
                    .prompt()
            })?;
            match picked {
                CONTINUE => return Ok(WorkAnswer::Continue),
                REVIEW => {
                    let review = runner::ops::review::review(q.ws, q.paths)?;
                    eprintln!(
                        "{}",
                        super::review::render(&review, super::style::for_stderr())
                    );
                }
                MERGE => return Ok(WorkAnswer::Merge),
                _ => return Ok(WorkAnswer::Discard),
            }
        }
    }

    fn confirm_discard(&self, spec: &str) -> anyhow::Result<bool> {
        confirm_by_name(
            &format!("Discard the build of {spec}? (it can be undone)"),
            spec,
        )
    }
}
