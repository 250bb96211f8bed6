//! `runner gc`: remove backups older than a number of days.

use std::path::Path;

use clap::Args;

use runner::store::Workspace;

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
    let ws = Workspace::open(cwd)?;
    let days = match args.older_than {
        Some(d) => d,
        None => ws.config()?.backup.keep_days,
    };
    let outcome = runner::ops::undo::gc(&ws, days, args.dry_run)?;
    if args.json {
        super::print_json(&outcome)?;
    } else {
        let verb = if args.dry_run {
            "Would remove"
        } else {
            "Removed"
        };
        println!(
            "{verb} {} backup(s) older than {days} days; {} kept.",
            outcome.removed.len(),
            outcome.kept
        );
        for r in &outcome.removed {
            println!("  {r}");
        }
    }
    Ok(0)
}
