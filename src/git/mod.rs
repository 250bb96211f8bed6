//! Everything that touches git2: the main repository, the worktree slots, commits, refs,
//! backups, merges, a worktree's files and index. No module outside this folder names git2
//! (`tests/it/layers.rs` fails naming the line): the operations here take and return plain data
//! (`Oid`s, names, paths), and `Repository` is passed around as a handle only.

pub mod backup;
pub mod commit;
pub mod history;
pub mod init;
pub mod locks;
pub mod merge;
pub mod refs;
pub mod remote_url;
pub mod repo;
pub mod slot;
pub mod stage;
pub mod status;
pub mod tree;

pub use commit::commit_all;
/// The handle and id types other layers pass around; every method call on them stays in here.
pub use git2::{Oid, Repository};
pub use repo::{
    MainRepo, commit_id, dirty_paths, head_branch, head_commit, log_between, short_id, signature,
};
pub use slot::{Slot, SlotState, branch_for, slot_holding, spec_of_branch};
pub use stage::Stager;

/// Trees up to this size stay in libgit2's object cache once read (its default is 4 KiB: a
/// folder of more than about 100 entries was inflated and hashed again at every read — the
/// worktree's root of 800 files several times per chunk of a run).
pub const CACHED_TREE_BYTES: usize = 1 << 20;

/// The most objects libgit2 keeps cached in all, in bytes (its default is 256 MiB). A run keeps
/// its repository handles open for hours and writes a new root tree every chunk: without a
/// bound every one stayed cached (92 MB at 800 chunks of 800 files), and the fork that starts
/// each agent copied all of it (0.8 ms at 800 chunks against 0.2 ms at 50).
pub const CACHE_BYTES: usize = 4 << 20;

/// Keep trees up to `CACHED_TREE_BYTES` in libgit2's object cache, and at most `CACHE_BYTES`
/// of objects in all. Call it first thing in `main`, before any other thread exists: the
/// options are globals libgit2 sets without a lock.
pub fn cache_trees() {
    // SAFETY: called by `main` before any thread is spawned (see above); an error (an option
    // this libgit2 does not know) leaves the default, which is only slower.
    let _ =
        unsafe { git2::opts::set_cache_object_limit(git2::ObjectType::Tree, CACHED_TREE_BYTES) };
    // git2 has no wrapper for this option. SAFETY: as above; libgit2 is initialised by the
    // call above, and the option takes one `ssize_t`.
    unsafe {
        libgit2_sys::git_libgit2_opts(
            libgit2_sys::GIT_OPT_SET_CACHE_MAX_SIZE as libc::c_int,
            CACHE_BYTES as libc::ssize_t,
        );
    }
}
