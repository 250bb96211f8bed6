//! A history already checked during a run: the next check looks only at what came after it.
//!
//! Checking the whole history after every session (every completed chunk's commit reachable,
//! none of their changes hidden by a merge) costs a walk and a diff per completed chunk, so a
//! run's cost per chunk grew with the number of chunks done. When the branch has only grown by
//! one-parent commits since a tip that passed the check, the answer for the old work is already
//! known: its commits are ancestors of the new tip, and a file a one-parent commit did not touch
//! is as it was, while one it touched no longer counts as hidden. Only the new work is looked at.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use super::{HistoryFacts, recorded_commit};
use crate::git::history::{self, vanished_changes};
use crate::git::{MainRepo, Oid};
use crate::plan::{Chunk, Plan, Status};

/// How many commits past the checked tip the quick check follows (a session makes a few).
pub(super) const LINE_LIMIT: usize = 64;

/// A branch tip whose whole history passed the check, and the recorded commits it held.
#[derive(Debug, Clone)]
struct Checked {
    tip: Oid,
    held: HashSet<Oid>,
}

/// A completed chunk's recorded commit: (chunk id, commit as written, commit id).
type Recorded = (String, String, Oid);

/// A phase's chunk list as last read, and its `Recorded` commits in order.
type PhaseSeen = (Arc<Vec<Chunk>>, Vec<Recorded>);

/// What a run remembers between its checks of the spec's branch.
#[derive(Debug, Default)]
pub struct HistoryMemo {
    checked: Mutex<Option<Checked>>,
    /// Each completed chunk's recorded commit, with the chunk it was read from: a chunk whose
    /// text is that very text (unchanged since; a copy shares it) is not read again.
    recorded: Mutex<HashMap<String, (Chunk, Option<String>)>>,
    /// Per phase, by place: its chunk list as last read, and what its completed chunks recorded
    /// (id, commit as written, commit id), in order. A phase whose list is that very list (a
    /// copy of the plan shares the phases it did not change) is not looked at again.
    phases: Mutex<Vec<PhaseSeen>>,
    /// The tip the last quick answer was for, and the recorded commits it found new on the
    /// line: when that tip passes, they are added to the held ones (not all read again).
    pending: Mutex<Option<(Oid, Vec<Oid>)>>,
}

impl HistoryMemo {
    /// The facts at `tip`, from the last checked tip on, when the branch grew from it by a line
    /// of one-parent commits and every recorded commit is one the check saw or one on that line.
    /// `None`: anything else, for the caller to look at the whole history.
    pub(super) fn facts(
        &self,
        main: &MainRepo,
        tip: Oid,
        plan: &Plan,
        current: Option<&Chunk>,
    ) -> Option<HistoryFacts> {
        if let Ok(mut pending) = self.pending.lock() {
            *pending = None;
        }
        let guard = self.checked.lock().ok()?;
        let checked = guard.as_ref()?;
        let mut known = self.recorded.lock().ok()?;
        // A merged spec's work is judged differently (see `history_facts`): not worth a path.
        if plan.raw.contains_key("merged") {
            return None;
        }
        let line = history::line_since(&main.repo, tip, checked.tip, LINE_LIMIT)?;
        let on_line: HashSet<Oid> = line.iter().copied().chain([checked.tip]).collect();
        let mut phases = self.phases.lock().ok()?;
        phases.truncate(plan.phases.len());
        let mut recorded = Vec::new();
        let mut new = Vec::new();
        for (at, phase) in plan.phases.iter().enumerate() {
            match phases.get(at) {
                Some((seen, _)) if Arc::ptr_eq(seen, &phase.chunks) => {}
                _ => {
                    let commits = phase_commits(&phase.chunks, &mut known);
                    let entry = (phase.chunks.clone(), commits);
                    match phases.get_mut(at) {
                        Some(slot) => *slot = entry,
                        None => phases.push(entry),
                    }
                }
            }
            for (id, text, oid) in &phases[at].1 {
                let oid = *oid;
                if on_line.contains(&oid) && !checked.held.contains(&oid) {
                    new.push((id.clone(), oid));
                } else if !checked.held.contains(&oid) {
                    if history::commit_exists(&main.repo, oid) {
                        return None;
                    }
                    continue;
                }
                recorded.push((id.clone(), text.clone(), true));
            }
        }
        let start =
            match current.and_then(|c| Some((c.id.clone(), c.last_attempt()?.start_commit?))) {
                Some((id, start)) => {
                    let oid = crate::git::commit_id(&start)?;
                    if !on_line.contains(&oid) {
                        return None;
                    }
                    Some((id, start, true))
                }
                None => None,
            };
        let added: Vec<Oid> = new.iter().map(|(_, oid)| *oid).collect();
        let hollowed = new
            .into_iter()
            .filter_map(|(id, oid)| {
                let paths = vanished_changes(&main.repo, tip, oid);
                (!paths.is_empty()).then_some((id, paths))
            })
            .collect();
        if let Ok(mut pending) = self.pending.lock() {
            *pending = Some((tip, added));
        }
        Some(HistoryFacts {
            branch_exists: true,
            recorded,
            start,
            hollowed,
        })
    }

    /// `tip` passed the check with these facts: remember it and the commits it held. After a
    /// quick answer for `tip`, the commits held are the ones held before and the new ones on the
    /// line (a commit held before and no longer recorded stays held: it is still an ancestor of
    /// `tip`, with no change hidden, so that a chunk recording it again is answered the same).
    pub(super) fn remember(&self, tip: Oid, facts: &HistoryFacts) {
        let pending = self.pending.lock().ok().and_then(|mut p| p.take());
        if let (Some((at, added)), Ok(mut slot)) = (pending, self.checked.lock())
            && at == tip
            && let Some(checked) = slot.as_mut()
        {
            checked.held.extend(added);
            checked.tip = tip;
            return;
        }
        let held = facts
            .recorded
            .iter()
            .filter(|(_, _, present)| *present)
            .filter_map(|(_, oid, _)| crate::git::commit_id(oid))
            .collect();
        if let Ok(mut slot) = self.checked.lock() {
            *slot = Some(Checked { tip, held });
        }
    }
}

/// The recorded commits of `chunks`' completed chunks, in order: (id, commit as written, commit
/// id), leaving out a chunk with no recorded commit or one that is not a commit id (as
/// `history_facts` does). `known` keeps each chunk's answer while its text is unchanged.
fn phase_commits(
    chunks: &[Chunk],
    known: &mut HashMap<String, (Chunk, Option<String>)>,
) -> Vec<Recorded> {
    chunks
        .iter()
        .filter(|c| c.status == Status::Completed)
        .filter_map(|chunk| {
            let text = match known.get(&chunk.id) {
                Some((seen, text)) if seen.shares_text_with(chunk) => text.clone(),
                _ => {
                    let text = recorded_commit(chunk);
                    known.insert(chunk.id.clone(), (chunk.clone(), text.clone()));
                    text
                }
            }?;
            let oid = crate::git::commit_id(&text)?;
            Some((chunk.id.clone(), text, oid))
        })
        .collect()
}
