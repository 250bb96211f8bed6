//! The person behind a front end, as an operation meets them: the run's questions
//! ([`Asker`]) and which spec is meant ([`Person`]). An operation with questions of its own
//! extends it in its module (`ops::resume::ResumeAsker`: which run, and the summary shown
//! before it goes on; `ops::new::NewAsker`: which unfinished spec to continue). The
//! terminal's is `cli::ask`; [`Nobody`] (no terminal, `--json`, MCP) asks nothing, and each
//! operation then answers with the error that names the flag to pass.

pub use crate::engine::run::ask::{Asker, Nobody};

pub trait Person: Asker {
    /// Several specs could be meant: the index of the one picked, or `None` when nobody can
    /// be asked (the operation then lists the command for each).
    fn pick_spec(&self, _title: &str, _candidates: &[String]) -> anyhow::Result<Option<usize>> {
        Ok(None)
    }
}

/// [`Nobody`] (the engine's: no terminal, `--yes`, MCP) answers these too: never.
impl Person for Nobody {}
