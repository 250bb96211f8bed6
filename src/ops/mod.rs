//! Operations: one door per command. Every one has the shape
//! `ops::<command>(&Ctx, <Command>Options[, person]) -> Result<<Command>Report>`: the front end
//! opens the context once (`context::Ctx`: the workspace, the clock, the progress sink), builds
//! the options, calls one operation and renders its report. An operation never prints and
//! never asks: progress goes to the context's sink, questions to the `person::Person` it is
//! given (the terminal's, or `Nobody`). The front ends are the binary's (`src/main.rs`).

pub use context::Ctx;
pub use person::{Nobody, Person};

pub mod choice;
pub mod chunk;
pub mod complete;
pub mod config;
pub mod context;
pub mod demo;
pub mod detect;
pub mod discard;
pub mod jobs;
pub mod logs;
pub mod merge;
pub mod new;
pub mod person;
pub mod plan;
pub mod pr;
pub mod recover;
pub mod remote;
pub mod resume;
pub mod review;
pub mod run;
pub mod runs;
pub mod start;
pub mod status;
pub mod undo;
pub mod watch;
pub mod worker;
