//! The renderers' whole output, text and JSON, as reviewed snapshots (insta): a change of
//! wording or of a JSON field shows up in review as a changed `.snap` file instead of passing
//! unnoticed. Values that differ from run to run (commit ids, times, paths, pids) are replaced
//! by placeholders; everything else is compared exactly.
//!
//! After an intended change: `INSTA_UPDATE=always cargo test --test it -- snapshots::`, then
//! read the diff of `tests/it/snapshots/` before committing it.

use std::process::Output;

use crate::common::*;

/// Two specs: 001 built by a run in which one chunk failed its first attempt; 002 planned by
/// hand with its first chunk marked done by a person.
fn two_specs() -> TestRepo {
    let repo = TestRepo::new();
    repo.add_spec("001-add-login");
    repo.script("core-b 1 fail the tests are red\n");
    assert_exit(&repo.run_spec("001", &[]), 0);
    let dir = repo.add_spec("002-fix-logout");
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
    assert_exit(
        &repo.runner(&["chunk", "done", "core-a", "--spec", "002"]),
        0,
    );
    repo
}

fn snap(name: &str, text: &str) {
    let mut settings = screen_settings();
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, text));
}

/// The JSON on stdout, pretty-printed (one object, or the test fails).
fn json_of(repo: &TestRepo, out: &Output) -> String {
    let value: serde_json::Value = serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("not one JSON object ({e}):\n{}", stdout(out)));
    settled(repo, &serde_json::to_string_pretty(&value).unwrap())
}

fn plain(repo: &TestRepo, args: &[&str]) -> Output {
    let mut cmd = repo.cmd(args);
    cmd.env("NO_COLOR", "1");
    cmd.output().unwrap()
}

#[test]
fn status_text_and_json() {
    let repo = two_specs();
    let out = plain(&repo, &["status"]);
    assert_exit(&out, 0);
    snap("status_text", &settled(&repo, &stdout(&out)));
    let out = plain(&repo, &["status", "--json"]);
    assert_exit(&out, 0);
    snap("status_json", &json_of(&repo, &out));
}

#[test]
fn review_text_and_json() {
    let repo = two_specs();
    let out = plain(&repo, &["review", "--spec", "001"]);
    assert_exit(&out, 0);
    snap("review_text", &settled(&repo, &stdout(&out)));
    let out = plain(&repo, &["review", "--spec", "001", "--json"]);
    assert_exit(&out, 0);
    snap("review_json", &json_of(&repo, &out));
}

#[test]
fn recover_dry_run_and_chunk_show() {
    let repo = two_specs();
    // 002's run dies right after the agent's session for core-b: the chunk is left in progress
    // with its work uncommitted.
    run_killed_at(&repo, "002-fix-logout", "after_coder_session@1");
    let out = plain(&repo, &["recover", "--spec", "002", "--dry-run"]);
    assert_exit(&out, 0);
    snap("recover_dry_run_text", &settled(&repo, &stdout(&out)));
    let out = plain(&repo, &["recover", "--spec", "002", "--dry-run", "--json"]);
    assert_exit(&out, 0);
    snap("recover_dry_run_json", &json_of(&repo, &out));
    let out = plain(&repo, &["chunk", "show", "core-b", "--spec", "002"]);
    assert_exit(&out, 0);
    snap("chunk_show_text", &settled(&repo, &stdout(&out)));
}

#[test]
fn errors_text_and_json() {
    let repo = two_specs();
    let out = plain(&repo, &["review", "--spec", "nope"]);
    assert_exit(&out, 2);
    snap("error_unknown_spec_text", &settled(&repo, &stderr(&out)));
    let out = plain(&repo, &["review", "--spec", "nope", "--json"]);
    assert_exit(&out, 2);
    snap("error_unknown_spec_json", &json_of(&repo, &out));
    let out = plain(&repo, &["review"]);
    assert_exit(&out, 2);
    snap("error_which_spec_text", &settled(&repo, &stderr(&out)));
}

#[test]
fn merge_and_undo_json() {
    let repo = two_specs();
    let out = plain(&repo, &["merge", "--spec", "001", "--yes", "--json"]);
    assert_exit(&out, 0);
    snap("merge_json", &json_of(&repo, &out));
    let out = plain(&repo, &["undo", "--spec", "001", "--json"]);
    assert_exit(&out, 0);
    snap("undo_json", &json_of(&repo, &out));
}

#[test]
fn new_text_and_json() {
    let repo = TestRepo::new();
    let out = plain(&repo, &["new", "Add a login page with JWT"]);
    assert_exit(&out, 0);
    let mut text = stdout(&out);
    let out = plain(&repo, &["new", "add a login page with jwt"]);
    assert_exit(&out, 0);
    text.push_str(&stdout(&out));
    let out = plain(&repo, &["new", "JWT login page"]);
    assert_exit(&out, 2);
    text.push_str(&stderr(&out));
    snap("new_text", &settled(&repo, &text));
    let out = plain(&repo, &["new", "JWT login page", "--json"]);
    assert_exit(&out, 2);
    snap("new_choice_needed_json", &json_of(&repo, &out));
}
