use std::path::Path;

use clap::Args;

use runner::ops::recover::{RecoverOptions, recover, render};

#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// Recover one spec (default: every spec).
    #[arg(long, conflicts_with = "all", add = super::complete::spec_names())]
    pub spec: Option<String>,
    /// Recover every spec (the default without --spec).
    #[arg(long)]
    pub all: bool,
    /// Say what would be done; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also set failed chunks back to pending (their attempts are kept).
    #[arg(long)]
    pub retry_failed: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cwd: &Path, args: RecoverArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    let report = recover(
        &ctx,
        RecoverOptions {
            spec: args.spec,
            dry_run: args.dry_run,
            retry_failed: args.retry_failed,
        },
    )?;
    for spec in report.specs.iter().filter(|s| s.outcome.left_unusable()) {
        for a in &spec.actions {
            eprintln!("runner: {}", runner::text::for_terminal(&a.detail));
        }
    }
    if args.json {
        super::print_json(&report)?;
    } else {
        print!("{}", runner::text::for_terminal(&render(&report)));
    }
    Ok(if report.needs_human() {
        runner::error::exit::NEEDS_HUMAN
    } else if report.has_invalid_plan() {
        runner::error::exit::BAD_INPUT
    } else {
        runner::error::exit::OK
    })
}
