//! The watched commit against the full pass: after every commit of a `Stager`, the full pass
//! over the same worktree (a fresh handle, the index read from its file) stages nothing more.

use super::*;
use crate::git::commit::{check_staged_tree, stage_paths, write_tree_lax};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
        .status
        .success()
}

/// The tree `commit_all`'s full pass would commit now, leaving every file as it is.
fn full_tree(root: &Path) -> Oid {
    let repo = Repository::open(root).unwrap();
    let mut index = repo.index().unwrap();
    stage_paths(&repo, &mut index, None, false).unwrap();
    let head_tree = repo.head().unwrap().peel_to_tree().unwrap();
    let mut tree = write_tree_lax(&mut index).unwrap();
    if tree != head_tree.id() && check_staged_tree(&repo, &mut index, &head_tree, tree).unwrap() {
        tree = write_tree_lax(&mut index).unwrap();
    }
    tree
}

fn head_tree(root: &Path) -> Oid {
    let repo = Repository::open(root).unwrap();
    repo.head().unwrap().peel_to_tree().unwrap().id()
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Every entry under `root` but `.git`, files and links first then folders, as relative paths.
fn entries(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut files, mut dirs) = (Vec::new(), Vec::new());
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        for entry in std::fs::read_dir(root.join(&rel)).unwrap().flatten() {
            let path = rel.join(entry.file_name());
            if path == Path::new(".git") {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                dirs.push(path.clone());
                todo.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    dirs.sort();
    (files, dirs)
}

/// Make room for a file at `path`: its folders exist, nothing is in its place.
fn clear_for(root: &Path, path: &Path) {
    let mut at = root.to_path_buf();
    for part in path.parent().unwrap().components() {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| !m.is_dir()) {
            std::fs::remove_file(&at).unwrap();
        }
    }
    std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
    let full = root.join(path);
    match std::fs::symlink_metadata(&full) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(&full).unwrap(),
        Ok(_) => std::fs::remove_file(&full).unwrap(),
        Err(_) => {}
    }
}

const DIRS: [&str; 7] = ["", "a", "a/b", "b", "c/d/e", "ign", "a/ign"];
const NAMES: [&str; 6] = ["f1", "f2", "x.log", "g.sh", "b", "e"];

fn random_path(rng: &mut Rng) -> PathBuf {
    Path::new(rng.pick(&DIRS)).join(rng.pick(&NAMES))
}

/// One thing a hostile agent may do to the worktree.
fn act(root: &Path, rng: &mut Rng, round: usize) {
    let (files, dirs) = entries(root);
    let some_file =
        |rng: &mut Rng| (!files.is_empty()).then(|| files[rng.below(files.len())].clone());
    let some_dir = |rng: &mut Rng| (!dirs.is_empty()).then(|| dirs[rng.below(dirs.len())].clone());
    // Four in five are plain file changes; the rest make the next commit a full pass.
    let plain = [0, 1, 2, 3, 4, 5, 6, 7, 8, 14];
    let hostile = [9, 10, 11, 12, 13, 15, 16];
    let op = match rng.below(5) {
        0 => hostile[rng.below(hostile.len())],
        _ => plain[rng.below(plain.len())],
    };
    match op {
        0 | 1 => {
            let path = random_path(rng);
            clear_for(root, &path);
            std::fs::write(root.join(&path), format!("{round} {}\n", rng.below(3))).unwrap();
        }
        2 => {
            if let Some(f) = some_file(rng) {
                let text = std::fs::read(root.join(&f)).unwrap_or_default();
                let _ = std::fs::write(root.join(&f), text); // the same bytes: stat data only
            }
        }
        3 => {
            if let Some(f) = some_file(rng) {
                std::fs::remove_file(root.join(f)).unwrap();
            }
        }
        4 => {
            if let Some(f) = some_file(rng)
                && let Ok(m) = std::fs::metadata(root.join(&f))
            {
                let mode = m.permissions().mode() ^ 0o111;
                let _ =
                    std::fs::set_permissions(root.join(&f), std::fs::Permissions::from_mode(mode));
            }
        }
        5 => {
            let path = random_path(rng);
            clear_for(root, &path);
            let target = rng.pick(&["f1", "../a", "nowhere", "a/b"]);
            std::os::unix::fs::symlink(target, root.join(&path)).unwrap();
        }
        6 => {
            // A file replaced by a folder.
            if let Some(f) = some_file(rng) {
                std::fs::remove_file(root.join(&f)).unwrap();
                std::fs::create_dir(root.join(&f)).unwrap();
                std::fs::write(root.join(&f).join("inner"), "in\n").unwrap();
            }
        }
        7 => {
            // A folder replaced by a file.
            if let Some(d) = some_dir(rng) {
                std::fs::remove_dir_all(root.join(&d)).unwrap();
                std::fs::write(root.join(&d), "was a folder\n").unwrap();
            }
        }
        8 => {
            if let Some(f) = some_file(rng) {
                let to = random_path(rng);
                if !to.starts_with(&f) {
                    clear_for(root, &to);
                    let _ = std::fs::rename(root.join(&f), root.join(&to));
                }
            }
        }
        9 => {
            if let Some(d) = some_dir(rng) {
                let to = Path::new(rng.pick(&DIRS)).join(format!("m{round}"));
                if !to.starts_with(&d)
                    && std::fs::create_dir_all(root.join(&to).parent().unwrap()).is_ok()
                {
                    let _ = std::fs::rename(root.join(&d), root.join(&to));
                }
            }
        }
        10 => {
            let at = Path::new(rng.pick(&["", "a", "c"])).join(".gitignore");
            let rules = rng.pick(&["", "*.log\n", "ign/\n*.log\n", "b\n", "!x.log\n"]);
            clear_for(root, &at);
            std::fs::write(root.join(at), rules).unwrap();
        }
        11 => {
            let what = rng.pick(&["-A", "a", "*.log", "b"]);
            git(root, &["add", what]);
        }
        12 => {
            if let Some(f) = some_file(rng) {
                git(root, &["rm", "-q", "-r", "--cached", f.to_str().unwrap()]);
            }
        }
        13 => {
            let flags = rng.pick(&["-qam", "-qm"]);
            git(root, &["commit", "--allow-empty", flags, "agent"]);
        }
        14 => {
            let path = Path::new(rng.pick(&DIRS)).join(format!("n{round}/p/q/f"));
            clear_for(root, &path);
            std::fs::write(root.join(path), "deep\n").unwrap();
        }
        15 => {
            let rules = rng.pick(&["", "*.sh\n", "a/\n"]);
            std::fs::write(root.join(".git/info/exclude"), rules).unwrap();
        }
        _ => {
            if let Some(f) = some_file(rng) {
                git(root, &["update-index", "--chmod=+x", f.to_str().unwrap()]);
            }
        }
    }
}

