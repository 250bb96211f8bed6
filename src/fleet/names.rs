//! The names runner uses on a remote, in one place: every ref runner writes there is under
//! `refs/runner/` but the spec's work branch, and every name read back from the remote is
//! checked here before it becomes a path or a ref (a hostile remote may advertise anything).
//!
//! On the remote:
//! - `refs/heads/auto-claude/<spec>`: the spec's work branch, one commit per chunk;
//! - `refs/runner/specs/<spec>`: the spec's folder as a commit (its tree the folder's files);
//! - `refs/runner/leases/<spec>`: the lease of the worker building it (a commit whose message
//!   is the lease as JSON), absent when nobody holds it;
//! - `refs/runner/pauses/<account>`: an agent account's usage-limit pause (a commit whose
//!   message is the pause as JSON).
//!
//! Fetched copies live under `refs/runner/remotes/<remote>/{specs,leases,pauses,branches}/…`
//! in the local repository, never in `refs/heads/` or `refs/remotes/`: the user's branches and
//! remote-tracking refs are never touched.

/// The published spec folder of `spec` on the remote.
pub fn spec_ref(spec: &str) -> String {
    format!("refs/runner/specs/{spec}")
}

/// The lease of `spec` on the remote.
pub fn lease_ref(spec: &str) -> String {
    format!("refs/runner/leases/{spec}")
}

/// The usage-limit pause of `account` on the remote.
pub fn pause_ref(account: &str) -> String {
    format!("refs/runner/pauses/{account}")
}

/// The work branch of `spec`, as a full ref (on the remote and locally).
pub fn branch_ref(spec: &str) -> String {
    format!("refs/heads/auto-claude/{spec}")
}

/// Where a fetch from `remote` keeps its copy of `kind` (`specs`, `leases`, `pauses` or
/// `branches`) for `name`.
pub fn fetched_ref(remote: &str, kind: &str, name: &str) -> String {
    format!("refs/runner/remotes/{remote}/{kind}/{name}")
}

/// Whether `name` may be an agent account's name (see `policy::account`; kept there so that
/// `config` checks `fleet.account` without depending on this module).
pub use crate::policy::account::is_account_name;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_are_under_runners_own_namespace_but_the_work_branch() {
        assert_eq!(spec_ref("001-a"), "refs/runner/specs/001-a");
        assert_eq!(lease_ref("001-a"), "refs/runner/leases/001-a");
        assert_eq!(pause_ref("claude"), "refs/runner/pauses/claude");
        assert_eq!(branch_ref("001-a"), "refs/heads/auto-claude/001-a");
        assert_eq!(
            fetched_ref("origin", "leases", "001-a"),
            "refs/runner/remotes/origin/leases/001-a"
        );
    }

    #[test]
    fn account_names_are_one_safe_component() {
        for good in ["claude", "team-a@example.com", "a_b.c", "X1"] {
            assert!(is_account_name(good), "{good}");
        }
        let long = "a".repeat(65);
        for bad in [
            "", ".x", "-x", "a/b", "a..b", "a b", "a\nb", "x.lock", "a@{b", "ü", &long,
        ] {
            assert!(!is_account_name(bad), "{bad:?}");
        }
    }
}
