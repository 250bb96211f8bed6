//! The network steps, with git's own program run in the repository's root (`git_cli`): one
//! atomic compare-and-swap push, a fetch of explicit refspecs, `ls-remote`.
//!
//! Only what the caller names moves: every push and fetch gives its refspecs on the command
//! line, so a user's `push.default`, `remote.<name>.push`, `remote.<name>.fetch` (`--refmap=`)
//! or `push.followTags` (`--no-follow-tags`) adds nothing, and no hook of the user's runs
//! (`--no-verify`, `core.hooksPath=/dev/null`).
//!
//! **A no-op update is not checked.** git compares each ref's lease only for refs it will
//! change: an update whose new id is already the remote's (`[up to date]`) is skipped before
//! its `--force-with-lease` is looked at, so it passes whatever the remote holds
//! (`a_no_op_update_is_not_checked_against_its_lease` pins this, git 2.47). A lease checked as
//! a fence must therefore change in the push: the worker writes a NEW lease commit (a new
//! `renewed_at`) in every publication.

use std::path::Path;
use std::time::Duration;

use super::git_cli;
use crate::error::RunnerError;
use crate::git::Oid;

/// What a remote ref must be when the push reaches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// It must not exist.
    Absent,
    /// It must point at this object.
    At(Oid),
}

/// One ref of an atomic push: `dst` (a full ref name on the remote) becomes `new` (`None`
/// deletes it), if it is as `expect` says now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefUpdate {
    pub dst: String,
    pub new: Option<Oid>,
    pub expect: Expect,
}

/// How an atomic push ended (an unreachable remote is an `Err`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// Every update is on the remote.
    Pushed,
    /// The remote holds none of them: a ref was not as expected (another worker moved it), or
    /// the remote refused one; `--atomic` changed nothing. `reason` is git's, per ref.
    Refused { reason: String },
}

/// Push `updates` to `remote` (a remote's name or a URL) in one `git push --atomic`, each with
/// `--force-with-lease=<dst>:<expect>`: all of them land, or none. `Err`
/// (`RunnerError::Remote`, exit 7) when the remote cannot be reached or `timeout` passes (git's
/// process group is killed then). No update is `Pushed` without running git.
pub fn push_atomic(
    root: &Path,
    remote: &str,
    updates: &[RefUpdate],
    timeout: Duration,
) -> anyhow::Result<PushOutcome> {
    if updates.is_empty() {
        return Ok(PushOutcome::Pushed);
    }
    git_cli::check_remote_arg(remote)?;
    let mut args: Vec<String> = [
        "push",
        "--atomic",
        "--porcelain",
        "--no-verify",
        "--no-follow-tags",
        "--no-signed",
        "--recurse-submodules=no",
    ]
    .map(String::from)
    .to_vec();
    let mut refspecs = Vec::new();
    for u in updates {
        check_ref(&u.dst)?;
        let expect = match u.expect {
            Expect::Absent => String::new(),
            Expect::At(oid) => oid.to_string(),
        };
        args.push(format!("--force-with-lease={}:{expect}", u.dst));
        refspecs.push(match u.new {
            Some(oid) => format!("{oid}:{}", u.dst),
            None => format!(":{}", u.dst),
        });
    }
    args.push(remote.to_string());
    args.extend(refspecs);
    let what = format!("pushing to {remote}");
    let ran = git_cli::run(root, &args, timeout, &what)?;
    let refused = refused_lines(&String::from_utf8_lossy(&ran.stdout));
    if !refused.is_empty() {
        return Ok(PushOutcome::Refused {
            reason: refused.join("; "),
        });
    }
    if !ran.status.success() {
        return Err(unreachable(&what, &ran));
    }
    Ok(PushOutcome::Pushed)
}

/// The refs `--porcelain` says were refused (`!<TAB>src:dst<TAB>summary`), as `dst: summary`;
/// the ones refused only because another was (`atomic push failed`) after the cause.
fn refused_lines(porcelain: &str) -> Vec<String> {
    let mut causes = Vec::new();
    let mut followers = Vec::new();
    for line in porcelain.lines() {
        let Some(rest) = line.strip_prefix("!\t") else {
            continue;
        };
        let mut fields = rest.splitn(2, '\t');
        let refspec = fields.next().unwrap_or_default();
        let summary = fields.next().unwrap_or_default().trim();
        let dst = refspec.rsplit(':').next().unwrap_or(refspec);
        let said = format!("{dst}: {summary}");
        if summary.contains("atomic push failed") {
            followers.push(said);
        } else {
            causes.push(said);
        }
    }
    causes.extend(followers);
    causes
}

