//! The terminal's answers to a run's questions (inquire). Without a terminal (stdin and stderr
//! both must be one) every question is refused the way [`Nobody`] refuses it.

use super::interact::{ask, can_ask, confirm};
use runner::engine::run::ask::{Asker, Nobody, RepinQuestion, WorkAnswer, WorkQuestion};
use runner::ops::Person;
use runner::ops::resume::{Match, ResumeAsker, ResumeSummary};

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
            return Nobody.confirm_repin(q);
        }
        confirm(&q.text())
    }

    /// The summary, then the choice; "Review" shows the work and asks again.
    fn existing_work(&self, q: &WorkQuestion<'_>) -> anyhow::Result<WorkAnswer> {
        if !can_ask() {
            return Nobody.existing_work(q);
        }
        // A complete spec offers no "Continue": there is nothing left to build.
        let choices = match q.work.complete() {
            true => vec![REVIEW, MERGE, DISCARD],
            false => vec![CONTINUE, REVIEW, MERGE, DISCARD],
        };
        loop {
            eprintln!("{}", q.summary());
            let picked = ask(|| {
                inquire::Select::new("What now?", choices.clone())
                    .with_starting_cursor(0)
                    .prompt()
            })?;
            match picked {
                CONTINUE => return Ok(WorkAnswer::Continue),
                REVIEW => {
                    let review = runner::ops::review::review_of(q.ws, q.paths)?;
                    eprintln!(
                        "{}",
                        super::view::review::render(&review, super::style::for_stderr())
                    );
                }
                MERGE => return Ok(WorkAnswer::Merge),
                _ => return Ok(WorkAnswer::Discard),
            }
        }
    }

    fn confirm_discard(&self, spec: &str) -> anyhow::Result<bool> {
        confirm(&format!("Discard the build of {spec}? (it can be undone)"))
    }
}

impl Person for TerminalAsker {
    /// A numbered choice on a terminal (Esc: exit 130, nothing changed).
    fn pick_spec(&self, title: &str, candidates: &[String]) -> anyhow::Result<Option<usize>> {
        if !can_ask() {
            return Ok(None);
        }
        let numbered: Vec<String> = candidates
            .iter()
            .enumerate()
            .map(|(i, m)| format!("{}. {m}", i + 1))
            .collect();
        let picked = ask(|| inquire::Select::new(title, numbered).raw_prompt())?;
        Ok(Some(picked.index))
    }
}

impl ResumeAsker for TerminalAsker {
    fn pick_run(&self, hint: Option<&str>, matches: &[Match]) -> anyhow::Result<Option<usize>> {
        if !can_ask() {
            return Ok(None);
        }
        let title = match hint {
            Some(h) => format!("'{}' matches several runs:", runner::text::for_terminal(h)),
            None => "Which run?".to_string(),
        };
        let lines: Vec<String> = matches
            .iter()
            .map(runner::ops::resume::match_line)
            .collect();
        let picked = ask(|| inquire::Select::new(&title, lines).raw_prompt())?;
        Ok(Some(picked.index + 1))
    }

    fn show_summary(&self, summary: &ResumeSummary, continuing: bool) {
        print!(
            "{}",
            super::view::resume::render(summary, continuing, super::style::for_stdout())
        );
    }
}

/// `--json`: the run's questions as on a terminal, but nothing shown on stdout and no choice
/// among candidates asked (the JSON lists them).
pub struct JsonAsker;

impl Asker for JsonAsker {
    fn can_ask(&self) -> bool {
        TerminalAsker.can_ask()
    }

    fn confirm_repin(&self, q: &RepinQuestion<'_>) -> anyhow::Result<bool> {
        TerminalAsker.confirm_repin(q)
    }

    fn existing_work(&self, q: &WorkQuestion<'_>) -> anyhow::Result<WorkAnswer> {
        TerminalAsker.existing_work(q)
    }

    fn confirm_discard(&self, spec: &str) -> anyhow::Result<bool> {
        TerminalAsker.confirm_discard(spec)
    }
}

impl Person for JsonAsker {
    fn pick_spec(&self, title: &str, candidates: &[String]) -> anyhow::Result<Option<usize>> {
        TerminalAsker.pick_spec(title, candidates)
    }
}

/// No run picked, no summary shown: the JSON has them.
impl ResumeAsker for JsonAsker {}
