//! `runner init`: write `.auto-claude/config.toml`, every key commented out at its default.

use std::path::Path;

use clap::Args;

use crate::error::RunnerError;
use crate::store::Workspace;

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Replace an existing .auto-claude/config.toml (its settings are lost).
    #[arg(long)]
    pub force: bool,
}

pub fn run(cwd: &Path, args: InitArgs) -> anyhow::Result<i32> {
    let ws = Workspace::open(cwd)?;
    let path = ws.config_path();
    // symlink_metadata: a link (even a dangling one) counts as a file already there.
    if !args.force && std::fs::symlink_metadata(&path).is_ok() {
        return Err(RunnerError::bad_input(format!(
            "{} exists already; nothing was changed",
            path.display()
        ))
        .with_hint("`runner config` shows what it sets")
        .with_hint("`runner init --force` replaces it with every key at its default")
        .into());
    }
    crate::store::safe::create_dirs(&ws.state_dir)?;
    // Atomic and resolved from the folder's handle: a link at the config's place is replaced,
    // never written through.
    crate::store::atomic::write_atomic(&path, crate::config::EXAMPLE.as_bytes())?;
    println!(
        "Wrote {}: every key commented out at its default. Uncomment what you change; \
         `runner config` shows the values in effect.",
        crate::text::for_terminal(&path.display().to_string())
    );
    Ok(0)
}
