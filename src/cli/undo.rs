//! `runner undo`: reverse the last merge or discard of a spec; `--list` the backups.

use std::path::Path;

use clap::Args;

use super::ask::TerminalAsker;
use runner::ops::undo::{BackupsOptions, UndoOptions, backups, undo};

#[derive(Debug, Args)]
pub struct UndoArgs {
    #[arg(long, add = super::complete::spec_names())]
    pub spec: Option<String>,
    /// List the backups instead of undoing.
    #[arg(long)]
    pub list: bool,
    #[arg(long)]
    pub json: bool,
    /// Fetch the spec from this git remote first, then publish its folder there again once
    /// the undo is done. Needs --spec.
    #[arg(long, value_name = "NAME", conflicts_with = "list")]
    pub remote: Option<String>,
}

pub fn undo_cmd(cwd: &Path, args: UndoArgs) -> anyhow::Result<i32> {
    if args.list {
        let ctx = super::open(cwd)?;
        let backups = backups(&ctx, BackupsOptions { spec: args.spec })?.0;
        if args.json {
            super::print_json(&backups)?;
        } else if backups.is_empty() {
            println!("No backups.");
        } else {
            for b in &backups {
                println!(
                    "{} {} {} ({})",
                    b.meta.time, b.meta.kind, b.meta.spec, b.refs_prefix
                );
            }
        }
        return Ok(0);
    }
    let ctx = super::open(cwd)?;
    let outcome = match &args.remote {
        Some(remote) => {
            let r = runner::ops::remote::lifecycle::undo(
                &ctx,
                Some(remote),
                args.spec.as_deref(),
                &TerminalAsker,
            )?;
            if args.json {
                return super::print_remote_json(&r).map(|()| 0);
            }
            super::fetched_lines(&r.fetched, &r.report.spec);
            if let Some(folder) = &r.published {
                println!(
                    "Published its folder on {} again ({}).",
                    runner::text::for_terminal(remote),
                    runner::git::short_id(folder)
                );
            }
            r.report
        }
        None => undo(&ctx, UndoOptions { spec: args.spec }, &TerminalAsker)?,
    };
    if args.json {
        super::print_json(&outcome)?;
    } else {
        println!("Undid the {} of {}.", outcome.kind, outcome.spec);
        if let Some(t) = &outcome.reset_target {
            println!("  {t} is back on its pre-merge tip.");
        }
        if let Some(b) = &outcome.restored_branch {
            println!("  branch {b} restored.");
        }
        if let Some(w) = &outcome.restored_worktree {
            println!("  worktree {w} restored.");
        }
        for n in &outcome.notes {
            println!("  note: {n}");
        }
    }
    Ok(0)
}
