//! The status cache, `.auto-claude/status-cache`: for each spec, what `runner status` shows of
//! its plan (a `Digest`), keyed by the plan file's identity as git's index keys a file: device,
//! inode, mode, size, and the modification and change times in nanoseconds. `status` (and the
//! quiet check of `recover --all`) takes a spec's digest from here when the plan's identity is
//! the recorded one, instead of reading the plan; any other case reads the plan as before.
//!
//! It can never change an answer, only its speed:
//! - Only plans the light read answered for are kept (an invalid plan, a plan with warnings, a
//!   plan that is a symbolic link or not a regular file are read every time, by the full
//!   parser when the light read is not sure, so their errors are the full parser's).
//! - An entry is recorded only if the plan's identity was the same before and after it was
//!   read, and both its times were more than `MARGIN` before the read began (git's "racy"
//!   rule): a change after the read gets a later change time, which the user cannot set back
//!   (`touch -d` sets the modification time and changes the change time; a rename over the
//!   plan is another inode, with a new change time). And when loaded, an entry is trusted only
//!   if those times are more than `MARGIN` older than the cache file itself.
//! - The file is checked whole: its magic, its version (a new field is a new version: an old
//!   file is then ignored and rewritten), a checksum over every byte, every length and value in
//!   bounds, the counts consistent. Any doubt (missing, unreadable, a link, corrupt, another
//!   version) ignores it whole.
//! - It is written by `status` only when an entry changed, atomically (a temp file and a
//!   rename, through `store::safe`: never through a link) and without an fsync: it is a cache,
//!   torn or lost after a crash it is ignored or rebuilt. A failed write (a read-only folder, a
//!   full disk) is skipped silently. `recover --all` only reads it. It is safe to delete.
//!
//! What it cannot do: a process that can write `.auto-claude/` can forge an entry for a plan's
//! current identity (as it can forge git's index, or rewrite the plan itself). No check without
//! a secret it cannot read would stop that. Commands that change state read the plan itself;
//! only `status` and `recover --all`'s decision that a spec needs nothing use the cache.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::plan::PlanFile;
use crate::plan::summary::{Digest, read_light};

pub const CACHE_FILE: &str = "status-cache";

const MAGIC: &[u8; 8] = b"RNSTCACH";
/// Bumped whenever what an entry holds changes (a new field of `Digest`).
const VERSION: u32 = 2;

/// How much older than the read (and than the cache file) a plan's times must be for its
/// entry to be trusted: more than the coarsest file-system timestamps (FAT's 2 s).
pub(crate) const MARGIN: Duration = Duration::from_secs(3);

/// A plan file's identity: what changes when anything changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    dev: u64,
    ino: u64,
    mode: u32,
    size: u64,
    mtime: (i64, u32),
    ctime: (i64, u32),
}

impl Identity {
    /// The identity of the regular file at `path`, not following a link (`None` otherwise).
    pub fn of(path: &Path) -> Option<Identity> {
        let m = std::fs::symlink_metadata(path).ok()?;
        m.file_type().is_file().then(|| Identity::from_meta(&m))
    }

    /// The identity of the folder at `path`, not following a link at its end (`None` for a
    /// link or anything not a folder): what changes when an entry is added, removed or renamed.
    pub fn of_dir(path: &Path) -> Option<Identity> {
        let m = std::fs::symlink_metadata(path).ok()?;
        m.file_type().is_dir().then(|| Identity::from_meta(&m))
    }

    /// The identity of what `m` describes (the caller checked its type).
    pub fn from_meta(m: &std::fs::Metadata) -> Identity {
        Identity {
            dev: m.dev(),
            ino: m.ino(),
            mode: m.mode(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec() as u32),
            ctime: (m.ctime(), m.ctime_nsec() as u32),
        }
    }

    /// The identity of what `st` describes (the caller checked its type).
    pub fn from_stat(st: &rustix::fs::Stat) -> Identity {
        Identity {
            dev: st.st_dev as _,
            ino: st.st_ino as _,
            mode: st.st_mode as _,
            size: st.st_size as u64,
            mtime: (st.st_mtime as _, st.st_mtime_nsec as u32),
            ctime: (st.st_ctime as _, st.st_ctime_nsec as u32),
        }
    }

    /// Its modification time.
    pub fn modified(&self) -> Option<SystemTime> {
        let (s, ns) = self.mtime;
        let whole = Duration::from_secs(s.unsigned_abs());
        let at = if s >= 0 {
            SystemTime::UNIX_EPOCH.checked_add(whole)?
        } else {
            SystemTime::UNIX_EPOCH.checked_sub(whole)?
        };
        at.checked_add(Duration::from_nanos(u64::from(ns)))
    }

