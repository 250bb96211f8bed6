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

/// The agent's changes: every kind a chunk can leave (followed by `STAGE_AS_GIT`).
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
"#;

/// The end of every agent script here: stage the worktree with git itself (`git add -A`) into a
/// copy of the index, leaving the real one untouched, write that tree's id to `$EXPECT`, and
/// report the chunk done. The copy keeps the index's mtime (`cp -p`): git finds an entry whose
/// file changed in the clock tick the index was written in ("racily clean") by comparing with
/// the index file's own mtime, and a fresh copy's later mtime hid such a change from this
/// yardstick (under load the tests failed with runner's tree right and git's wrong).
const STAGE_AS_GIT: &str = r#"index=$(git rev-parse --git-path index)
cp -p "$index" "$EXPECT.index"
GIT_INDEX_FILE="$EXPECT.index" git add -A
GIT_INDEX_FILE="$EXPECT.index" git write-tree > "$EXPECT"
runner chunk done "$RUNNER_CHUNK_ID"
"#;

/// Runs the spec with the shell script `script` as its agent, which finds in `$EXPECT` a path
/// to write what it expects to; the run must succeed. Returns that path.
fn run_script(repo: &TestRepo, script: &str) -> std::path::PathBuf {
    let agent_file = repo.tmp.path().join("agent.sh");
    std::fs::write(&agent_file, script).unwrap();
    let expect = repo.tmp.path().join("expected-tree");
    let agent = format!("sh {}", agent_file.display());
    let out = repo
        .cmd(&["run", "--spec", SPEC, "--agent-command", &agent])
        .env("EXPECT", &expect)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    expect
}

