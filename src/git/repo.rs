//! Finding the main repository from anywhere (its worktrees included), keeping runner's folders
//! out of git, branches and commits.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use git2::{BranchType, Oid, Repository, Signature, StatusOptions};

use crate::error::RunnerError;
use crate::fs::safe;

/// Paths runner keeps out of git through `.git/info/exclude` (never the user's `.gitignore`).
pub const EXCLUDED: [&str; 2] = ["/.auto-claude/", "/.worktrees/"];

/// The lock taken around reading and extending `.git/info/exclude` (beside it).
const EXCLUDE_LOCK: &str = "exclude.runner-lock";

/// The main repository: the one whose working directory holds `.auto-claude/`.
pub struct MainRepo {
    pub repo: Repository,
    pub root: PathBuf,
}

impl MainRepo {
    /// Find the main repository from `start`, which may be inside one of its worktrees.
    pub fn discover(start: &Path) -> anyhow::Result<MainRepo> {
        let found = Repository::discover(start).map_err(|_| {
            RunnerError::bad_input(format!(
                "{} is not inside a git repository",
                start.display()
            ))
            .with_hint("run runner from your project (or `git init` first)")
        })?;
        // A linked worktree's common dir is the main repository's `.git`.
        let common = found.commondir().to_path_buf();
        let repo = if found.is_worktree() {
            Repository::open(&common)
                .with_context(|| format!("opening main repository at {}", common.display()))?
        } else {
            found
        };
        let root = repo
            .workdir()
            .ok_or_else(|| {
                RunnerError::bad_input(
                    "runner needs a repository with a working tree, not a bare one",
                )
            })?
            .to_path_buf();
        let root = root.canonicalize().unwrap_or(root);
        Ok(MainRepo { repo, root })
    }

    /// Add runner's folders to `.git/info/exclude` if they are not there yet. The file is the
    /// user's: it is read and extended as bytes (whatever its encoding), only ever appended to,
    /// never rewritten, and never written through a link (see `exclude_addition`). Read, check
    /// and append happen under a lock, so two runs starting at once add the block once; an
    /// append that fails (a full disk) is undone, so no partial line is left.
    pub fn ensure_excluded(&self) -> anyhow::Result<()> {
        let info = self.repo.commondir().join("info");
        let path = info.join("exclude");
        let lock_path = info.join(EXCLUDE_LOCK);
        let _lock = crate::fs::FileLock::acquire(&lock_path)
            .with_context(|| format!("locking {}", lock_path.display()))?;
        let current = match crate::fs::safe::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let Some(addition) = exclude_addition(&current) else {
            return Ok(());
        };
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(RunnerError::bad_input(format!(
                "{} is a symbolic link; runner does not write through it",
                path.display(),
            ))
            .with_hint(format!(
                "add these lines to the file it points to (or replace the link with a file) and run again:\n{}",
                EXCLUDED.join("\n")
            ))
            .into());
        }
        crate::failpoint::hit("exclude_before_append");
        safe::append_or_undo(&path, &addition).with_context(|| {
            format!(
                "adding runner's folders to {} (the file is as it was; free some space or add \
                 these lines yourself, then run again:\n{})",
                path.display(),
                EXCLUDED.join("\n")
            )
        })
    }

    /// The main repository's `.git` folder (its index, its lock files).
    pub fn git_dir(&self) -> &Path {
        self.repo.path()
    }

    /// The folder every worktree of the repository shares (`.git` of the main one).
    pub fn common_dir(&self) -> &Path {
        self.repo.commondir()
    }

    /// Git knows a linked worktree of this name (`.git/worktrees/<name>` reads as one).
    pub fn has_worktree(&self, name: &str) -> bool {
        self.repo.find_worktree(name).is_ok()
    }

    /// The branch checked out in the main worktree, if any (not detached, not unborn).
    pub fn current_branch(&self) -> Option<String> {
        head_branch(&self.repo)
    }

    /// The tips of the local branches named `prefix…`, by name, from one pass over the refs
    /// (`branch_tip` of each costs a lookup in the files); `None` if the refs do not list.
    pub fn branch_tips(&self, prefix: &str) -> Option<std::collections::HashMap<String, Oid>> {
        let refs = self
            .repo
            .references_glob(&format!("refs/heads/{prefix}*"))
            .ok()?;
        let mut tips = std::collections::HashMap::new();
        for reference in refs {
            // A ref that does not read is no branch here, as for `branch_tip`.
            let Ok(reference) = reference else { continue };
            let (Some(name), Some(oid)) = (reference.name(), reference.target()) else {
                continue;
            };
            if let Some(branch) = name.strip_prefix("refs/heads/") {
                tips.insert(branch.to_string(), oid);
            }
        }
        Some(tips)
    }

    pub fn branch_tip(&self, name: &str) -> Option<Oid> {
        self.repo
            .find_branch(name, BranchType::Local)
            .ok()?
            .get()
            .target()
    }

    pub fn create_branch(&self, name: &str, at: Oid) -> anyhow::Result<()> {
        let commit = self.repo.find_commit(at)?;
        self.repo
            .branch(name, &commit, false)
            .with_context(|| format!("creating branch {name}"))?;
        Ok(())
    }
}

