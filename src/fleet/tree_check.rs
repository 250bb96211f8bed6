//! The strict reading of a published folder's tree, as a hostile remote may have built it:
//! only the published names (`snapshot::is_published_name`, `runs/<run id>.json`), only
//! regular files (no link, no gitlink) and the one `runs/` folder, no name twice, each blob's
//! size from its object's header (never inflated to find out) under the caps.

use std::collections::BTreeMap;

use super::published::{MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, RUNS};
use crate::git::{Oid, Repository};

/// A tree object larger than this is not a published folder's (an entry is about 60 bytes).
const MAX_TREE_BYTES: usize = 2 << 20;
/// A commit object larger than this is not runner's (its message is one line).
const MAX_COMMIT_BYTES: usize = 1 << 20;

const REGULAR: i32 = 0o100644;
const EXECUTABLE: i32 = 0o100755;
const FOLDER: i32 = 0o040000;
const LINK: i32 = 0o120000;
const GITLINK: i32 = 0o160000;

/// The files of the published folder `commit`: relative path → blob; or what is wrong (a
/// sentence that follows "the published spec folder <id> ").
pub fn published_files(repo: &Repository, commit: Oid) -> Result<BTreeMap<String, Oid>, String> {
    let odb = repo
        .odb()
        .map_err(|e| format!("cannot be read: {}", e.message()))?;
    let header = |id: Oid| {
        odb.read_header(id)
            .map_err(|_| format!("lacks the object {id}"))
    };
    let (size, kind) = header(commit)?;
    if kind != git2::ObjectType::Commit || size > MAX_COMMIT_BYTES {
        return Err(format!("is not a commit (a {kind} of {size} bytes)"));
    }
    let tree = repo
        .find_commit(commit)
        .map_err(|e| format!("cannot be read: {}", e.message()))?
        .tree_id();
    let mut files = BTreeMap::new();
    let mut total = 0u64;
    for (name, mode, id) in entries(repo, &header, tree)? {
        if name == RUNS {
            if mode != FOLDER {
                return Err(format!("has `{RUNS}` as something else than a folder"));
            }
            for (run, mode, id) in entries(repo, &header, id)? {
                let path = format!("{RUNS}/{run}");
                if !super::published::is_run_record_name(&run) {
                    return Err(format!("has {path:?}, which is not a run record's name"));
                }
                total += file_size(&header, &path, mode, id)?;
                files.insert(path, id);
            }
            continue;
        }
        if !super::published::is_published_name(&name) {
            return Err(format!(
                "has {name:?}, which is not a published file's name"
            ));
        }
        total += file_size(&header, &name, mode, id)?;
        files.insert(name, id);
    }
    if files.len() > MAX_FILES {
        return Err(format!("has {} files, more than {MAX_FILES}", files.len()));
    }
    if total > MAX_TOTAL_BYTES {
        return Err(format!("holds {total} bytes, more than {MAX_TOTAL_BYTES}"));
    }
    Ok(files)
}

type Header<'a> = dyn Fn(Oid) -> Result<(usize, git2::ObjectType), String> + 'a;

/// The entries of the tree `id` as (name, mode, id), each name checked to be one plain UTF-8
/// component, none twice.
fn entries(repo: &Repository, header: &Header, id: Oid) -> Result<Vec<(String, i32, Oid)>, String> {
    let (size, kind) = header(id)?;
    if kind != git2::ObjectType::Tree || size > MAX_TREE_BYTES {
        return Err(format!(
            "has {id}, a {kind} of {size} bytes, where a folder's tree goes"
        ));
    }
    let tree = repo
        .find_tree(id)
        .map_err(|e| format!("has a tree that cannot be read: {}", e.message()))?;
    let mut out: Vec<(String, i32, Oid)> = Vec::new();
    for entry in tree.iter() {
        let raw = entry.name_bytes();
        let Ok(name) = std::str::from_utf8(raw) else {
            return Err(format!(
                "has a name that is not UTF-8: {:?}",
                String::from_utf8_lossy(raw)
            ));
        };
        if name.is_empty()
            || name.contains(['/', '\\'])
            || name.chars().any(char::is_control)
            || name == "."
            || name == ".."
        {
            return Err(format!(
                "has the name {name:?}, which is not one plain file name"
            ));
        }
        if out.iter().any(|(n, _, _)| n == name) {
            return Err(format!("has {name:?} twice"));
        }
        out.push((name.to_string(), entry.filemode(), entry.id()));
    }
    Ok(out)
}

/// The size of the blob `id` at `path` (mode `mode`), if it may be a published file.
fn file_size(header: &Header, path: &str, mode: i32, id: Oid) -> Result<u64, String> {
    match mode {
        REGULAR | EXECUTABLE => {}
        LINK => return Err(format!("has {path:?} as a symbolic link")),
        GITLINK => return Err(format!("has {path:?} as a submodule (gitlink)")),
        FOLDER => return Err(format!("has {path:?} as a folder")),
        other => return Err(format!("has {path:?} with the mode {other:o}")),
    }
    let (size, kind) = header(id)?;
    if kind != git2::ObjectType::Blob {
        return Err(format!("has {path:?} as a {kind}, not a file"));
    }
    if size as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "has {path:?} of {size} bytes, more than {MAX_FILE_BYTES}"
        ));
    }
    Ok(size as u64)
}
