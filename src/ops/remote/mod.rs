//! The commands that read or write a remote's published specs (issue 29 §1, docs/fleet.md):
//! `runner submit`, `runner status --remote`. What they share: which remote (`--remote`, else
//! `fleet.remote`), checked to exist, and one fetch of what it holds.

pub mod bring;
pub mod lifecycle;
pub mod status;
pub mod submit;

use crate::error::RunnerError;
use crate::fleet::lease::Lease;
use crate::fleet::view::{PublishedSpec, RemoteView};

/// The remote a command works with: `given`, else `fleet.remote` of the config; it must be one
/// `git remote` lists (exit 2 otherwise, with `git remote -v` as advice).
pub fn remote_name(ctx: &super::Ctx, given: Option<&str>) -> anyhow::Result<String> {
    let remote = match given {
        Some(r) => r.to_string(),
        None => {
            crate::config::load(&ctx.ws.config_files())?
                .config
                .fleet
                .remote
        }
    };
    crate::fleet::view::check_remote_name(&remote)?;
    if !crate::fleet::net::remote_exists(&ctx.ws.main.repo, &remote) {
        return Err(RunnerError::bad_input(format!(
            "this repository has no git remote named {remote:?}"
        ))
        .with_hint("`git remote -v` lists its remotes; add one with `git remote add NAME URL`, or name another with --remote (or fleet.remote)")
        .into());
    }
    Ok(remote)
}

/// One fetch of everything runner keeps on `remote`.
pub fn fetch(ctx: &super::Ctx, remote: &str) -> anyhow::Result<RemoteView> {
    let ws = &ctx.ws;
    crate::fleet::view::fetch_view(&ws.root, &ws.main.repo, remote, crate::fleet::net::TIMEOUT)
}

/// The lease that holds `spec` at `now`: believed and not expired.
pub fn holder(spec: &PublishedSpec, now: chrono::DateTime<chrono::Utc>) -> Option<&Lease> {
    match &spec.lease {
        Some((_, Ok(lease))) if !lease.expired_at(now) => Some(lease),
        _ => None,
    }
}

/// The refusal of a command that would change a spec a worker holds (exit 4).
pub fn held_error(spec: &str, lease: &Lease, now: chrono::DateTime<chrono::Utc>) -> RunnerError {
    RunnerError::Busy(format!(
        "spec {spec} is held by worker {} on {} (pid {}), whose heartbeat was {}s ago; its lease runs until {}",
        lease.worker,
        lease.host,
        lease.pid,
        (now - lease.renewed_at).num_seconds().max(0),
        lease.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    ))
    .with_hint("wait for the worker to finish or release it (a lease not renewed expires after its lease_secs), then run again")
}
