//! Operations: what each command does, over the workspace. Commands in `cli` only call these.
//! An operation takes typed options and returns data; it never prints and never asks: progress
//! goes to the sink it is given (`engine::progress::ProgressSink`), questions to the asker
//! (`engine::ask::Asker`).

pub mod choice;
pub mod chunk;
pub mod demo;
pub mod detect;
pub mod discard;
pub mod merge;
pub mod new;
pub mod recover;
pub mod resume;
pub mod review;
pub mod run;
pub mod runs;
pub mod status;
pub mod undo;
