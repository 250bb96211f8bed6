use std::path::Path;

use clap::Subcommand;

use runner::engine::report::Mark;
use runner::ops::chunk::{locate_spec, mark, show};

#[derive(Debug, Subcommand)]
pub enum ChunkCommand {
    /// Report the chunk done (runner verifies and commits it when the session ends).
    Done {
        id: String,
        #[arg(long)]
        notes: Option<String>,
        /// The spec (default: RUNNER_SPEC_DIR, else the worktree's branch).
        #[arg(long)]
        spec: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Report that the chunk could not be done, and why.
    Fail {
        id: String,
        #[arg(long)]
        reason: String,
        #[arg(long)]
        spec: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Show a chunk (default: RUNNER_CHUNK_ID, else the one in progress, else the next).
    Show {
        id: Option<String>,
        #[arg(long)]
        spec: Option<String>,
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
    let (message, spec, id, json) = match cmd {
        ChunkCommand::Done {
            id,
            notes,
            spec,
            json,
        } => {
            let (_, paths) = locate_spec(cwd, spec.as_deref(), &super::pick::typed_with_spec)?;
            let message = mark(&paths, &id, Mark::Done, notes.as_deref())?;
            (message, paths.name, id, json)
        }
        ChunkCommand::Fail {
            id,
            reason,
            spec,
            json,
        } => {
            let (_, paths) = locate_spec(cwd, spec.as_deref(), &super::pick::typed_with_spec)?;
            let message = mark(&paths, &id, Mark::Fail, Some(&reason))?;
            (message, paths.name, id, json)
        }
        ChunkCommand::Show { id, spec, json } => {
            let (_, paths) = locate_spec(cwd, spec.as_deref(), &super::pick::typed_with_spec)?;
            let value = serde_json::to_value(show(&paths, id.as_deref())?)?;
            if json {
                super::print_json(&value)?;
            } else {
                println!("{}", serde_json::to_string_pretty(&value["current"])?);
                println!(
                    "progress: {}/{} chunks completed",
                    value["progress"]["completed"], value["progress"]["total"]
                );
            }
            return Ok(0);
        }
    };
    if json {
        super::print_json(
            &serde_json::json!({"ok": true, "spec": spec, "chunk": id, "message": message}),
        )?;
    } else {
        println!("{}", runner::text::for_terminal(&message));
    }
    Ok(0)
}
