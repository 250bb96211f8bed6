//! An adversarial review of the CLI conventions (issue 9, section 2), against the real binary:
//! each test here failed before the fix beside it.

use std::process::Command;

use crate::common::*;

/// `runner man` documents the nested commands too: `chunk done|fail|show` and their flags
/// (`--reason`, `--notes`), which agents are told to call.
#[test]
fn the_man_page_covers_the_chunk_subcommands() {
    let out = Command::new(RUNNER).arg("man").output().unwrap();
    assert_exit(&out, 0);
    let page = stdout(&out);
    for wanted in [
        "runner chunk done",
        "runner chunk fail",
        "runner chunk show",
        "\\-\\-reason",
        "\\-\\-notes",
    ] {
        assert!(page.contains(wanted), "the man page lacks {wanted:?}");
    }
}
