//! runner never destroys the user's files or writes outside its place: `.git/info/exclude` is
//! extended as bytes, nothing is written through a planted symbolic link, agent logs are capped.

mod common;

use std::os::unix::fs::symlink;

use common::*;

/// Every path committed anywhere in the repository's history.
fn every_committed_path(repo: &TestRepo) -> String {
    repo.git(&["log", "--all", "--name-only", "--format="])
}

#[test]
fn exclude_with_non_utf8_bytes_keeps_every_byte_and_hides_the_secret() {
    let repo = TestRepo::new();
    repo.add_spec("001-keys");
    let original: &[u8] = b"# notes \xff\xfe caf\xe9\n*.key\n# no newline at the end";
    let exclude = repo.path(".git/info/exclude");
    std::fs::write(&exclude, original).unwrap();
    repo.script("core-a * files id.key\n");
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 0);

    let now = std::fs::read(&exclude).unwrap();
    assert!(
        now.starts_with(original),
        "the user's bytes changed: {now:?}"
    );
    let added = String::from_utf8_lossy(&now[original.len()..]).into_owned();
    assert!(added.starts_with('\n'), "{added:?}");
    assert!(added.contains("/.auto-claude/\n") && added.contains("/.worktrees/\n"));
    assert!(repo.worktree().join("id.key").exists());
    let committed = every_committed_path(&repo);
    assert!(
        !committed.contains("id.key"),
        "secret committed: {committed}"
    );
    assert!(committed.contains("work/core-a.txt"), "{committed}");

    // A second run adds nothing.
    assert_exit(&repo.run_spec("001", &[]), 0);
    assert_eq!(std::fs::read(&exclude).unwrap(), now);
}

#[test]
fn crlf_exclude_gets_crlf_lines() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    let original: &[u8] = b"*.key\r\n";
    let exclude = repo.path(".git/info/exclude");
    std::fs::write(&exclude, original).unwrap();
    assert_exit(&repo.run_spec("001", &[]), 0);
    let now = std::fs::read(&exclude).unwrap();
    assert!(now.starts_with(original));
    assert!(
        now.ends_with(b"/.auto-claude/\r\n/.worktrees/\r\n"),
        "{now:?}"
    );
}

#[test]
fn exclude_that_is_a_link_is_not_written_through() {
    let repo = TestRepo::new();
    repo.add_spec("001-x");
    let shared = repo.tmp.path().join("shared-exclude");
    std::fs::write(&shared, b"*.key\n").unwrap();
    let exclude = repo.path(".git/info/exclude");
    std::fs::remove_file(&exclude).ok();
    symlink(&shared, &exclude).unwrap();
    let out = repo.run_spec("001", &[]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(".git/info/exclude") && err.contains("/.auto-claude/"),
        "{err}"
    );
    assert_eq!(std::fs::read(&shared).unwrap(), b"*.key\n");
    // With the lines in the shared file, the link is fine: nothing needs writing.
    std::fs::write(&shared, b"*.key\n/.auto-claude/\n/.worktrees/\n").unwrap();
    assert_exit(&repo.run_spec("001", &[]), 0);
    assert_eq!(
        std::fs::read(&shared).unwrap(),
        b"*.key\n/.auto-claude/\n/.worktrees/\n"
    );
}
