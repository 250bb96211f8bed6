//! Creating a spec folder (`runner new`): its number taken under a lock over every name runner
//! can see, its files built in a hidden folder and renamed into place, so that a crash at any
//! instruction leaves no spec or a whole one, and two `new`s at once never share a number.

use std::path::Path;

use crate::error::RunnerError;
use crate::policy::new_spec::{next_number, slug_of};
use crate::store::workspace::Workspace;

/// Held while a number is chosen and its folder made (beside the specs, in `.auto-claude/`).
pub const NEW_LOCK: &str = "new.lock";

/// The hidden folder a new spec is built in, in the specs folder: `.runner-new-<pid>`. Only a
/// process holding the lock builds one, so any found by the lock's holder is a dead one's.
const STAGING: &str = ".runner-new-";

/// A new spec's files, as they are written.
pub struct SpecFiles<'a> {
    pub spec_md: &'a [u8],
    pub requirements: &'a [u8],
}

/// Every spec name runner can see: the folders (and anything else) in the specs folder, in
/// each slot's own `.auto-claude/specs/` (Auto-Claude makes specs there), and the specs of the
/// `auto-claude/*` branches. Refs that do not list are an error: a number chosen without them
/// could be a branch's already.
pub fn known_names(ws: &Workspace) -> anyhow::Result<Vec<String>> {
    let mut names = entry_names(&ws.specs_dir);
    for slot in crate::git::Slot::all(&ws.main) {
        names.extend(entry_names(&slot.path.join(".auto-claude").join("specs")));
    }
    let branches = ws
        .main
        .branch_tips(crate::git::slot::BRANCH_PREFIX)
        .ok_or_else(|| anyhow::anyhow!("cannot list the repository's auto-claude/* branches"))?;
    names.extend(
        branches
            .keys()
            .filter_map(|b| crate::git::spec_of_branch(b))
            .map(str::to_string),
    );
    names.sort();
    names.dedup();
    Ok(names)
}

/// Refuse (busy, exit 4) when a spec folder that detection did not list has `seen`'s
/// description: another `runner new` made it meanwhile.
fn made_meanwhile(ws: &Workspace, seen: &Seen) -> Result<(), RunnerError> {
    let before: std::collections::HashSet<&str> = seen.specs.iter().map(String::as_str).collect();
    for name in crate::store::spec::list(&ws.specs_dir) {
        if before.contains(name.as_str()) {
            continue;
        }
        let said = crate::store::spec_text::said(&ws.specs_dir.join(&name));
        if !said.cut
            && crate::policy::similar::same_description(&said.description, seen.description)
        {
            let shown = crate::text::for_terminal(&name);
            return Err(RunnerError::Busy(format!(
                "spec {shown} with this description was just created by another `runner new`; nothing was created"
            ))
            .with_hint(format!(
                "continue it: {}",
                crate::policy::next_command::continue_command(&name, None)
            ))
            .with_hint("pass --new-spec to start another spec anyway"));
        }
    }
    Ok(())
}

/// The names in folder `dir` (none if it cannot be listed: a slot without specs).
fn entry_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

/// What detection saw, for the check made again under the lock: the spec folders listed
/// before it ran, and the description it looked for.
pub struct Seen<'a> {
    pub specs: &'a [String],
    pub description: &'a str,
}

