//! Many machines through the git remote (issue 29, docs/fleet.md): what runner keeps on the
//! remote and how it reads and writes it. The remote is the shared store: a spec waits there
//! as a commit of its folder, a worker holds it with a lease ref it renews, and every
//! publication of work is one atomic push that also checks the lease (fencing).
//!
//! Network operations (fetch, push) run git's own CLI, as jj does: libgit2 has no
//! `--force-with-lease`, its atomic pushes and credential helpers fall short of git's, and a
//! user's remote is configured for git (ssh config, credential helpers, `insteadOf`). Reading
//! and writing objects and local refs stays with git2 (`crate::git`, and here).
//!
//! - `net`: `push_atomic` (one compare-and-swap push of many refs), `fetch`, `ls_remote`;
//! - `snapshot`: a spec's folder as a commit (`commit_folder`) and back (`materialize`);
//! - `lease`, `pause`: the lease and usage-limit pause records (JSON in a commit message);
//! - `view`: what the remote holds, after one fetch (`fetch_view`);
//! - `names`: the ref names, and the checks of names read from a remote.

mod git_cli;
pub mod lease;
mod materialize;
pub mod names;
pub mod net;
pub mod pause;
mod published;
mod record;
pub mod snapshot;
mod tree_check;
pub mod view;

#[cfg(test)]
mod test_util;
