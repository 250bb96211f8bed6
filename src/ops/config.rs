//! `runner config` (the effective configuration and where each value came from) and `runner
//! init` (write the config with every key commented out at its default).

use std::path::PathBuf;

use serde::Serialize;

use super::Ctx;
use crate::config::{Config, Setting, UnknownKey, settings, unknown_keys};
use crate::error::RunnerError;
use crate::policy::invocation::Preset;

/// `runner config --json`: `{"schema": 1, "file", "file_exists", "settings", "unknown_keys"}`.
#[derive(Debug, Serialize)]
pub struct ConfigReport {
    pub file: String,
    pub file_exists: bool,
    pub settings: Vec<Setting>,
    pub unknown_keys: Vec<UnknownKey>,
    #[serde(skip)]
    pub path: PathBuf,
}

/// `runner config`: nothing to choose (the options are the context's).
#[derive(Debug, Clone, Default)]
pub struct ConfigOptions {}

pub fn config(ctx: &Ctx, _opts: ConfigOptions) -> anyhow::Result<ConfigReport> {
    let path = ctx.ws.config_path();
    let (config, table) = Config::load_with_table(&path)?;
    Ok(ConfigReport {
        file: path.display().to_string(),
        file_exists: table.is_some(),
        settings: settings(&config, table.as_ref(), &path),
        unknown_keys: table.as_ref().map(unknown_keys).unwrap_or_default(),
        path,
    })
}

#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    /// Replace a config that is there already.
    pub force: bool,
    /// The agent preset to set (`[agent] preset`); none leaves it commented out.
    pub preset: Option<Preset>,
}

#[derive(Debug, Serialize)]
pub struct InitReport {
    /// The file written.
    pub file: PathBuf,
    pub preset: Option<String>,
}

/// Refuse (exit 2, nothing changed) when the config is there already and `force` is not
/// given: a front end asks its question (which agent) only after this.
pub fn refuse_existing(ctx: &Ctx, force: bool) -> Result<(), RunnerError> {
    let path = ctx.ws.config_path();
    // symlink_metadata: a link (even a dangling one) counts as a file already there.
    if !force && std::fs::symlink_metadata(&path).is_ok() {
        return Err(RunnerError::bad_input(format!(
            "{} exists already; nothing was changed",
            path.display()
        ))
        .with_hint("`runner config` shows what it sets")
        .with_hint("`runner init --force` replaces it with every key at its default"));
    }
    Ok(())
}

pub fn init(ctx: &Ctx, opts: InitOptions) -> anyhow::Result<InitReport> {
    refuse_existing(ctx, opts.force)?;
    let path = ctx.ws.config_path();
    crate::store::safe::create_dirs(&ctx.ws.state_dir)?;
    // Atomic and resolved from the folder's handle: a link at the config's place is replaced,
    // never written through.
    let text = crate::config::example_with_preset(opts.preset);
    crate::store::atomic::write_atomic(&path, text.as_bytes())?;
    Ok(InitReport {
        file: path,
        preset: opts.preset.map(|p| p.to_string()),
    })
}
