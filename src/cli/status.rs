use std::path::Path;

use clap::Args;

use crate::ops::status::{render, status};
use crate::policy::spec_choice::SpecChoice;
use crate::store::Workspace;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Show only this spec (inside a spec's worktree, that spec is the default).
    #[arg(long)]
    pub spec: Option<String>,
    /// Print JSON: {"specs": [...], "slots": [...]}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cwd: &Path, args: StatusArgs) -> anyhow::Result<i32> {
    let ws = Workspace::open(cwd)?;
    // `--spec` names one spec (an open choice is an error: status never asks); without it,
    // the spec of the slot status runs in (or the only one), else every spec.
    let only = match &args.spec {
        Some(q) => Some(super::pick::named(&ws, cwd, q)?),
        None => match crate::store::spec::choose(&ws, cwd, None)? {
            SpecChoice::One(name) => Some(name),
            _ => None,
        },
    };
    let report = status(&ws, only.as_deref())?;
    if args.json {
        super::print_json(&report)?;
    } else {
        print!("{}", crate::text::for_terminal(&render(&report)));
    }
    Ok(0)
}
