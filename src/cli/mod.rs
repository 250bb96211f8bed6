//! Command-line definitions (clap) and dispatch. One file per command; none has logic of its own.

mod ask;
mod chunk;
mod demo;
pub mod interact;
mod lifecycle;
mod progress;
mod recover;
mod run;
mod status;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "runner",
    version,
    about = "Drive AI coding agents through a plan, chunk by chunk, in a git worktree — and survive any interruption.",
    after_help = "Exit codes: 0 done, 1 unexpected error, 2 bad input or usage, 3 needs a human, 4 busy, 5 session budget spent, 130 interrupted."
)]
pub struct Cli {
    /// More log output on stderr (repeat for more). RUST_LOG works too.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Plan the spec if needed, then build it chunk by chunk until done, failed or interrupted.
    Run(run::RunArgs),
    /// Put interrupted state right without running an agent, and report what was done.
    Recover(recover::RecoverArgs),
    /// Look at a spec's work: commits, files, progress, whether it merges cleanly (read-only).
    Review(lifecycle::ReviewArgs),
    /// Land a spec's work on its base branch (backed up first; undoable).
    Merge(lifecycle::MergeArgs),
    /// Throw a spec's build away and reset its plan (backed up first; undoable).
    Discard(lifecycle::DiscardArgs),
    /// Reverse the last merge or discard of a spec; --list shows the backups.
    Undo(lifecycle::UndoArgs),
    /// Remove backups older than a number of days (never done automatically).
    Gc(lifecycle::GcArgs),
    /// Every spec: progress, branch, worktree, who is running it.
    Status(status::StatusArgs),
    /// Report on a chunk (for agents): done, fail, show.
    #[command(subcommand)]
    Chunk(chunk::ChunkCommand),
    /// Show runner at work on a throw-away repository with a built-in scripted agent.
    Demo(demo::DemoArgs),
    /// The scripted agent the demo uses (internal).
    #[command(hide = true)]
    DemoAgent,
}

/// Run the parsed command; returns the process exit code.
pub fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    let cwd = std::env::current_dir()?;
    match cli.command {
        Command::Run(args) => run::run(&cwd, args),
        Command::Recover(args) => recover::run(&cwd, args),
        Command::Status(args) => status::run(&cwd, args),
        Command::Review(args) => lifecycle::review(&cwd, args),
        Command::Merge(args) => lifecycle::merge_cmd(&cwd, args),
        Command::Discard(args) => lifecycle::discard_cmd(&cwd, args),
        Command::Undo(args) => lifecycle::undo_cmd(&cwd, args),
        Command::Gc(args) => lifecycle::gc_cmd(&cwd, args),
        Command::Chunk(cmd) => chunk::run(&cwd, cmd),
        Command::Demo(args) => demo::run(args),
        Command::DemoAgent => crate::ops::demo::demo_agent(),
    }
}

/// Print `value` as pretty JSON on stdout.
fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
