use clap::Parser;

use runner::cli::{Cli, dispatch};
use runner::error::{exit, exit_code_of};

// mimalloc: the plan is parsed into many small JSON nodes and freed again on every
// read-modify-write; the system allocator made that a third slower (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let code = match dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            let code = exit_code_of(&err);
            // Through write_quietly: a closed stderr must not turn the exit code into a panic's.
            let mut stderr = std::io::stderr().lock();
            if code == exit::INTERRUPTED && !is_cancel(&err) {
                runner::write_quietly(
                    &mut stderr,
                    format_args!("runner: interrupted; run it again to resume where it stopped\n"),
                );
            } else {
                let message = format!("{err:#}");
                runner::write_quietly(
                    &mut stderr,
                    format_args!("runner: {}\n", runner::text::for_terminal(&message)),
                );
            }
            code
        }
    };
    std::process::exit(code);
}

/// A question cancelled (Esc): its own message says nothing was changed.
fn is_cancel(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        matches!(
            c.downcast_ref::<runner::error::RunnerError>(),
            Some(runner::error::RunnerError::Cancelled)
        )
    })
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
        .with_writer(std::io::stderr)
        .try_init();
}
