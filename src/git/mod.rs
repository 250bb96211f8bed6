//! Everything that touches git2: the main repository, the worktree slots, commits, refs,
//! backups, merges, a worktree's files and index. No module outside this folder names git2
//! (`tests/it/layers.rs` fails naming the line): the operations here take and return plain data
//! (`Oid`s, names, paths), and `Repository` is passed around as a handle only.

pub mod backup;
pub mod commit;
pub mod history;
pub mod init;
pub mod merge;
pub mod refs;
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
