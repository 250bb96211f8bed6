//! Everything that touches git2: the main repository, the worktree slots, commits.

pub mod backup;
pub mod history;
pub mod merge;
pub mod refs;
pub mod repo;
pub mod slot;
pub mod tree;

/// The handle and id types other layers pass around; every method call on them stays in here.
pub use git2::{Oid, Repository};
pub use repo::{
    MainRepo, commit_all, commit_id, dirty_paths, head_branch, head_commit, log_between, short_id,
    signature,
};
pub use slot::{Slot, SlotState, branch_for, slot_holding, spec_of_branch};
