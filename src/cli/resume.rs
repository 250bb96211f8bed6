//! `runner resume [HINT]`: find the interrupted run meant, say where it stood and what to do
//! next (text or JSON, the same content), optionally write the handoff document, then continue
//! it as `runner run --spec S --auto-continue` would, as a new run with `resumed_from`.

use std::path::Path;
use std::rc::Rc;

use clap::Args;

use super::ask::{JsonAsker, TerminalAsker};
use super::progress::TerminalProgress;
use super::run::ContinueArgs;
use runner::engine::run::RunOptions;
use runner::ops::resume::{ResumeOptions, ResumeReport};

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// What to resume: a run id or a prefix of one (4 characters or more), a spec's name,
    /// number or a part of its name, or the id of the chunk it was working on. Without one:
    /// the most recent resumable run.
    #[arg(conflicts_with_all = ["run", "spec", "chunk"], add = super::complete::resume_hints())]
    pub hint: Option<String>,
    /// Read the hint as a run id or prefix only.
    #[arg(long, value_name = "ID", conflicts_with_all = ["spec", "chunk"], add = super::complete::run_ids())]
    pub run: Option<String>,
    /// Read the hint as a spec (name, number, part of a name) only.
    #[arg(long, value_name = "SPEC", conflicts_with = "chunk", add = super::complete::spec_names())]
    pub spec: Option<String>,
    /// Read the hint as a chunk id only (the spec in progress at it, or that last worked on it).
    #[arg(long, value_name = "CHUNK")]
    pub chunk: Option<String>,
    /// Of several matches, take the Nth (as numbered in the list).
    #[arg(long, value_name = "N")]
    pub choice: Option<usize>,
    /// Also write the summary as Markdown to .auto-claude/handoffs/ (as [resume] handoff).
    #[arg(long)]
    pub handoff: bool,
    /// Stop after the summary (start no agent).
    #[arg(long)]
    pub no_run: bool,
    #[command(flatten)]
    pub go: ContinueArgs,
    /// Print JSON on stdout: the summary (with the continued run's summary under "run"), or
    /// the matches to choose from.
    #[arg(long)]
    pub json: bool,
}

/// The summary, and the run that continued it.
pub fn run(cwd: &Path, args: ResumeArgs) -> anyhow::Result<i32> {
    args.go.check()?;
    let ctx = super::open(cwd)?.with_progress(Rc::new(TerminalProgress::new()));
    let json = args.json;
    let opts = ResumeOptions {
        hint: args.hint,
        run: args.run,
        spec: args.spec,
        chunk: args.chunk,
        choice: args.choice,
        handoff: args.handoff,
        no_run: args.no_run,
        go: args.go.options(RunOptions::default()),
    };
    let person: &dyn runner::ops::resume::ResumeAsker =
        if json { &JsonAsker } else { &TerminalAsker };
    let report = runner::ops::resume::resume(&ctx, opts, person)?;
    match &report {
        ResumeReport::ChoiceNeeded {
            matches, user_hint, ..
        } if !json => Err(runner::ops::resume::ambiguous(user_hint.as_deref(), matches).into()),
        ResumeReport::ChoiceNeeded { .. } => {
            super::print_json(&report)?;
            Ok(runner::error::exit::BAD_INPUT)
        }
        ResumeReport::Resumed { .. } if json => {
            super::print_json(&report)?;
            Ok(0)
        }
        ResumeReport::Resumed { run, .. } => {
            if let Some(done) = run {
                println!("{}", super::run::summary_line(done));
            }
            Ok(0)
        }
    }
}
