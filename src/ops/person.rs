//! The person behind a front end, as an operation meets them: the run's questions
//! ([`Asker`]), the operations' own (which spec, which unfinished spec to continue, which run
//! to resume), and what an operation shows them before it goes on (where a resumed run
//! stood). The terminal's is `cli::ask`; [`Nobody`] (no terminal, `--json`, MCP) asks
//! nothing, and each operation then answers with the error that names the flag to pass.

use chrono::{DateTime, Utc};

pub use crate::engine::ask::{Asker, NeverAsk};

use super::detect::Candidate;
use super::resume::{Match, ResumeSummary};

pub trait Person: Asker {
    /// Several specs could be meant: the index of the one picked, or `None` when nobody can
    /// be asked (the operation then lists the command for each).
    fn pick_spec(&self, _title: &str, _candidates: &[String]) -> anyhow::Result<Option<usize>> {
        Ok(None)
    }

    /// Unfinished specs look like the new one: `Some(Some(i))` continues `found[i]`,
    /// `Some(None)` starts a new spec, `None` when nobody can be asked.
    fn similar_work(
        &self,
        _found: &[Candidate],
        _now: DateTime<Utc>,
    ) -> anyhow::Result<Option<Option<usize>>> {
        Ok(None)
    }

    /// Several runs could be resumed: the `choice` number of the one picked, or `None` when
    /// nobody can be asked.
    fn pick_run(&self, _hint: Option<&str>, _matches: &[Match]) -> anyhow::Result<Option<usize>> {
        Ok(None)
    }

    /// What an operation has to say before it goes on (a run may follow, with its own
    /// progress).
    fn show(&self, _shown: Shown<'_>) {}
}

/// What an operation shows the person before it goes on.
#[derive(Debug, Clone, Copy)]
pub enum Shown<'a> {
    /// Where the run being resumed stood.
    Resume(&'a ResumeSummary),
    /// `runner new` created this spec.
    Created { spec: &'a str },
    /// `runner new` goes on with this unfinished spec (`identical`: same description).
    Continuing { spec: &'a str, identical: bool },
}

/// Nobody to ask: every question is refused with the flag that answers it.
pub struct Nobody;

impl Asker for Nobody {
    fn confirm_repin(&self, q: &crate::engine::ask::RepinQuestion<'_>) -> anyhow::Result<bool> {
        NeverAsk.confirm_repin(q)
    }

    fn existing_work(
        &self,
        q: &crate::engine::ask::WorkQuestion<'_>,
    ) -> anyhow::Result<crate::engine::ask::WorkAnswer> {
        NeverAsk.existing_work(q)
    }

    fn confirm_discard(&self, spec: &str) -> anyhow::Result<bool> {
        NeverAsk.confirm_discard(spec)
    }
}

impl Person for Nobody {}
