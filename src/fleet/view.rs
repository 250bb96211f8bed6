//! What a remote holds for runner, after one fetch: every published spec (its folder commit,
//! its branch, its lease) and every account's pause. The fetch keeps its copies under
//! `refs/runner/remotes/<remote>/{specs,leases,pauses,branches}/…` (stale ones pruned there,
//! nowhere else); each name is checked (`store::spec::check_name`, `names::is_account_name`)
//! before it is used, and one that fails is a warning, never a path or a ref of ours.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::lease::{Lease, read_lease};
use super::names;
use super::pause::{AccountPause, read_pause};
use crate::error::RunnerError;
use crate::git::{Oid, Repository};

/// Everything runner keeps on one remote.
#[derive(Debug, Clone, Default)]
pub struct RemoteView {
    /// By spec name (valid names only): what the remote has of it. A spec with only a branch or
    /// only a lease is here too.
    pub specs: BTreeMap<String, PublishedSpec>,
    /// By account: its pause, or why the record is not believed.
    pub pauses: BTreeMap<String, Result<AccountPause, String>>,
    /// Refs that were ignored (a name that is not a spec's or an account's), one sentence each.
    pub warnings: Vec<String>,
}

/// One spec on the remote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PublishedSpec {
    /// `refs/runner/specs/<spec>`: its folder's commit (not yet checked: `snapshot::validate`).
    pub folder: Option<Oid>,
    /// `refs/heads/auto-claude/<spec>`: its work branch's tip.
    pub branch: Option<Oid>,
    /// `refs/runner/leases/<spec>`: the lease commit, and the lease or why it is not believed.
    pub lease: Option<(Oid, Result<Lease, String>)>,
}

/// The kinds of refs fetched: (kind in `refs/runner/remotes/<remote>/<kind>/`, source prefix
/// on the remote).
pub const KINDS: [(&str, &str); 4] = [
    ("specs", "refs/runner/specs/"),
    ("leases", "refs/runner/leases/"),
    ("pauses", "refs/runner/pauses/"),
    ("branches", "refs/heads/auto-claude/"),
];

/// Whether `remote` can name the folder of fetched copies: one valid ref component (a remote's
/// name as `git remote` lists them, not a URL).
pub fn check_remote_name(remote: &str) -> anyhow::Result<()> {
    let ok = !remote.is_empty()
        && !remote.starts_with(['-', '.'])
        && !remote.contains(['/', '\\', ':'])
        && crate::git::refs::is_valid_name(&names::fetched_ref(remote, "specs", "x"));
    if !ok {
        return Err(RunnerError::bad_input(format!(
            "{remote:?} cannot be used as a remote's name here"
        ))
        .with_hint("name a remote `git remote -v` lists (add one with `git remote add NAME URL`)")
        .into());
    }
    Ok(())
}

/// The refspecs of one fetch of everything runner keeps on `remote`.
pub fn refspecs(remote: &str) -> Vec<String> {
    KINDS
        .iter()
        .map(|(kind, src)| format!("+{src}*:{}", names::fetched_ref(remote, kind, "*")))
        .collect()
}

/// One fetch of runner's refs from `remote` (pruning stale copies of ours), then the view of
/// them ([`read_view`]).
pub fn fetch_view(
    root: &Path,
    repo: &Repository,
    remote: &str,
    timeout: Duration,
) -> anyhow::Result<RemoteView> {
    check_remote_name(remote)?;
    super::net::fetch_pruning(root, remote, &refspecs(remote), timeout)?;
    read_view(repo, remote)
}

/// The view of the copies the last fetch from `remote` left in `repo`.
pub fn read_view(repo: &Repository, remote: &str) -> anyhow::Result<RemoteView> {
    let mut view = RemoteView::default();
    for (kind, src) in KINDS {
        let prefix = names::fetched_ref(remote, kind, "");
        for reference in repo.references_glob(&format!("{prefix}*"))? {
            let reference = reference?;
            let Some(target) = reference.target() else {
                continue;
            };
            let Some(name) = std::str::from_utf8(reference.name_bytes())
                .ok()
                .and_then(|n| n.strip_prefix(&prefix))
            else {
                view.warnings
                    .push(format!("ignored a ref under {src} whose name is not UTF-8"));
                continue;
            };
            add(&mut view, repo, kind, src, name, target);
        }
    }
    Ok(view)
}

fn add(view: &mut RemoteView, repo: &Repository, kind: &str, src: &str, name: &str, id: Oid) {
    let shown = crate::text::for_terminal(name).into_owned();
    if kind == "pauses" {
        if !names::is_account_name(name) {
            view.warnings
                .push(format!("ignored {src}{shown}: not an account's name"));
            return;
        }
        let pause = read_pause(repo, id).and_then(|p| match p.account == name {
            true => Ok(p),
            false => Err(format!(
                "{id} names the account {:?}, not {name:?}",
                p.account
            )),
        });
        view.pauses.insert(name.to_string(), pause);
        return;
    }
    if let Err(e) = crate::store::spec::check_name(name) {
        view.warnings.push(format!("ignored {src}{shown}: {e}"));
        return;
    }
    let spec = view.specs.entry(name.to_string()).or_default();
    match kind {
        "specs" => spec.folder = Some(id),
        "branches" => spec.branch = Some(id),
        _ => spec.lease = Some((id, read_lease(repo, id))),
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