/// Runs the spec with `CHANGES` as its agent; (runner's committed tree, git's tree).
fn run_changes(repo: &TestRepo) -> (String, String) {
    let expect = run_script(repo, &format!("{CHANGES}{STAGE_AS_GIT}"));
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
        ) + STAGE_AS_GIT,
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
    // The agent's last write is a clock tick older than the index runner writes: a file changed
    // in the same tick as the index is "racily clean", and git and libgit2 both keep such an
    // entry's stat data stale on purpose, so that its content is read next time.
    let expect = run_script(&repo, &format!("{CHANGES}{STAGE_AS_GIT}sleep 0.1\n"));
    let expected = std::fs::read_to_string(&expect).unwrap().trim().to_string();
    let committed = repo.git(&["rev-parse", &format!("auto-claude/{SPEC}^{{tree}}")]);
    assert_eq!(committed.trim(), expected);
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
    assert_like_git_worktree_add(&repo);
    let wt = repo.worktree();
    let link = std::fs::read_link(wt.join("src/a/link")).unwrap();
    assert_eq!(link, std::path::Path::new("keep.txt"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(wt.join("src/b/was-exec.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "{mode:o}");
}

/// A two-chunk plan.
const TWO_CHUNKS: &str = r#"{"feature": "Speed", "workflow_type": "feature", "phases": [
    {"id": "phase-1", "name": "One", "subtasks": [
        {"id": "one", "description": "First", "status": "pending"},
        {"id": "two", "description": "Second", "status": "pending"}]}]}"#;

/// Chunk one leaves changes; chunk two, started within the same second as runner's commit of
/// chunk one, rewrites files with the same size: one edited as is (racily clean against the
/// index runner just wrote), one whose mtime is put back exactly with `touch -r` (only its
/// ctime tells), a tracked file the ignore rules match, a file that becomes a folder, a folder
/// that becomes a file, a whole folder deleted, a case-only rename and a file with CRLF under a
/// `text` attribute. Each commit holds exactly what `git add -A` stages.
const RACY: &str = r#"set -e
index=$(git rev-parse --git-path index)
if [ "$RUNNER_CHUNK_ID" = one ]; then
  printf 'one-1\n' > racy.txt
  printf 'one-2\n' > restored.txt
else
  cp -p restored.txt "$EXPECT.ref"
  printf 'two-1\n' > racy.txt
  printf 'two-2\n' > restored.txt
  touch -r "$EXPECT.ref" restored.txt
  printf 'changed\n' > tracked.log
  rm src/a/keep.txt && mkdir src/a/keep.txt && printf 'inside\n' > src/a/keep.txt/now-a-folder
  rm -r src/c/deep && printf 'was a folder\n' > src/c/deep
  rm -r src/b
  git mv src/a/edit.txt src/a/EDIT.txt
  printf 'dos\r\nlines\r\n' > win.crlf
fi
cp -p "$index" "$EXPECT.index"
GIT_INDEX_FILE="$EXPECT.index" git add -A
GIT_INDEX_FILE="$EXPECT.index" git write-tree > "$EXPECT.$RUNNER_CHUNK_ID"
runner chunk done "$RUNNER_CHUNK_ID"
"#;

#[test]
fn racy_and_reshaped_changes_are_committed_as_git_add_all_stages_them() {
    let repo = repo_with_every_kind_of_file();
    repo.write("tracked.log", "tracked\n");
    repo.write(".gitattributes", "*.crlf text\n");
    repo.git(&["add", "-f", "tracked.log", ".gitattributes"]);
    repo.git(&["commit", "-q", "-m", "a tracked ignored file, attributes"]);
    repo.write_plan(SPEC, TWO_CHUNKS);
    let expect = run_script(&repo, RACY);
    let branch = format!("auto-claude/{SPEC}");
    for (chunk, rev) in [("one", format!("{branch}~1")), ("two", branch.clone())] {
        let expected = std::fs::read_to_string(format!("{}.{chunk}", expect.display())).unwrap();
        let committed = repo.git(&["rev-parse", &format!("{rev}^{{tree}}")]);
        assert_eq!(
            committed.trim(),
            expected.trim(),
            "chunk {chunk}: runner's tree differs from git add -A's:\n{}",
            repo.git(&["diff", "--stat", expected.trim(), committed.trim()])
        );
    }
    // Both sides saw the same-size rewrites (git through its racy-entry check and the ctime).
    for (file, text) in [("racy.txt", "two-1\n"), ("restored.txt", "two-2\n")] {
        assert_eq!(repo.git(&["show", &format!("{branch}:{file}")]), text);
    }
    let wt = repo.worktree();
    let status = git_in(&wt, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(status.is_empty(), "left uncommitted:\n{status}");
}

/// A base large enough for the parallel checkout, holding what threads could trip over: a file,
/// a file with a dot and a folder sharing a prefix (`x`, `x.b`, `x-d/`, `xy/`), symlinks into
/// folders another thread writes, executable files, a path of 250-byte names.
fn repo_for_a_parallel_checkout() -> TestRepo {
    let repo = repo_with_every_kind_of_file();
    for i in 0..400 {
        repo.write(&format!("many/d{}/f{i}.txt", i % 9), &format!("file {i}\n"));
    }
    for (path, text) in [
        ("x", "x\n"),
        ("x.b", "x.b\n"),
        ("x-d/y", "y\n"),
        ("xy/z", "z\n"),
    ] {
        repo.write(path, text);
    }
    let long = "n".repeat(250);
    repo.write(&format!("{long}/{long}/{long}.txt"), "long\n");
    std::os::unix::fs::symlink("many/d8", repo.path("a-link-to-a-folder")).unwrap();
    std::os::unix::fs::symlink("../d1/f1.txt", repo.path("many/d0/up")).unwrap();
    std::os::unix::fs::symlink("/etc", repo.path("many/d5/outside")).unwrap();
    for i in (0..400).step_by(37) {
        use std::os::unix::fs::PermissionsExt;
        let p = repo.path(&format!("many/d{}/f{i}.txt", i % 9));
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // Names a pathspec would read as patterns, and a gitlink (a submodule never initialised).
    for name in [
        "w[1].txt",
        "star*.txt",
        "!bang",
        "back\\slash",
        "new\nline",
        " lead",
        "q?",
    ] {
        repo.write(&format!("many/d4/{name}"), "literal\n");
    }
    repo.git(&["add", "-A"]);
    let head = repo.git(&["rev-parse", "HEAD"]);
    let gitlink = format!("160000,{},many/d6/sub", head.trim());
    repo.git(&["update-index", "--add", "--cacheinfo", &gitlink]);
    repo.git(&["commit", "-q", "-m", "many files"]);
    repo
}

/// What `git worktree add` leaves: the worktree registered on the spec's branch, clean, its
/// index's stat data filled, every entry of the base there with its mode.
fn assert_like_git_worktree_add(repo: &TestRepo) {
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
    assert_eq!(
        git_in(&wt, &["ls-files", "-s"]),
        repo.git(&["ls-files", "-s"])
    );
    let fsck = repo.git(&["worktree", "prune", "--dry-run", "-v"]);
    assert!(fsck.is_empty(), "{fsck}");
}

/// A parallel checkout killed midway (after 150 of its files, the threads' files interleaved),
/// then `runner run` again: the half-created worktree is redone and ends as `git worktree add`
/// leaves one.
#[test]
fn a_parallel_checkout_killed_midway_is_redone_by_the_next_run() {
    let repo = repo_for_a_parallel_checkout();
    use std::os::unix::process::ExitStatusExt;
    let agent = "sh -c 'runner chunk done \"$RUNNER_CHUNK_ID\"'";
    let out = repo
        .cmd(&["run", "--spec", SPEC, "--agent-command", agent])
        .env("RUNNER_FAILPOINTS", "slot_checkout_file@150")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{}", stderr(&out));
    let out = repo.runner(&["run", "--spec", SPEC, "--agent-command", agent]);
    assert_exit(&out, 0);
    assert_like_git_worktree_add(&repo);
}

/// Without a crash, the same tricky base is checked out in parallel exactly.
#[test]
fn a_parallel_checkout_of_prefixes_links_and_long_paths_is_exact() {
    let repo = repo_for_a_parallel_checkout();
    let agent = "sh -c 'runner chunk done \"$RUNNER_CHUNK_ID\"'";
    let out = repo.runner(&["run", "--spec", SPEC, "--agent-command", agent]);
    assert_exit(&out, 0);
    assert_like_git_worktree_add(&repo);
    let wt = repo.worktree();
    assert_eq!(
        std::fs::read_link(wt.join("a-link-to-a-folder")).unwrap(),
        std::path::Path::new("many/d8")
    );
    assert!(wt.join("many/d8").is_dir() && wt.join("x-d/y").is_file());
}

/// Right after a parallel checkout (the index written in the same second as the files), the
/// agent rewrites checked-out files with the same size, one with its mtime put back; with
/// `core.fileMode` false it also flips an executable bit. The commit holds exactly what
/// `git add -A` stages: both rewrites, no mode change.
#[test]
fn same_size_rewrites_right_after_a_parallel_checkout_are_committed() {
    let repo = repo_for_a_parallel_checkout();
    let script = r#"set -e
cp -p many/d2/f2.txt "$EXPECT.ref"
printf 'FILE 1\n' > many/d1/f1.txt
printf 'FILE 2\n' > many/d2/f2.txt
touch -r "$EXPECT.ref" many/d2/f2.txt
git config core.fileMode false
chmod +x many/d3/f3.txt
"#;
    let expect = run_script(&repo, &format!("{script}{STAGE_AS_GIT}"));
    let branch = format!("auto-claude/{SPEC}");
    let committed = repo.git(&["rev-parse", &format!("{branch}^{{tree}}")]);
    let expected = std::fs::read_to_string(&expect).unwrap();
    assert_eq!(committed.trim(), expected.trim());
    for (file, text) in [
        ("many/d1/f1.txt", "FILE 1\n"),
        ("many/d2/f2.txt", "FILE 2\n"),
    ] {
        assert_eq!(repo.git(&["show", &format!("{branch}:{file}")]), text);
    }
    let mode = repo.git(&["ls-tree", &branch, "many/d3/f3.txt"]);
    assert!(mode.starts_with("100644"), "{mode}");
}

/// The `TREE` extension (git's cache of the index's tree ids) of the index file at `path`, as
/// stored; `None` if the index has none. Index version 2 or 3 entries are skipped by length.
fn cache_tree_of(path: &std::path::Path) -> Option<Vec<u8>> {
    let d = std::fs::read(path).unwrap();
    let be32 = |at: usize| u32::from_be_bytes(d[at..at + 4].try_into().unwrap()) as usize;
    let mut at = 12;
    for _ in 0..be32(8) {
        let flags = u16::from_be_bytes([d[at + 60], d[at + 61]]);
        let fixed = if flags & 0x4000 != 0 { 64 } else { 62 };
        let name = d[at + fixed..].iter().position(|&b| b == 0).unwrap();
        at += (fixed + name + 8) & !7;
    }
    while at + 8 <= d.len() - 20 {
        let size = be32(at + 4);
        if &d[at..at + 4] == b"TREE" {
            return Some(d[at + 8..at + 8 + size].to_vec());
        }
        at += 8 + size;
    }
    None
}

/// The index a parallel checkout writes carries git's tree cache, filled as `git worktree add`
/// fills it (the same bytes): the first commit, runner's or a person's, hashes only the folders
/// that changed instead of every folder of the tree.
#[test]
fn a_parallel_checkouts_index_carries_the_tree_cache_git_writes() {
    let repo = repo_for_a_parallel_checkout();
    let copy = repo.tmp.path().join("index-at-creation");
    let agent = format!(
        "sh -c 'cp \"$(git rev-parse --git-path index)\" {}; runner chunk done \"$RUNNER_CHUNK_ID\"'",
        copy.display()
    );
    let out = repo.runner(&["run", "--spec", SPEC, "--agent-command", &agent]);
    assert_exit(&out, 0);
    let by_git = repo.tmp.path().join("by-git");
    let by_git_str = by_git.display().to_string();
    repo.git(&["worktree", "add", "-q", "--detach", &by_git_str, "main"]);
    let index = git_in(&by_git, &["rev-parse", "--git-path", "index"]);
    let gits = cache_tree_of(&by_git.join(index.trim()));
    let runners = cache_tree_of(&copy);
    let gits = cache_tree_entries(&gits.expect("git's own index has no tree cache"));
    assert!(gits.iter().all(|(_, count, _)| *count >= 0), "{gits:?}");
    let runners = cache_tree_entries(&runners.expect("runner's index has no tree cache"));
    assert_eq!(runners, gits);
}

/// The entries of a `TREE` extension, sorted (git and libgit2 may order a folder's subfolders
/// differently): (folder name, entry count, tree id; none when invalidated, count -1).
fn cache_tree_entries(data: &[u8]) -> Vec<(String, i64, Option<String>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let nul = at + data[at..].iter().position(|&b| b == 0).unwrap();
        let name = String::from_utf8_lossy(&data[at..nul])
            .chars()
            .take(20)
            .collect();
        let nl = nul + data[nul..].iter().position(|&b| b == b'\n').unwrap();
        let counts = String::from_utf8(data[nul + 1..nl].to_vec()).unwrap();
        let count: i64 = counts.split(' ').next().unwrap().parse().unwrap();
        at = nl + 1;
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let id = (count >= 0).then(|| hex(&data[at..at + 20]));
        if count >= 0 {
            at += 20;
        }
        out.push((name, count, id));
    }
    out.sort();
    out
}

/// A base whose tree stores modes git reads but no longer writes (`100664`, group-writable,
/// and `100775`, as old tools left them; `git mktree` keeps them as given): a chunk that
/// changes those files is committed, and the next chunk's check that the branch still holds
/// the work (which compares modes since the executable-bit fix) neither panics nor blocks.
#[test]
fn legacy_file_modes_in_the_base_neither_panic_nor_block_the_history_check() {
    let repo = repo_with_every_kind_of_file();
    let keep = repo.git(&["rev-parse", "HEAD:src/a/keep.txt"]);
    let mut lines = repo.git(&["ls-tree", "HEAD"]);
    lines.push_str(&format!("100775 blob {}\todd.sh\n", keep.trim()));
    lines.push_str(&format!("100664 blob {}\tgroup.txt\n", keep.trim()));
    let listing = repo.tmp.path().join("listing");
    std::fs::write(&listing, lines).unwrap();
    let out = std::process::Command::new("git")
        .arg("mktree")
        .current_dir(&repo.root)
        .stdin(std::fs::File::open(&listing).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let tree = stdout(&out);
    let commit = repo.git(&[
        "commit-tree",
        tree.trim(),
        "-p",
        "HEAD",
        "-m",
        "legacy modes",
    ]);
    repo.git(&["update-ref", "refs/heads/main", commit.trim()]);
    repo.git(&["reset", "-q", "--hard"]);
    repo.write_plan(SPEC, TWO_CHUNKS);
    let script = r#"set -e
if [ "$RUNNER_CHUNK_ID" = one ]; then
  printf 'changed\n' > odd.sh
  printf 'changed\n' > group.txt
else
  printf 'two\n' > two.txt
fi
"#;
    run_script(&repo, &format!("{script}{STAGE_AS_GIT}"));
    let branch = format!("auto-claude/{SPEC}");
    assert_eq!(
        repo.branch_log(&branch).len(),
        2,
        "{:?}",
        repo.branch_log(&branch)
    );
}

/// Twelve chunks.
const TWELVE: &str = r#"{"feature": "Speed", "workflow_type": "feature", "phases": [
    {"id": "phase-1", "name": "One", "subtasks": [
        {"id": "c01", "description": "d", "status": "pending"},
        {"id": "c02", "description": "d", "status": "pending"},
        {"id": "c03", "description": "d", "status": "pending"},
        {"id": "c04", "description": "d", "status": "pending"},
        {"id": "c05", "description": "d", "status": "pending"},
        {"id": "c06", "description": "d", "status": "pending"},
        {"id": "c07", "description": "d", "status": "pending"},
        {"id": "c08", "description": "d", "status": "pending"},
        {"id": "c09", "description": "d", "status": "pending"},
        {"id": "c10", "description": "d", "status": "pending"},
        {"id": "c11", "description": "d", "status": "pending"},
        {"id": "c12", "description": "d", "status": "pending"}]}]}"#;

/// What the agent does in each of the twelve chunks: what a watch of the worktree must see,
/// or know that it cannot (then the commit looks at every file).
const HOSTILE: &str = r#"set -e
exclude="$(git rev-parse --git-common-dir)/info/exclude"
mkdir -p "$(dirname "$exclude")"
case "$RUNNER_CHUNK_ID" in
c01) mkdir -p n1/a/b && echo x > n1/a/b/f && echo y > top.txt && mkdir -p build && echo o > build/out.bin ;;
c02) rm top.txt && mkdir top.txt && echo in > top.txt/inner && chmod +x n1/a/b/f ;;
c03) mv n1 n2 && ln -s n2/a link ;;
c04) printf '*.log\n*.tmp\n' > .gitignore && echo t > x.tmp ;;
c05) echo more > staged.txt && git add staged.txt && echo changed >> staged.txt
     git rm -q --cached src/a/keep.txt ;;