/// The working tree that holds `start` (its top folder, canonical) and the branch checked out
/// there (none when HEAD is detached or unborn); `None` outside any repository.
pub fn worktree_containing(start: &Path) -> Option<(PathBuf, Option<String>)> {
    let repo = Repository::discover(start).ok()?;
    let top = repo.workdir()?.to_path_buf();
    let top = top.canonicalize().unwrap_or(top);
    Some((top, head_branch(&repo)))
}

/// The git folder of `repo` (a linked worktree's own folder under `.git/worktrees/`).
pub fn git_folder(repo: &Repository) -> &Path {
    repo.path()
}

/// `repo` is a working tree whose checkout never completed (see `unfinished_checkout`).
pub fn checkout_unfinished(repo: &Repository) -> bool {
    unfinished_checkout(repo).is_some()
}

/// The top folder of `repo`'s working tree (none for a bare repository).
pub fn work_folder(repo: &Repository) -> Option<&Path> {
    repo.workdir()
}

/// The author and committer runner uses: the repository's configured identity, else a fixed
/// one, so that commits work on machines with no `user.name` (CI).
pub fn signature(repo: &Repository) -> anyhow::Result<Signature<'static>> {
    match repo.signature() {
        Ok(sig) => Ok(sig.to_owned()),
        Err(_) => Ok(Signature::now("runner", "runner@localhost")?),
    }
}

/// The branch `repo`'s HEAD is on, if any (not detached, not unborn).
pub fn head_branch(repo: &Repository) -> Option<String> {
    let head = repo.head().ok()?;
    if !head.is_branch() {
        return None;
    }
    head.shorthand().map(str::to_string)
}

pub fn head_commit(repo: &Repository) -> anyhow::Result<Oid> {
    let head = repo.head().context("reading HEAD")?;
    head.target()
        .ok_or_else(|| anyhow!("HEAD does not point at a commit"))
}

/// Paths with uncommitted changes, untracked files included, ignored files not.
pub fn dirty_paths(repo: &Repository) -> anyhow::Result<Vec<String>> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(false)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut opts))
        .context("reading git status")?;
    Ok(statuses
        .iter()
        .filter(|s| !s.status().is_ignored())
        .filter_map(|s| s.path().map(str::to_string))
        .collect())
}

/// HEAD's tree, if `repo` is a working tree whose checkout never completed: it has no index
/// file though HEAD has files (git writes the index last).
pub fn unfinished_checkout(repo: &Repository) -> Option<git2::Tree<'_>> {
    if repo.is_bare() || repo.path().join("index").symlink_metadata().is_ok() {
        return None;
    }
    // Unborn or unreadable: nothing was to be checked out.
    let tree = repo.head().and_then(|h| h.peel_to_tree()).ok()?;
    (!tree.is_empty()).then_some(tree)
}

/// Finish a checkout that never completed: a worktree with commits but no index file (git
/// writes the index last, so a checkout killed on its way, or a worktree whose creation was cut
/// off, has none). Staging such a worktree as it is would record every file not yet written as
/// deleted, though no one deleted it. So the files missing from the folder are written from
/// HEAD (files that are there are left as they are) and the index is set to HEAD's tree.
/// Returns whether there was one to finish.
pub fn finish_incomplete_checkout(repo: &Repository) -> anyhow::Result<bool> {
    let Some(tree) = unfinished_checkout(repo) else {
        return Ok(false);
    };
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout
        .safe()
        .recreate_missing(true)
        .allow_conflicts(true)
        .update_index(false);
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))
        .context("writing the files an unfinished checkout left out")?;
    let mut index = repo.index().context("opening the index")?;
    index
        .read_tree(&tree)
        .context("reading HEAD into the index")?;
    index.write().context("writing the index")?;
    Ok(true)
}

