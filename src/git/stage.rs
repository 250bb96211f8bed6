//! A run's chunk commits, each looking only at what changed since the one before.
//!
//! `commit_all` looks at every file of the worktree (an lstat of each, a listing of each
//! folder), so a chunk's commit grew with the worktree. A `Stager` lives for the whole run:
//! it watches the worktree's folders (`store::watch`) and stages only the paths whose events
//! it read since its last commit, exactly as `git add -A -- <paths>` would (`stage_paths`),
//! and keeps the index in memory between commits instead of reading its file each time.
//!
//! The full pass (`commit_all`'s) is still made whenever the watch cannot vouch for the rest:
//! - the first commit of the run (the watch starts just before it looks at the files);
//! - the watch answered "unknown" (overflow, a folder moved, a `.gitignore` touched, …) or
//!   could not start (not Linux, more than `MAX_WATCHES` folders, a nested repository, a
//!   `.gitignore` that is a symbolic link);
//! - something changed behind runner's back since its last commit: the index file (the agent
//!   ran `git add`, `git rm --cached`, `git reset`…), HEAD or the branch it names (`git
//!   commit`, `git checkout`), or a file of git's configuration or ignore rules outside the
//!   worktree (`info/exclude`, `core.excludesFile`, the config files), or a setting that
//!   changes what is staged (`core.fileMode`, `core.autocrlf`…, wherever it is set);
//! - every `FULL_EVERY`th commit, and the last commit of a run (`last`).
//!
//! A file staged that has other names (hard links) makes the commit look at every file too: a
//! write through one name changed the others, and no event named them.
//!
//! The last two bound inotify's blind spots: a file changed through a hard link that lives
//! outside the worktree (or whose name is gone by the commit: linked, written through, removed),
//! or through a shared `mmap`, gives no event; such a change is committed
//! by the next full pass (at most `FULL_EVERY` chunks later, by the commit that ends the plan
//! or comes before a stop the loop knows of, else by the next run's first commit), but it may
//! land in a later chunk's commit than the one that made it. A run that ends otherwise (its
//! budget spent, the next chunk failed) leaves such a change uncommitted until then.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use git2::{Oid, Repository};

use super::commit::commit_index;
use super::repo::finish_incomplete_checkout;
use crate::fs::watch::{Changes, Watch};

/// A full pass every this many commits, whatever the watch says.
pub const FULL_EVERY: u64 = 64;

/// One run's chunk commits into one worktree (see the module's comment).
pub struct Stager {
    root: PathBuf,
    watch: Option<Watch>,
    /// The repository handle of the last commit, its index loaded: kept for the next commit.
    repo: Option<Repository>,
    /// What runner saw right after its last commit.
    seen: Option<Seen>,
    commits: u64,
    full: u64,
    /// The watch could not start: tried again only at the periodic full pass.
    unavailable: bool,
    /// How many times a watch was started (or tried).
    starts: u64,
}

/// The files whose change means someone else touched the repository's state or rules.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    head: Option<Oid>,
    files: Vec<Option<[i64; 7]>>,
    /// The settings that change what is staged, as git reads them now: one may come from a
    /// file the configuration includes (`include.path`), which `files` does not name.
    settings: Vec<Option<String>>,
}

/// The settings of git's configuration that change what a file's change stages.
const SETTINGS: [&str; 8] = [
    "core.fileMode",
    "core.symlinks",
    "core.ignoreCase",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.trustctime",
    "core.checkStat",
];

impl Stager {
    /// A stager for the worktree at `root`; nothing is watched before the first commit.
    pub fn new(root: &Path) -> Stager {
        Stager {
            root: root.to_path_buf(),
            watch: None,
            repo: None,
            seen: None,
            commits: 0,
            full: 0,
            unavailable: false,
            starts: 0,
        }
    }

    /// How many commits were made, and how many of them with the full pass.
    pub fn passes(&self) -> (u64, u64) {
        (self.commits, self.full)
    }

    /// How many times a watch of the worktree was started or tried (each lists every folder).
    pub fn watch_starts(&self) -> u64 {
        self.starts
    }

    /// `commit_all` for the worktree `wt` (opened at this stager's root and checked by the
    /// caller), looking only at what changed since this stager's last commit when it can vouch
    /// for the rest. `last`: the run's last commit (always the full pass). The commit is made
    /// through the stager's own handle, kept from the last commit while no one else touched the
    /// repository (so the index is not read again), else opened anew at the same place. After
    /// an error, the next commit starts afresh (a new handle, the full pass).
    pub fn commit(
        &mut self,
        wt: &Repository,
        message: &str,
        last: bool,
    ) -> anyhow::Result<Option<Oid>> {
        let result = self.commit_inner(wt, message, last);
        if result.is_err() {
            self.repo = None;
            self.seen = None;
        }
        result
    }