fn new_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    assert!(git(root, &["init", "-q", "-b", "main"]));
    for path in ["f1", "a/f2", "a/b/g.sh", "c/d/e/f1", "ign/f1"] {
        clear_for(root, Path::new(path));
        std::fs::write(root.join(path), path).unwrap();
    }
    std::fs::create_dir_all(root.join(".git/info")).unwrap();
    assert!(git(root, &["add", "-A"]));
    assert!(git(root, &["commit", "-qm", "base"]));
    dir
}

/// Random operations between commits, for many seeds: every watched commit's tree is the one
/// the full pass makes on the same files, and most commits are watched ones.
#[test]
fn every_watched_commit_is_the_full_pass() {
    let (mut commits, mut full) = (0, 0);
    for seed in 1..=40u64 {
        let dir = new_repo();
        let root = dir.path();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut stager = Stager::new(root);
        for round in 0..30 {
            for _ in 0..rng.below(3) + 1 {
                act(root, &mut rng, round);
            }
            let repo = Repository::open(root).unwrap();
            stager.commit(&repo, "chunk", false).unwrap();
            drop(repo);
            assert_eq!(
                head_tree(root),
                full_tree(root),
                "seed {seed} round {round}: the watched commit left something the full pass stages"
            );
        }
        let (c, f) = stager.passes();
        commits += c;
        full += f;
    }
    assert!(
        full * 2 < commits,
        "{full} of {commits} commits were full passes: the watched path was hardly tested"
    );
}

/// inotify's blind spot: a file changed through a hard link from outside the worktree gives
/// no event, so the watched commit misses it; the run's last commit (a full pass) takes it.
#[test]
fn a_change_through_an_outside_hard_link_is_taken_by_the_last_commit() {
    let dir = new_repo();
    let root = dir.path();
    let outside = tempfile::tempdir_in(root.parent().unwrap()).unwrap();
    let mut stager = Stager::new(root);
    std::fs::write(root.join("linked"), "one\n").unwrap();
    let repo = Repository::open(root).unwrap();
    stager.commit(&repo, "first", false).unwrap().unwrap();
    std::fs::hard_link(root.join("linked"), outside.path().join("alias")).unwrap();
    std::fs::write(outside.path().join("alias"), "two\n").unwrap();
    std::fs::write(root.join("f1"), "seen\n").unwrap();
    stager.commit(&repo, "watched", false).unwrap().unwrap();
    assert_eq!(stager.passes(), (2, 1));
    assert_ne!(
        head_tree(root),
        full_tree(root),
        "the blind spot is gone: update the docs"
    );
    stager.commit(&repo, "last", true).unwrap().unwrap();
    assert_eq!(head_tree(root), full_tree(root));
    assert_eq!(stager.passes(), (3, 2));
}

/// After the watch's "unknown" (a folder moved) the commit is the full pass and the watch is
/// started anew, so the commit after it is a watched one again.
#[test]
fn an_unknown_costs_one_full_pass_then_the_watch_is_back() {
    let dir = new_repo();
    let root = dir.path();
    let mut stager = Stager::new(root);
    let commit = |stager: &mut Stager| {
        let repo = Repository::open(root).unwrap();
        stager.commit(&repo, "chunk", false).unwrap();
        assert_eq!(head_tree(root), full_tree(root));
    };
    std::fs::write(root.join("f1"), "1\n").unwrap();
    commit(&mut stager);
    std::fs::rename(root.join("c/d"), root.join("a/moved")).unwrap();
    commit(&mut stager);
    assert_eq!(stager.passes(), (2, 2));
    std::fs::write(root.join("a/moved/e/new"), "n\n").unwrap();
    commit(&mut stager);
    assert_eq!(stager.passes(), (3, 2));
}

/// The named cases a review added: each watched commit against the full pass.
#[path = "stage_named_tests.rs"]
mod named;
