//! Many machines through the git remote (issue 29, docs/fleet.md): what runner keeps on the
//! remote and how it reads and writes it. The remote is the shared store: a spec waits there
//! as a commit of its folder, a worker holds it with a lease ref it renews, and every
//! publication of work is one atomic push that also checks the lease (fencing).
//!
//! Network operations (fetch, push) run git's own CLI, as jj does: libgit2 has no
//! `--force-with-lease`, its atomic pushes and credential helpers fall short of git's, and a
//! user's remote is configured for git (ssh config, credential helpers, `insteadOf`). Reading
//! and writing objects and local refs stays with git2 (`crate::git`).

pub mod names;
