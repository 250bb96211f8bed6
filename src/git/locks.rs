//! git's own lock files (`index.lock`, `HEAD.lock`, a ref's `.lock`) that a process killed in
//! the middle of a git write leaves: which ones may block a spec's work, and whether one is
//! stale (nobody holds it open) and can go.

use std::path::{Path, PathBuf};

/// Does any process have `path` open? (Linux: /proc/*/fd.)
fn open_by_anyone(path: &Path) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return true; // cannot tell: assume it is in use
    };
    for p in procs.flatten() {
        if p.file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .is_none()
        {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|t| t == path) {
                return true;
            }
        }
    }
    false
}

/// A git lock file (`index.lock`, `HEAD.lock`, a ref's `.lock`) left by a process killed in
/// the middle of a git write: removed if no process holds it open. (git and libgit2 keep a lock
/// file open until they commit or roll it back, so an unheld one is stale; a stale one makes
/// every later write of that ref or index fail.)
pub fn stale_lock(lock: &Path, dry_run: bool) -> Option<PathBuf> {
    let lock = lock.canonicalize().unwrap_or_else(|_| lock.to_path_buf());
    if !lock.exists() || open_by_anyone(&lock) {
        return None;
    }
    if dry_run || std::fs::remove_file(&lock).is_ok() {
        Some(lock)
    } else {
        None
    }
}

/// The lock files git may leave that block a spec's work: in the worktree's git folder, the
/// spec branch's ref, and the spec's runner refs.
pub fn lock_candidates(
    common_dir: &Path,
    worktree_git_dir: Option<&Path>,
    spec: &str,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(dir) = worktree_git_dir {
        for name in ["index.lock", "HEAD.lock", "ORIG_HEAD.lock"] {
            out.push(dir.join(name));
        }
    }
    // Not packed-refs.lock: git closes that lock's file while it still holds the lock, so
    // "nobody has it open" does not mean stale there.
    out.push(
        common_dir
            .join("refs/heads/auto-claude")
            .join(format!("{spec}.lock")),
    );
    let component = crate::git::refs::ref_component(spec);
    for base in ["refs/auto-claude/recovery", "refs/auto-claude/backup"] {
        collect_locks(&common_dir.join(base).join(&component), &mut out);
    }
    out.retain(|p| p.exists());
    out
}

/// The ref lock files `lock_candidates` finds without a worktree, for every spec at once: one
/// listing of each folder instead of a look per spec (`recover --all`). Each name a candidate
/// could have is kept, existing or not (more doubt, never less).
pub struct RefLocks {
    /// `<spec>` of each `refs/heads/auto-claude/<spec>.lock`.
    specs: std::collections::HashSet<String>,
    /// The components under `refs/auto-claude/{recovery,backup}/` with a lock file below.
    components: std::collections::HashSet<String>,
}

impl RefLocks {
    /// `None` when a folder exists but cannot be listed (then ask `lock_candidates`).
    pub fn list(common_dir: &Path) -> Option<RefLocks> {
        let listing = |dir: &Path| match std::fs::read_dir(dir) {
            Ok(entries) => Some(entries.flatten().map(|e| e.file_name()).collect::<Vec<_>>()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(Vec::new()),
            Err(_) => None,
        };
        let specs = listing(&common_dir.join("refs/heads/auto-claude"))?
            .into_iter()
            .filter_map(|n| Some(n.to_str()?.strip_suffix(".lock")?.to_string()))
            .collect();
        let mut components = std::collections::HashSet::new();
        for base in ["refs/auto-claude/recovery", "refs/auto-claude/backup"] {
            let base = common_dir.join(base);
            for name in listing(&base)? {
                let mut found = Vec::new();
                collect_locks(&base.join(&name), &mut found);
                found.retain(|p| p.exists());
                if !found.is_empty() {
                    components.insert(name.to_str()?.to_string());
                }
            }
        }
        Some(RefLocks { specs, components })
    }

    /// Would `lock_candidates(common_dir, None, spec)` find anything?
    pub fn any_for(&self, spec: &str) -> bool {
        self.specs.contains(spec)
            || self
                .components
                .contains(&crate::git::refs::ref_component(spec))
    }
}

fn collect_locks(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            collect_locks(&path, out);
        } else if path.extension().is_some_and(|x| x == "lock") {
            out.push(path);
        }
    }
}
