//! The fast paths of issue 10's git work give exactly the old answers: runner's commit of a
//! chunk stages what `git add -A` stages (one pass over the working tree, trusting the index's
//! stat data), and the worktree the first run creates is what `git worktree add` leaves.

use crate::common::*;

const SPEC: &str = "070-git-speed";

/// A one-chunk plan.
const PLAN: &str = r#"{"feature": "Speed", "workflow_type": "feature", "phases": [
    {"id": "phase-1", "name": "One", "subtasks": [
        {"id": "only", "description": "Change everything", "status": "pending"}]}]}"#;

/// A repository whose main branch holds every kind of entry a commit must handle, and a spec
/// with a one-chunk plan.
fn repo_with_every_kind_of_file() -> TestRepo {
    let repo = TestRepo::new();
    for (path, text) in [
        ("src/a/keep.txt", "keep\n"),
        ("src/a/edit.txt", "old\n"),
        ("src/a/rename-me.txt", "moving\n"),
        ("src/b/delete-me.txt", "going\n"),
        ("src/b/make-exec.sh", "echo hi\n"),
        ("src/b/was-exec.sh", "echo bye\n"),
        ("src/c/becomes-link.txt", "soon a link\n"),
        ("src/c/deep/er/touched.txt", "same content\n"),
        (".gitignore", "*.log\nbuild/\n"),
    ] {
        repo.write(path, text);
    }
    let exec = |p: &str, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(repo.path(p), std::fs::Permissions::from_mode(mode)).unwrap();
    };
    exec("src/b/was-exec.sh", 0o755);
    std::os::unix::fs::symlink("keep.txt", repo.path("src/a/link")).unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "every kind of file"]);
    repo.add_spec(SPEC);
    repo.write_plan(SPEC, PLAN);
    repo
}

/// The agent's changes: every kind a chunk can leave. Before reporting, it stages them into a
/// copy of the worktree's index with git itself (`git add -A`, then `git write-tree`), leaving
/// the real index untouched, and writes that tree's id to `$EXPECT`.
const CHANGES: &str = r#"set -e
printf 'new\n' > src/a/edit.txt
mkdir -p src/moved/here && git mv src/a/rename-me.txt src/moved/here/renamed.txt
rm src/b/delete-me.txt
chmod +x src/b/make-exec.sh
chmod -x src/b/was-exec.sh
rm src/c/becomes-link.txt && ln -s ../a/keep.txt src/c/becomes-link.txt
ln -s ../../README.md src/a/new-link
rm src/a/link && ln -s edit.txt src/a/link
touch -d '2001-01-01' src/c/deep/er/touched.txt
mkdir -p untracked/nested/folder && printf 'fresh\n' > untracked/nested/folder/new.txt
printf 'log\n' > untracked/nested/debug.log
mkdir -p build && printf 'artefact\n' > build/out.bin
printf 'latin-1\n' > "$(printf 'src/caf\351.txt')"
mkdir -p empty/folder
index=$(git rev-parse --git-path index)
cp "$index" "$EXPECT.index"
GIT_INDEX_FILE="$EXPECT.index" git add -A
GIT_INDEX_FILE="$EXPECT.index" git write-tree > "$EXPECT"
runner chunk done "$RUNNER_CHUNK_ID"
"#;

/// Runs the spec with `CHANGES` as its agent; (runner's committed tree, git's tree).
fn run_changes(repo: &TestRepo) -> (String, String) {
    let agent_file = repo.tmp.path().join("agent.sh");
    std::fs::write(&agent_file, CHANGES).unwrap();
    let expect = repo.tmp.path().join("expected-tree");
    let agent = format!("sh {}", agent_file.display());
    let out = repo
        .cmd(&["run", "--spec", SPEC, "--agent-command", &agent])
        .env("EXPECT", &expect)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let expected = std::fs::read_to_string(&expect).unwrap().trim().to_string();
    let branch = format!("auto-claude/{SPEC}");
    let committed = repo.git(&["rev-parse", &format!("{branch}^{{tree}}")]);
    (committed.trim().to_string(), expected)
}

