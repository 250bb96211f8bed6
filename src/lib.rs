//! runner: drive AI coding agents through an Auto-Claude plan, chunk by chunk, in a git
//! worktree, and survive any interruption. The plan file and the worktree are the only state.
//!
//! The code is in layers, each using only those below it (`tests/it/layers.rs` enforces it):
//! - `cli` (front end): clap, rendering, questions; the only layer that prints or asks;
//! - `ops` (operations): one per command, typed options in, `Serialize` data out;
//! - `engine`: run, recovery, lifecycle (merge, discard, undo), the one verification runner;
//! - `plan`, `store`, `git`, `agent`, `config`, `notify` (mechanism): files, locks, journal, git,
//!   processes, notifications;
//!   every `git2` call is in `git`;
//! - `policy`: pure decisions over plain data, and the one chunk status transition table.
//! - `error`, `output`, `text`, `clock`, `failpoint`: leaf utilities any layer may use.

// Printing never panics. std's print macros panic when stdout or stderr is a closed pipe
// (`runner status --json | head -1`, a terminal that went away), which killed a run in the
// middle of a chunk. These shadow them in every module declared below (macro_rules scope is
// textual): a report whose reader left stops quietly; the run keeps working and logging. A
// write to stdout that fails otherwise (a full disk) is kept and reported by the front end at
// its end (`write_stdout`).
#[macro_export]
macro_rules! println {
    () => { $crate::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::write_stdout(format_args!($($arg)*)) };
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

/// The first error a write to stdout met, other than a closed pipe (see [`write_stdout`]).
static STDOUT_ERROR: std::sync::Mutex<Option<std::io::Error>> = std::sync::Mutex::new(None);

/// Write a report's text to stdout (runner's `print!` and `println!`). A write that fails is
/// never a panic; the first failure other than a closed pipe is kept for the front end, which
/// reports it once at the end ([`finish_stdout`]): a report cut short by a full disk must not
/// exit 0 as if it were whole. A closed pipe (`runner status --json | head -1`) is the reader
/// going away, as it may: nobody is left to tell.
pub fn write_stdout(args: std::fmt::Arguments) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        note_stdout_error(e);
    }
}

/// Keep `e`, a failed write to stdout, unless it is a closed pipe or one is already kept.
pub fn note_stdout_error(e: std::io::Error) {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        return;
    }
    if let Ok(mut kept) = STDOUT_ERROR.lock()
        && kept.is_none()
    {
        *kept = Some(e);
    }
}

/// Flush stdout (the last line may still be buffered) and hand over the first error any write
/// to it met, a closed pipe aside; `None` when everything was written (or its reader left).
pub fn finish_stdout() -> Option<std::io::Error> {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().flush() {
        note_stdout_error(e);
    }
    STDOUT_ERROR.lock().ok().and_then(|mut kept| kept.take())
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
pub mod fleet;
pub mod fs;
pub mod git;
pub mod ids;
pub mod notify;
pub mod ops;
pub mod output;
pub mod plan;
pub mod policy;
pub mod store;
pub mod text;