    fn commit_inner(
        &mut self,
        wt: &Repository,
        message: &str,
        last: bool,
    ) -> anyhow::Result<Option<Oid>> {
        let periodic = self.commits.is_multiple_of(FULL_EVERY);
        // Whether to start the watch (anew) before the full pass: it said "unknown", or there
        // is none yet (one that could not start is tried again at the periodic full pass).
        let (changes, restart) = match self.watch.as_mut() {
            Some(watch) => {
                let changes = watch.drain();
                let unknown = changes == Changes::Unknown;
                (changes, unknown)
            }
            None => (Changes::Unknown, !self.unavailable || periodic),
        };
        let untouched = self.seen.is_some() && self.seen.as_ref() == Seen::of(wt).ok().as_ref();
        let mut paths = match changes {
            Changes::Paths(paths) if untouched && !periodic && !last => Some(paths),
            _ => None,
        };
        // The handle of the last commit, while nothing touched the repository since: its index
        // (libgit2 keeps it loaded in the handle) is the index file as runner wrote it.
        let repo = match self.repo.take() {
            Some(repo) if untouched => repo,
            _ => {
                let repo = Repository::open_ext(
                    &self.root,
                    git2::RepositoryOpenFlags::NO_SEARCH,
                    std::iter::empty::<&std::ffi::OsStr>(),
                )
                .context("opening the worktree")?;
                if repo.path() != wt.path() {
                    anyhow::bail!(
                        "{} no longer opens as the worktree runner checked",
                        self.root.display()
                    );
                }
                repo
            }
        };
        if finish_incomplete_checkout(&repo)? {
            paths = None;
        }
        if paths.is_none() {
            // The watch starts BEFORE the full pass looks at the files: whatever changes from
            // now on is one of its events.
            if restart {
                self.starts += 1;
                // The old watch's folders are let go first: the two at once could pass
                // inotify's per-user limit (`max_user_watches`), and the new one fail.
                self.watch = None;
                self.watch = Watch::start(&self.root);
                self.unavailable = self.watch.is_none();
            }
            self.full += 1;
        }
        tracing::debug!(
            watched = paths.as_ref().map(|p| p.len()),
            restart,
            untouched,
            periodic,
            last,
            "chunk commit"
        );
        let mut index = repo.index().context("opening the index")?;
        let commit = commit_index(&repo, &mut index, message, paths.as_deref())?;
        self.commits += 1;
        self.seen = Seen::of(&repo).ok();
        self.repo = Some(repo);
        Ok(commit)
    }
}

impl Seen {
    fn of(repo: &Repository) -> anyhow::Result<Seen> {
        let head = repo.head().ok().and_then(|h| h.target());
        let git_dir = repo.path();
        let common = repo.commondir();
        let mut paths = vec![
            git_dir.join("index"),
            git_dir.join("HEAD"),
            git_dir.join("config.worktree"),
            common.join("config"),
            common.join("info/exclude"),
            common.join("info/attributes"),
            PathBuf::from("/etc/gitconfig"),
        ];
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".config")));
        if let Some(home) = &home {
            paths.push(home.join(".gitconfig"));
        }
        if let Some(xdg) = &xdg {
            for name in ["config", "ignore", "attributes"] {
                paths.push(xdg.join("git").join(name));
            }
        }
        let config = repo.config().context("reading git's configuration")?;
        for key in ["core.excludesFile", "core.attributesFile"] {
            if let Ok(path) = config.get_path(key) {
                paths.push(path);
            }
        }
        let files = paths.iter().map(|p| identity(p)).collect();
        let settings = SETTINGS.iter().map(|k| config.get_string(k).ok()).collect();
        Ok(Seen {
            head,
            files,
            settings,
        })
    }
}

/// A file's identity and times (`None` if it is not there): any write or replacement moves one.
fn identity(path: &Path) -> Option<[i64; 7]> {
    let meta = std::fs::metadata(path).ok()?;
    Some([
        meta.dev() as i64,
        meta.ino() as i64,
        meta.size() as i64,
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
    ])
}

#[cfg(test)]
#[path = "stage_tests.rs"]
mod tests;