/// One line per commit from `tip` back to (excluding) `base`, newest first.
pub fn log_between(repo: &Repository, base: Oid, tip: Oid) -> anyhow::Result<Vec<(Oid, String)>> {
    let mut walk = repo.revwalk()?;
    walk.push(tip)?;
    walk.hide(base)?;
    let mut out = Vec::new();
    for oid in walk {
        let oid = oid?;
        let commit = repo.find_commit(oid)?;
        out.push((oid, commit.summary().unwrap_or("").to_string()));
    }
    Ok(out)
}

/// Open exactly the worktree at `path` — never a repository found higher up, as
/// `Repository::discover` would when the worktree's `.git` file is gone — and check that it is
/// a worktree of the repository whose common dir is `common_dir` with `path` as its working
/// directory. `Err` says, for a person, why it is not.
pub fn open_worktree_exactly(path: &Path, common_dir: &Path) -> Result<Repository, String> {
    let repo = Repository::open_ext(
        path,
        git2::RepositoryOpenFlags::NO_SEARCH,
        std::iter::empty::<&std::ffi::OsStr>(),
    )
    .map_err(|e| {
        format!(
            "{} cannot be opened as a git worktree ({}): its .git file is missing or broken",
            path.display(),
            e.message()
        )
    })?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let workdir_ok = repo.workdir().is_some_and(|w| same(w, path));
    if !workdir_ok || !same(repo.commondir(), common_dir) {
        return Err(format!(
            "{} is not a worktree of this repository any more (its .git points elsewhere)",
            path.display()
        ));
    }
    // A `.git` file saying `gitdir: <repo>/.git` opens the main repository with this folder as
    // its working directory: it must be a linked worktree, registered for this very folder.
    if !is_registered_linked_worktree(&repo, path, common_dir) {
        return Err(format!(
            "{} is not a linked worktree registered for that folder (its .git file points at {}, not at its own record under {}/worktrees)",
            path.display(),
            repo.path().display(),
            common_dir.display()
        ));
    }
    Ok(repo)
}

/// The pattern git reads from one line of an exclude file, as `add_patterns_from_buf` and
/// `trim_trailing_spaces` in git's dir.c do: one CR at the end is dropped, then the trailing
/// spaces that no backslash escapes. Leading whitespace and tabs are part of the pattern, so
/// ` /.auto-claude/` is not runner's pattern.
fn git_pattern(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut end = line.len();
    while end > 0 && line[end - 1] == b' ' {
        end -= 1;
    }
    // An odd run of backslashes before the first trailing space escapes it: it stays.
    let backslashes = line[..end]
        .iter()
        .rev()
        .take_while(|&&b| b == b'\\')
        .count();
    if end < line.len() && backslashes % 2 == 1 {
        end += 1;
    }
    &line[..end]
}

/// Is `repo` (opened at `path`) a linked worktree whose git dir is `<common>/worktrees/<name>`
/// and whose record there (`gitdir`) names `path/.git`?
fn is_registered_linked_worktree(repo: &Repository, path: &Path, common_dir: &Path) -> bool {
    let canon = |p: &Path| p.canonicalize().ok();
    let admin = repo.path();
    if !repo.is_worktree()
        || canon(admin.parent().unwrap_or(admin)) != canon(&common_dir.join("worktrees"))
    {
        return false;
    }
    let Ok(recorded) = std::fs::read(admin.join("gitdir")) else {
        return false;
    };
    let recorded = std::ffi::OsStr::from_bytes(recorded.trim_ascii_end());
    canon(Path::new(recorded)).is_some() && canon(Path::new(recorded)) == canon(&path.join(".git"))
}

