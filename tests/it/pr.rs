//! `runner pr`: a spec's branch pushed to a real bare remote (made to look like GitHub or
//! GitLab with `url.<file>.insteadOf`, so git really pushes), and its pull request opened by a
//! stand-in `gh` or `glab` on `PATH` that records its arguments, the body file and what it was
//! given, and prints what the real tool prints (gh 2.60.0's `pkg/cmd/pr/create/create.go`:
//! the URL alone on stdout off a terminal; its "already exists" error; glab's URL).

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use crate::common::*;

const SPEC: &str = "001-a";

/// The stand-in tool: records into `$FAKE_FORGE_LOG`, answers as `$FAKE_FORGE_MODE` says.
const STAND_IN: &str = r#"#!/bin/bash
log="$FAKE_FORGE_LOG"
mkdir -p "$log"
printf '%s\n' "$@" > "$log/argv"
for a in "$@"; do
  case "$a" in --body-file=*) cp -- "${a#--body-file=}" "$log/body";; esac
done
cat > "$log/stdin"
printf '%s\n' "${GH_PROMPT_DISABLED:-unset}" > "$log/prompt"
if [ -t 0 ] || [ -t 1 ] || [ -t 2 ]; then echo yes > "$log/tty"; fi
case "${FAKE_FORGE_MODE:-ok}" in
  ok) echo "${FAKE_FORGE_URL:-https://github.com/o/r/pull/7}" ;;
  exists)
    printf 'a pull request for branch "auto-claude/001-a" into branch "main" already exists:\nhttps://github.com/o/r/pull/3\n' >&2
    exit 1 ;;
  fail)
    printf 'To get started with GitHub CLI, please run:  gh auth login\nAlternatively, populate the GH_TOKEN environment variable with a GitHub API authentication token.\n' >&2
    exit 4 ;;
esac
"#;

struct Setup {
    repo: TestRepo,
    bare: PathBuf,
    /// Holds the stand-ins (when installed) and links to git and sh: the PATH runner gets.
    bin: PathBuf,
}

impl Setup {
    /// A repository whose remote `origin` is `url` as configured, rewritten by `insteadOf`
    /// to a bare repository beside it.
    fn new(repo: TestRepo, url: &str) -> Setup {
        let bare = repo.tmp.path().join("remote.git");
        git_in(
            repo.tmp.path(),
            &["init", "-q", "--bare", bare.to_str().unwrap()],
        );
        repo.git(&["remote", "add", "origin", url]);
        repo.git(&[
            "config",
            &format!("url.file://{}.insteadOf", bare.display()),
            url,
        ]);
        repo.git(&["push", "-q", "origin", "main"]);
        let bin = repo.tmp.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        // Only what runner needs: a gh or glab of the machine's must not answer for the test.
        for program in ["git", "sh", "bash", "cat", "mkdir", "cp"] {
            let found = which(program);
            std::os::unix::fs::symlink(found, bin.join(program)).unwrap();
        }
        Setup { repo, bare, bin }
    }

    fn install(&self, tool: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.bin.join(tool);
        std::fs::write(&path, STAND_IN).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn log(&self) -> PathBuf {
        self.repo.tmp.path().join("forge-log")
    }

    fn logged(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.log().join(name)).ok()
    }

