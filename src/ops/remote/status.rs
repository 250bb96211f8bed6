//! `runner status --remote NAME`: every spec published on a remote — its state by `status`'s
//! own rule read from the published plan and run records, its progress, its branch, who holds
//! it and how fresh the heartbeat is — and every account's pause.

use schemars::JsonSchema;
use serde::Serialize;

use crate::fleet::snapshot;
use crate::fleet::view::PublishedSpec;
use crate::git::Repository;
use crate::policy::last_run::LastRun;

#[derive(Debug, Serialize, JsonSchema)]
pub struct RemoteStatusReport {
    pub remote: String,
    pub specs: Vec<RemoteSpecStatus>,
    pub pauses: Vec<RemotePause>,
    /// Refs on the remote that were ignored (a name that is not a spec's or an account's).
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RemoteSpecStatus {
    pub spec: String,
    /// `runner status`'s words, from the published plan and run records: not_planned,
    /// planned, in_progress, interrupted, failed, blocked, budget_exhausted, complete, merged,
    /// discarded, invalid_plan; `running` when a worker's lease holds it; `refused` when its
    /// published folder is not one runner accepts (see `error`); `not_published` when the
    /// remote has only its branch or lease.
    pub status: String,
    pub chunks: super::super::status::Counts,
    /// The published folder's commit.
    pub folder: Option<String>,
    /// The tip of its work branch on the remote.
    pub branch: Option<String>,
    pub holder: Option<Holder>,
    /// Why the remote's lease record is not believed (the spec counts as not held).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_problem: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The worker whose lease is on the spec (expired or not).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Holder {
    pub worker: String,
    pub host: String,
    pub pid: u32,
    /// Seconds since its last renewal (`renewed_at`), by this machine's clock.
    pub heartbeat_secs: i64,
    /// RFC 3339.
    pub expires_at: String,
    /// Past `expires_at`: another worker may take the spec over.
    pub expired: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RemotePause {
    pub account: String,
    /// RFC 3339; null when the record is not believed (see `problem`).
    pub until: Option<String>,
    /// Whether it still holds now.
    pub active: bool,
    pub reason: Option<String>,
    pub set_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

#[derive(Debug, Clone)]
pub struct RemoteStatusOptions {
    /// The remote (none: `fleet.remote`).
    pub remote: Option<String>,
}

/// `runner status --remote`.
pub fn remote_status(
    ctx: &super::super::Ctx,
    opts: RemoteStatusOptions,
) -> anyhow::Result<RemoteStatusReport> {
    let remote = super::remote_name(ctx, opts.remote.as_deref())?;
    let view = super::fetch(ctx, &remote)?;
    let now = ctx.now();
    let repo = &ctx.ws.main.repo;
    let specs = view
        .specs
        .iter()
        .map(|(name, published)| spec_status(repo, name, published, now))
        .collect();
    let pauses = view
        .pauses
        .iter()
        .map(|(account, pause)| match pause {
            Ok(p) => RemotePause {
                account: account.clone(),
                until: Some(p.until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                active: p.holds_at(now),
                reason: Some(p.reason.clone()),
                set_by: Some(p.set_by.clone()),
                problem: None,
            },
            Err(e) => RemotePause {
                account: account.clone(),
                until: None,
                active: false,
                reason: None,
                set_by: None,
                problem: Some(e.clone()),
            },
        })
        .collect();
    Ok(RemoteStatusReport {
        remote,
        specs,
        pauses,
        warnings: view.warnings,
    })
}

fn spec_status(
    repo: &Repository,
    name: &str,
    published: &PublishedSpec,
    now: chrono::DateTime<chrono::Utc>,
) -> RemoteSpecStatus {
    let holder = match &published.lease {
        Some((_, Ok(lease))) => Some(Holder {
            worker: lease.worker.clone(),
            host: lease.host.clone(),
            pid: lease.pid,
            heartbeat_secs: (now - lease.renewed_at).num_seconds(),
            expires_at: lease
                .expires_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            expired: lease.expired_at(now),
        }),
        _ => None,
    };
    let held = super::holder(published, now).is_some();
    let (status, chunks, error) = match published.folder {
        None => ("not_published", Default::default(), None),
        Some(folder) => match judge(repo, name, folder, held) {
            Ok((status, counts)) => (status, counts, None),
            Err(e) => ("refused", Default::default(), Some(format!("{e:#}"))),
        },
    };
    RemoteSpecStatus {
        spec: name.to_string(),
        status: status.to_string(),
        chunks,
        folder: published.folder.map(|id| id.to_string()),
        branch: published.branch.map(|id| id.to_string()),
        holder,
        lease_problem: match &published.lease {
            Some((_, Err(e))) => Some(e.clone()),
            _ => None,
        },
        error,
    }
}

/// The word and counts of the published folder `folder`, by `status`'s rule (a plan that does
/// not parse: `invalid_plan`).
fn judge(
    repo: &Repository,
    name: &str,
    folder: crate::git::Oid,
    held: bool,
) -> anyhow::Result<(&'static str, super::super::status::Counts)> {
    let files = snapshot::validate(repo, folder)?;
    let label = std::path::PathBuf::from(format!("{name}/{}", crate::plan::PLAN_FILE));
    let parsed = snapshot::file_bytes(repo, &files, crate::plan::PLAN_FILE)?
        .map(|bytes| crate::plan::parse_plan(&label, &bytes))
        .transpose();
    let last = last_run(repo, name, &files)?;
    Ok(match parsed {
        Ok(plan) => super::super::status::plan_state(plan.as_ref(), false, held, last),
        Err(_) => super::super::status::plan_state(None, true, held, last),
    })
}

/// Where the published run records leave the spec, read by `store::runs`' own rule from a
/// private temp folder holding only them.
fn last_run(
    repo: &Repository,
    name: &str,
    files: &std::collections::BTreeMap<String, crate::git::Oid>,
) -> anyhow::Result<LastRun> {
    let runs: Vec<&String> = files
        .keys()
        .filter(|rel| rel.starts_with("runs/"))
        .collect();
    if runs.is_empty() {
        return Ok(LastRun::Unknown);
    }
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("runner-remote-{}-{n}-{name}", std::process::id()));
    // A new folder (`create_dir` fails on anything already there, a link included), only
    // checked names written in it.
    std::fs::create_dir(&dir).map_err(crate::fs::at(&dir))?;
    let result = (|| -> anyhow::Result<LastRun> {
        std::fs::create_dir(dir.join("runs"))?;
        for rel in runs {
            if let Some(bytes) = snapshot::file_bytes(repo, files, rel)? {
                std::fs::write(dir.join(rel), bytes)?;
            }
        }
        Ok(crate::store::runs::last_run(&dir))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}
