//! `runner merge`: land a spec's work on its base branch.

use std::path::Path;

use clap::Args;

use super::ask::TerminalAsker;
use super::interact::{can_ask, confirm, needs_flag};
use runner::ops::merge::{MergeMode, MergeOptions, merge};

#[derive(Debug, Args)]
pub struct MergeArgs {
    #[arg(long, add = super::complete::spec_names())]
    pub spec: Option<String>,
    /// One commit on the base branch listing the chunks, instead of a merge commit.
    #[arg(long, conflicts_with = "no_commit")]
    pub squash: bool,
    /// Stage the merged changes on the checked-out base branch for you to commit.
    #[arg(long)]
    pub no_commit: bool,
    /// Keep the spec's branch and worktree after merging.
    #[arg(long)]
    pub keep_worktree: bool,
    /// Do not ask for confirmation (needed without a terminal).
    #[arg(long)]
    pub yes: bool,
    #[arg(long)]
    pub json: bool,
    /// Fetch the spec (built elsewhere) from this git remote first, then publish its folder
    /// there as merged so workers never take it again. Needs --spec.
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
}

pub fn merge_cmd(cwd: &Path, args: MergeArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    let name = match &args.remote {
        Some(_) => runner::ops::remote::lifecycle::spec_of(args.spec.as_deref())?,
        None => ctx.spec_to_change(args.spec.as_deref(), &TerminalAsker)?,
    };
    let mode = if args.squash {
        MergeMode::Squash
    } else if args.no_commit {
        MergeMode::NoCommit
    } else {
        MergeMode::Merge
    };
    if !args.yes {
        if !can_ask() {
            return Err(needs_flag("merge", "--yes"));
        }
        let base = runner::ops::merge::base_of(&ctx, &name)?;
        if !confirm(&format!("Merge {name} into {base} ({})?", mode.as_str()))? {
            super::info("Not merged.");
            return Ok(runner::error::exit::OK);
        }
    }
    let opts = MergeOptions {
        spec: Some(name.clone()),
        mode,
        keep_worktree: args.keep_worktree,
    };
    let (outcome, remote) = match &args.remote {
        Some(remote) => {
            let r =
                runner::ops::remote::lifecycle::merge(&ctx, Some(remote), opts, &TerminalAsker)?;
            if args.json {
                return super::print_remote_json(&r).map(|()| 0);
            }
            super::fetched_lines(&r.fetched, &name);
            (r.report, Some((remote.clone(), r.published)))
        }
        None => (merge(&ctx, opts, &TerminalAsker)?, None),
    };
    if args.json {
        super::print_json(&outcome)?;
        return Ok(0);
    }
    if let Some((remote, Some(folder))) = &remote {
        println!(
            "Published its folder on {} as merged ({}): workers will not take it again.",
            runner::text::for_terminal(remote),
            runner::git::short_id(folder)
        );
    }
    if outcome.already_merged {
        println!(
            "{} is already merged into {}: nothing to do.",
            outcome.spec, outcome.target
        );
        return Ok(0);
    }
    match &outcome.commit {
        Some(c) => println!(
            "Merged {} into {} ({}): {} — {}, {}.",
            outcome.spec,
            outcome.target,
            outcome.mode.as_str(),
            runner::git::short_id(c),
            runner::text::count(outcome.landed.len(), "commit"),
            runner::text::count(outcome.files, "file")
        ),
        None => println!(
            "The changes of {} are staged on {}: review them and commit (`git commit`).",
            outcome.spec, outcome.target
        ),
    }
    for l in &outcome.landed {
        println!("  {l}");
    }
    if outcome.cleaned_up {
        match &outcome.freed_worktree {
            Some(path) => println!(
                "The worktree {path} was freed and branch auto-claude/{} deleted (its tip is kept in the backup).",
                outcome.spec
            ),
            None => println!(
                "Branch auto-claude/{} was deleted (its tip is kept in the backup).",
                outcome.spec
            ),
        }
    }
    if let Some(b) = &outcome.backup {
        println!(
            "Backup: {b}. Undo with: runner undo --spec {}",
            runner::sh(&outcome.spec)
        );
    }
    Ok(0)
}
