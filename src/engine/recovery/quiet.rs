//! `recover --all` over many specs: most have nothing to recover. A read-only look decides
//! "certainly nothing to do here" before any lock is taken or written; every doubt sends the
//! spec down the full locked path (`recover_spec`), which looks again under the lock.
//!
//! Each question is the one a step of `recover_spec` asks (see `spec.rs`), in its read-only
//! form: a live agent left by a dead run, temp files of unfinished writes, a plan that does not
//! read or vanished during a run, a chunk in progress (a dead session to settle, an
//! interrupted chunk), a git lock file, a broken worktree, completed work missing from the
//! branch, failed chunks to retry. A spec someone holds (its run lock, its slot's lock) is
//! left to the full path too, which reports it busy.

use super::procs;
use super::repair;
use crate::engine::integrity;
use std::path::PathBuf;

use crate::git::{Slot, SlotState, branch_for};
use crate::plan::Status;
use crate::plan::summary::Digest;
use crate::store::status_cache::StatusCache;
use crate::store::workspace::{SpecPaths, Workspace};
use crate::store::{LockState, lock};

/// What every spec's look shares: the slots, inspected once.
pub struct QuietLook {
    /// Each slot, with the branch checked out there when it is ready, and its lock file.
    slots: Vec<(Slot, SlotState, PathBuf)>,
    /// The branches registered for the slots that exist but do not open (see
    /// `integrity::unopenable_slot`).
    broken_for: Vec<Option<String>>,
    common_dir: PathBuf,
    /// The sessions live processes carry (see `procs::live_sessions`), looked up once.
    live_sessions: Option<std::collections::HashSet<String>>,
    /// `status`'s cache of plan digests, read only (recovery writes nothing it need not).
    cache: StatusCache,
    /// The ref lock files of every spec, listed once (`None`: looked for per spec).
    ref_locks: Option<crate::git::locks::RefLocks>,
}

/// What the look found without git (`QuietLook::prepare`, on any thread).
pub struct Prepared {
    doubt: bool,
    /// The slot (an index into `slots`) holding the spec's branch.
    slot: Option<usize>,
    /// What the light read (or `status`'s cache) gave of the plan.
    summary: Option<Digest>,
}

impl QuietLook {
    pub fn new(ws: &Workspace) -> QuietLook {
        let main = &ws.main;
        let slots: Vec<(Slot, SlotState, PathBuf)> = Slot::all(main)
            .into_iter()
            .map(|slot| {
                let state = slot.inspect(main);
                let lock = ws.slot_lock(&slot.name);
                (slot, state, lock)
            })
            .collect();
        let broken_for = slots
            .iter()
            .filter(|(slot, state, _)| {
                slot.path.exists() && matches!(state, SlotState::Broken { .. })
            })
            .map(|(slot, _, _)| slot.registered_branch(main))
            .collect();
        QuietLook {
            slots,
            broken_for,
            common_dir: main.common_dir().to_path_buf(),
            live_sessions: procs::live_sessions(),
            cache: StatusCache::load(&ws.state_dir),
            ref_locks: crate::git::locks::RefLocks::list(main.common_dir()),
        }
    }

    /// The questions that need no git (files, locks, the journal, the light plan read), for
    /// `decide` to finish on the caller's thread.
    pub fn prepare(&self, paths: &SpecPaths, retry_failed: bool) -> Prepared {
        let name = &paths.name;
        let branch = branch_for(name);
        let slot = self.slots.iter().position(
            |(_, state, _)| matches!(state, SlotState::Ready { branch: Some(b) } if *b == branch),
        );
        // The spec's folder listed once: a file it does not hold needs no lookup. Unlisted,
        // every question is asked of its path, as it always was.
        let names = repair::SpecFolderNames::of(&paths.dir);
        let doubt =
            // Someone holds the spec (a run, another recovery): the full path reports it busy.
            (names.as_ref().is_none_or(|n| n.run_lock) && held(&paths.run_lock))
            || slot.is_some_and(|i| held(&self.slots[i].2))
            // A worktree of the spec that does not open as itself.
            || self.broken_for.iter().any(|b| b.as_deref() == Some(&branch))
            || leftover_agent(paths, self.live_sessions.as_ref())
            || match &names {
                Some(names) => {
                    names.stale_temp_file
                        || (names.runs && !repair::stale_temp_files_of_runs(&paths.dir).is_empty())
                }
                None => !repair::stale_temp_files(&paths.dir, true).is_empty(),
            }
            // Any git lock file where recovery looks for stale ones, stale or not.
            || match &self.ref_locks {
                Some(locks) => locks.any_for(name),
                None => !crate::git::locks::lock_candidates(&self.common_dir, None, name).is_empty(),
            };
        let summary = (!doubt)
            .then(|| self.cache.find(name, &paths.plan).digest)
            .flatten();
        let summary = summary.filter(|d| {
            d.count(Status::InProgress) == 0 && !(retry_failed && d.count(Status::Failed) > 0)
        });
        Prepared {
            doubt,
            slot,
            summary,
        }
    }