    /// Its bytes in a cache file (read back by `Reader::identity`).
    pub(crate) fn put(&self, out: &mut Vec<u8>) {
        for n in [self.dev, self.ino, self.size] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        put_u32(out, self.mode);
        for (s, ns) in [self.mtime, self.ctime] {
            out.extend_from_slice(&s.to_le_bytes());
            put_u32(out, ns);
        }
    }

    /// Both times more than `MARGIN` before `t`.
    pub(crate) fn settled_before(&self, t: SystemTime) -> bool {
        let Some(limit) = t.checked_sub(MARGIN) else {
            return false;
        };
        let at = |(s, ns): (i64, u32)| {
            u64::try_from(s)
                .ok()
                .map(|s| SystemTime::UNIX_EPOCH + Duration::new(s, ns))
        };
        [self.mtime, self.ctime]
            .into_iter()
            .all(|t| at(t).is_some_and(|t| t < limit))
    }
}

/// A spec's entry: its plan's identity and digest.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    identity: Identity,
    digest: Digest,
}

/// The entries of the cache file as loaded (empty when there is none or it is in doubt).
#[derive(Debug, Default)]
pub struct StatusCache {
    entries: HashMap<String, Entry>,
}

/// What was found for one spec: its digest (`None`: the light read was not sure or there is
/// no plan; the caller reads the plan with the full parser), and the entry to keep for it.
pub struct Found {
    pub digest: Option<Digest>,
    pub entry: Option<Entry>,
}

impl StatusCache {
    /// The cache of the workspace whose state folder is `state_dir`; empty at any doubt.
    pub fn load(state_dir: &Path) -> StatusCache {
        let Some((bytes, written)) = read_file(&state_dir.join(CACHE_FILE), u64::MAX) else {
            return StatusCache::default();
        };
        let Some(mut entries) = decode(&bytes) else {
            return StatusCache::default();
        };
        entries.retain(|_, e| e.identity.settled_before(written));
        StatusCache { entries }
    }

    /// Spec `name`'s digest: from the cache when its plan's identity is the recorded one, else
    /// from the light read of the plan (with an entry when the plan is settled).
    pub fn find(&self, name: &str, plan: &PlanFile) -> Found {
        let started = SystemTime::now();
        let before = Identity::of(plan.path());
        if let Some(id) = before
            && let Some(e) = self.entries.get(name).filter(|e| e.identity == id)
        {
            return Found {
                digest: Some(e.digest.clone()),
                entry: Some(e.clone()),
            };
        }
        let digest = read_light(plan).map(|s| Digest::of(&s));
        let entry = match (before, &digest) {
            (Some(id), Some(d))
                if id.settled_before(started) && Identity::of(plan.path()) == Some(id) =>
            {
                Some(Entry {
                    identity: id,
                    digest: d.clone(),
                })
            }
            _ => None,
        };
        Found { digest, entry }
    }

    /// Record what this command found (`found`: each spec looked at, with its entry or none),
    /// if it changes the file. `every_spec`: `found` lists every spec (others are dropped).
    /// Best effort: a write that fails is skipped without a word.
    pub fn save(&self, state_dir: &Path, found: Vec<(String, Option<Entry>)>, every_spec: bool) {
        let mut entries = if every_spec {
            HashMap::new()
        } else {
            self.entries.clone()
        };
        for (name, entry) in found {
            match entry {
                Some(e) => entries.insert(name, e),
                None => entries.remove(&name),
            };
        }
        if entries == self.entries {
            return;
        }
        let path = state_dir.join(CACHE_FILE);
        if entries.is_empty() && std::fs::symlink_metadata(&path).is_err() {
            return;
        }
        let _ = crate::store::atomic::write_unsynced(&path, &encode(&entries));
    }

    /// The specs with an entry and their digests (for tests and checks).
    pub fn digests(&self) -> impl Iterator<Item = (&str, &Digest)> {
        self.entries.iter().map(|(n, e)| (n.as_str(), &e.digest))
    }
}

/// The bytes of the regular file at `path` (never through a link, never more than `max`) and
/// its modification time.
pub(crate) fn read_file(path: &Path, max: u64) -> Option<(Vec<u8>, SystemTime)> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.file_type().is_file() || meta.len() > max {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&mut file)
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > max {
        return None;
    }
    Some((bytes, meta.modified().ok()?))
}

/// A checksum of `bytes` (corruption, not forgery: see the module comment), eight at a time.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = 0xcbf2_9ce4_8422_2325 ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(K).rotate_left(29);
    }
    h ^ (h >> 32)
}

