//! A watch on a worktree's folders (Linux inotify), so that a chunk's commit looks only at the
//! paths that changed since the last one instead of at every file (`git::stage`).
//!
//! It answers "these paths changed" or "unknown"; unknown whenever it cannot be sure: the kernel's
//! queue overflowed, a folder was moved or renamed (the watches under it would name the wrong
//! paths), the root or the worktree's `.git` was touched, a `.gitignore` or `.gitattributes`
//! changed (a file no event names may now be staged differently), a nested repository appeared,
//! or a folder could not be watched (too many folders, `ENOSPC`, any error). After an unknown
//! the caller starts a new watch and does the full pass. A `.gitignore` or `.gitattributes`
//! that is a symbolic link cannot be watched at all (a write to its target, in the worktree or
//! out of it, changes the rules and names another file or none).
//!
//! Blind spots (inotify reports changes made through a path under a watched folder only): a
//! file changed through a hard link that lives outside the worktree, or through a shared
//! `mmap`, gives no event. The caller bounds them with a full pass every so many commits and at
//! the end of a run.
//!
//! A folder created (or moved in) after the watch started is watched as soon as its event is
//! read, and its path is reported as changed: the caller stages everything under it, so files
//! made in it before its own watch existed are not missed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// At most this many folders are watched; a bigger worktree gets the full pass every time.
pub const MAX_WATCHES: usize = 8192;

/// What changed since the last drain.
#[derive(Debug, PartialEq, Eq)]
pub enum Changes {
    /// Paths relative to the root (files or folders; a folder stands for everything under it).
    Paths(Vec<PathBuf>),
    /// The watch cannot tell: the caller must look at everything (and start a new watch).
    Unknown,
}

/// A live watch of every folder under a root but its `.git`.
pub struct Watch {
    #[cfg(target_os = "linux")]
    inner: linux::Inotify,
}

impl Watch {
    /// Watch every folder under `root` (but `root/.git`); `None` when the system cannot (not
    /// Linux, too many folders, a nested repository, a linked `.gitignore`, any error).
    pub fn start(root: &Path) -> Option<Watch> {
        #[cfg(target_os = "linux")]
        {
            linux::Inotify::start(root).map(|inner| Watch { inner })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = root;
            None
        }
    }

