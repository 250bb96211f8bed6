//! `runner submit`: publish a local spec (its folder, and its branch) on the git remote for
//! workers (docs/fleet.md).

use std::path::Path;

use clap::Args;

use runner::ops::remote::submit::{SubmitOptions, SubmitReport, submit};

#[derive(Debug, Args)]
pub struct SubmitArgs {
    #[arg(long, add = super::complete::spec_names())]
    pub spec: Option<String>,
    /// The git remote to publish on (default: fleet.remote, "origin").
    #[arg(long)]
    pub remote: Option<String>,
    /// Print JSON: {"spec", "remote", "folder", "replaced", "branch"}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cwd: &Path, args: SubmitArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    let opts = SubmitOptions {
        spec: args.spec,
        remote: args.remote,
    };
    let report = submit(&ctx, opts)?;
    if args.json {
        super::print_json(&report)?;
    } else {
        print!("{}", render(&report));
    }
    Ok(0)
}

fn render(r: &SubmitReport) -> String {
    let t = |s: &str| runner::text::for_terminal(s).into_owned();
    let short = |id: &str| id.chars().take(7).collect::<String>();
    let branch = match &r.branch {
        Some(tip) => format!(
            " and its branch auto-claude/{} ({})",
            t(&r.spec),
            short(tip)
        ),
        None => String::new(),
    };
    format!(
        "Published {} on {}: its folder ({}){branch}.\nWorkers take it from there (`runner worker --remote {}`); `runner status --remote {}` follows it.\n",
        t(&r.spec),
        t(&r.remote),
        short(&r.folder),
        runner::sh(&r.remote),
        runner::sh(&r.remote),
    )
}
