//! The resolution cache, `.auto-claude/resolve-cache`: what `runner resume`'s resolution
//! (`ops::resume::facts`) read of each spec, keyed by the identity of what it read, as the
//! status cache (`store::status_cache`) keys a plan:
//! - the run ids of the spec's `runs/` folder, keyed by the folder's identity (device, inode,
//!   mode, size, modification and change times in nanoseconds: adding, removing or renaming
//!   a record changes them), so that a run id costs a stat per spec instead of a folder read;
//! - what its plan says for resuming (complete, merged, the chunk in progress, the chunk worked
//!   on last), keyed by the plan file's identity;
//! - what its newest run record says for resuming (a discard's, the chunk), keyed by that
//!   record file's identity.
//!
//! It can never change an answer, only its speed, by the status cache's rules: an identity is
//! recorded only if it was the same before and after the read and its times were more than
//! `status_cache::MARGIN` before the read began (git's "racy" rule), and trusted when loaded
//! only if they are that much older than the cache file; a link (a linked `runs/` folder, plan
//! or record) is never recorded; a plan read with a warning or an error and an unusable record
//! are never recorded (read every time, so every warning is still said). The file is checked
//! whole (magic, version, checksum, bounds, run ids' form, at most `MAX_BYTES`): any doubt
//! ignores it. It is written only when what it holds changed, atomically and without an fsync
//! (a cache: lost or torn, it is ignored and rebuilt), never through a link; a failed write is
//! skipped silently. It is safe to delete. As for the status cache, a process that can write
//! `.auto-claude/` can forge it (as it can forge the records and plans themselves).

use std::collections::HashMap;
use std::path::Path;

use super::status_cache::{Identity, checksum, open_body, put_str, put_u32, read_file};
use crate::policy::resolve::SpecState;

pub const CACHE_FILE: &str = "resolve-cache";

const MAGIC: &[u8; 8] = b"RNRSCACH";
/// Bumped whenever what an entry holds changes.
const VERSION: u32 = 1;
/// A bigger file is not read (about 40 times what 1,000 specs of 100 runs each need).
pub const MAX_BYTES: u64 = 64 << 20;

/// What a spec's plan says for resuming.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanFacts {
    pub state: SpecState,
    /// The first chunk in progress.
    pub current: Option<String>,
    /// The chunk whose last attempt started last.
    pub last: Option<String>,
}

/// What a run record says for resuming: whether it is a discard's, and its chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordFacts {
    pub discard: bool,
    pub chunk: Option<String>,
}

/// One spec's entry; each part is known or not independently.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecEntry {
    /// The `runs/` folder's identity and the run ids in it (in the order it listed them).
    pub runs: Option<(Identity, Vec<String>)>,
    pub plan: Option<(Identity, PlanFacts)>,
    /// The newest record: its run id, its file's identity, what it says.
    pub record: Option<(String, Identity, RecordFacts)>,
}

/// The entries as loaded (empty when there is no file or it is in doubt).
#[derive(Debug, Default)]
pub struct ResolveCache {
    entries: HashMap<String, SpecEntry>,
}

impl ResolveCache {
    /// The cache of the workspace whose state folder is `state_dir`; empty at any doubt.
    pub fn load(state_dir: &Path) -> ResolveCache {
        let Some((bytes, written)) = read_file(&state_dir.join(CACHE_FILE), MAX_BYTES) else {
            return ResolveCache::default();
        };
        let Some(mut entries) = decode(&bytes) else {
            return ResolveCache::default();
        };
        for e in entries.values_mut() {
            let settled = |i: &Identity| i.settled_before(written);
            if e.runs.as_ref().is_some_and(|(i, _)| !settled(i)) {
                e.runs = None;
            }
            if e.plan.as_ref().is_some_and(|(i, _)| !settled(i)) {
                e.plan = None;
            }
            if e.record.as_ref().is_some_and(|(_, i, _)| !settled(i)) {
                e.record = None;
            }
        }
        entries.retain(|_, e| *e != SpecEntry::default());
        ResolveCache { entries }
    }

