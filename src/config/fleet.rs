//! `[fleet]`: workers on many machines through the git remote (docs/fleet.md).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The shortest `fleet.lease_secs`: a lease is renewed every third of it by a `git push`,
/// which must have time to finish.
pub const MIN_LEASE_SECS: u64 = 2;
/// The longest: a worker that died keeps its specs this long before another may take them.
pub const MAX_LEASE_SECS: u64 = 3600;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct FleetConfig {
    /// The git remote specs are published to and taken from (`--remote` overrides it).
    pub remote: String,
    /// Seconds a worker's lease on a spec lasts after its last renewal (the heartbeat); a
    /// lease not renewed for that long may be taken over by another worker.
    pub lease_secs: u64,
    /// The agent account a usage limit belongs to: workers with the same account share a
    /// pause. Unset: the agent preset's name (every `claude` worker shares one).
    pub account: Option<String>,
}

impl Default for FleetConfig {
    fn default() -> Self {
        FleetConfig {
            remote: "origin".to_string(),
            lease_secs: 60,
            account: None,
        }
    }
}

impl FleetConfig {
    pub fn lease(&self) -> Duration {
        Duration::from_secs(self.lease_secs)
    }

    /// What is wrong with the keys, for the config's error.
    pub(super) fn problem(&self) -> Option<String> {
        if !(MIN_LEASE_SECS..=MAX_LEASE_SECS).contains(&self.lease_secs) {
            return Some(format!(
                "fleet.lease_secs must be between {MIN_LEASE_SECS} and {MAX_LEASE_SECS} seconds; it is {}",
                self.lease_secs
            ));
        }
        if self.remote.trim().is_empty() || self.remote.starts_with('-') {
            return Some(format!(
                "fleet.remote must name a git remote (as `git remote` lists them); it is {:?}",
                self.remote
            ));
        }
        if let Some(account) = &self.account
            && !crate::policy::account::is_account_name(account)
        {
            return Some(format!(
                "fleet.account must be 1 to 64 ASCII letters, digits, `.`, `_`, `-` or `@`, not starting with `.` or `-`; it is {account:?}"
            ));
        }
        None
    }
}
