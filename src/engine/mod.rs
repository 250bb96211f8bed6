//! The engine: long-running machinery that knows the order of steps. `run` drives a spec's
//! planner and coder sessions; `recovery` puts interrupted state right; `lifecycle` merges,
//! discards and undoes; `verify` is the one verification runner; `report` applies a
//! `runner chunk done|fail`. Every chunk status change goes through `policy::transition`. Operations (`ops`) call it; it calls the mechanism layers
//! (`plan`, `store`, `git`, `agent`) and `policy`. It never prints and never asks: what it has
//! to tell goes to a `progress::ProgressSink`, what it needs answered to an `ask::Asker`, both
//! passed in by the front end (the terminal's are in `cli::progress` and `cli::ask`).

pub mod integrity;
pub mod jobs;
pub mod lifecycle;
pub mod live;
pub mod mark;
pub mod progress;
pub mod recovery;
pub mod resume;
pub mod run;
pub mod track;
pub mod verify;
pub mod worker;

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
