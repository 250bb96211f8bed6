//! A remote's URL as the user configured it (`remote.<name>.url`), before git's
//! `url.<base>.insteadOf` rewrites it: the address a person knows the repository by (and the
//! one that says which forge it is on), where libgit2's own remote lookup would give the
//! rewritten one.

use super::Repository;

/// `remote.<name>.url` of `repo` (its own config, the user's and the system's, as git reads
/// them); `None` when the remote has none.
pub fn configured_url(repo: &Repository, remote: &str) -> Option<String> {
    let config = repo.config().ok()?;
    config
        .get_string(&format!("remote.{remote}.url"))
        .ok()
        .filter(|u| !u.is_empty())
}
