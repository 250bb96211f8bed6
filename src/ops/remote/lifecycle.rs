//! `review`, `merge` and `undo` with `--remote NAME`: the spec is brought here first
//! (`bring`), then the command does as it does today; `merge` and `undo` then publish the
//! spec's folder again (compare-and-swap on the folder they brought), so workers see it merged
//! (and never take it again) or back. The user's base branch is merged here and never pushed.

use serde::Serialize;

use super::bring::{Brought, bring};
use crate::error::RunnerError;
use crate::fleet::names::spec_ref;
use crate::fleet::net::{Expect, PushOutcome, RefUpdate, push_atomic};

/// A command's own report, with what `--remote` added: `fetched` (what was brought here) and
/// `published` (the folder commit published afterwards, by merge and undo).
#[derive(Debug, Serialize)]
pub struct WithRemote<R> {
    #[serde(flatten)]
    pub report: R,
    pub fetched: Brought,
    pub published: Option<String>,
}

/// `runner review --remote`.
pub fn review(
    ctx: &super::super::Ctx,
    remote: Option<&str>,
    spec: &str,
    diff: bool,
) -> anyhow::Result<WithRemote<super::super::review::ReviewReport>> {
    let remote = super::remote_name(ctx, remote)?;
    let fetched = bring(ctx, &remote, spec, false)?;
    let opts = super::super::review::ReviewOptions {
        spec: Some(spec.to_string()),
        diff,
    };
    let report = super::super::review::review(ctx, opts, &super::super::Nobody)?;
    Ok(WithRemote {
        report,
        fetched,
        published: None,
    })
}

/// `runner merge --remote`.
pub fn merge(
    ctx: &super::super::Ctx,
    remote: Option<&str>,
    opts: super::super::merge::MergeOptions,
    person: &dyn super::super::Person,
) -> anyhow::Result<WithRemote<super::super::merge::MergeReport>> {
    let spec = spec_of(opts.spec.as_deref())?;
    let remote = super::remote_name(ctx, remote)?;
    let fetched = bring(ctx, &remote, &spec, true)?;
    let report = super::super::merge::merge(ctx, opts, person)?;
    let published = publish(ctx, &remote, &spec, &fetched, "merge")?;
    Ok(WithRemote {
        report,
        fetched,
        published: Some(published),
    })
}

/// `runner undo --remote`.
pub fn undo(
    ctx: &super::super::Ctx,
    remote: Option<&str>,
    spec: Option<&str>,
    person: &dyn super::super::Person,
) -> anyhow::Result<WithRemote<super::super::undo::UndoReport>> {
    let spec = spec_of(spec)?;
    let remote = super::remote_name(ctx, remote)?;
    let fetched = bring(ctx, &remote, &spec, true)?;
    let opts = super::super::undo::UndoOptions {
        spec: Some(spec.clone()),
    };
    let report = super::super::undo::undo(ctx, opts, person)?;
    let published = publish(ctx, &remote, &spec, &fetched, "undo")?;
    Ok(WithRemote {
        report,
        fetched,
        published: Some(published),
    })
}

/// With `--remote` the spec is named: it may not be here yet, so it cannot be chosen among
/// the local ones.
pub fn spec_of(spec: Option<&str>) -> anyhow::Result<String> {
    let Some(spec) = spec else {
        return Err(RunnerError::bad_input(
            "--remote needs --spec S: the spec's name as `runner status --remote` shows it",
        )
        .into());
    };
    crate::store::spec::check_name(spec)?;
    Ok(spec.to_string())
}

/// Publish the spec's folder as it is now, expecting the remote's folder to be the one brought
/// here (a worker's publication since is not overwritten: exit 7).
fn publish(
    ctx: &super::super::Ctx,
    remote: &str,
    spec: &str,
    fetched: &Brought,
    what: &str,
) -> anyhow::Result<String> {
    let repo = &ctx.ws.main.repo;
    let before = crate::git::Oid::from_str(&fetched.folder)?;
    let dir = ctx.ws.spec(spec)?.dir;
    let folder = crate::fleet::snapshot::commit_folder(
        repo,
        &dir,
        Some(before),
        &format!("runner {what} {spec}"),
    )?;
    let update = RefUpdate {
        dst: spec_ref(spec),
        new: Some(folder),
        expect: Expect::At(before),
    };
    let refused = |why: String| {
        RunnerError::Remote(format!(
            "the {what} of {spec} was done here, but {remote} did not take its folder: {why}"
        ))
        .with_hint(format!(
            "`runner status --remote {0}` shows what it holds; `runner submit --spec {1} --remote {0}` publishes the folder again",
            crate::sh(remote),
            crate::sh(spec)
        ))
    };
    match push_atomic(&ctx.ws.root, remote, &[update], crate::fleet::net::TIMEOUT) {
        Ok(PushOutcome::Pushed) => Ok(folder.to_string()),
        Ok(PushOutcome::Refused { reason }) => Err(refused(reason).into()),
        Err(e) => Err(refused(format!("{e:#}")).into()),
    }
}
