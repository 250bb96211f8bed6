//! A spec's folder as a commit (`refs/runner/specs/<spec>` on the remote) and back.
//!
//! Only the published files go (docs/fleet.md's table): `spec.md`, `requirements.json`,
//! `implementation_plan.json`, the journal (`events.jsonl` and its segments `events.<n>.jsonl`),
//! `checkpoint.json`, `planner_ledger.json`, `failures.jsonl`, and the run records
//! `runs/<run id>.json`. Never `sessions/` (logs stay on the machine that ran them), locks or
//! caches.
//!
//! A published folder is read back as a hostile remote may have written it: [`materialize`]
//! checks the WHOLE tree before it writes anything (only those names, regular files, `runs/`
//! the one folder, each file at most [`MAX_FILE_BYTES`], the sizes read from the objects'
//! headers before any is inflated), then writes each file atomically and durably, never
//! through a link.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::RunnerError;
use crate::git::{Oid, Repository};

pub use super::published::{
    MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, RUNS, is_published_name, is_run_record_name,
};

/// A commit of the published files of `spec_dir` (see the module comment), with `parent` as
/// its parent (the remote's current folder commit), and `message`. No ref is moved. A published
/// name that is a link, a folder or larger than [`MAX_FILE_BYTES`] is an error: the remote gets
/// nothing [`materialize`] would refuse.
pub fn commit_folder(
    repo: &Repository,
    spec_dir: &Path,
    parent: Option<Oid>,
    message: &str,
) -> anyhow::Result<Oid> {
    commit_folder_as(repo, spec_dir, parent, message, PlanAs::File)
}

/// What a publication holds as the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanAs {
    /// The file as it is.
    File,
    /// These bytes in place of the file's: the plan as runner judges it while an agent may be
    /// editing the file.
    Bytes(Vec<u8>),
    /// No plan (the last publication had none, and the file cannot be vouched for).
    Absent,
}

/// [`commit_folder`], with the plan as `plan` says.
pub fn commit_folder_as(
    repo: &Repository,
    spec_dir: &Path,
    parent: Option<Oid>,
    message: &str,
    plan: PlanAs,
) -> anyhow::Result<Oid> {
    let mut top = repo.treebuilder(None)?;
    let mut total = 0u64;
    let mut count = 0usize;
    let mut plan = match plan {
        PlanAs::File => None,
        PlanAs::Bytes(bytes) => Some(Some(bytes)),
        PlanAs::Absent => Some(None),
    };
    for name in published_here(spec_dir, "", is_published_name)? {
        let bytes = match plan.take_if(|_| name == crate::plan::PLAN_FILE) {
            Some(Some(bytes)) => bytes,
            Some(None) => continue,
            None => read_published(&spec_dir.join(&name))?,
        };
        total += bytes.len() as u64;
        count += 1;
        top.insert(&name, repo.blob(&bytes)?, 0o100644)?;
    }
    // A plan the file no longer holds (an agent deleted it) is published all the same.
    if let Some(Some(bytes)) = plan {
        total += bytes.len() as u64;
        count += 1;
        top.insert(crate::plan::PLAN_FILE, repo.blob(&bytes)?, 0o100644)?;
    }
    let runs = spec_dir.join(RUNS);
    match std::fs::symlink_metadata(&runs) {
        Ok(m) if m.is_dir() => {
            let mut sub = repo.treebuilder(None)?;
            for name in published_here(spec_dir, RUNS, is_run_record_name)? {
                let bytes = read_published(&runs.join(&name))?;
                total += bytes.len() as u64;
                count += 1;
                sub.insert(&name, repo.blob(&bytes)?, 0o100644)?;
            }
            if !sub.is_empty() {
                top.insert(RUNS, sub.write()?, 0o040000)?;
            }
        }
        Ok(_) => return Err(not_published(&runs, "is not a folder").into()),
        Err(_) => {}
    }
    if total > MAX_TOTAL_BYTES || count > MAX_FILES {
        return Err(RunnerError::bad_input(format!(
            "{} holds {count} published files of {total} bytes in all; at most {MAX_FILES} files \
             of {MAX_TOTAL_BYTES} bytes are published",
            spec_dir.display()
        ))
        .into());
    }
    let tree = repo.find_tree(top.write()?)?;
    let sig = crate::git::signature(repo)?;
    let parents = match parent {
        Some(id) => vec![repo.find_commit(id)?],
        None => Vec::new(),
    };
    let parents: Vec<_> = parents.iter().collect();
    Ok(repo.commit(None, &sig, &sig, message, &tree, &parents)?)
}

