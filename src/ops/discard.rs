//! `runner discard`: throw a spec's build away (backed up first, undoable). The operation takes
//! the spec guard; its machinery is `engine::lifecycle::discard`.

pub use crate::engine::lifecycle::discard::DiscardReport;

use super::context::Ctx;
use super::person::Person;

#[derive(Debug, Clone, Default)]
pub struct DiscardOptions {
    pub spec: Option<String>,
}

pub fn discard(
    ctx: &Ctx,
    opts: DiscardOptions,
    person: &dyn Person,
) -> anyhow::Result<DiscardReport> {
    let held = ctx.spec_guard(opts.spec.as_deref(), person, "discard")?;
    crate::engine::lifecycle::discard::discard(&ctx.ws, &held.paths, &held.journal)
}