c06) echo own > own.txt && git add own.txt && git -c user.name=a -c user.email=a@b commit -qm "agent own"
     echo after > after.txt ;;
c07) rm -rf top.txt && echo file > top.txt && rm -rf src/c ;;
c08) touch -d 2001-01-01 src/a/edit.txt && printf 'z\n' > "$(printf 'caf\351.txt')" ;;
c09) mkdir -p deep/1/2/3/4 && echo d > deep/1/2/3/4/f && mv deep/1/2 deep/moved ;;
c10) echo 'src/' >> "$exclude" && echo new > src/excluded.txt && chmod -x n2/a/b/f ;;
c11) sed -i '/^src\/$/d' "$exclude" && mkdir .hidden && echo h > .hidden/h ;;
c12) echo last > last.txt ;;
esac
echo "$RUNNER_CHUNK_ID" > "$RUNNER_CHUNK_ID.txt"
EXPECT="$EXPECTS/$RUNNER_CHUNK_ID"
"#;

/// A run whose agent, chunk after chunk, makes files and folders, replaces files by folders
/// and back, moves folders, edits the ignore rules and `info/exclude`, stages, unstages and
/// commits by itself: each chunk's commit holds exactly the tree `git add -A` staged at the end
/// of its session, though most commits look only at the paths the worktree's watch saw change
/// (`git::stage`), and nothing is left uncommitted.
#[test]
fn every_chunks_commit_holds_what_git_add_all_stages_chunk_after_chunk() {
    let repo = repo_with_every_kind_of_file();
    repo.write_plan(SPEC, TWELVE);
    let expects = repo.tmp.path().join("expects");
    std::fs::create_dir(&expects).unwrap();
    let agent_file = repo.tmp.path().join("agent.sh");
    std::fs::write(&agent_file, format!("{HOSTILE}{STAGE_AS_GIT}")).unwrap();
    let agent = format!("sh {}", agent_file.display());
    let out = repo
        .cmd(&["run", "--spec", SPEC, "--agent-command", &agent])
        .env("EXPECTS", &expects)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let log = repo.git(&[
        "log",
        "--format=%T %s",
        &format!("main..auto-claude/{SPEC}"),
    ]);
    for i in 1..=12 {
        let id = format!("c{i:02}");
        let expected = std::fs::read_to_string(expects.join(&id)).unwrap();
        let committed = log
            .lines()
            .find(|l| l.contains(&format!("auto-claude: {id} ")))
            .unwrap_or_else(|| panic!("no commit of {id}:\n{log}"));
        assert_eq!(
            committed.split(' ').next(),
            Some(expected.trim()),
            "{id}'s commit differs from git add -A's tree"
        );
    }
    let status = git_in(
        &repo.worktree(),
        &["status", "--porcelain", "--untracked-files=all"],
    );
    assert!(status.is_empty(), "left uncommitted:\n{status}");
}
