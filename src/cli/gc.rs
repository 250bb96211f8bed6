//! `runner gc`: remove backups older than a number of days.

use std::path::Path;

use clap::Args;

use runner::ops::undo::{GcOptions, gc};

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Remove backups older than this many days (default: [backup] keep_days, 30).
    #[arg(long, value_name = "DAYS")]
    pub older_than: Option<u64>,
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn gc_cmd(cwd: &Path, args: GcArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    let opts = GcOptions {
        older_than: args.older_than,
        dry_run: args.dry_run,
    };
    let outcome = gc(&ctx, opts)?;
    let days = outcome.days;
    if args.json {
        super::print_json(&outcome)?;
    } else {
        let verb = if args.dry_run {
            "Would remove"
        } else {
            "Removed"
        };
        println!(
            "{verb} {} older than {}; {} kept.",
            runner::text::count(outcome.removed.len(), "backup"),
            runner::text::count(days, "day"),
            outcome.kept
        );
        for r in &outcome.removed {
            println!("  {r}");
        }
    }
    Ok(0)
}
