//! Issue 29 §5, the proof on one machine: a bare repository as the remote (`file://` and
//! `git daemon`), workers in separate clones restarted by a loop when they die, random kill -9,
//! a host cut off by a network namespace; what reaches the remote is read from the remote.

use std::path::PathBuf;

mod audit;
mod chaos;
mod harness;
mod harness_checks;
mod netcut;
mod procs;
mod reports;
mod supervise;

/// Write a test's figures to `target/fleet-proof/<test>.json`, where they can be read after
/// CI (the closing note of issue 29 quotes them); the path.
pub fn write_figures(test: &str, figures: &serde_json::Value) -> PathBuf {
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let dir = target.join("fleet-proof");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{test}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(figures).unwrap() + "\n").unwrap();
    path
}
