//! An agent account's usage-limit pause, `refs/runner/pauses/<account>` on the remote
//! (docs/fleet.md, "Usage limits"): every worker using the account starts no session before
//! `until`. A commit with the empty tree whose message is the pause as JSON, read back as
//! strictly as a lease.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::record;
use crate::git::{Oid, Repository};

/// An account's pause. Times are RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountPause {
    /// The agent account (`fleet.account`; `fleet::names::is_account_name`), the same as the
    /// ref's last component.
    pub account: String,
    /// No session starts with the account before this time.
    pub until: DateTime<Utc>,
    /// Why: what the agent's CLI said (printable, at most 200 characters).
    pub reason: String,
    /// The worker that met the limit (printable, at most 200 characters).
    pub set_by: String,
    /// When it was published.
    pub set_at: DateTime<Utc>,
}

impl AccountPause {
    /// Whether it still holds at `now`.
    pub fn holds_at(&self, now: DateTime<Utc>) -> bool {
        now < self.until
    }

    /// What is wrong with it, if anything.
    pub fn problem(&self) -> Option<String> {
        if !super::names::is_account_name(&self.account) {
            return Some(format!("invalid account name {:?}", self.account));
        }
        record::check_text("reason", &self.reason)
            .and_then(|()| record::check_text("set_by", &self.set_by))
            .err()
    }
}

/// Write `pause` as a record commit (no ref moved); refused if it would not read back.
pub fn write_pause(repo: &Repository, pause: &AccountPause) -> anyhow::Result<Oid> {
    if let Some(problem) = pause.problem() {
        anyhow::bail!("invalid pause: {problem}");
    }
    let json = serde_json::to_string(pause)?;
    anyhow::ensure!(json.len() <= record::MAX_RECORD_BYTES, "pause over 4 KiB");
    record::write(repo, &json)
}

/// The pause the commit `id` holds, or why it is not one.
pub fn read_pause(repo: &Repository, id: Oid) -> Result<AccountPause, String> {
    let json = record::read(repo, id)?;
    let pause: AccountPause =
        serde_json::from_str(&json).map_err(|e| format!("{id} is not a pause: {e}"))?;
    match pause.problem() {
        Some(problem) => Err(format!("{id} is not a valid pause: {problem}")),
        // As a local pause: one further ahead than runner ever pauses was not written by it.
        None if !crate::policy::pause::believable(pause.until, Utc::now()) => Err(format!(
            "{id} is not a believable pause: until {}, further ahead than runner ever pauses",
            pause.until.to_rfc3339()
        )),
        None => Ok(pause),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::test_util::local_repo;

    fn pause() -> AccountPause {
        let t: DateTime<Utc> = "2026-05-01T10:00:00Z".parse().unwrap();
        AccountPause {
            account: "team@example.com".into(),
            until: t + chrono::TimeDelta::hours(2),
            reason: "usage limit reached".into(),
            set_by: "w1@host-a".into(),
            set_at: t,
        }
    }

    #[test]
    fn a_pause_reads_back_as_written_and_holds_until_its_time() {
        let (_dir, repo) = local_repo();
        let id = write_pause(&repo, &pause()).unwrap();
        assert_eq!(read_pause(&repo, id).unwrap(), pause());
        assert!(pause().holds_at(pause().set_at));
        assert!(!pause().holds_at(pause().until));
    }

    #[test]
    fn a_record_that_is_not_exactly_a_pause_is_not_believed() {
        let (_dir, repo) = local_repo();
        let good = serde_json::to_value(pause()).unwrap();
        let with = |key: &str, value: serde_json::Value| {
            let mut v = good.clone();
            v[key] = value;
            v.to_string()
        };
        for message in [
            with("account", "../x".into()),
            with("account", "a/b".into()),
            with("reason", "\u{202E}evil".into()),
            with("set_by", "".into()),
            with("until", 5.into()),
            with("more", true.into()),
        ] {
            let id = record::write(&repo, &message).unwrap();
            assert!(read_pause(&repo, id).is_err(), "believed: {message}");
        }
    }
}