/// Make spec `NNN-<slug>` with `files`, NNN the next free number (`known_names`), under the
/// `new` lock; returns its name. With `given` (`--name`), a spec of that slug (or that name)
/// anywhere is refused (exit 2) and nothing is written. With `seen`, a spec folder made since
/// detection listed them (by another `runner new` that held the lock meanwhile) with the same
/// description is refused (exit 4) and nothing is written: detection runs outside the lock,
/// so two `runner new` of one description at the same instant would both create.
pub fn create(
    ws: &Workspace,
    slug: &str,
    given: bool,
    files: &SpecFiles,
    seen: Option<&Seen>,
) -> anyhow::Result<String> {
    let _lock = crate::store::FileLock::acquire(&ws.state_dir.join(NEW_LOCK))?;
    if let Some(seen) = seen {
        made_meanwhile(ws, seen)?;
    }
    let names = known_names(ws)?;
    if given
        && let Some(taken) = names
            .iter()
            .find(|n| n.as_str() == slug || slug_of(n) == Some(slug))
    {
        return Err(RunnerError::bad_input(format!(
            "--name {slug}: spec {taken} has that name already; nothing was created"
        ))
        .with_hint(format!(
            "continue it (`runner resume {taken}`), or pick another --name"
        ))
        .into());
    }
    let number = next_number(names.iter().map(String::as_str))
        .ok_or_else(|| RunnerError::bad_input("every spec number is taken"))?;
    let name = format!("{number}-{slug}");
    crate::store::spec::check_name(&name)?;
    crate::store::safe::create_dirs(&ws.specs_dir)?;
    remove_leftovers(&ws.specs_dir)?;
    let staging = format!("{STAGING}{}", std::process::id());
    let built = crate::store::safe::create_real_dirs(&ws.specs_dir, &[&staging])?;
    let done = (|| -> anyhow::Result<()> {
        crate::store::atomic::write_atomic(&built.join("spec.md"), files.spec_md)?;
        crate::store::atomic::write_atomic(&built.join("requirements.json"), files.requirements)?;
        crate::failpoint::hit("new_spec_staged");
        let target = ws.specs_dir.join(&name);
        if !crate::store::safe::rename_new(&built, &target)? {
            anyhow::bail!(
                "{} appeared while the spec was being made; nothing was created",
                target.display()
            );
        }
        crate::failpoint::hit("new_spec_renamed");
        std::fs::File::open(&ws.specs_dir)
            .and_then(|d| d.sync_all())
            .map_err(crate::store::at(&ws.specs_dir))?;
        Ok(())
    })();
    if done.is_err() {
        let _ = std::fs::remove_dir_all(&built);
    }
    done.map(|()| name)
}

/// Remove the staging folders of `new`s that died (the caller holds the lock, so none is
/// being built). `remove_dir_all` removes a link itself, never what it leads to.
fn remove_leftovers(specs_dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(specs_dir)?.flatten() {
        if entry.file_name().to_string_lossy().starts_with(STAGING) {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
                _ => std::fs::remove_file(&path),
            }
            .map_err(crate::store::at(&path))?;
        }
    }
    Ok(())
}

/// The largest `--spec-file` read (as `spec.md` is bounded for every session).
pub const MAX_SPEC_FILE: u64 = crate::store::spec::MAX_SPEC_BYTES;

/// The text of `--spec-file FILE` for the spec's `spec.md`: a regular file (a FIFO would block
/// the read), at most `MAX_SPEC_FILE` bytes, UTF-8, not blank; a path inside repository `root`
/// that leads out of it through a link is refused (an agent could plant one). Any refusal is
/// bad input (exit 2) naming the file.
pub fn read_spec_file(root: &Path, path: &Path) -> Result<String, RunnerError> {
    let shown = path.display();
    let hint = "pass a readable UTF-8 text file describing the feature (it becomes spec.md)";
    let refuse =
        |why: String| RunnerError::bad_input(format!("--spec-file {shown}: {why}")).with_hint(hint);
    let absolute = std::path::absolute(path).map_err(|e| refuse(e.to_string()))?;
    let real = absolute.canonicalize().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => refuse("no such file".into()),
        _ => refuse(e.to_string()),
    })?;
    // Where the path says it is (its folder's links resolved, not the file's own).
    let said_inside = absolute.starts_with(root)
        || absolute
            .parent()
            .and_then(|p| p.canonicalize().ok())
            .is_some_and(|p| p.starts_with(root));
    if said_inside && !real.starts_with(root) {
        return Err(refuse(format!(
            "it is a link to {}, outside the repository",
            real.display()
        )));
    }
    let file = crate::store::safe::open_read(&real).map_err(|e| refuse(e.to_string()))?;
    let mut bytes = Vec::new();
    // `take`: the file may grow between any check and the read.
    std::io::Read::read_to_end(
        &mut std::io::Read::take(&file, MAX_SPEC_FILE + 1),
        &mut bytes,
    )
    .map_err(|e| refuse(e.to_string()))?;
    if bytes.len() as u64 > MAX_SPEC_FILE {
        return Err(refuse(format!(
            "it is bigger than {} MB; a spec describes the feature (every session's prompt carries it)",
            MAX_SPEC_FILE / (1024 * 1024)
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        refuse(format!(
            "it is not UTF-8 text (byte {} is not)",
            e.utf8_error().valid_up_to()
        ))
    })?;
    if crate::store::spec::is_blank(&text) {
        return Err(refuse("it is empty (nothing visible in it)".into()));
    }
    Ok(text)
}
