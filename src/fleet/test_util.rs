//! Real repositories for the fleet's unit tests: a bare one in a temp folder as the remote
//! (a file:// URL), local ones with commits. No mock of git anywhere.

use std::path::Path;

use crate::git::{Oid, Repository};

/// A bare repository in a temp folder, and its file:// URL.
pub fn bare_remote() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    Repository::init_bare(dir.path()).unwrap();
    let url = format!("file://{}", dir.path().display());
    (dir, url)
}

/// A new non-bare repository in a temp folder.
pub fn local_repo() -> (tempfile::TempDir, Repository) {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    (dir, repo)
}

/// A new commit (no ref moved) whose tree holds one file with `text`.
pub fn commit(repo: &Repository, text: &str) -> Oid {
    let blob = repo.blob(text.as_bytes()).unwrap();
    let mut tb = repo.treebuilder(None).unwrap();
    tb.insert("f", blob, 0o100644).unwrap();
    let tree = repo.find_tree(tb.write().unwrap()).unwrap();
    let sig = git2::Signature::now("t", "t@example.com").unwrap();
    repo.commit(None, &sig, &sig, text, &tree, &[]).unwrap()
}

/// The refs the bare repository at `bare` holds, as (name, id), sorted.
pub fn refs_of(bare: &Path) -> Vec<(String, Oid)> {
    let repo = Repository::open_bare(bare).unwrap();
    let mut refs: Vec<(String, Oid)> = repo
        .references()
        .unwrap()
        .flatten()
        .filter_map(|r| Some((r.name()?.to_string(), r.target()?)))
        .collect();
    refs.sort();
    refs
}

/// Point `name` at `id` in the repository at `path` (the remote, set up by hand).
pub fn set_ref(path: &Path, name: &str, id: Oid) {
    let repo = Repository::open(path).unwrap();
    repo.reference(name, id, true, "test").unwrap();
}

/// Copy the object `id` (and all it reaches) from `from` into the repository at `to`, with
/// git's own program (a push of a temp ref, then its removal).
pub fn push_objects(from: &Path, to_url: &str, id: Oid) {
    let ok = std::process::Command::new("git")
        .current_dir(from)
        .args(["push", "-q", to_url, &format!("{id}:refs/tmp/x")])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let ok = std::process::Command::new("git")
        .current_dir(from)
        .args(["push", "-q", to_url, ":refs/tmp/x"])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}
