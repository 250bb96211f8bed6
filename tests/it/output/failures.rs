//! Failures that say why, once: output that could not be written to stdout is an error (a
//! closed pipe stays quiet).

use super::*;

// ---------------------------------------------------------------------------------------------
// Output that could not be written

/// `/dev/full`: every write to it fails with ENOSPC, as on a full disk.
fn full_disk() -> std::process::Stdio {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full (Linux)")
        .into()
}

/// Commands whose whole answer is on stdout.
const REPORTS: &[&[&str]] = &[
    &["man"],
    &["--help"],
    &["completions", "bash"],
    &["status", "--json"],
    &["new", "Add a login page", "--json"],
];

#[test]
fn a_report_that_could_not_be_written_to_stdout_is_an_error() {
    for args in REPORTS {
        let repo = TestRepo::new();
        repo.add_spec("001-there");
        let out = repo.cmd(args).stdout(full_disk()).output().unwrap();
        assert_ne!(out.status.code(), Some(101), "runner {args:?} panicked");
        assert_eq!(
            out.status.code(),
            Some(1),
            "runner {args:?}: {}",
            stderr(&out)
        );
        let err = stderr(&out);
        assert!(
            err.contains("runner: ") && err.contains("stdout") && err.contains("No space left"),
            "runner {args:?}: {err}"
        );
        assert_eq!(
            err.matches("stdout").count(),
            1,
            "said once: runner {args:?}: {err}"
        );
    }
}

#[test]
fn a_report_into_a_closed_pipe_stays_quiet_and_succeeds() {
    for args in REPORTS {
        let repo = TestRepo::new();
        repo.add_spec("001-there");
        let out = repo.cmd(args).stdout(closed_pipe()).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "runner {args:?}: {}",
            stderr(&out)
        );
        assert!(
            !stderr(&out).contains("stdout"),
            "runner {args:?}: {}",
            stderr(&out)
        );
    }
}
