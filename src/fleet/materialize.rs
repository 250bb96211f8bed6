//! Writing a checked published folder into a spec's folder (`snapshot::materialize`): every
//! place a file goes is looked at first (a link, a folder or a FIFO there is an error, never
//! followed, and nothing is written), then each file that differs is replaced atomically and
//! durably (`fs::write_atomic`: temp file, fsync, rename within the folder's handle, fsync),
//! and published files the commit no longer has are removed. Only published names are ever
//! written or removed.

use std::collections::BTreeMap;
use std::path::Path;

use super::published::{RUNS, is_published_name, is_run_record_name};
use crate::error::RunnerError;
use crate::git::{Oid, Repository};

/// Write `files` (relative path → blob, from `tree_check::published_files`) into `spec_dir`.
pub fn write_files(
    repo: &Repository,
    files: &BTreeMap<String, Oid>,
    spec_dir: &Path,
) -> anyhow::Result<()> {
    let runs = spec_dir.join(RUNS);
    check_folder(spec_dir)?;
    check_folder(&runs)?;
    for rel in files.keys() {
        check_file_place(&spec_dir.join(rel))?;
    }
    crate::fs::safe::create_dirs(spec_dir).map_err(crate::fs::at(spec_dir))?;
    if files.keys().any(|rel| rel.starts_with(&format!("{RUNS}/"))) {
        crate::fs::safe::create_dirs(&runs).map_err(crate::fs::at(&runs))?;
    }
    for (rel, id) in files {
        let path = spec_dir.join(rel);
        let blob = repo.find_blob(*id)?;
        let same = std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.is_file() && m.len() == blob.content().len() as u64)
            && crate::fs::safe::open_read_no_link(&path)
                .and_then(|mut f| {
                    let mut bytes = Vec::new();
                    std::io::Read::read_to_end(&mut f, &mut bytes).map(|_| bytes)
                })
                .is_ok_and(|bytes| bytes == blob.content());
        if !same {
            crate::fs::write_atomic(&path, blob.content())?;
        }
    }
    remove_unpublished(spec_dir, "", is_published_name, files)?;
    remove_unpublished(spec_dir, RUNS, is_run_record_name, files)
}

/// A folder a published file goes in must be a real folder, or not there yet.
fn check_folder(path: &Path) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(crate::fs::safe::link_refused(path).into()),
        Ok(m) if !m.is_dir() => Err(in_the_way(path, "is not a folder").into()),
        _ => Ok(()),
    }
}

/// Where a published file goes there may be nothing or a regular file: a link is not followed
/// (nor replaced: a person put it there), a folder is not emptied.
fn check_file_place(path: &Path) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(crate::fs::safe::link_refused(path).into()),
        Ok(m) if !m.is_file() => Err(in_the_way(path, "is not a regular file").into()),
        _ => Ok(()),
    }
}

fn in_the_way(path: &Path, what: &str) -> RunnerError {
    RunnerError::bad_input(format!(
        "{} {what}; a file of the published spec folder goes there",
        path.display()
    ))
    .with_hint(format!(
        "move it away (`mv {0} {0}.old`) and run again",
        crate::sh(path.display().to_string())
    ))
}

/// Remove the files in `spec_dir/sub` with a published name (`published`) that `files` does
/// not have.
fn remove_unpublished(
    spec_dir: &Path,
    sub: &str,
    published: fn(&str) -> bool,
    files: &BTreeMap<String, Oid>,
) -> anyhow::Result<()> {
    let dir = spec_dir.join(sub);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let rel = if sub.is_empty() {
            name.clone()
        } else {
            format!("{sub}/{name}")
        };
        if published(&name) && !files.contains_key(&rel) {
            crate::fs::safe::remove(&dir.join(&name)).map_err(crate::fs::at(&dir.join(&name)))?;
        }
    }
    Ok(())
}