/// Edits, a rename across folders, a deletion, executable bits set and cleared, a file that
/// becomes a symlink, new and changed symlinks, a file whose stat data alone changed, new
/// files in new nested folders, ignored files, a name that is not UTF-8 and an empty folder:
/// runner's commit holds exactly the tree `git add -A` stages, and leaves the worktree clean.
#[test]
fn a_chunks_commit_holds_exactly_what_git_add_all_stages() {
    let repo = repo_with_every_kind_of_file();
    let (committed, expected) = run_changes(&repo);
    assert_eq!(
        committed, expected,
        "runner's tree differs from git add -A's"
    );
    let wt = repo.worktree();
    let status = git_in(&wt, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(status.is_empty(), "left uncommitted:\n{status}");
    let tree = git_in(&wt, &["ls-tree", "-r", "HEAD"]);
    for (mode, path) in [
        ("100755", "src/b/make-exec.sh"),
        ("100644", "src/b/was-exec.sh"),
        ("120000", "src/c/becomes-link.txt"),
        ("100644", "untracked/nested/folder/new.txt"),
        ("100644", "src/moved/here/renamed.txt"),
    ] {
        assert!(
            tree.lines()
                .any(|l| l.starts_with(mode) && l.ends_with(&format!("\t{path}"))),
            "{mode} {path} missing:\n{tree}"
        );
    }
    for gone in [
        "src/b/delete-me.txt",
        "src/a/rename-me.txt",
        "build/out.bin",
    ] {
        assert!(!tree.contains(gone), "{gone} committed:\n{tree}");
    }
}

/// A nested repository the agent creates (an untracked folder with its own `.git`) stops the
/// commit as it did before the fast path (libgit2's `add_all` refused it with the same error;
/// `git add -A` would add it as a gitlink): nothing is committed, none of its files is taken in,
/// and the error names the folder.
#[test]
fn a_nested_repository_stops_the_commit_as_before() {
    let repo = repo_with_every_kind_of_file();
    let agent_file = repo.tmp.path().join("agent.sh");
    std::fs::write(
        &agent_file,
        CHANGES.replace(
            "mkdir -p empty/folder\n",
            "mkdir -p inner && (cd inner && git init -q && printf 'x\\n' > x.txt && git add x.txt && git -c user.name=a -c user.email=a@b commit -q -m x)\n",
        ),
    )
    .unwrap();
    let agent = format!("sh {}", agent_file.display());
    let out = repo
        .cmd(&["run", "--spec", SPEC, "--agent-command", &agent])
        .env("EXPECT", repo.tmp.path().join("expected-tree"))
        .output()
        .unwrap();
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("'inner/'"), "{}", stderr(&out));
    assert_eq!(
        repo.branch_log(&format!("auto-claude/{SPEC}")),
        Vec::<String>::new()
    );
}

/// A second chunk after the first reads only what changed: the index runner wrote holds fresh
/// stat data, so git's own status in the worktree finds nothing to refresh and nothing to
/// report, and a second commit takes in exactly the second change.
#[test]
fn the_index_runner_writes_keeps_gits_stat_cache_fresh() {
    let repo = repo_with_every_kind_of_file();
    let (committed, expected) = run_changes(&repo);
    assert_eq!(committed, expected);
    let wt = repo.worktree();
    // `git diff-files` compares stat data only (no refresh): an entry whose stat data is stale
    // shows as modified there.
    let stale = git_in(&wt, &["diff-files", "--name-only"]);
    assert!(stale.is_empty(), "entries with stale stat data:\n{stale}");
}

/// The worktree the first `runner run` creates is what `git worktree add` leaves: registered,
/// on the spec's branch, `git status` clean, the index's stat data filled (`git diff-files`,
/// which does not refresh, finds nothing), every file of the base there with its mode.
#[test]
fn the_first_runs_worktree_is_clean_registered_and_stat_cached() {
    let repo = repo_with_every_kind_of_file();
    for i in 0..300 {
        repo.write(&format!("many/d{}/f{i}.txt", i % 7), &format!("file {i}\n"));
    }
    // Names that are not UTF-8, a folder's and a file's.
    use std::os::unix::ffi::OsStrExt;
    let odd = repo
        .path("many")
        .join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
    std::fs::create_dir_all(&odd).unwrap();
    std::fs::write(odd.join(std::ffi::OsStr::from_bytes(b"\xff.txt")), "odd\n").unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "many files"]);
    let agent = "sh -c 'runner chunk done \"$RUNNER_CHUNK_ID\"'";
    let out = repo.runner(&["run", "--spec", SPEC, "--agent-command", agent]);
    assert_exit(&out, 0);
    let wt = repo.worktree();
    let list = repo.git(&["worktree", "list", "--porcelain"]);
    assert!(
        list.contains(&format!("branch refs/heads/auto-claude/{SPEC}")),
        "{list}"
    );
    let stale = git_in(&wt, &["diff-files", "--name-only"]);
    assert!(stale.is_empty(), "entries with stale stat data:\n{stale}");
    let status = git_in(&wt, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(status.is_empty(), "{status}");
    let files = git_in(&wt, &["ls-files", "-s"]);
    let base = repo.git(&["ls-files", "-s"]);
    assert_eq!(files, base);
    let link = std::fs::read_link(wt.join("src/a/link")).unwrap();
    assert_eq!(link, std::path::Path::new("keep.txt"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(wt.join("src/b/was-exec.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "{mode:o}");
}
