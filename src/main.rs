//! The binary: the two front ends (`cli`, the command line; `mcp`, the same operations over the
//! Model Context Protocol) over the `runner` library. They stand outside the library (as
//! worktrunk's and jj's do), so "the core never prints or asks" is kept by the compiler: the
//! library exports no front end.

// runner's quiet print macros (lib.rs: printing to a closed pipe never panics), in the textual
// scope of every module declared below, as in the library.
macro_rules! println {
    ($($arg:tt)*) => { runner::println!($($arg)*) };
}
macro_rules! print {
    ($($arg:tt)*) => { runner::print!($($arg)*) };
}
macro_rules! eprintln {
    ($($arg:tt)*) => { runner::eprintln!($($arg)*) };
}

mod cli;
mod mcp;

use clap::Parser;

use cli::{Cli, carry_directory, dispatch, print_error_json, wants_json};
use runner::error::ErrorReport;

// mimalloc: the plan is parsed into many small JSON nodes and freed again on every
// read-modify-write; the system allocator made that a third slower (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // A completion script's request (`COMPLETE=bash runner -- …`) is answered before anything
    // else could print; any other start returns at once.
    cli::complete::answer_if_asked();
    // First, while this is the only thread (libgit2's options are process-wide globals).
    runner::git::cache_trees();
    let cli = Cli::try_parse().unwrap_or_else(|e| usage_error(e));
    // Before the log: its lines are coloured by the same choice as everything else.
    cli::style::init(cli.color);
    init_logging(cli.verbose);
    let json = wants_json(&cli.command);
    let directory = cli.directory.clone();
    let code = match dispatch(cli) {
        Ok(code) => code,
        Err(err) => report_error(&err, json, directory.as_deref()),
    };
    std::process::exit(with_stdout_checked(code));
}

/// `code`, unless the reports could not all be written to stdout (a full disk, a file system
/// gone read-only): that is said once on stderr and the exit is 1 (or the command's own
/// failure, which says more). A closed pipe is not a failure (`runner::write_stdout`).
fn with_stdout_checked(code: i32) -> i32 {
    let Some(e) = runner::finish_stdout() else {
        return code;
    };
    runner::write_quietly(
        &mut std::io::stderr().lock(),
        format_args!(
            "runner: could not write the output to stdout: {e}; what reached it is incomplete\n"
        ),
    );
    if code == runner::error::exit::OK {
        runner::error::exit::INTERNAL
    } else {
        code
    }
}

/// A command line clap refused: its text on stderr as always, and with `--json` among the
/// arguments also the error object on stdout (docs/json.md). Help and version go out as asked.
fn usage_error(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    let json = std::env::args_os().skip(1).any(|a| a == "--json");
    if json
        && !matches!(
            e.kind(),
            ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        )
    {
        let text = e.render().to_string();
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let message = lines.next().unwrap_or_default();
        let report = ErrorReport {
            code: e.exit_code(),
            kind: "bad_input",
            message: message
                .strip_prefix("error: ")
                .unwrap_or(message)
                .to_string(),
            hints: lines.map(|l| l.trim().to_string()).collect(),
        };
        print_error_json(&report);
    }
    // Help and version go to stdout: one that could not be written there is an error too.
    if !e.use_stderr() {
        if let Err(io) = e.print() {
            runner::note_stdout_error(io);
        }
        std::process::exit(with_stdout_checked(e.exit_code()));
    }
    e.exit()
}

/// Render an error once: `runner: <message>` and its hints on stderr, and with `--json` also
/// the error object on stdout (docs/json.md). A command in a hint carries `-C DIR` when the
/// user gave it, so it runs as printed from where they are. Returns the exit code.
fn report_error(err: &anyhow::Error, json: bool, directory: Option<&std::path::Path>) -> i32 {
    let mut report = cli::error_report(err);
    carry_directory(&mut report.hints, directory);
    // Through write_quietly: a closed stderr must not turn the exit code into a panic's.
    runner::write_quietly(
        &mut std::io::stderr().lock(),
        format_args!("{}", runner::text::for_terminal(&report.to_text())),
    );
    if json {
        print_error_json(&report);
    }
    report.code
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| QuietStderr)
        // Colour as `--color` and NO_COLOR decide for stderr: by default only for a person's
        // terminal, never into a file or a pipe.
        .with_ansi(cli::style::for_stderr().enabled())
        // The subscriber's own report of a failed write is an eprintln!, which panics on a
        // closed stderr; QuietStderr never fails, and this keeps the report off anyway.
        .log_internal_errors(false)
        .try_init();
}

/// stderr for log lines that never reports a failed write: a closed or full stderr (the
/// reader of `runner … 2>&1 | head` went away) must not stop a run that is changing state.
struct QuietStderr;

impl std::io::Write for QuietStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}
