//! runner: drive AI coding agents through an Auto-Claude plan, chunk by chunk, in a git
//! worktree, and survive any interruption. The plan file and the worktree are the only state.

pub mod cli;
pub mod clock;
pub mod config;
pub mod error;
pub mod failpoint;
pub mod git;
pub mod ops;
pub mod plan;
pub mod policy;
pub mod recovery;
pub mod session;
pub mod spec;
pub mod store;
