//! What every bench that starts runner shares: the binary, started as the tests start it,
//! isolated from the user's own config (`tests/it/house.rs` checks that no bench starts it
//! otherwise).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The binary the bench times (release, as `cargo bench` builds it).
pub const RUNNER: &str = env!("CARGO_BIN_EXE_runner");

/// The user-level config folder (`XDG_CONFIG_HOME`) of every runner a bench starts: an empty
/// folder of the build, so that a `~/.config/runner/config.toml` (a `max_sessions`, another
/// agent, a budget) never changes a bench's figures.
pub fn empty_config_home() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-empty-xdg-config-home");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        panic!("creating {}: {e}", dir.display());
    }
    dir
}

/// runner, isolated from the user's own config.
pub fn runner_command() -> Command {
    let mut cmd = Command::new(RUNNER);
    cmd.env("XDG_CONFIG_HOME", empty_config_home());
    cmd
}
