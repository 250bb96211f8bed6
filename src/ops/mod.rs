//! Operations: what each command does, over the workspace. Commands in `cli` only call these.

pub mod chunk;
pub mod demo;
pub mod recover;
pub mod report;
pub mod run;
pub mod status;
pub mod workspace;

pub use workspace::{SpecPaths, Workspace};