/// The names in `spec_dir/sub` that `published` accepts, sorted (a name that is not UTF-8 is
/// nobody's published file).
fn published_here(
    spec_dir: &Path,
    sub: &str,
    published: fn(&str) -> bool,
) -> anyhow::Result<Vec<String>> {
    let dir = spec_dir.join(sub);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !sub.is_empty() => return Ok(vec![]),
        Err(e) => return Err(crate::fs::at(&dir)(e).into()),
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| published(name))
        .collect();
    names.sort();
    Ok(names)
}

/// A published file's bytes: a regular file, never read through a link, at most
/// [`MAX_FILE_BYTES`].
fn read_published(path: &Path) -> anyhow::Result<Vec<u8>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(not_published(path, "is a symbolic link").into());
        }
        Ok(m) if !m.is_file() => return Err(not_published(path, "is not a regular file").into()),
        _ => {}
    }
    let file = crate::fs::safe::open_read_no_link(path)?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_FILE_BYTES + 1),
        &mut bytes,
    )
    .map_err(crate::fs::at(path))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(not_published(path, "is larger than 64 MiB").into());
    }
    Ok(bytes)
}

fn not_published(path: &Path, why: &str) -> RunnerError {
    RunnerError::bad_input(format!(
        "{} {why}; runner publishes only regular files of at most 64 MiB",
        path.display()
    ))
    .with_hint(format!(
        "replace it with a regular file (or remove it: `rm {}`) and run again",
        crate::sh(path.display().to_string())
    ))
}

/// The published folder `commit` holds, checked whole: relative path (`name` or
/// `runs/<name>`) → blob. Any problem refuses all of it, naming the entry.
pub fn validate(repo: &Repository, commit: Oid) -> anyhow::Result<BTreeMap<String, Oid>> {
    super::tree_check::published_files(repo, commit).map_err(|problem| {
        RunnerError::Remote(format!(
            "the published spec folder {commit} {problem}; nothing was written"
        ))
        .with_hint(
            "a spec folder published by runner holds only its own files: whoever can push to the \
             remote wrote this one; remove it there or publish the spec again",
        )
        .into()
    })
}

/// The bytes of the published file `rel` of a checked folder (`files`, from [`validate`]).
pub fn file_bytes(
    repo: &Repository,
    files: &BTreeMap<String, Oid>,
    rel: &str,
) -> anyhow::Result<Option<Vec<u8>>> {
    match files.get(rel) {
        Some(id) => Ok(Some(repo.find_blob(*id)?.content().to_vec())),
        None => Ok(None),
    }
}

/// Make `spec_dir` hold what the published folder `commit` holds: the whole tree is checked
/// first ([`validate`]: nothing is written when any entry is wrong), and every place a file
/// goes (a link or a folder there is an error, not followed); then each file that differs is
/// written atomically and durably, and each published file the commit does not have is
/// removed. Nothing else in the folder (`sessions/`, locks, caches) is touched.
pub fn materialize(repo: &Repository, commit: Oid, spec_dir: &Path) -> anyhow::Result<()> {
    let files = validate(repo, commit)?;
    super::materialize::write_files(repo, &files, spec_dir)
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
