//! The spec a changing command works on, held under its run lock.

use std::path::Path;

use runner::store::{FileLock, Journal, guard};
use runner::store::{SpecPaths, Workspace};

/// The workspace, the spec, and its run lock (exit 4 if a runner holds it).
pub(super) fn locked_spec(
    cwd: &Path,
    spec: Option<&str>,
    what: &str,
) -> anyhow::Result<(Workspace, SpecPaths, FileLock, Journal)> {
    let ws = Workspace::open(cwd)?;
    let name = super::pick::spec(&ws, cwd, spec)?;
    let paths = ws.spec(&name)?;
    let run_id = runner::store::ids::run_id();
    let holder = guard::new_holder(&run_id, Some(&name));
    // A moment, not one try: `status` and other probes hold this lock for an instant, and a
    // merge started then must not be refused naming a run that ended long ago.
    let lock = guard::take(&paths.run_lock, &holder, guard::Patience::Moment, || {
        format!("spec {name} is being run, so {what} did not start (nothing was changed)")
    })?;
    let journal = Journal::new(&paths.dir, &run_id);
    Ok((ws, paths, lock, journal))
}
