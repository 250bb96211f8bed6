//! What the fleet's tests share: two machines on one bare remote, and leases planted on a
//! remote by hand, as another worker would have written them (a commit of the empty tree whose
//! message is the lease's JSON, docs/fleet.md), for a holder a test did not start.

use std::path::Path;

use chrono::{DateTime, TimeDelta, Utc};

use crate::common::{TestRepo, assert_exit, git_in};

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

/// Machine A builds `spec` and submits it to a bare remote (with its `main`); machine B is a
/// repository on the same `main` that has never seen the spec. The bare remote's path.
pub fn two_machines(spec: &str) -> (TestRepo, TestRepo, std::path::PathBuf) {
    let a = TestRepo::new();
    a.add_spec(spec);
    assert_exit(&a.run_spec(spec, &[]), 0);
    let bare = a.tmp.path().join("remote.git");
    git_in(
        a.tmp.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    let url = format!("file://{}", bare.display());
    a.git(&["remote", "add", "origin", &url]);
    a.git(&["push", "-q", "origin", "main"]);
    assert_exit(&a.runner(&["submit", "--spec", spec]), 0);
    let b = TestRepo::new();
    b.git(&["remote", "add", "origin", &url]);
    b.git(&["fetch", "-q", "origin", "main"]);
    b.git(&["reset", "-q", "--hard", "FETCH_HEAD"]);
    (a, b, bare)
}
