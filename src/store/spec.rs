//! Spec names: what may be a spec name, and the one resolver that finds the spec a command is
//! about (`choose`: `--spec X`, the slot it runs in, the only spec).

use std::path::Path;

use crate::error::RunnerError;
use crate::policy::spec_choice::{self, Matching, SpecChoice};
use crate::store::workspace::Workspace;

/// Reject anything that could leave `.auto-claude/specs/` or confuse git or a terminal.
pub fn check_name(name: &str) -> Result<(), RunnerError> {
    let problem = if name.is_empty() {
        Some("it is empty")
    } else if name == "." || name == ".." || name.contains("..") {
        Some("it contains `..`")
    } else if name.contains('/') || name.contains('\\') {
        Some("it contains a path separator")
    } else if name.starts_with('-') || name.starts_with('.') {
        Some("it starts with `-` or `.`")
    } else if name.chars().any(char::is_control) {
        Some("it contains control characters")
    } else if name.chars().any(|c| " ~^:?*[@{".contains(c)) {
        Some("it contains a character git does not allow in branch names (space ~ ^ : ? * [ @ {)")
    } else if !crate::git::refs::is_valid_name(&format!("refs/heads/auto-claude/{name}")) {
        Some("git does not allow it in a branch name (for example it ends in .lock or .)")
    } else {
        None
    };
    match problem {
        Some(why) => Err(
            RunnerError::bad_input(format!("invalid spec name {name:?}: {why}")).with_hint(
                "spec names are folder names under .auto-claude/specs/, like 001-add-login",
            ),
        ),
        None => Ok(()),
    }
}

/// The spec folders, sorted.
pub fn list(specs_dir: &Path) -> Vec<String> {
    list_kinds(specs_dir).into_iter().map(|(n, _)| n).collect()
}