    pub fn get(&self, spec: &str) -> Option<&SpecEntry> {
        self.entries.get(spec)
    }

    /// Write `entries` if they are not what was loaded. Best effort: a failed write is
    /// skipped without a word.
    pub fn save(&self, state_dir: &Path, mut entries: HashMap<String, SpecEntry>) {
        entries.retain(|_, e| *e != SpecEntry::default());
        if entries == self.entries {
            return;
        }
        let path = state_dir.join(CACHE_FILE);
        if entries.is_empty() && std::fs::symlink_metadata(&path).is_err() {
            return;
        }
        let _ = super::atomic::write_unsynced(&path, &encode(&entries));
    }

    /// Every entry (what a new save starts from).
    pub fn entries(&self) -> &HashMap<String, SpecEntry> {
        &self.entries
    }
}

fn put_optional(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        None => out.push(0),
        Some(t) => {
            out.push(1);
            put_str(out, t);
        }
    }
}

fn encode(entries: &HashMap<String, SpecEntry>) -> Vec<u8> {
    let mut names: Vec<&String> = entries.keys().collect();
    names.sort();
    let mut out = Vec::with_capacity(64 + entries.len() * 256);
    out.extend_from_slice(MAGIC);
    put_u32(&mut out, VERSION);
    put_u32(&mut out, names.len() as u32);
    for name in names {
        let e = &entries[name];
        put_str(&mut out, name);
        out.push(u8::from(e.runs.is_some()));
        if let Some((folder, ids)) = &e.runs {
            folder.put(&mut out);
            put_u32(&mut out, ids.len() as u32);
            for id in ids {
                put_str(&mut out, id);
            }
        }
        out.push(u8::from(e.plan.is_some()));
        if let Some((plan, facts)) = &e.plan {
            plan.put(&mut out);
            out.push(match facts.state {
                SpecState::Resumable => 0,
                SpecState::Complete => 1,
                SpecState::Merged => 2,
                SpecState::Discarded => 3,
            });
            put_optional(&mut out, facts.current.as_deref());
            put_optional(&mut out, facts.last.as_deref());
        }
        out.push(u8::from(e.record.is_some()));
        if let Some((id, record, facts)) = &e.record {
            put_str(&mut out, id);
            record.put(&mut out);
            out.push(u8::from(facts.discard));
            put_optional(&mut out, facts.chunk.as_deref());
        }
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// The entries of a cache file's bytes; `None` at the least doubt.
fn decode(bytes: &[u8]) -> Option<HashMap<String, SpecEntry>> {
    let (mut r, count) = open_body(bytes, MAGIC, VERSION)?;
    if count > r.0.len() / 4 {
        return None;
    }
    let mut entries = HashMap::with_capacity(count);
    for _ in 0..count {
        let name = r.text()?;
        let run_id = |id: String| super::ids::is_run_id(&id).then_some(id);
        let mut e = SpecEntry::default();
        if r.flag()? {
            let folder = r.identity()?;
            let ids = r.list(|r| run_id(r.text()?))?;
            e.runs = Some((folder, ids));
        }
        if r.flag()? {
            let plan = r.identity()?;
            let state = match r.u8()? {
                0 => SpecState::Resumable,
                1 => SpecState::Complete,
                2 => SpecState::Merged,
                3 => SpecState::Discarded,
                _ => return None,
            };
            let current = r.optional_text()?;
            let last = r.optional_text()?;
            e.plan = Some((
                plan,
                PlanFacts {
                    state,
                    current,
                    last,
                },
            ));
        }
        if r.flag()? {
            let id = run_id(r.text()?)?;
            let record = r.identity()?;
            let discard = r.flag()?;
            let chunk = r.optional_text()?;
            e.record = Some((id, record, RecordFacts { discard, chunk }));
        }
        let sane = crate::store::spec::check_name(&name).is_ok();
        if !sane || entries.insert(name, e).is_some() {
            return None;
        }
    }
    r.0.is_empty().then_some(entries)
}

#[cfg(test)]
#[path = "resolve_cache_tests.rs"]
mod tests;
