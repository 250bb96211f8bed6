//! Operations: what each command does, over the workspace. Commands in `cli` only call these.

pub mod choice;
pub mod chunk;
pub mod demo;
pub mod discard;
pub mod interact;
pub mod merge;
pub mod person;
pub mod recover;
pub mod report;
pub mod review;
pub mod run;
pub mod status;
pub mod undo;
pub mod workspace;

pub use workspace::{SpecPaths, Workspace};

/// Run an async operation to its end on a single-threaded runtime: runner's concurrency is one
/// child process, its signals and a heartbeat, so one thread is enough (and keeps the agent's
/// parent-death signal tied to the main thread).
pub fn block_on<T>(
    future: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    use anyhow::Context;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(future)
}