    /// Everything the watch saw since the last drain (it never blocks).
    pub fn drain(&mut self) -> Changes {
        #[cfg(target_os = "linux")]
        {
            self.inner.drain()
        }
        #[cfg(not(target_os = "linux"))]
        {
            Changes::Unknown
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use std::os::fd::OwnedFd;
    use std::os::unix::ffi::OsStrExt;

    use rustix::fs::inotify;
    use rustix::io::Errno;

    const MASK: u32 = libc::IN_CREATE
        | libc::IN_DELETE
        | libc::IN_MODIFY
        | libc::IN_ATTRIB
        | libc::IN_CLOSE_WRITE
        | libc::IN_MOVED_FROM
        | libc::IN_MOVED_TO
        | libc::IN_DELETE_SELF
        | libc::IN_MOVE_SELF
        | libc::IN_ONLYDIR
        | libc::IN_DONT_FOLLOW;

    pub(super) struct Inotify {
        fd: OwnedFd,
        root: PathBuf,
        /// Watch descriptor → the folder's path relative to the root ("" for the root).
        dirs: HashMap<i32, PathBuf>,
        /// Paths seen since the last drain, and whether anything made them unknowable.
        changed: Vec<PathBuf>,
        unknown: bool,
    }

    impl Inotify {
        pub(super) fn start(root: &Path) -> Option<Inotify> {
            let flags = inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC;
            let fd = inotify::init(flags).ok()?;
            let mut me = Inotify {
                fd,
                root: root.to_path_buf(),
                dirs: HashMap::new(),
                changed: Vec::new(),
                unknown: false,
            };
            me.watch_tree(PathBuf::new()).then_some(me)
        }

        /// Watch the folder `rel` and every folder under it: each folder's watch is added
        /// before it is listed, so a folder made meanwhile is either listed or reported.
        /// False if any could not be watched, or a nested repository was found.
        fn watch_tree(&mut self, rel: PathBuf) -> bool {
            let mut todo = vec![rel];
            while let Some(rel) = todo.pop() {
                if self.dirs.len() >= MAX_WATCHES {
                    return false;
                }
                let full = self.root.join(&rel);
                let mask = inotify::WatchFlags::from_bits_retain(MASK);
                let wd = match inotify::add_watch(&self.fd, &full, mask) {
                    Ok(wd) => wd,
                    // Gone already (its deletion is an event of its parent): nothing to watch.
                    Err(Errno::NOENT | Errno::NOTDIR) if !rel.as_os_str().is_empty() => continue,
                    Err(_) => return false,
                };
                self.dirs.insert(wd, rel.clone());
                let entries = match std::fs::read_dir(&full) {
                    Ok(entries) => entries,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(_) => return false,
                };
                for entry in entries {
                    let Ok(entry) = entry else { return false };
                    let name = entry.file_name();
                    if name == ".git" {
                        if rel.as_os_str().is_empty() {
                            continue;
                        }
                        return false; // a nested repository: git sees it as one entry
                    }
                    // `file_type` is the directory entry's own type (no stat on most systems);
                    // a link to a folder is a link, not followed, as git stores it.
                    let kind = entry.file_type();
                    if (name == ".gitignore" || name == ".gitattributes")
                        && kind.as_ref().is_ok_and(|t| t.is_symlink())
                    {
                        return false; // rules in a file whose writes no event of its name gives
                    }
                    if kind.is_ok_and(|t| t.is_dir()) {
                        todo.push(rel.join(name));
                    }
                }
            }
            true
        }

        pub(super) fn drain(&mut self) -> Changes {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match rustix::io::read(&self.fd, &mut buf) {
                    Ok(0) => {
                        self.unknown = true;
                        break;
                    }
                    Ok(n) => n,
                    Err(Errno::AGAIN) => break,
                    Err(Errno::INTR) => continue,
                    Err(_) => {
                        self.unknown = true;
                        break;
                    }
                };
                self.read_events(&buf[..n]);
            }
            if std::mem::take(&mut self.unknown) {
                self.changed.clear();
                return Changes::Unknown;
            }
            let mut paths = std::mem::take(&mut self.changed);
            paths.sort();
            paths.dedup();
            Changes::Paths(paths)
        }

        fn read_events(&mut self, mut buf: &[u8]) {
            // `struct inotify_event`: wd (i32), mask, cookie and len (u32), then `len` bytes
            // of NUL-padded name; in this machine's byte order.
            const HEADER: usize = 16;
            const _: () = assert!(HEADER == std::mem::size_of::<libc::inotify_event>());
            let field = |b: &[u8], at: usize| [b[at], b[at + 1], b[at + 2], b[at + 3]];
            while buf.len() >= HEADER {
                let wd = i32::from_ne_bytes(field(buf, 0));
                let mask = u32::from_ne_bytes(field(buf, 4));
                let end = HEADER + u32::from_ne_bytes(field(buf, 12)) as usize;
                if buf.len() < end {
                    self.unknown = true;
                    return;
                }
                let name = &buf[HEADER..end];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                self.event(wd, mask, name);
                buf = &buf[end..];
            }
        }

        fn event(&mut self, wd: i32, mask: u32, name: &[u8]) {
            if mask & libc::IN_Q_OVERFLOW != 0 {
                self.unknown = true;
                return;
            }
            let Some(dir) = self.dirs.get(&wd).cloned() else {
                return; // a watch already removed (its folder was deleted)
            };
            let is_root = dir.as_os_str().is_empty();
            if mask & libc::IN_IGNORED != 0 {
                self.dirs.remove(&wd);
                self.unknown |= is_root;
                return;
            }
            if mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0 {
                // A folder deleted is its parent's event too; one moved is unknown there.
                self.unknown |= is_root;
                return;
            }
            if name.is_empty() {
                return; // an event of the folder itself (its mode): git does not store it
            }
            let rel = dir.join(std::ffi::OsStr::from_bytes(name));
            let is_dir = mask & libc::IN_ISDIR != 0;
            if name == b".git" || name == b".gitignore" || name == b".gitattributes" {
                self.unknown = true;
                return;
            }
            if is_dir && mask & libc::IN_MOVED_FROM != 0 {
                // The watches under it now name the wrong paths.
                self.unknown = true;
                return;
            }
            if is_dir
                && mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0
                && !self.watch_tree(rel.clone())
            {
                self.unknown = true;
                return;
            }
            self.changed.push(rel);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn paths(changes: Changes) -> Vec<String> {
        match changes {
            Changes::Paths(p) => p.iter().map(|p| p.display().to_string()).collect(),
            Changes::Unknown => panic!("unknown"),
        }
    }

    #[test]
    fn reports_files_new_folders_and_unknowns() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        let mut watch = Watch::start(root).unwrap();
        assert_eq!(paths(watch.drain()), Vec::<String>::new());
        std::fs::write(root.join("a/b/f.txt"), "x").unwrap();
        std::fs::write(root.join(".git/objects/o"), "x").unwrap();
        std::fs::create_dir_all(root.join("n/m")).unwrap();
        std::fs::write(root.join("n/m/g.txt"), "x").unwrap();
        assert_eq!(paths(watch.drain()), ["a/b/f.txt", "n"]);
        // The new folder's own folders are watched now.
        std::fs::write(root.join("n/m/h.txt"), "x").unwrap();
        assert_eq!(paths(watch.drain()), ["n/m/h.txt"]);
        std::fs::rename(root.join("n"), root.join("n2")).unwrap();
        assert_eq!(watch.drain(), Changes::Unknown);
        let mut watch = Watch::start(root).unwrap();
        std::fs::write(root.join("a/.gitignore"), "*.log").unwrap();
        assert_eq!(watch.drain(), Changes::Unknown);
        std::fs::create_dir_all(root.join("sub/.git")).unwrap();
        assert!(Watch::start(root).is_none(), "a nested repository");
    }
}
