//! Operations: what each command does, over the workspace. Commands in `cli` only call these.

pub mod choice;
pub mod chunk;
pub mod demo;
pub mod discard;
pub mod interact;
pub mod merge;
pub mod recover;
pub mod review;
pub mod status;
pub mod undo;
