//! Leases planted on a remote by hand, as another worker would have written them (a commit of
//! the empty tree whose message is the lease's JSON, docs/fleet.md): shared by the fleet's
//! tests, which each need a holder they did not start.

use std::path::Path;

use chrono::{DateTime, TimeDelta, Utc};

use crate::common::git_in;

/// A lease as a worker writes it: `worker` on `host` (pid `pid`), taken and renewed at
/// `renewed_at`, lasting `lease_secs`.
pub fn lease_json(
    worker: &str,
    host: &str,
    pid: u32,
    renewed_at: DateTime<Utc>,
    lease_secs: i64,
) -> serde_json::Value {
    let at = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    serde_json::json!({
        "worker": worker, "host": host, "pid": pid,
        "taken_at": at(renewed_at), "renewed_at": at(renewed_at),
        "expires_at": at(renewed_at + TimeDelta::seconds(lease_secs)), "lease_secs": lease_secs,
    })
}

/// The lease commit of `lease` written into the repository at `dir` (a clone or a bare
/// repository); its id.
pub fn lease_commit(dir: &Path, lease: &serde_json::Value) -> String {
    let empty = git_in(dir, &["hash-object", "-t", "tree", "-w", "/dev/null"]);
    let id = git_in(
        dir,
        &[
            "-c",
            "user.name=w",
            "-c",
            "user.email=w@example.com",
            "commit-tree",
            empty.trim(),
            "-m",
            &lease.to_string(),
        ],
    );
    id.trim().to_string()
}

/// Push `lease` from the clone at `dir` to its `origin` as the lease of `spec`, over whatever
/// is there (as a worker that believed the lease expired would take it).
pub fn push_lease(dir: &Path, spec: &str, lease: &serde_json::Value) {
    let id = lease_commit(dir, lease);
    git_in(
        dir,
        &[
            "push",
            "-q",
            "origin",
            &format!("+{id}:refs/runner/leases/{spec}"),
        ],
    );
}
