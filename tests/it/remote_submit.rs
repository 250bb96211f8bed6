//! `runner submit` and `runner status --remote` against a real bare repository as the remote
//! (file://), a spec held by a worker's lease, and a hostile remote's refs pushed with plain git.

use crate::common::*;
use serde_json::Value;

/// A bare repository beside `repo`, added as its remote `origin`; its path.
fn with_remote(repo: &TestRepo) -> std::path::PathBuf {
    let bare = repo.tmp.path().join("remote.git");
    git_in(
        repo.tmp.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    let url = format!("file://{}", bare.display());
    repo.git(&["remote", "add", "origin", &url]);
    bare
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

/// A lease commit (empty tree, the lease as JSON) on the remote for `spec`, renewed `ago`
/// seconds ago, lasting 60 s; pushed with plain git as a worker elsewhere would.
fn lease_on_remote(repo: &TestRepo, spec: &str, ago: i64) {
    let renewed = chrono::Utc::now() - chrono::TimeDelta::seconds(ago);
    let lease = crate::fleet_support::lease_json("w7", "build-host", 4242, renewed, 60);
    crate::fleet_support::push_lease(&repo.root, spec, &lease);
}

#[test]
fn submit_publishes_the_folder_and_branch_and_status_remote_shows_them_from_another_clone() {
    let repo = repo_with_fixture_plan("001-a");
    let bare = with_remote(&repo);
    repo.write(
        ".auto-claude/specs/001-a/sessions/s1/output.log",
        "local log",
    );
    repo.git(&["branch", "auto-claude/001-a"]);
    let out = repo.runner(&["submit", "--spec", "001-a", "--json"]);
    assert_exit(&out, 0);
    let report = json(&out);
    let folder = report["folder"].as_str().unwrap().to_string();
    assert_eq!(report["replaced"], Value::Null);
    assert_eq!(
        git_in(&bare, &["rev-parse", "refs/runner/specs/001-a"]).trim(),
        folder
    );
    let files = git_in(&bare, &["ls-tree", "-r", "--name-only", &folder]);
    assert_eq!(files, "implementation_plan.json\nspec.md\n");
    let tip = repo.git(&["rev-parse", "auto-claude/001-a"]);
    assert_eq!(
        git_in(&bare, &["rev-parse", "refs/heads/auto-claude/001-a"]),
        tip
    );
    assert!(git_result(&bare, &["rev-parse", "--verify", "refs/heads/main"]).is_err());

    // Another machine's clone sees it, with nothing of its own changed.
    let other = TestRepo::new();
    other.git(&[
        "remote",
        "add",
        "origin",
        &format!("file://{}", bare.display()),
    ]);
    let out = other.runner(&["status", "--remote", "origin", "--json"]);
    assert_exit(&out, 0);
    let status = json(&out);
    let spec = &status["specs"][0];
    assert_eq!(spec["spec"], "001-a");
    assert_eq!(spec["status"], "planned");
    assert_eq!(spec["chunks"]["total"], 3);
    assert_eq!(spec["branch"], tip.trim());
    assert_eq!(spec["holder"], Value::Null);
    assert!(
        !other.spec_dir("001-a").exists(),
        "status wrote a spec folder"
    );
    let out = other.runner(&["status", "--remote", "origin"]);
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("001-a  planned"), "{}", stdout(&out));

    // Submitted again: the new folder commit's parent is the old one.
    repo.write(".auto-claude/specs/001-a/spec.md", "# 001-a\n\nChanged.\n");
    let out = repo.runner(&["submit", "--spec", "001-a", "--json"]);
    assert_exit(&out, 0);
    let again = json(&out);
    assert_eq!(again["replaced"], folder.as_str());
    let parent = git_in(&bare, &["rev-parse", "refs/runner/specs/001-a^"]);
    assert_eq!(parent.trim(), folder);
}

#[test]
fn a_spec_a_worker_holds_is_refused_and_status_names_the_holder() {
    let repo = repo_with_fixture_plan("001-a");
    let bare = with_remote(&repo);
    assert_exit(&repo.runner(&["submit", "--spec", "001-a"]), 0);
    let before = git_in(&bare, &["rev-parse", "refs/runner/specs/001-a"]);
    lease_on_remote(&repo, "001-a", 5);
    repo.write(".auto-claude/specs/001-a/spec.md", "# changed\n\nMore.\n");
    let out = repo.runner(&["submit", "--spec", "001-a"]);
    assert_exit(&out, 4);
    let err = stderr(&out);
    assert!(err.contains("worker w7 on build-host (pid 4242)"), "{err}");
    assert!(err.contains("heartbeat was"), "{err}");
    assert_eq!(
        git_in(&bare, &["rev-parse", "refs/runner/specs/001-a"]),
        before
    );
    let status = json(&repo.runner(&["status", "--remote", "origin", "--json"]));
    let spec = &status["specs"][0];
    assert_eq!(spec["status"], "running");
    assert_eq!(spec["holder"]["worker"], "w7");
    assert_eq!(spec["holder"]["expired"], false);
    let beat = spec["holder"]["heartbeat_secs"].as_i64().unwrap();
    assert!((5..60).contains(&beat), "{beat}");
    // Expired, the lease no longer holds the spec.
    lease_on_remote(&repo, "001-a", 3600);
    let status = json(&repo.runner(&["status", "--remote", "origin", "--json"]));
    assert_eq!(status["specs"][0]["holder"]["expired"], true);
    assert_eq!(status["specs"][0]["status"], "planned");
    assert_exit(&repo.runner(&["submit", "--spec", "001-a"]), 0);
}

#[test]
fn an_invalid_plan_a_missing_remote_and_an_unreachable_one_are_refused_with_their_codes() {
    let repo = repo_with_fixture_plan("001-a");
    let out = repo.runner(&["submit", "--spec", "001-a"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("git remote -v"), "{}", stderr(&out));
    let out = repo.runner(&["status", "--remote", "nowhere"]);
    assert_exit(&out, 2);
    repo.git(&["remote", "add", "origin", "file:///nonexistent/remote.git"]);
    let out = repo.runner(&["submit", "--spec", "001-a", "--json"]);
    assert_exit(&out, 7);
    assert_eq!(json(&out)["error"]["kind"], "remote");
    repo.write_plan("001-a", "{ not json");
    let out = repo.runner(&["submit", "--spec", "001-a"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("invalid plan"), "{}", stderr(&out));
}

#[test]
fn submit_refuses_to_drop_commits_the_remote_branch_has() {
    let repo = repo_with_fixture_plan("001-a");
    let bare = with_remote(&repo);
    repo.git(&["branch", "auto-claude/001-a"]);
    assert_exit(&repo.runner(&["submit", "--spec", "001-a"]), 0);
    // A worker's chunk lands on the remote's branch.
    repo.git(&["checkout", "-q", "-b", "elsewhere", "auto-claude/001-a"]);
    repo.write("work.txt", "chunk 1");
    repo.git(&["add", "work.txt"]);
    repo.git(&["commit", "-q", "-m", "chunk 1"]);
    repo.git(&[
        "push",
        "-q",
        "origin",
        "elsewhere:refs/heads/auto-claude/001-a",
    ]);
    let theirs = git_in(&bare, &["rev-parse", "refs/heads/auto-claude/001-a"]);
    repo.git(&["checkout", "-q", "main"]);
    let out = repo.runner(&["submit", "--spec", "001-a"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("has commits"), "{}", stderr(&out));
    assert_eq!(
        git_in(&bare, &["rev-parse", "refs/heads/auto-claude/001-a"]),
        theirs
    );
}

#[test]
fn a_hostile_remote_is_shown_as_refused_and_nothing_is_written_outside() {
    let repo = TestRepo::new();
    let bare = with_remote(&repo);
    // A folder whose spec.md is a link to /etc/passwd, and refs whose names are no spec's.
    let link = git_in_with_input(&repo, &["hash-object", "-w", "--stdin"], "/etc/passwd");
    let tree = git_in_with_input(
        &repo,
        &["mktree"],
        &format!("120000 blob {}\tspec.md\n", link.trim()),
    );
    let commit = repo.git(&["commit-tree", tree.trim(), "-m", "evil"]);
    for dst in [
        "refs/runner/specs/001-evil",
        "refs/runner/specs/a/b",
        "refs/runner/specs/-rf",
        "refs/runner/pauses/..x",
    ] {
        let _ = git_result(
            &repo.root,
            &["push", "-q", "origin", &format!("{}:{dst}", commit.trim())],
        );
    }
    assert!(git_result(&bare, &["rev-parse", "refs/runner/specs/001-evil"]).is_ok());
    let out = repo.runner(&["status", "--remote", "origin", "--json"]);
    assert_exit(&out, 0);
    let status = json(&out);
    let specs = status["specs"].as_array().unwrap();
    assert_eq!(specs.len(), 1, "{status}");
    assert_eq!(specs[0]["status"], "refused");
    assert!(
        specs[0]["error"]
            .as_str()
            .unwrap()
            .contains("symbolic link"),
        "{status}"
    );
    let warnings = status["warnings"].to_string();
    assert!(
        warnings.contains("a/b") && warnings.contains("-rf"),
        "{warnings}"
    );
    assert!(!repo.path(".auto-claude/specs").exists());
    assert!(!repo.tmp.path().join("x").exists());
    let text = stdout(&repo.runner(&["status", "--remote", "origin"]));
    assert!(
        text.contains("001-evil") && text.contains("refused"),
        "{text}"
    );
}

/// `git ARGS` in `repo` with `input` on stdin.
fn git_in_with_input(repo: &TestRepo, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("git")
        .args(args)
        .current_dir(&repo.root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).unwrap()
}
