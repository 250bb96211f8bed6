//! The questions a run may need a person to answer, and the trait through which a front end
//! answers them. The engine and the operations never ask: the terminal's asker (inquire, with
//! Ctrl-C at a question a clean cancel) is `cli::ask`; without a terminal, [`Nobody`] gives
//! the usage error that names the flag or the command for each answer (exit 2).

use serde::Serialize;

use crate::error::RunnerError;
use crate::store::workspace::{SpecPaths, Workspace};

/// Answers to a run's questions.
pub trait Asker {
    /// The spec's pinned base branch is gone and `--base-branch` names another: re-pin it?
    fn confirm_repin(&self, q: &RepinQuestion<'_>) -> anyhow::Result<bool>;
    /// The spec already has work: continue it, merge it, or discard it and start fresh? (A
    /// front end may show the work, `ops::review`, and ask again.)
    fn existing_work(&self, q: &WorkQuestion<'_>) -> anyhow::Result<WorkAnswer>;
    /// Discard the build of `spec`? (Asked after [`WorkAnswer::Discard`]; no goes back to the
    /// question about the existing work.)
    fn confirm_discard(&self, spec: &str) -> anyhow::Result<bool>;
    /// Whether a question would reach a person (a terminal); `false` by default, as for
    /// [`Nobody`].
    fn can_ask(&self) -> bool {
        false
    }
}

/// Nobody to ask (no terminal, `--yes`, the MCP server): every question is refused with the
/// flag or commands that answer it.
pub struct Nobody;

impl Asker for Nobody {
    fn confirm_repin(&self, q: &RepinQuestion<'_>) -> anyhow::Result<bool> {
        Err(q.refusal())
    }

    fn existing_work(&self, q: &WorkQuestion<'_>) -> anyhow::Result<WorkAnswer> {
        Err(q.refusal())
    }

    fn confirm_discard(&self, _spec: &str) -> anyhow::Result<bool> {
        Ok(false)
    }
}

pub struct RepinQuestion<'a> {
    pub spec: &'a str,
    pub from: &'a str,
    pub to: &'a str,
}

impl RepinQuestion<'_> {
    /// Short: a question wider than the terminal is redrawn badly.
    pub fn text(&self) -> String {
        format!(
            "Base {:?} is gone. Re-pin {} to {:?}?",
            self.from, self.spec, self.to
        )
    }

    pub fn refusal(&self) -> anyhow::Error {
        RunnerError::bad_input(format!(
            "spec {} is pinned to base branch {:?}, which no longer exists; re-pinning it to {:?} (its work will then merge there) needs a confirmation and there is no terminal to ask on",
            self.spec, self.from, self.to
        ))
        .with_hint("pass --yes to re-pin it without a question")
        .into()
    }
}

/// What is there already, for the one-line summary above the question.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ExistingWork {
    pub completed: usize,
    pub total: usize,
    pub commits_ahead: usize,
    pub uncommitted: usize,
    pub last_activity: Option<String>,
}

impl ExistingWork {
    /// Every chunk is done: there is nothing to continue, only to review and merge (or
    /// discard).
    pub fn complete(&self) -> bool {
        self.total > 0 && self.completed == self.total
    }

    pub fn summary(&self, spec: &str, base: &str) -> String {
        format!(
            "{spec}: {}/{} {} done, {} ahead of {base}, {}, last activity {}",
            self.completed,
            self.total,
            crate::text::noun(self.total, "chunk"),
            crate::text::count(self.commits_ahead, "commit"),
            match self.uncommitted {
                0 => "no uncommitted changes".to_string(),
                n => crate::text::count(n, "uncommitted change"),
            },
            self.last_activity.as_deref().unwrap_or("unknown")
        )
    }
}

pub struct WorkQuestion<'a> {
    pub ws: &'a Workspace,
    pub paths: &'a SpecPaths,
    pub base: &'a str,
    pub work: &'a ExistingWork,
    /// The run's agent flag, for the commands the refusal prints.
    pub agent_flag: Option<&'a crate::policy::next_command::AgentFlag>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkAnswer {
    Continue,
    Merge,
    Discard,
}

impl WorkQuestion<'_> {
    pub fn summary(&self) -> String {
        self.work.summary(&self.paths.name, self.base)
    }

    /// Without a terminal runner will not guess: the command for each answer.
    pub fn refusal(&self) -> anyhow::Error {
        let spec = &self.paths.name;
        let q = crate::sh(spec);
        let again = |auto| crate::policy::next_command::run_command(spec, self.agent_flag, auto);
        let mut e = RunnerError::bad_input(format!(
            "{}.\nWithout a terminal runner will not guess what to do with it",
            self.summary(),
        ));
        // A complete spec has nothing to continue: review and merge are its way on.
        if !self.work.complete() {
            e = e.with_hint(format!("continue:                {}", again(true)));
        }
        e.with_hint(format!("review:                  runner review --spec {q}"))
            .with_hint(format!(
                "merge:                   runner merge --spec {q} --yes"
            ))
            .with_hint(format!(
                "discard and start fresh: runner discard --spec {q} --yes && {}",
                again(false)
            ))
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repin_question_and_its_refusal_name_both_branches() {
        let q = RepinQuestion {
            spec: "001-x",
            from: "dev",
            to: "main",
        };
        assert_eq!(q.text(), "Base \"dev\" is gone. Re-pin 001-x to \"main\"?");
        let err = Nobody.confirm_repin(&q).unwrap_err();
        assert_eq!(
            crate::error::exit_code_of(&err),
            crate::error::exit::BAD_INPUT
        );
        assert!(
            format!("{:?}", crate::error::ErrorReport::of(&err).hints).contains("pass --yes"),
            "{err}"
        );
    }

    #[test]
    fn the_summary_of_existing_work_says_what_is_there() {
        let work = ExistingWork {
            completed: 1,
            total: 3,
            commits_ahead: 2,
            uncommitted: 0,
            last_activity: None,
        };
        assert_eq!(
            work.summary("001-x", "main"),
            "001-x: 1/3 chunks done, 2 commits ahead of main, no uncommitted changes, last activity unknown"
        );
        let one = ExistingWork {
            completed: 1,
            total: 1,
            commits_ahead: 1,
            uncommitted: 1,
            last_activity: None,
        };
        assert_eq!(
            one.summary("001-x", "main"),
            "001-x: 1/1 chunk done, 1 commit ahead of main, 1 uncommitted change, last activity unknown"
        );
    }
}