/// The spec folders, sorted, each with whether the listing shows it as a symbolic link (to a
/// folder): `list` with what the listing already knew, for callers that open a real folder
/// without another look.
pub fn list_kinds(specs_dir: &Path) -> Vec<(String, bool)> {
    let mut names: Vec<(String, bool)> = std::fs::read_dir(specs_dir)
        .map(|entries| {
            entries
                .flatten()
                // A folder, or a link to one: the kind from the listing itself (no stat per
                // entry), a link followed as `is_dir` does.
                .filter_map(|e| {
                    let link = match e.file_type() {
                        Ok(kind) if kind.is_symlink() => e.path().is_dir().then_some(true),
                        Ok(kind) => kind.is_dir().then_some(false),
                        Err(_) => e.path().is_dir().then(|| e.path().is_symlink()),
                    }?;
                    Some((e.file_name().to_str()?.to_string(), link))
                })
                .filter(|(n, _)| check_name(n).is_ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The spec of the runner slot (`.worktrees/auto-claude*`) that `cwd` is inside, read from the
/// branch checked out there (`auto-claude/<spec>`). Any other worktree, or a slot on another
/// branch or a detached HEAD, says nothing.
pub fn slot_spec(ws: &Workspace, cwd: &Path) -> Option<String> {
    let (top, branch) = crate::git::repo::worktree_containing(cwd)?;
    let in_a_slot = crate::git::Slot::all(&ws.main)
        .iter()
        .any(|slot| slot.path.canonicalize().is_ok_and(|p| p == top));
    if !in_a_slot {
        return None;
    }
    crate::git::spec_of_branch(&branch?).map(str::to_string)
}

/// The one spec resolver every command uses: the folder names, `--spec` and the slot the
/// command runs in, decided by `policy::spec_choice::choose`. A query is checked first (no
/// `..`, no `/` …).
pub fn choose(ws: &Workspace, cwd: &Path, query: Option<&str>) -> Result<SpecChoice, RunnerError> {
    choose_with(ws, cwd, query, Matching::Loose)
}

/// [`choose`], `--spec` read as `matching` allows (strictly for a command that changes a spec).
pub fn choose_with(
    ws: &Workspace,
    cwd: &Path,
    query: Option<&str>,
    matching: Matching,
) -> Result<SpecChoice, RunnerError> {
    if let Some(q) = query {
        check_name(q)?;
    }
    let names = list(&ws.specs_dir);
    let from_slot = if query.is_none() {
        slot_spec(ws, cwd)
    } else {
        None
    };
    Ok(spec_choice::choose_with(
        &names,
        query,
        from_slot.as_deref(),
        matching,
    ))
}

/// How to make a first spec (the advice of every "no specs yet" error).
pub const NEW_SPEC_HINT: &str = "start one with `runner new \"what to build\"` (or write .auto-claude/specs/001-my-feature/spec.md), then run the command it prints";

/// `choose` for a caller that cannot ask: one spec, or an error (exit 2) that lists the
/// candidates, each with `command(name)`, the command to type for it.
pub fn choose_or_explain(
    ws: &Workspace,
    cwd: &Path,
    query: Option<&str>,
    command: &dyn Fn(&str) -> String,
) -> Result<String, RunnerError> {
    match choose(ws, cwd, query)? {
        SpecChoice::One(name) => Ok(name),
        other => Err(explain(&ws.specs_dir, &other, command)),
    }
}

/// The error for a choice that is not one spec: what is wrong and what to type instead.
pub fn explain(
    specs_dir: &Path,
    choice: &SpecChoice,
    command: &dyn Fn(&str) -> String,
) -> RunnerError {
    // Each candidate's command is a hint of its own: copied as is, or read from the JSON error.
    let commands =
        |candidates: &[String]| -> Vec<String> { candidates.iter().map(|m| command(m)).collect() };
    let (message, hints) = match choice {
        SpecChoice::One(name) => (format!("spec {name} needs no choice"), Vec::new()),
        SpecChoice::SeveralMatch { query, candidates } => (
            format!("{query:?} matches several specs; name one exactly"),
            commands(candidates),
        ),
        SpecChoice::NotSaid { candidates } => (
            "cannot tell which spec this is about: there are several, no --spec was given and this is not run from a spec's worktree; name one".to_string(),
            commands(candidates),
        ),
        SpecChoice::NoMatch { query } => (
            format!(
                "no spec matches {query:?}. Specs: {}",
                list(specs_dir).join(", ")
            ),
            vec!["name one of them with --spec (its number, or a unique part of its name)".into()],
        ),
        SpecChoice::OnlyLoosely { query, candidates } => (
            format!(
                "{query:?} does not clearly name a spec (its words are found, in another order or apart, only in {}), and this command changes the spec it acts on; name it exactly",
                candidates.join(", ")
            ),
            commands(candidates),
        ),
        SpecChoice::NoSpecs => (
            format!("{} has no specs yet", specs_dir.display()),
            vec![NEW_SPEC_HINT.to_string()],
        ),
        SpecChoice::SlotSpecGone(name) => (
            format!(
                "this worktree holds the branch of spec {name}, whose folder {} is gone",
                specs_dir.join(name).display()
            ),
            vec!["pass --spec to name another spec (or restore the folder)".into()],
        ),
    };
    hints
        .into_iter()
        .fold(RunnerError::bad_input(message), RunnerError::with_hint)
}

/// The largest `spec.md` read: a feature description, not a data file (every session's prompt
/// carries it).
pub const MAX_SPEC_BYTES: u64 = 10 * 1024 * 1024;

/// The spec's text (`spec.md`), the "feature" of every planner and coder prompt. Read as
/// bytes, invalid UTF-8 replaced with U+FFFD: one stray byte must not lose the whole feature.
/// Missing, unreadable, not a regular file (a FIFO would block the read forever), bigger than
/// `MAX_SPEC_BYTES`, or blank (nothing visible in it) is bad input: no session may start
/// without the feature.
pub fn read_text(path: &Path) -> Result<String, RunnerError> {
    let why = "it must be a readable file describing the feature to build (every planner and coder session is given it)";
    let cannot = |what: String| {
        RunnerError::bad_input(format!("cannot read {}: {what}", path.display())).with_hint(why)
    };
    let file = open_nonblocking(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => RunnerError::bad_input(format!(
            "{} is missing",
            path.display()
        ))
        .with_hint("write it, describing the feature to build (every planner and coder session is given it)"),
        _ => cannot(e.to_string()),
    })?;
    let meta = file.metadata().map_err(|e| cannot(e.to_string()))?;
    if !meta.is_file() {
        return Err(cannot(format!(
            "it is {}, not a regular file",
            file_kind(&meta)
        )));
    }
    let too_big = || {
        RunnerError::bad_input(format!(
            "{} is bigger than {} MB: it should describe the feature, not hold data (every session's prompt carries it)",
            path.display(),
            MAX_SPEC_BYTES / (1024 * 1024)
        ))
    };
    if meta.len() > MAX_SPEC_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    // `take`: the file may grow between the check and the read.
    std::io::Read::read_to_end(
        &mut std::io::Read::take(&file, MAX_SPEC_BYTES + 1),
        &mut bytes,
    )
    .map_err(|e| cannot(e.to_string()))?;
    if bytes.len() as u64 > MAX_SPEC_BYTES {
        return Err(too_big());
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if is_blank(&text) {
        return Err(RunnerError::bad_input(format!(
            "{} is empty (nothing visible in it)",
            path.display()
        ))
        .with_hint(
            "describe the feature to build in it (every planner and coder session is given it)",
        ));
    }
    Ok(text)
}

/// Open for reading without blocking: opening a FIFO with no writer would wait forever.
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a file"
    }
}

/// Nothing a reader would see: whitespace, control characters (NUL …), invisible characters
/// (a byte-order mark, zero-width spaces …) and replaced invalid bytes (U+FFFD) only.
pub fn is_blank(text: &str) -> bool {
    text.chars().all(|c| {
        c.is_whitespace() || c.is_control() || crate::text::is_invisible(c) || c == '\u{FFFD}'
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_with_nothing_visible_is_blank() {
        for blank in [
            "",
            " \n\t",
            "\u{FEFF}",
            "\u{FEFF}\n",
            "\u{200B}\u{200D}\u{2060}",
            "\0\0\0",
            "\u{FFFD}\u{FFFD}",
            "\u{3164}\u{2800}",
        ] {
            assert!(is_blank(blank), "{blank:?}");
        }
        for text in ["x", "\u{FEFF}# Feature", "日本", "\0a"] {
            assert!(!is_blank(text), "{text:?}");
        }
    }

    #[test]
    fn escaping_names_are_rejected() {
        for bad in [
            "..", "../x", "a/b", "/etc", "a\\b", "x\ny", "", ".hidden", "-rf", "a b", "x.lock",
            "x.",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?} should be rejected");
        }
        for good in ["001", "001-add-login", "feature_x.v2"] {
            assert!(check_name(good).is_ok(), "{good:?} should be accepted");
        }
    }
}