fn encode(entries: &HashMap<String, Entry>) -> Vec<u8> {
    let mut names: Vec<&String> = entries.keys().collect();
    names.sort();
    let mut out = Vec::with_capacity(64 + entries.len() * 160);
    out.extend_from_slice(MAGIC);
    put_u32(&mut out, VERSION);
    put_u32(&mut out, names.len() as u32);
    for name in names {
        let Entry {
            identity: i,
            digest: d,
        } = &entries[name];
        put_str(&mut out, name);
        i.put(&mut out);
        for n in d.counts {
            put_u32(&mut out, n);
        }
        out.push(u8::from(d.merged));
        out.push(u8::from(d.exhausted));
        out.extend_from_slice(&d.spent.usd.to_bits().to_le_bytes());
        for n in [d.spent.tokens, d.spent.sessions] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        for text in [&d.current_chunk, &d.next_chunk] {
            match text {
                None => out.push(0),
                Some(t) => {
                    out.push(1);
                    put_str(&mut out, t);
                }
            }
        }
        put_u32(&mut out, d.warnings.len() as u32);
        for w in &d.warnings {
            put_str(&mut out, w);
        }
        put_u32(&mut out, d.recorded.len() as u32);
        for (id, commit) in &d.recorded {
            put_str(&mut out, id);
            put_str(&mut out, commit);
        }
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

pub(crate) fn put_u32(out: &mut Vec<u8>, n: u32) {
    out.extend_from_slice(&n.to_le_bytes());
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

/// A cache file's body after its checksum, magic and version are checked, and its count of
/// entries; `None` at the least doubt.
pub(crate) fn open_body<'a>(
    bytes: &'a [u8],
    magic: &[u8; 8],
    version: u32,
) -> Option<(Reader<'a>, usize)> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    if checksum(body) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let mut r = Reader(body.strip_prefix(magic)?);
    if r.u32()? != version {
        return None;
    }
    let count = r.u32()? as usize;
    Some((r, count))
}

/// The entries of a cache file's bytes; `None` at the least doubt.
fn decode(bytes: &[u8]) -> Option<HashMap<String, Entry>> {
    let (mut r, count) = open_body(bytes, MAGIC, VERSION)?;
    let mut entries = HashMap::with_capacity(count.min(bytes.len() / 64));
    for _ in 0..count {
        let name = r.text()?;
        let identity = r.identity()?;
        let digest = r.digest()?;
        let sane = !name.is_empty()
            && !name.contains('/')
            && digest.current_chunk.is_some()
                == (digest.count(crate::plan::Status::InProgress) > 0)
            && digest.recorded.len() <= digest.count(crate::plan::Status::Completed);
        if !sane || entries.insert(name, Entry { identity, digest }).is_some() {
            return None;
        }
    }
    r.0.is_empty().then_some(entries)
}

/// Reads a cache file's body; every read checks its bounds.
pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    pub(crate) fn identity(&mut self) -> Option<Identity> {
        let (dev, ino, size) = (self.u64()?, self.u64()?, self.u64()?);
        let mode = self.u32()?;
        Some(Identity {
            dev,
            ino,
            mode,
            size,
            mtime: self.time()?,
            ctime: self.time()?,
        })
    }

    fn time(&mut self) -> Option<(i64, u32)> {
        let s = i64::from_le_bytes(self.take(8)?.try_into().ok()?);
        let ns = self.u32()?;
        (ns < 1_000_000_000).then_some((s, ns))
    }

    pub(crate) fn flag(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    pub(crate) fn text(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }

    pub(crate) fn optional_text(&mut self) -> Option<Option<String>> {
        if self.flag()? {
            Some(Some(self.text()?))
        } else {
            Some(None)
        }
    }

    /// A list of `n` items read by `item`, never more than the bytes left could hold.
    pub(crate) fn list<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<Vec<T>> {
        let n = self.u32()? as usize;
        if n > self.0.len() / 4 {
            return None;
        }
        (0..n).map(|_| item(self)).collect()
    }

    fn digest(&mut self) -> Option<Digest> {
        let mut counts = [0u32; 5];
        for c in &mut counts {
            *c = self.u32()?;
        }
        counts.iter().try_fold(0u32, |a, &c| a.checked_add(c))?;
        let merged = self.flag()?;
        let exhausted = self.flag()?;
        let usd = f64::from_bits(self.u64()?);
        // A cleaned ledger figure is finite and never negative (`policy::budget`).
        if !usd.is_finite() || usd < 0.0 {
            return None;
        }
        let spent = crate::policy::budget::Spent {
            usd,
            tokens: self.u64()?,
            sessions: self.u64()?,
        };
        Some(Digest {
            counts,
            merged,
            exhausted,
            spent,
            current_chunk: self.optional_text()?,
            next_chunk: self.optional_text()?,
            warnings: self.list(Self::text)?,
            recorded: self.list(|r| Some((r.text()?, r.text()?)))?,
        })
    }
}

#[cfg(test)]
mod tests;
