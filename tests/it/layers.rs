//! The layers of `src/` (see DESIGN.md, "How the code is laid out"), checked on the source
//! text: a rule broken names the file and line.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `file:line: text` for each line of the files under `src/` (outside `allowed_dir`) that
/// `breaks` says breaks the rule.
fn offending_lines(allowed_dir: &str, breaks: impl Fn(&str) -> bool) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for path in rust_files(&root.join("src")) {
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel.starts_with(allowed_dir) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            if breaks(line) {
                found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

/// A line that names the git2 crate: a path through it or an import of it.
fn names_git2(line: &str) -> bool {
    let code = line.trim_start();
    line.contains("git2::")
        || code.starts_with("use git2")
        || code.starts_with("pub use git2")
        || code.starts_with("extern crate git2")
}

/// Files that still call git2 directly and are being moved by another change of issue 9; each
/// must be taken out of this list as soon as it is clean (the test fails if it already is).
const NOT_YET_MOVED: &[&str] = &[];

#[test]
fn every_git2_call_lives_in_src_git() {
    let found = offending_lines("src/git/", names_git2);
    let (pending, offending): (Vec<&String>, Vec<&String>) = found.iter().partition(|l| {
        NOT_YET_MOVED
            .iter()
            .any(|f| l.starts_with(&format!("{f}:")))
    });
    assert!(
        offending.is_empty(),
        "git2 is used outside src/git/ (move the operation into a function of src/git/):\n{}",
        offending
            .iter()
            .map(|l| l.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    for file in NOT_YET_MOVED {
        assert!(
            pending.iter().any(|l| l.starts_with(&format!("{file}:"))),
            "{file} no longer uses git2: take it out of NOT_YET_MOVED"
        );
    }
}

#[test]
fn the_git2_rule_sees_paths_and_imports() {
    assert!(names_git2("    let r = git2::Repository::open(p)?;"));
    assert!(names_git2("use git2::{Oid, Repository};"));
    assert!(names_git2("pub use git2::Oid;"));
    assert!(!names_git2("/// (libgit2 keeps a lock file)"));
    assert!(!names_git2("use crate::git::{Oid, Repository};"));
}
