use std::path::Path;

use clap::Subcommand;

use runner::engine::mark::Mark;
use runner::ops::chunk::{ChunkShowOptions, MarkOptions, mark_chunk, show_chunk};

#[derive(Debug, Subcommand)]
pub enum ChunkCommand {
    /// Report the chunk done (runner verifies and commits it when the session ends).
    Done {
        id: String,
        #[arg(long)]
        notes: Option<String>,
        /// The spec (default: RUNNER_SPEC_DIR, else the worktree's branch).
        #[arg(long, add = super::complete::spec_names())]
        spec: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Report that the chunk could not be done, and why.
    Fail {
        id: String,
        #[arg(long)]
        reason: String,
        #[arg(long, add = super::complete::spec_names())]
        spec: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Show a chunk (default: RUNNER_CHUNK_ID, else the one in progress, else the next): its
    /// fields as a person reads them, or JSON with --json.
    Show {
        id: Option<String>,
        #[arg(long, add = super::complete::spec_names())]
        spec: Option<String>,
        /// Print JSON: the chunk exactly as the plan holds it, with the plan's progress.
        #[arg(long)]
        json: bool,
    },
}

impl ChunkCommand {
    pub fn json(&self) -> bool {
        match self {
            ChunkCommand::Done { json, .. }
            | ChunkCommand::Fail { json, .. }
            | ChunkCommand::Show { json, .. } => *json,
        }
    }
}

pub fn run(cwd: &Path, cmd: ChunkCommand) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    let (opts, json) = match cmd {
        ChunkCommand::Done {
            id,
            notes,
            spec,
            json,
        } => (
            MarkOptions {
                spec,
                id,
                mark: Mark::Done,
                text: notes,
            },
            json,
        ),
        ChunkCommand::Fail {
            id,
            reason,
            spec,
            json,
        } => (
            MarkOptions {
                spec,
                id,
                mark: Mark::Fail,
                text: Some(reason),
            },
            json,
        ),
        ChunkCommand::Show { id, spec, json } => {
            let view = show_chunk(&ctx, ChunkShowOptions { spec, id })?;
            if json {
                super::print_json(&serde_json::to_value(&view)?)?;
            } else {
                print!(
                    "{}",
                    super::view::chunk::render(&view, super::style::for_stdout())
                );
            }
            return Ok(0);
        }
    };
    let report = mark_chunk(&ctx, opts)?;
    if json {
        super::print_json(&serde_json::to_value(&report)?)?;
    } else {
        println!("{}", runner::text::for_terminal(&report.message));
    }
    Ok(0)
}
