//! The person behind a front end, as an operation meets them: the run's questions
//! ([`Asker`]) and which spec is meant ([`Person`]). An operation with questions of its own
//! extends it in its module (`ops::resume::ResumeAsker`: which run, and the summary shown
//! before it goes on; `ops::new::NewAsker`: which unfinished spec to continue). The
//! terminal's is `cli::ask`; [`Nobody`] (no terminal, `--json`, MCP) asks nothing, and each
//! operation then answers with the error that names the flag to pass.

pub use crate::engine::run::ask::{Asker, NeverAsk};

pub trait Person: Asker {
    /// Several specs could be meant: the index of the one picked, or `None` when nobody can
    /// be asked (the operation then lists the command for each).
    fn pick_spec(&self, _title: &str, _candidates: &[String]) -> anyhow::Result<Option<usize>> {
        Ok(None)
    }
}

/// Nobody to ask: every question is refused with the flag that answers it.
pub struct Nobody;

impl Asker for Nobody {
    fn confirm_repin(
        &self,
        q: &crate::engine::run::ask::RepinQuestion<'_>,
    ) -> anyhow::Result<bool> {
        NeverAsk.confirm_repin(q)
    }

    fn existing_work(
        &self,
        q: &crate::engine::run::ask::WorkQuestion<'_>,
    ) -> anyhow::Result<crate::engine::run::ask::WorkAnswer> {
        NeverAsk.existing_work(q)
    }

    fn confirm_discard(&self, spec: &str) -> anyhow::Result<bool> {
        NeverAsk.confirm_discard(spec)
    }
}

impl Person for Nobody {}
