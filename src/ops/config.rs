//! `runner config` (the effective configuration and where each value came from) and `runner
//! init` (write the config with every key commented out at its default).

use std::path::PathBuf;

use serde::Serialize;

use super::Ctx;
use crate::config::{Setting, UnknownKey, settings};
use crate::error::RunnerError;
use crate::policy::invocation::Preset;

/// `runner config --json`: `{"schema": 1, "file", "file_exists", "user_file",
/// "user_file_exists", "settings", "unknown_keys"}`.
#[derive(Debug, Serialize)]
pub struct ConfigReport {
    /// The repository's file.
    pub file: String,
    pub file_exists: bool,
    /// The user's file, or null when neither `XDG_CONFIG_HOME` nor `HOME` gives a place for
    /// one.
    pub user_file: Option<String>,
    pub user_file_exists: bool,
    pub settings: Vec<Setting>,
    pub unknown_keys: Vec<UnknownKey>,
    #[serde(skip)]
    pub path: PathBuf,
    #[serde(skip)]
    pub user_path: Option<PathBuf>,
}

/// `runner config`: nothing to choose (the options are the context's).
#[derive(Debug, Clone, Default)]
pub struct ConfigOptions {}

pub fn config(ctx: &Ctx, _opts: ConfigOptions) -> anyhow::Result<ConfigReport> {
    let files = ctx.ws.config_files();
    let loaded = crate::config::load(&files)?;
    Ok(ConfigReport {
        file: files.repository.display().to_string(),
        file_exists: loaded.repository.is_some(),
        user_file: files.user.as_ref().map(|p| p.display().to_string()),
        user_file_exists: loaded.user.is_some(),
        settings: settings(&loaded.config, &loaded.sources(&files)),
        unknown_keys: loaded.unknown,
        path: files.repository,
        user_path: files.user,
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
