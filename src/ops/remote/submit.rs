//! `runner submit`: publish a local spec for workers — its folder as a commit on
//! `refs/runner/specs/<spec>` and its branch, when it has one, on `auto-claude/<spec>` — in one
//! atomic push that expects each ref as the remote had it a moment before (compare-and-swap).

use schemars::JsonSchema;
use serde::Serialize;

use crate::error::RunnerError;
use crate::fleet::names::{branch_ref, spec_ref};
use crate::fleet::net::{Expect, PushOutcome, RefUpdate, push_atomic};
use crate::git::{Oid, branch_for};

#[derive(Debug, Clone, Default)]
pub struct SubmitOptions {
    /// The spec (as everywhere: a name, number or part of one); none: the only one, or the
    /// slot's.
    pub spec: Option<String>,
    /// The remote (none: `fleet.remote`).
    pub remote: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SubmitReport {
    pub spec: String,
    pub remote: String,
    /// The published folder's commit (`refs/runner/specs/<spec>` on the remote).
    pub folder: String,
    /// The folder commit it replaced; null when the spec was not published before.
    pub replaced: Option<String>,
    /// The work branch's tip as pushed (`auto-claude/<spec>`); null when the spec has none.
    pub branch: Option<String>,
}

/// `runner submit`.
pub fn submit(ctx: &super::super::Ctx, opts: SubmitOptions) -> anyhow::Result<SubmitReport> {
    let name = ctx.spec_to_change(opts.spec.as_deref(), &super::super::Nobody)?;
    let paths = ctx.ws.spec(&name)?;
    // A plan that does not parse is refused as `run` refuses it (exit 2): workers could not
    // build it either.
    paths.plan.load()?;
    let remote = super::remote_name(ctx, opts.remote.as_deref())?;
    let view = super::fetch(ctx, &remote)?;
    let published = view.specs.get(&name).cloned().unwrap_or_default();
    let now = ctx.now();
    if let Some(lease) = super::holder(&published, now) {
        return Err(super::held_error(&name, lease, now).into());
    }
    let repo = &ctx.ws.main.repo;
    let local_tip = ctx.ws.main.branch_tip(&branch_for(&name));
    if let (Some(theirs), Some(ours)) = (published.branch, local_tip)
        && theirs != ours
        && !crate::git::history::strictly_descends(repo, ours, theirs)
    {
        return Err(RunnerError::bad_input(format!(
            "{remote}'s branch {} has commits this repository's lacks (it is at {theirs}); submitting would drop them",
            branch_for(&name)
        ))
        .with_hint(format!(
            "bring them here first: `runner review --spec {} --remote {remote}`",
            crate::sh(&name)
        ))
        .into());
    }
    let folder = crate::fleet::snapshot::commit_folder(
        repo,
        &paths.dir,
        published.folder,
        &format!("runner submit {name}"),
    )?;
    let expect = |id: Option<Oid>| id.map_or(Expect::Absent, Expect::At);
    let mut updates = vec![RefUpdate {
        dst: spec_ref(&name),
        new: Some(folder),
        expect: expect(published.folder),
    }];
    if let Some(tip) = local_tip {
        updates.push(RefUpdate {
            dst: branch_ref(&name),
            new: Some(tip),
            expect: expect(published.branch),
        });
    }
    let root = &ctx.ws.root;
    match push_atomic(root, &remote, &updates, crate::fleet::net::TIMEOUT)? {
        PushOutcome::Pushed => {}
        PushOutcome::Refused { reason } => {
            return Err(RunnerError::Remote(format!(
                "{remote} refused the publication of {name}, nothing was published: {reason}"
            ))
            .with_hint("someone published or took it a moment ago: `runner status --remote` shows it; run again")
            .into());
        }
    }
    Ok(SubmitReport {
        spec: name,
        remote,
        folder: folder.to_string(),
        replaced: published.folder.map(|id| id.to_string()),
        branch: local_tip.map(|id| id.to_string()),
    })
}
