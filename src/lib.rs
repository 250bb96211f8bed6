//! runner: drive AI coding agents through an Auto-Claude plan, chunk by chunk, in a git
//! worktree, and survive any interruption. The plan file and the worktree are the only state.
//!
//! The code is in layers, each using only those below it (`tests/it/layers.rs` enforces it):
//! - `cli` (front end): clap, rendering, questions; the only layer that prints or asks;
//! - `ops` (operations): one per command, typed options in, `Serialize` data out;
//! - `engine`: run, recovery, lifecycle (merge, discard, undo), the one verification runner;
//! - `plan`, `store`, `git`, `agent`, `config` (mechanism): files, locks, journal, git, processes;
//!   every `git2` call is in `git`;
//! - `policy`: pure decisions over plain data, and the one chunk status transition table.
//! - `error`, `output`, `text`, `clock`, `failpoint`: leaf utilities any layer may use.

// Printing never panics. std's print macros panic when stdout or stderr is a closed pipe
// (`runner status --json | head -1`, a terminal that went away), which killed a run in the
// middle of a chunk. These shadow them in every module declared below (macro_rules scope is
// textual): a report whose reader left stops quietly; the run keeps working and logging.
#[macro_export]
macro_rules! println {
    () => { $crate::write_quietly(&mut ::std::io::stdout().lock(), format_args!("\n")) };
    ($($arg:tt)*) => {
        $crate::write_quietly(&mut ::std::io::stdout().lock(), format_args!("{}\n", format_args!($($arg)*)))
    };
}
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::write_quietly(&mut ::std::io::stdout().lock(), format_args!($($arg)*)) };
}
#[macro_export]
macro_rules! eprintln {
    () => { $crate::write_quietly(&mut ::std::io::stderr().lock(), format_args!("\n")) };
    ($($arg:tt)*) => {
        $crate::write_quietly(&mut ::std::io::stderr().lock(), format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Write to stdout or stderr, ignoring a failure: nobody is left to tell about it.
#[doc(hidden)]
pub fn write_quietly(out: &mut impl std::io::Write, args: std::fmt::Arguments) {
    let _ = out.write_fmt(args);
}

/// `value` quoted for a POSIX shell, for every command runner prints for a person to run: a spec
/// name or path with a space, `$(…)` or a quote must run as shown, and run nothing else.
pub fn sh(value: impl AsRef<str>) -> String {
    shell_words::quote(value.as_ref()).into_owned()
}

pub mod agent;
pub mod clock;
pub mod config;
pub mod engine;
pub mod error;
pub mod failpoint;
pub mod fs;
pub mod git;
pub mod ids;
pub mod ops;
pub mod output;
pub mod plan;
pub mod policy;
pub mod store;
pub mod text;