    /// Certainly nothing for recovery to do in this spec: `false` at the least doubt.
    /// `look_again`: another spec went down the full path since the look (which may take
    /// minutes: a chunk's check, an agent asked), or the look is more than a moment old, so
    /// the look is taken again, whole; otherwise the look (milliseconds old) stands.
    pub fn decide(
        &self,
        ws: &Workspace,
        paths: &SpecPaths,
        prepared: Prepared,
        retry_failed: bool,
        look_again: bool,
    ) -> bool {
        self.decide_or_doubt(ws, paths, prepared, retry_failed, look_again)
            .unwrap_or(false)
    }

    fn decide_or_doubt(
        &self,
        ws: &Workspace,
        paths: &SpecPaths,
        prepared: Prepared,
        retry_failed: bool,
        look_again: bool,
    ) -> Option<bool> {
        // A run that took this spec since the look, or left it changed, is seen again.
        let prepared = match look_again {
            true => self.prepare(paths, retry_failed),
            false => prepared,
        };
        if prepared.doubt {
            return Some(false);
        }
        let name = &paths.name;
        if let Some(i) = prepared.slot {
            let wt = self.slots[i].0.open(&ws.main).ok();
            let git_dir = wt.as_ref().map(crate::git::repo::git_folder);
            if !crate::git::locks::lock_candidates(&self.common_dir, git_dir, name).is_empty() {
                return Some(false);
            }
        }
        // The counts and the plan as the history check reads it: from the digest (whose
        // completed chunks with a recorded commit are the ones with attempt records in the
        // light read), or from the full parse.
        let (in_progress, failed, recorded) = match prepared.summary {
            Some(d) => (
                d.count(Status::InProgress),
                d.count(Status::Failed),
                (!d.recorded.is_empty()).then(|| d.history_plan()),
            ),
            None => {
                let Some(plan) = paths.plan.load().ok()? else {
                    // No plan: one that vanished while a run was running is restored.
                    let events = crate::store::read_typed(&paths.dir);
                    return Some(!integrity::last_run_unfinished(&events));
                };
                let recorded = plan
                    .chunks()
                    .any(|c| c.status == Status::Completed && c.raw().contains_key("attempts"));
                (
                    plan.count(Status::InProgress),
                    plan.count(Status::Failed),
                    recorded.then_some(plan),
                )
            }
        };
        if in_progress > 0 || (retry_failed && failed > 0) {
            return Some(false);
        }
        // Completed work the branch lost (or the branch gone with recorded work).
        if let Some(plan) = recorded
            && integrity::judge_history(&integrity::history_facts(&ws.main, name, &plan, None))
                .is_some()
        {
            return Some(false);
        }
        Some(true)
    }
}

fn held(path: &std::path::Path) -> bool {
    !matches!(lock::probe(path), Ok(LockState::Free))
}

/// Fewer items than this per thread are done on one thread (a thread costs more than they do).
const PER_THREAD: usize = 16;

/// How many items a thread takes at a time: small, so that the threads finish together.
const BATCH: usize = 4;

/// `f` of every item, over the machine's cores (the caller's thread one of them): each thread
/// takes the next `BATCH` items until none is left; the results in order.
pub fn on_every_core<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = cores.min(items.len() / PER_THREAD).max(1);
    if threads == 1 {
        return items.iter().map(&f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let start = next.fetch_add(BATCH, std::sync::atomic::Ordering::Relaxed);
            if start >= items.len() {
                return done;
            }
            let end = (start + BATCH).min(items.len());
            done.extend((start..end).map(|i| (i, f(&items[i]))));
        }
    };
    let work = &work;
    let mut all = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut all = work();
        for handle in handles {
            all.extend(
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        all
    });
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// An agent process a dead run left running (`Steps::stop_leftover_agents`). `live`: the
/// sessions live processes carry; a leftover is one of them, so with none the journal is not
/// read (one look through /proc for all the specs instead of a journal each).
fn leftover_agent(paths: &SpecPaths, live: Option<&std::collections::HashSet<String>>) -> bool {
    if live.is_some_and(|live| live.is_empty()) {
        return false;
    }
    let events = crate::store::journal::read_typed_containing(&paths.dir, "\"process_");
    procs::leftovers(&events)
        .iter()
        .filter(|l| live.is_none_or(|live| live.contains(&l.session_id)))
        .any(|l| !procs::members_of_session(l.pgid, &l.session_id).is_empty())
}
