//! Where the real Auto-Claude plans are, and what a test that needs them does when they are not.
//!
//! The corpus (real `implementation_plan.json` files from Auto-Claude's public repository) is
//! data, not part of this project: it is read from `$RUNNER_AUTO_CLAUDE_PLANS`, else from
//! `../shared/reference/auto-claude-plans` beside the checkout, and
//! `scripts/fetch-auto-claude-plans` rebuilds it. Without it a test that needs it prints a
//! `NOT RUN` line on the terminal (past the test harness's capture) and returns; under CI (`CI`
//! set, as `.ci/run` sets it) the test fails instead. The unit tests in `src/plan/` include this
//! file too, so both test binaries answer alike.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};

/// The variable that names the corpus folder.
pub const ENV: &str = "RUNNER_AUTO_CLAUDE_PLANS";

/// Where the corpus is looked for.
pub fn location() -> PathBuf {
    match std::env::var_os(ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/auto-claude-plans"),
    }
}

/// Every `*.json` directly in `dir` (not `memory-examples/`), sorted; empty if `dir` cannot be
/// read.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut plans: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    plans.sort();
    plans
}

/// Whether a missing corpus fails the test: under CI (`CI` set to anything but empty, `0` or
/// `false`), which has the corpus.
fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// The corpus folder, if it holds at least one plan. If not: under CI the test fails; elsewhere
/// a `NOT RUN` line naming the test goes to the terminal and the caller returns.
pub fn dir() -> Option<PathBuf> {
    let dir = location();
    if !json_files(&dir).is_empty() {
        return Some(dir);
    }
    let thread = std::thread::current();
    let test = thread.name().filter(|n| *n != "main").unwrap_or("a test");
    let why = format!(
        "no Auto-Claude plans at {} (set {ENV} to a folder of them, or run \
         scripts/fetch-auto-claude-plans)",
        dir.display()
    );
    assert!(!required(), "{test}: {why}; CI must have them");
    // Straight to the terminal: libtest captures `eprintln!` of a passing test.
    let _ = writeln!(
        std::io::stderr(),
        "NOT RUN: {test}: the real Auto-Claude plans are missing: {why}"
    );
    None
}

/// Every plan in the corpus, sorted by file name, or `None` (see [`dir`]).
pub fn plans() -> Option<Vec<PathBuf>> {
    dir().map(|dir| json_files(&dir))
}
