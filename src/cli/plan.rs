//! `runner plan [SPEC]`: a spec's whole plan as a person reads it (`view::plan`), or its report
//! as JSON. Reads only.

use std::io::IsTerminal;
use std::path::Path;

use clap::Args;

use super::ask::TerminalAsker;
use runner::ops::plan::{PlanOptions, PlanReport, plan};

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The spec: a folder name under .auto-claude/specs, its number (001), or a unique part of
    /// it. Without one: the slot's spec, else the only one (several: asked on a terminal).
    #[arg(conflicts_with = "spec_flag", add = super::complete::spec_names())]
    pub spec: Option<String>,
    /// The same as SPEC, as the other commands spell it.
    #[arg(long = "spec", value_name = "SPEC", add = super::complete::spec_names())]
    pub spec_flag: Option<String>,
    /// Print the plan's report as JSON (every description whole).
    #[arg(long)]
    pub json: bool,
}

pub fn run(cwd: &Path, args: PlanArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    let opts = PlanOptions {
        spec: args.spec.or(args.spec_flag),
    };
    let report = plan(&ctx, opts, &TerminalAsker)?;
    show(&report, args.json)?;
    Ok(0)
}

/// Print `report`: JSON, or the text fitted to the terminal's width.
pub fn show(report: &PlanReport, json: bool) -> anyhow::Result<()> {
    if json {
        return super::print_json(report);
    }
    print!(
        "{}",
        super::view::plan::render(report, super::style::for_stdout(), width())
    );
    Ok(())
}

/// The columns of the terminal stdout is, if it is one (else `COLUMNS`, if set): the width the
/// text fits. Into a pipe with no `COLUMNS`, nothing is cut.
pub(super) fn width() -> Option<usize> {
    let stdout = std::io::stdout();
    if stdout.is_terminal()
        && let Ok(size) = rustix::termios::tcgetwinsize(&stdout)
        && size.ws_col > 0
    {
        return Some(usize::from(size.ws_col));
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
}