/// Fetch `refspecs` (each `[+]<src>:<dst>`, explicit) from `remote`; refs the remote no longer
/// has are kept (see [`fetch_pruning`]). No tags, no `FETCH_HEAD`, no remote-tracking branch
/// of the user's is updated (`--refmap=`).
pub fn fetch(
    root: &Path,
    remote: &str,
    refspecs: &[String],
    timeout: Duration,
) -> anyhow::Result<()> {
    fetch_with(root, remote, refspecs, timeout, false)
}

/// [`fetch`], and a local ref that matches a refspec's `<dst>` (a wildcard one: runner passes
/// only destinations under `refs/runner/remotes/<remote>/`) whose source the remote no longer
/// has is deleted (`--prune`, which with refspecs on the command line prunes only theirs).
pub fn fetch_pruning(
    root: &Path,
    remote: &str,
    refspecs: &[String],
    timeout: Duration,
) -> anyhow::Result<()> {
    fetch_with(root, remote, refspecs, timeout, true)
}

fn fetch_with(
    root: &Path,
    remote: &str,
    refspecs: &[String],
    timeout: Duration,
    prune: bool,
) -> anyhow::Result<()> {
    git_cli::check_remote_arg(remote)?;
    let mut args: Vec<String> = [
        "fetch",
        "--no-tags",
        "--no-write-fetch-head",
        "--refmap=",
        "--no-recurse-submodules",
        "--no-auto-gc",
        "--quiet",
        if prune { "--prune" } else { "--no-prune" },
    ]
    .map(String::from)
    .to_vec();
    args.push(remote.to_string());
    for spec in refspecs {
        if spec.starts_with('-') || spec.is_empty() {
            anyhow::bail!("invalid refspec {spec:?}");
        }
        args.push(spec.clone());
    }
    let what = format!("fetching from {remote}");
    let ran = git_cli::run(root, &args, timeout, &what)?;
    if !ran.status.success() {
        return Err(unreachable(&what, &ran));
    }
    Ok(())
}

/// The refs `remote` has that match `patterns` (git's `ls-remote` patterns: a ref matches when
/// its name ends with the pattern, whole components), as (name, id). A line that is not
/// `<id><TAB><name>` is skipped.
pub fn ls_remote(
    root: &Path,
    remote: &str,
    patterns: &[String],
    timeout: Duration,
) -> anyhow::Result<Vec<(String, Oid)>> {
    git_cli::check_remote_arg(remote)?;
    let mut args = vec!["ls-remote".to_string(), "--refs".into(), remote.to_string()];
    for p in patterns {
        if p.starts_with('-') || p.is_empty() {
            anyhow::bail!("invalid ls-remote pattern {p:?}");
        }
        args.push(p.clone());
    }
    let what = format!("listing the refs of {remote}");
    let ran = git_cli::run(root, &args, timeout, &what)?;
    if !ran.status.success() {
        return Err(unreachable(&what, &ran));
    }
    let text = String::from_utf8_lossy(&ran.stdout);
    Ok(text
        .lines()
        .filter_map(|line| {
            let (id, name) = line.split_once('\t')?;
            Some((name.to_string(), Oid::from_str(id).ok()?))
        })
        .collect())
}

/// Whether `repo` has a remote named `name` (`git remote` lists it).
pub fn remote_exists(repo: &crate::git::Repository, name: &str) -> bool {
    repo.find_remote(name).is_ok()
}

/// How long one network step may take before git is stopped: a push of a spec's branch to a
/// slow remote takes seconds, a remote that never answers is cut here.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// A ref runner pushes must be a full, valid ref name (no `:`, no leading `-`: nothing git
/// would read as more than one ref).
fn check_ref(name: &str) -> anyhow::Result<()> {
    if !name.starts_with("refs/") || !crate::git::refs::is_valid_name(name) {
        anyhow::bail!("invalid ref name {name:?} to push");
    }
    Ok(())
}

fn unreachable(what: &str, ran: &git_cli::Ran) -> anyhow::Error {
    RunnerError::Remote(format!("{what}: {}", ran.why()))
    .with_hint("check the remote's address (`git remote -v`), your access and the network, then run again")
    .into()
}

#[cfg(test)]
#[path = "net_tests.rs"]
mod tests;
