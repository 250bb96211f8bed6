//! A record on the remote (a lease, a pause) is a commit with the empty tree whose message is
//! the record as JSON. What is shared by both: writing one, reading one back with a size cap
//! before anything is parsed, and the checks of their text fields.

use crate::git::{Oid, Repository};

/// The largest record message believed. A record is a few hundred bytes; a remote's commit of
/// megabytes is not one, and is not read into memory to find out.
pub const MAX_RECORD_BYTES: usize = 4096;

/// The longest text field (a worker's or host's name, a reason), in characters.
pub const MAX_FIELD_CHARS: usize = 200;

/// A new commit (no ref moved, no parent) with the empty tree and `json` as its message.
pub fn write(repo: &Repository, json: &str) -> anyhow::Result<Oid> {
    let tree = repo.treebuilder(None)?.write()?;
    let tree = repo.find_tree(tree)?;
    // A fixed author: a worker's host may have no git identity, and the record says who.
    let sig = git2::Signature::now("runner", "runner@localhost")?;
    Ok(repo.commit(None, &sig, &sig, json, &tree, &[])?)
}

/// The message of the record commit `id`, if it is one: a commit (its size checked before it is
/// read), with the empty tree, a UTF-8 message of at most `MAX_RECORD_BYTES`.
pub fn read(repo: &Repository, id: Oid) -> Result<String, String> {
    let odb = repo.odb().map_err(|e| e.message().to_string())?;
    let (size, kind) = odb
        .read_header(id)
        .map_err(|_| format!("{id} is not in the repository"))?;
    if kind != git2::ObjectType::Commit {
        return Err(format!("{id} is a {kind}, not a commit"));
    }
    // The commit's header (tree, author, committer) takes a few hundred bytes more.
    if size > MAX_RECORD_BYTES + 1024 {
        return Err(format!("{id} is {size} bytes, more than a record can be"));
    }
    let commit = repo.find_commit(id).map_err(|e| e.message().to_string())?;
    if commit.tree_id() != empty_tree_id(repo)? || commit.parent_count() != 0 {
        return Err(format!("{id} is not a record (it has files or parents)"));
    }
    let message = commit.message_bytes();
    if message.len() > MAX_RECORD_BYTES {
        return Err(format!("{id}'s message is over {MAX_RECORD_BYTES} bytes"));
    }
    String::from_utf8(message.to_vec()).map_err(|_| format!("{id}'s message is not UTF-8"))
}

fn empty_tree_id(repo: &Repository) -> Result<Oid, String> {
    repo.treebuilder(None)
        .and_then(|tb| tb.write())
        .map_err(|e| e.message().to_string())
}

/// `value` as a record's text field `field`: 1 to `MAX_FIELD_CHARS` characters, none of them
/// a control character (what is read from a remote reaches a terminal and a log).
pub fn check_text(field: &str, value: &str) -> Result<(), String> {
    let n = value.chars().count();
    if n == 0 || n > MAX_FIELD_CHARS {
        return Err(format!(
            "{field} must be 1 to {MAX_FIELD_CHARS} characters, not {n}"
        ));
    }
    if value
        .chars()
        .any(|c| c.is_control() || crate::text::is_bidi_control(c))
    {
        return Err(format!("{field} contains a control character"));
    }
    Ok(())
}