/// The bytes to append to an exclude file holding `current` so that every `EXCLUDED` pattern is
/// in it, or `None` if they all are. Lines are compared as bytes by git's own rules
/// (`git_pattern`; a UTF-8 byte-order mark at the start is skipped, as git does), so a file in
/// any encoding is read right. The addition uses the file's line ending (CRLF if it has any)
/// and starts with a line break if the file does not end with one.
pub fn exclude_addition(current: &[u8]) -> Option<Vec<u8>> {
    let text = current.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(current);
    let has = |pattern: &str| {
        text.split(|&b| b == b'\n')
            .any(|line| git_pattern(line) == pattern.as_bytes())
    };
    let missing: Vec<&str> = EXCLUDED.iter().copied().filter(|p| !has(p)).collect();
    if missing.is_empty() {
        return None;
    }
    let eol: &[u8] = if current.windows(2).any(|w| w == b"\r\n") {
        b"\r\n"
    } else {
        b"\n"
    };
    let mut out = Vec::new();
    if current.last().is_some_and(|&b| b != b'\n') {
        out.extend_from_slice(eol);
    }
    out.extend_from_slice(b"# runner: state and build worktrees");
    out.extend_from_slice(eol);
    for p in missing {
        out.extend_from_slice(p.as_bytes());
        out.extend_from_slice(eol);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::exclude_addition;

    const BLOCK: &[u8] = b"# runner: state and build worktrees\n/.auto-claude/\n/.worktrees/\n";

    #[test]
    fn appends_after_any_bytes_and_keeps_them() {
        let current = b"# \xff\xfe latin-1 \xe9\n*.key";
        let add = exclude_addition(current).unwrap();
        assert_eq!(add, [b"\n".as_slice(), BLOCK].concat());
        assert_eq!(exclude_addition(b"").unwrap(), BLOCK);
    }

    #[test]
    fn follows_the_files_crlf_and_finds_its_own_lines() {
        let add = exclude_addition(b"a\r\nb\r\n").unwrap();
        assert!(add.ends_with(b"/.worktrees/\r\n"), "{add:?}");
        assert!(!add.windows(2).any(|w| w[1] == b'\n' && w[0] != b'\r'));
        assert_eq!(
            exclude_addition(b"\xff\r\n/.auto-claude/  \r\n/.worktrees/\r\n"),
            None
        );
        let half = exclude_addition(b"/.worktrees/\n").unwrap();
        assert_eq!(
            half,
            b"# runner: state and build worktrees\n/.auto-claude/\n"
        );
    }

    /// git keeps leading whitespace and tabs in a pattern; it drops one CR and trailing spaces
    /// not escaped by a backslash; it skips a UTF-8 BOM.
    #[test]
    fn reads_lines_by_gits_rules() {
        let mine = |line: &[u8]| {
            let file = [line, b"\n/.worktrees/\n"].concat();
            exclude_addition(&file).is_none()
        };
        assert!(mine(b"/.auto-claude/"));
        assert!(mine(b"/.auto-claude/   "));
        assert!(mine(b"/.auto-claude/ \r"));
        assert!(mine(b"\xEF\xBB\xBF/.auto-claude/"));
        assert!(!mine(b" /.auto-claude/"));
        assert!(!mine(b"\t/.auto-claude/"));
        assert!(!mine(b"/.auto-claude/\t"));
        assert!(!mine(b"/.auto-claude/\r "));
        assert!(!mine(b"/.auto-claude/\\ "));
        assert!(!mine(b"x/.auto-claude/"));
    }
}

/// A commit id read from the plan or a record: exactly 40 (SHA-1) or 64 (SHA-256) hex digits,
/// else `None` — never a shorter prefix git would pad with zeros, never a panic.
pub fn commit_id(text: &str) -> Option<Oid> {
    (matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| Oid::from_str(text).ok())
        .flatten()
}

/// The first 10 characters of an id for a message (whole characters: a recorded id may hold
/// any text).
pub fn short_id(text: &str) -> &str {
    text.char_indices()
        .nth(10)
        .map_or(text, |(end, _)| &text[..end])
}

#[cfg(test)]
mod id_tests {
    use super::*;

    #[test]
    fn commit_ids_are_whole_hex_and_short_ids_whole_characters() {
        let full = "0123456789abcdef0123456789abcdef01234567";
        assert!(commit_id(full).is_some());
        assert!(commit_id("0123456789").is_none());
        assert!(commit_id(&"é".repeat(20)).is_none());
        assert_eq!(short_id(full), "0123456789");
        assert_eq!(short_id(&"é".repeat(20)), "éééééééééé");
        assert_eq!(short_id("ab"), "ab");
    }
}
