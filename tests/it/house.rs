//! House rules on the files themselves: no source file over 800 lines, no test file over 1,000;
//! every runner a test starts is isolated from the user's own config.

use std::path::{Path, PathBuf};

const MAX_SOURCE_LINES: usize = 800;
const MAX_TEST_LINES: usize = 1_000;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// A file of tests: everything under `tests/`, and in `src/` a `tests.rs`, a `*_tests.rs` or a
/// file in a `tests/` folder (a source file's own `#[cfg(test)]` block counts as source).
fn is_test_file(rel: &Path) -> bool {
    let name = rel.file_name().unwrap().to_string_lossy();
    rel.starts_with("tests")
        || name == "tests.rs"
        || name.ends_with("_tests.rs")
        || rel.components().any(|c| c.as_os_str() == "tests")
}

#[test]
fn no_source_file_over_800_lines_and_no_test_file_over_1000() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut too_long = Vec::new();
    for path in &files {
        let rel = path.strip_prefix(root).unwrap();
        let lines = std::fs::read_to_string(path).unwrap().lines().count();
        let max = if is_test_file(rel) {
            MAX_TEST_LINES
        } else {
            MAX_SOURCE_LINES
        };
        if lines > max {
            too_long.push(format!(
                "{} has {lines} lines (at most {max})",
                rel.display()
            ));
        }
    }
    assert!(files.len() > 100, "found only {} files", files.len());
    assert!(
        too_long.is_empty(),
        "split these by subject:\n{}",
        too_long.join("\n")
    );
}

#[test]
fn every_test_module_says_in_one_line_what_belongs_there() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let silent: Vec<String> = files
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            !text.starts_with("//! ")
        })
        .map(|path| path.strip_prefix(&dir).unwrap().display().to_string())
        .collect();
    assert!(
        silent.is_empty(),
        "these tests/it files do not open with a `//!` line saying what belongs there: {silent:?}"
    );
}

/// Programs a test may start with a bare `Command::new`: none of them starts runner.
/// Anything else (runner itself, a shell or wrapper that runs it, a fixture agent that calls
/// `runner chunk`) goes through `common::isolated`/`runner_command`, which point
/// `XDG_CONFIG_HOME` at an empty folder: a developer's own `~/.config/runner/config.toml` must
/// not change what a test sees.
const STARTS_NO_RUNNER: [&str; 10] = [
    "git", "mkfifo", "flock", "sleep", "hostname", "cp", "mount", "umount", "python3", "node",
];

#[test]
fn every_runner_a_test_starts_is_isolated_from_the_users_config() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let mut bare = Vec::new();
    // common.rs builds the isolated commands; this file names the pattern it looks for.
    let exempt = |p: &&PathBuf| p.ends_with("common.rs") || p.ends_with("house.rs");
    for path in files.iter().filter(|p| !exempt(p)) {
        let text = std::fs::read_to_string(path).unwrap();
        for (n, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("Command::new(") {
                let arg = &line[at + "Command::new(".len()..];
                let literal = arg
                    .strip_prefix('"')
                    .and_then(|rest| rest.split_once('"'))
                    .map(|(name, _)| name);
                if !literal.is_some_and(|name| STARTS_NO_RUNNER.contains(&name)) {
                    let rel = path.strip_prefix(&dir).unwrap().display();
                    bare.push(format!("tests/it/{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        bare.is_empty(),
        "start these with crate::common::runner_command() or isolated(program), so the \
         user's own config cannot leak in:\n{}",
        bare.join("\n")
    );
}

/// The benches start the release binary to time it: through `benches/support`'s
/// `runner_command()`, which points `XDG_CONFIG_HOME` at an empty folder as the tests do, so a
/// user's own config (a `max_sessions`, an agent) cannot change a bench's figures. Only that
/// module names the binary.
#[test]
fn every_runner_a_bench_starts_is_isolated_from_the_users_config() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let support = dir.join("support");
    let mut bare = Vec::new();
    for path in files.iter().filter(|p| !p.starts_with(&support)) {
        let text = std::fs::read_to_string(path).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.contains("CARGO_BIN_EXE_runner") || line.contains("Command::new(RUNNER") {
                let rel = path.strip_prefix(&dir).unwrap().display();
                bare.push(format!("benches/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        bare.is_empty(),
        "start runner with support::runner_command(), so the user's own config cannot leak \
         in:\n{}",
        bare.join("\n")
    );
}
