//! The spec a changing command works on, held under its run lock.

use std::path::Path;

use crate::engine::run::{describe_holder, new_holder};
use crate::error::RunnerError;
use crate::store::{FileLock, Journal};
use crate::store::{SpecPaths, Workspace};

/// The workspace, the spec, and its run lock (exit 4 if a runner holds it).
pub(super) fn locked_spec(
    cwd: &Path,
    spec: Option<&str>,
    what: &str,
) -> anyhow::Result<(Workspace, SpecPaths, FileLock, Journal)> {
    let ws = Workspace::open(cwd)?;
    let name = super::pick::spec(&ws, cwd, spec)?;
    let paths = ws.spec(&name)?;
    let Some(lock) = FileLock::try_acquire(&paths.run_lock)? else {
        return Err(RunnerError::Busy(format!(
            "spec {name} is being run, so {what} did not start (nothing was changed): {}",
            describe_holder(&paths.run_lock)
        ))
        .into());
    };
    let run_id = format!("{what}-{}-{}", crate::clock::stamp(), std::process::id());
    lock.write_holder(&new_holder(&run_id, Some(&name)))?;
    let journal = Journal::new(&paths.dir, &run_id);
    Ok((ws, paths, lock, journal))
}
