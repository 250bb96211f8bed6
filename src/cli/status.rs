use std::path::Path;

use clap::Args;

use crate::ops::status::{render, status};
use crate::store::Workspace;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print JSON: {"specs": [...], "slots": [...]}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cwd: &Path, args: StatusArgs) -> anyhow::Result<i32> {
    let ws = Workspace::open(cwd)?;
    let report = status(&ws)?;
    if args.json {
        super::print_json(&report)?;
    } else {
        print!("{}", crate::text::for_terminal(&render(&report)));
    }
    Ok(0)
}
