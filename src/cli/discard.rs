//! `runner discard`: throw a spec's build away (backed up first).

use std::path::Path;

use clap::Args;

use super::ask::TerminalAsker;
use super::interact::{can_ask, confirm, needs_flag};
use runner::ops::discard::{DiscardOptions, discard};

#[derive(Debug, Args)]
pub struct DiscardArgs {
    #[arg(long, add = super::complete::spec_names())]
    pub spec: Option<String>,
    /// Do not ask for confirmation (needed without a terminal).
    #[arg(long)]
    pub yes: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn discard_cmd(cwd: &Path, args: DiscardArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    let name = ctx.spec_to_change(args.spec.as_deref(), &TerminalAsker)?;
    if !args.yes {
        if !can_ask() {
            return Err(needs_flag("discard", "--yes"));
        }
        // y/N as merge asks: a discard is backed up and `runner undo` brings it back.
        if !confirm(&format!("Discard the build of {name}? (it can be undone)"))? {
            super::info("Not discarded.");
            return Ok(0);
        }
    }
    let outcome = discard(&ctx, DiscardOptions { spec: Some(name) }, &TerminalAsker)?;
    if args.json {
        super::print_json(&outcome)?;
    } else {
        println!(
            "Discarded the build of {}; the plan is reset to pending. Backup: {}. Undo with: runner undo --spec {}",
            outcome.spec,
            outcome.backup,
            runner::sh(&outcome.spec)
        );
        if let Some(r) = &outcome.late_changes {
            println!(
                "Changes made in its worktree after the backup were saved to {r} (git checkout {r} -- . brings them back)."
            );
        }
    }
    Ok(0)
}
