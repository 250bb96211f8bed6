//! The launchers in `deploy/` (Kubernetes, GitHub Actions, systemd) and their check in CI:
//! `scripts/check-launchers` validates them; these tests keep it from dropping out of CI and
//! each launcher from starting anything but `runner worker`.

use std::path::Path;

fn checkout(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn text(rel: &str) -> String {
    std::fs::read_to_string(checkout(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The lines of a shell script that run something: not blank, not a comment.
fn commands(script: &str) -> Vec<String> {
    script
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[test]
fn ci_runs_the_launcher_check() {
    use std::os::unix::fs::PermissionsExt;
    let script = checkout("scripts/check-launchers");
    let mode = std::fs::metadata(&script).unwrap().permissions().mode();
    assert!(
        mode & 0o111 != 0,
        "scripts/check-launchers is not executable"
    );
    let ci = commands(&text(".ci/run"));
    let at = ci.iter().position(|l| l == "scripts/check-launchers");
    assert!(
        at.is_some(),
        ".ci/run does not run scripts/check-launchers: {ci:#?}"
    );
    // Before the tests, which end the script with their totals.
    let tests = ci.iter().position(|l| l.starts_with("scripts/test"));
    assert!(
        at < tests,
        "scripts/check-launchers must run before scripts/test"
    );
    // It checks each launcher the docs describe.
    let check = text("scripts/check-launchers");
    for wanted in [
        "kubernetes-validate\" --strict",
        "--builtin-schema vendor.github-workflows",
        "systemd-analyze verify",
        "launchers/commands.py",
    ] {
        assert!(
            check.contains(wanted),
            "scripts/check-launchers lacks {wanted:?}"
        );
    }
}

#[test]
fn each_launcher_starts_runner_worker() {
    for (rel, wanted) in [
        (
            "deploy/kubernetes/runner-workers.yaml",
            r#"command: ["runner", "worker", "--remote", "origin", "--jobs", "1""#,
        ),
        (
            "deploy/github-actions/runner-workers.yml",
            "runner worker --remote origin --jobs 1 --agent claude --exit-when-idle",
        ),
        (
            "deploy/systemd/runner-worker@.service",
            "ExecStart=/usr/local/bin/runner worker --remote origin --jobs 1",
        ),
    ] {
        assert!(text(rel).contains(wanted), "{rel} does not run {wanted:?}");
    }
    let docs = text("docs/fleet.md");
    for rel in [
        "deploy/kubernetes/runner-workers.yaml",
        "deploy/github-actions/runner-workers.yml",
        "deploy/systemd/runner-worker@.service",
    ] {
        assert!(docs.contains(rel), "docs/fleet.md does not name {rel}");
    }
}

/// Every flag the launchers give `runner worker` is one it takes (and `claude` an agent it
/// knows): a renamed flag would leave every launcher restarting a worker that exits 2.
#[test]
fn the_launchers_flags_are_runner_workers_own() {
    let out = crate::common::runner_command()
        .args(["worker", "--help"])
        .output()
        .unwrap();
    crate::common::assert_exit(&out, 0);
    let help = crate::common::stdout(&out);
    for flag in [
        "--remote <NAME>",
        "--jobs <N>",
        "--agent <NAME>",
        "--exit-when-idle",
    ] {
        assert!(
            help.contains(flag),
            "runner worker --help lacks {flag}:\n{help}"
        );
    }
    assert!(help.contains("claude"), "{help}");
    for rel in [
        "deploy/kubernetes/runner-workers.yaml",
        "deploy/github-actions/runner-workers.yml",
        "deploy/systemd/runner-worker@.service",
    ] {
        let text = text(rel);
        let line = text
            .lines()
            .find(|l| l.contains("runner") && l.contains("worker") && l.contains("--remote"))
            .unwrap();
        for word in line.split(|c: char| c.is_whitespace() || "[]\",".contains(c)) {
            if word.starts_with("--") {
                assert!(help.contains(word), "{rel}: runner worker takes no {word}");
            }
        }
    }
}