    fn argv(&self) -> Vec<String> {
        self.logged("argv")
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn pr(&self, args: &[&str], mode: &str) -> Output {
        let mut all = vec!["pr"];
        all.extend_from_slice(args);
        self.repo
            .cmd(&all)
            .env("PATH", &self.bin)
            .env("FAKE_FORGE_LOG", self.log())
            .env("FAKE_FORGE_MODE", mode)
            .env_remove("GH_HOST")
            .env_remove("GITLAB_HOST")
            .output()
            .unwrap()
    }

    fn remote_tip(&self) -> Option<String> {
        git_result(
            &self.bare,
            &[
                "rev-parse",
                "--verify",
                "-q",
                "refs/heads/auto-claude/001-a",
            ],
        )
        .ok()
    }

    fn local_tip(&self) -> String {
        self.repo.git(&["rev-parse", "auto-claude/001-a"])
    }
}

/// `program`'s absolute path on the test's own PATH.
fn which(program: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{program} is not on PATH"))
}

/// The fixture spec built to its end with the fake agent.
fn built() -> TestRepo {
    let repo = repo_with_fixture_plan(SPEC);
    assert_exit(&repo.run_spec(SPEC, &[]), 0);
    repo
}

/// The fixture spec with one of its three chunks done.
fn half_built() -> TestRepo {
    let repo = repo_with_fixture_plan(SPEC);
    repo.write_config("[run]\nmax_sessions = 1\n");
    assert_exit(&repo.run_spec(SPEC, &[]), 5);
    std::fs::remove_file(repo.path(".auto-claude/config.toml")).unwrap();
    repo
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

/// A `[notify]` command that appends its stdin to `notified.jsonl` beside the repository.
fn record_notifications(repo: &TestRepo) -> PathBuf {
    let file = repo.tmp.path().join("notified.jsonl");
    repo.write_config(&format!(
        "[notify]\ncommand = \"cat >> {}\"\n",
        shell_words::quote(&file.display().to_string())
    ));
    file
}

#[test]
fn a_complete_spec_is_pushed_and_gh_opens_its_pull_request() {
    let s = Setup::new(built(), "https://github.com/o/r");
    s.install("gh");
    let notified = record_notifications(&s.repo);
    s.repo.write(
        &format!(".auto-claude/specs/{SPEC}/requirements.json"),
        r#"{"task_description": "Add the \u001b[31mlogin\u001b[0m page\nwith more lines"}"#,
    );
    let out = s.pr(&["--spec", SPEC, "--json"], "ok");
    assert_exit(&out, 0);
    // The branch really is on the remote, under its own name.
    assert_eq!(s.remote_tip().as_deref(), Some(s.local_tip().as_str()));
    let body_file = s.repo.spec_dir(SPEC).join("pr-body.md");
    assert_eq!(
        s.argv(),
        [
            "pr",
            "create",
            "--repo=o/r",
            "--base=main",
            "--head=auto-claude/001-a",
            "--title=Add the [31mlogin[0m page",
            &format!("--body-file={}", body_file.display()),
        ]
    );
    assert!(!body_file.exists(), "the body file is removed after");
    let body = s.logged("body").unwrap();
    for row in [
        "| `core-a` | Build part A | completed | none |",
        "| `core-b` | Build part B | completed | `test -f work/core-b.txt`: passed |",
        "| `polish` | Polish it | completed | none |",
    ] {
        assert!(body.contains(row), "{row:?} not in the body:\n{body}");
    }
    assert!(body.contains("3/3 chunks completed"), "{body}");
    assert!(body.contains("**Cost:**"), "{body}");
    // Never a prompt: gh's own switch, and no terminal anywhere.
    assert_eq!(s.logged("prompt").as_deref(), Some("1\n"));
    assert_eq!(s.logged("tty"), None);
    assert_eq!(s.logged("stdin").as_deref(), Some(""));
    let report = json(&out);
    assert_eq!(report["pull_request"], "opened");
    assert_eq!(report["url"], "https://github.com/o/r/pull/7");
    assert_eq!(report["push"], "create");
    assert_eq!(report["tool"], "gh");
    assert_eq!(report["base_branch"], "main");
    assert_eq!(report["remote_url"], "https://github.com/o/r");
    assert_eq!(
        (report["done"].clone(), report["total"].clone()),
        (3.into(), 3.into())
    );
    // [notify] is told, with the URL.
    let note: Value = serde_json::from_str(
        std::fs::read_to_string(&notified)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(note["event"], "pr_opened");
    assert_eq!(note["url"], "https://github.com/o/r/pull/7");
    assert_eq!(note["run_id"], Value::Null);
    assert_eq!(note["spec"], SPEC);
}

#[test]
fn an_open_pull_request_is_reported_and_the_push_only_ever_fast_forwards() {
    let s = Setup::new(built(), "git@github.com:o/r.git");
    s.install("gh");
    let notified = record_notifications(&s.repo);
    assert_exit(&s.pr(&["--spec", SPEC], "ok"), 0);
    std::fs::remove_file(&notified).unwrap();
    // Nothing new: up to date, and gh says one is open already.
    let out = s.pr(&["--spec", SPEC], "exists");
    assert_exit(&out, 0);
    crate::assert_screen!(s.repo, stdout(&out), @r"
    auto-claude/001-a on origin is up to date (at [commit]).
    A pull request for auto-claude/001-a is open already: https://github.com/o/r/pull/3
    ");
    assert!(!notified.exists(), "no notification for one opened before");
    // A new local commit: a fast-forward.
    let slot = s.repo.worktree();
    std::fs::write(slot.join("more.txt"), "more\n").unwrap();
    git_in(&slot, &["add", "more.txt"]);
    git_in(&slot, &["commit", "-q", "-m", "more"]);
    let out = s.pr(&["--spec", SPEC, "--json"], "exists");
    assert_exit(&out, 0);
    assert_eq!(json(&out)["push"], "fast_forward");
    assert_eq!(s.remote_tip().as_deref(), Some(s.local_tip().as_str()));
    // Someone else's commit on the remote's branch: never forced (exit 7), nothing moves.
    let other = s.repo.tmp.path().join("other");
    git_in(
        s.repo.tmp.path(),
        &[
            "clone",
            "-q",
            s.bare.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    git_in(&other, &["checkout", "-q", "auto-claude/001-a"]);
    std::fs::write(other.join("theirs.txt"), "theirs\n").unwrap();
    git_in(&other, &["add", "theirs.txt"]);
    git_in(
        &other,
        &[
            "-c",
            "user.name=O",
            "-c",
            "user.email=o@x",
            "commit",
            "-q",
            "-m",
            "theirs",
        ],
    );
    git_in(&other, &["push", "-q", "origin", "auto-claude/001-a"]);
    let theirs = s.remote_tip().unwrap();
    std::fs::remove_dir_all(s.log()).unwrap();
    let out = s.pr(&["--spec", SPEC], "ok");
    assert_exit(&out, 7);
    assert!(
        stderr(&out).contains("runner never forces a push"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("git log auto-claude/001-a..FETCH_HEAD"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.remote_tip(), Some(theirs));
    assert!(s.argv().is_empty(), "gh must not run after a refused push");
}

#[test]
fn a_spec_that_is_not_complete_opens_only_a_draft() {
    let s = Setup::new(half_built(), "https://github.com/o/r");
    s.install("gh");
    let out = s.pr(&["--spec", SPEC], "ok");
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("the spec is not complete (1/3 chunks done)"),
        "{err}"
    );
    assert!(err.contains("runner pr --spec 001-a --draft"), "{err}");
    assert_eq!(s.remote_tip(), None, "nothing pushed");
    assert!(s.argv().is_empty());
    let out = s.pr(&["--spec", SPEC, "--draft", "--json"], "ok");
    assert_exit(&out, 0);
    assert_eq!(s.argv().last().map(String::as_str), Some("--draft"));
    assert_eq!(json(&out)["draft"], true);
    let body = s.logged("body").unwrap();
    assert!(body.contains("1/3 chunks completed"), "{body}");
    assert!(
        body.contains("| `polish` | Polish it | pending | none |"),
        "{body}"
    );
}

#[test]
fn without_gh_the_page_that_opens_one_is_printed() {
    let s = Setup::new(built(), "https://github.com/o/r.git");
    let notified = record_notifications(&s.repo);
    let out = s.pr(&["--spec", SPEC], "ok");
    assert_exit(&out, 0);
    crate::assert_screen!(s.repo, stdout(&out), @r"
    Pushed auto-claude/001-a to origin (a new branch, at [commit]).
    Open the pull request into main here (install gh or glab to have runner open it): https://github.com/o/r/compare/main...auto-claude/001-a?expand=1
    ");
    assert_eq!(s.remote_tip().as_deref(), Some(s.local_tip().as_str()));
    assert!(!notified.exists(), "nothing was opened: no pr_opened");
}

#[test]
fn glab_opens_a_merge_request_on_gitlab() {
    let s = Setup::new(built(), "https://gitlab.com/g/sub/r.git");
    s.install("glab");
    s.install("gh");
    let out = s
        .repo
        .cmd(&["pr", "--spec", SPEC, "--json"])
        .env("PATH", &s.bin)
        .env("FAKE_FORGE_LOG", s.log())
        .env(
            "FAKE_FORGE_URL",
            "https://gitlab.com/g/sub/r/-/merge_requests/4",
        )
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let argv = s.argv();
    assert_eq!(
        argv[..6],
        [
            "mr",
            "create",
            "--repo=g/sub/r",
            "--source-branch=auto-claude/001-a",
            "--target-branch=main",
            "--title=001-a",
        ]
    );
    assert!(
        argv.iter()
            .any(|a| a.starts_with("--description=Built by runner"))
    );
    assert!(argv.contains(&"--yes".to_string()));
    let report = json(&out);
    assert_eq!(report["tool"], "glab");
    assert_eq!(
        report["url"],
        "https://gitlab.com/g/sub/r/-/merge_requests/4"
    );
}

#[test]
fn another_host_is_pushed_to_and_no_tool_is_run() {
    let s = Setup::new(built(), "https://git.example.org/o/r.git");
    s.install("gh");
    s.install("glab");
    let out = s.pr(&["--spec", SPEC, "--json"], "ok");
    assert_exit(&out, 0);
    let report = json(&out);
    assert_eq!(report["pull_request"], "no_tool_known");
    assert_eq!(report["url"], Value::Null);
    assert!(s.argv().is_empty(), "neither gh nor glab ran");
    assert_eq!(s.remote_tip().as_deref(), Some(s.local_tip().as_str()));
    let out = s.pr(&["--spec", SPEC], "ok");
    assert!(
        stdout(&out).contains(
            "runner knows no pull request tool for origin (https://git.example.org/o/r.git)"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_failing_gh_exits_7_with_its_words_and_the_page() {
    let s = Setup::new(built(), "https://github.com/o/r");
    s.install("gh");
    let out = s.pr(&["--spec", SPEC], "fail");
    assert_exit(&out, 7);
    let err = stderr(&out);
    assert!(
        err.contains("the branch was pushed, but gh did not open the pull request"),
        "{err}"
    );
    assert!(err.contains("gh auth login"), "{err}");
    assert!(
        err.contains("https://github.com/o/r/compare/main...auto-claude/001-a?expand=1"),
        "{err}"
    );
    assert!(err.contains("pr.log"), "{err}");
    assert_eq!(s.remote_tip().as_deref(), Some(s.local_tip().as_str()));
    let log = std::fs::read_to_string(s.repo.spec_dir(SPEC).join("pr.log")).unwrap();
    assert!(log.contains("GH_TOKEN"), "{log}");
}

#[test]
fn a_remote_that_is_not_configured_is_bad_input() {
    let s = Setup::new(built(), "https://github.com/o/r");
    let out = s.pr(&["--spec", SPEC, "--remote", "upstream"], "ok");
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("no remote \"upstream\""),
        "{}",
        stderr(&out)
    );
}

/// A lease on the remote for the spec, as a worker writes it, renewed at `renewed_at` for a
/// minute.
fn plant_lease(s: &Setup, renewed_at: chrono::DateTime<chrono::Utc>) {
    let lease = crate::fleet_support::lease_json("w1", "host-a", 42, renewed_at, 60);
    let commit = crate::fleet_support::lease_commit(&s.bare, &lease);
    git_in(
        &s.bare,
        &["update-ref", "refs/runner/leases/001-a", &commit],
    );
}

#[test]
fn a_spec_a_worker_holds_is_not_pushed_until_its_lease_expires() {
    let s = Setup::new(built(), "https://github.com/o/r");
    s.install("gh");
    // A live lease: renewed now, for a minute (one renewed far ahead is not believed).
    let now = chrono::Utc::now();
    let until =
        (now + chrono::TimeDelta::seconds(60)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    plant_lease(&s, now);
    let out = s.pr(&["--spec", SPEC], "ok");
    assert_exit(&out, 4);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("worker w1 on host-a holds it until {until}")),
        "{err}"
    );
    assert_eq!(s.remote_tip(), None, "nothing pushed");
    assert!(s.argv().is_empty(), "gh must not run");
    // An expired lease is nobody's: the branch is pushed.
    plant_lease(&s, now - chrono::TimeDelta::seconds(120));
    assert_exit(&s.pr(&["--spec", SPEC], "ok"), 0);
    assert_eq!(s.remote_tip().as_deref(), Some(s.local_tip().as_str()));
}
