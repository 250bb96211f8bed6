//! The lease: a worker's time-limited claim on a spec, `refs/runner/leases/<spec>` on the
//! remote (docs/fleet.md, "The lease and fencing"). A commit with the empty tree whose message
//! is the lease as JSON; read back strictly (unknown fields, a message over 4 KiB, a control
//! character in a name, an expiry further than `lease_secs` after the renewal: not believed).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::record;
use crate::config::{MAX_LEASE_SECS, MIN_LEASE_SECS};
use crate::git::{Oid, Repository};

/// Who holds a spec and until when. Times are RFC 3339 (UTC when runner writes them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lease {
    /// The worker's name (printable, at most 200 characters).
    pub worker: String,
    /// The host it runs on (printable, at most 200 characters).
    pub host: String,
    /// The worker's process id on that host.
    pub pid: u32,
    /// When this worker took the spec.
    pub taken_at: DateTime<Utc>,
    /// Its last renewal (the heartbeat).
    pub renewed_at: DateTime<Utc>,
    /// `renewed_at` plus `lease_secs`: after it, another worker may take the spec over.
    pub expires_at: DateTime<Utc>,
    /// The lease's length (`fleet.lease_secs` of the worker that wrote it).
    pub lease_secs: u64,
}

impl Lease {
    /// Whether it has expired at `now` (by the reader's clock: see docs/fleet.md, "Clocks").
    pub fn expired_at(&self, now: DateTime<Utc>) -> bool {
        self.expires_at <= now
    }

    /// What is wrong with it, if anything.
    pub fn problem(&self) -> Option<String> {
        let check = || -> Result<(), String> {
            record::check_text("worker", &self.worker)?;
            record::check_text("host", &self.host)?;
            if !(MIN_LEASE_SECS..=MAX_LEASE_SECS).contains(&self.lease_secs) {
                return Err(format!(
                    "lease_secs must be {MIN_LEASE_SECS} to {MAX_LEASE_SECS}, not {}",
                    self.lease_secs
                ));
            }
            if self.renewed_at < self.taken_at {
                return Err("renewed_at is before taken_at".into());
            }
            let length = self.expires_at - self.renewed_at;
            if length < chrono::TimeDelta::zero()
                || length > chrono::TimeDelta::seconds(self.lease_secs as i64)
            {
                return Err("expires_at is not within lease_secs of renewed_at".into());
            }
            Ok(())
        };
        check().err()
    }
}

/// Write `lease` as a record commit (no ref moved); refused if it would not read back.
pub fn write_lease(repo: &Repository, lease: &Lease) -> anyhow::Result<Oid> {
    if let Some(problem) = lease.problem() {
        anyhow::bail!("invalid lease: {problem}");
    }
    let json = serde_json::to_string(lease)?;
    anyhow::ensure!(json.len() <= record::MAX_RECORD_BYTES, "lease over 4 KiB");
    record::write(repo, &json)
}

/// The lease the commit `id` holds, or why it is not one (a remote's record that is not
/// exactly a lease is not believed).
pub fn read_lease(repo: &Repository, id: Oid) -> Result<Lease, String> {
    let json = record::read(repo, id)?;
    let lease: Lease =
        serde_json::from_str(&json).map_err(|e| format!("{id} is not a lease: {e}"))?;
    match lease.problem() {
        Some(problem) => Err(format!("{id} is not a valid lease: {problem}")),
        // A lease renewed "in the future" beyond any clock skew would hold the spec for as
        // long as its writer's clock (or a hostile remote) likes: not believed.
        None if lease.renewed_at - Utc::now() > MAX_SKEW => Err(format!(
            "{id} is not a believable lease: renewed at {}, more than {} minutes ahead of this clock",
            lease.renewed_at.to_rfc3339(),
            MAX_SKEW.num_minutes()
        )),
        None => Ok(lease),
    }
}

/// How far ahead of the reader's clock a lease's renewal may be and still be believed: hosts'
/// clocks agree to within seconds (NTP); a lease further ahead would keep every other worker
/// out for as long as it says.
pub const MAX_SKEW: chrono::TimeDelta = chrono::TimeDelta::minutes(5);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::test_util::local_repo;

    fn lease() -> Lease {
        let t: DateTime<Utc> = "2026-05-01T10:00:00Z".parse().unwrap();
        Lease {
            worker: "w1".into(),
            host: "host-a".into(),
            pid: 42,
            taken_at: t,
            renewed_at: t + chrono::TimeDelta::seconds(20),
            expires_at: t + chrono::TimeDelta::seconds(80),
            lease_secs: 60,
        }
    }

    #[test]
    fn a_lease_reads_back_as_written() {
        let (_dir, repo) = local_repo();
        let id = write_lease(&repo, &lease()).unwrap();
        assert_eq!(read_lease(&repo, id).unwrap(), lease());
        let now: DateTime<Utc> = "2026-05-01T10:01:20Z".parse().unwrap();
        assert!(lease().expired_at(now));
        assert!(!lease().expired_at(now - chrono::TimeDelta::seconds(1)));
    }

    /// A record commit with `message`, written as a hostile remote would (no checks).
    fn raw(repo: &Repository, message: &str) -> Oid {
        record::write(repo, message).unwrap()
    }

    #[test]
    fn a_record_that_is_not_exactly_a_lease_is_not_believed() {
        let (_dir, repo) = local_repo();
        let good = serde_json::to_value(lease()).unwrap();
        let with = |key: &str, value: serde_json::Value| {
            let mut v = good.clone();
            v[key] = value;
            v.to_string()
        };
        let cases = [
            with("extra", "x".into()),
            with("worker", "".into()),
            with("worker", "a\u{1b}[2Jb".into()),
            with("host", "h\nx".into()),
            with("host", "x".repeat(201).into()),
            with("pid", (-1).into()),
            with("lease_secs", 0.into()),
            with("taken_at", "yesterday".into()),
            with("expires_at", "2099-01-01T00:00:00Z".into()),
            with("renewed_at", "2026-05-01T09:00:00Z".into()),
            format!("{}{}", good, " ".repeat(5000)),
            "not json".into(),
        ];
        for message in cases {
            let id = raw(&repo, &message);
            assert!(read_lease(&repo, id).is_err(), "believed: {message:?}");
        }
        // Not a record at all: a commit with files, a blob.
        let blob = repo.blob(good.to_string().as_bytes()).unwrap();
        assert!(read_lease(&repo, blob).is_err());
        let with_files = crate::fleet::test_util::commit(&repo, &good.to_string());
        assert!(read_lease(&repo, with_files).is_err());
        assert!(
            write_lease(
                &repo,
                &Lease {
                    worker: "\u{7}".into(),
                    ..lease()
                }
            )
            .is_err()
        );
    }
}
