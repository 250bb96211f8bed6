//! `runner undo`: reverse the last merge or discard of a spec (under the spec guard), list the
//! backups, and `runner gc`: remove old ones. The machinery is `engine::lifecycle::undo`.

use serde::Serialize;

pub use crate::engine::lifecycle::undo::{GcReport, UndoReport};
pub use crate::git::backup::Backup;

use super::context::Ctx;
use super::person::Person;

#[derive(Debug, Clone, Default)]
pub struct UndoOptions {
    pub spec: Option<String>,
}

pub fn undo(ctx: &Ctx, opts: UndoOptions, person: &dyn Person) -> anyhow::Result<UndoReport> {
    let held = ctx.spec_guard(opts.spec.as_deref(), person, "undo")?;
    crate::engine::lifecycle::undo::undo(&ctx.ws, &held.paths, &held.journal)
}

#[derive(Debug, Clone, Default)]
pub struct BackupsOptions {
    /// Only this spec's (named as `status --spec` names one: never asked).
    pub spec: Option<String>,
}

/// `runner undo --list`: the backups, newest first.
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct BackupsReport(pub Vec<Backup>);

pub fn backups(ctx: &Ctx, opts: BackupsOptions) -> anyhow::Result<BackupsReport> {
    let spec = match &opts.spec {
        Some(q) => Some(ctx.spec_named(q)?),
        None => None,
    };
    Ok(BackupsReport(crate::git::backup::list(
        &ctx.ws.main.repo,
        spec.as_deref(),
    )))
}

#[derive(Debug, Clone, Default)]
pub struct GcOptions {
    /// Days; none: `[backup] keep_days`.
    pub older_than: Option<u64>,
    pub dry_run: bool,
}

pub fn gc(ctx: &Ctx, opts: GcOptions) -> anyhow::Result<GcReport> {
    let days = match opts.older_than {
        Some(d) => d,
        None => ctx.ws.config()?.backup.keep_days,
    };
    crate::engine::lifecycle::undo::gc(&ctx.ws, days, opts.dry_run)
}
