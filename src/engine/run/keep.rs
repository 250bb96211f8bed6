//! What `runner run` keeps for `runner runs`, `show` and `resume`: its run record
//! (`engine::track`) and the spec's checkpoint (`store::checkpoint`), written at the run's
//! start, after recovery changed statuses, at every chunk boundary (a chunk completed, an
//! attempt or a chunk failed) and at its end.
//!
//! The checkpoint is built from the plan the run holds in memory at that moment (never an extra
//! read of the plan): O(chunks) per write, no journal read. A completed chunk's commit is the
//! one this run committed, else the one an earlier checkpoint recorded, else its last completed
//! attempt's. Advisory like the record: a write that fails is logged and the run goes on; the
//! write itself is atomic and durable (`resume` loads the checkpoint first).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::*;
use crate::engine::track::RunTrack;
use crate::store::checkpoint::{self, Checkpoint, ChunkState, LastVerification, Trigger};
use crate::store::runs::{RunKind, RunRecord};

/// The chunk statuses and figures a checkpoint takes from a plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct PlanFacts {
    /// Shared with [`FactsMemo`] while the chunk is unchanged (the checkpoint keeps each one's
    /// text while it is this very state).
    chunks: Vec<Arc<ChunkState>>,
    seconds: u64,
    usd: f64,
    tokens: u64,
}

impl PlanFacts {
    /// Every chunk's status (and, if completed, its last completed attempt's commit), the
    /// seconds its attempts took and what they cost.
    pub(super) fn of(plan: &Plan) -> PlanFacts {
        PlanFacts::gather(plan, |chunk| {
            let facts = ChunkFacts::of(chunk);
            let state = Arc::new(state_of(chunk, &facts));
            (facts, state)
        })
    }

    /// [`PlanFacts::of`], with each chunk's figures and state from `facts_of`: the sums are
    /// made in the same order (attempt by attempt, chunk by chunk), so they are the same to the
    /// last bit.
    fn gather(
        plan: &Plan,
        mut facts_of: impl FnMut(&Chunk) -> (ChunkFacts, Arc<ChunkState>),
    ) -> Self {
        let mut facts = PlanFacts::default();
        for chunk in plan.chunks() {
            let (of, state) = facts_of(chunk);
            facts.add(&of, state);
        }
        facts
    }

    /// The next chunk's figures and state.
    fn add(&mut self, of: &ChunkFacts, state: Arc<ChunkState>) {
        self.seconds += of.seconds;
        for usd in &of.usd {
            self.usd += usd;
        }
        self.tokens += of.tokens;
        self.chunks.push(state);
    }
}

/// The checkpoint's state of `chunk`, whose attempts gave `facts`.
fn state_of(chunk: &Chunk, facts: &ChunkFacts) -> ChunkState {
    let status = chunk.status;
    ChunkState {
        id: chunk.id.clone(),
        status: status.as_str().to_string(),
        commit: facts.commit.clone().filter(|_| status == Status::Completed),
    }
}

/// What one chunk's attempt records give a checkpoint.
#[derive(Debug, Clone, Default, PartialEq)]
struct ChunkFacts {
    seconds: u64,
    /// Each attempt's cost, in order (summed in that order by `PlanFacts::gather`).
    usd: Vec<f64>,
    tokens: u64,
    /// The last completed attempt's commit.
    commit: Option<String>,
}

impl ChunkFacts {
    fn of(chunk: &Chunk) -> ChunkFacts {
        let mut facts = ChunkFacts::default();
        for a in chunk.attempts() {
            if let (Some(start), Some(end)) = (&a.started_at, &a.ended_at)
                && let (Ok(start), Ok(end)) = (
                    DateTime::parse_from_rfc3339(start),
                    DateTime::parse_from_rfc3339(end),
                )
            {
                facts.seconds += (end - start).num_seconds().max(0) as u64;
            }
            let spent = crate::store::ledger::attempt(&a);
            facts.usd.push(spent.usd);
            facts.tokens += spent.tokens;
            if a.outcome.as_deref() == Some("completed") && a.commit.is_some() {
                facts.commit = a.commit;
            }
        }
        facts
    }
}

/// Each chunk's [`ChunkFacts`], kept with the chunk they were read from. A plan runner has
/// read or written holds an unchanged chunk as the very text it had before (shared, not
/// copied: `Chunk::shares_text_with`), so at each chunk boundary only the chunks that changed
/// are read again: parsing every attempt record of an 800-chunk plan at every chunk made the
/// checkpoint's figures a cost that grew with the plan. Holding the chunk keeps its text
/// alive, so a text compared by address is never another one at the same address.
///
/// Per phase, the chunk list last read is kept too: a copy of the plan shares the phases it
/// did not change (`Plan::chunk_mut`), and such a phase's chunks are not looked up at all.
#[derive(Debug, Default)]
pub(super) struct FactsMemo {
    chunks: RefCell<HashMap<String, Kept>>,
    phases: RefCell<Vec<PhaseMade>>,
}

/// A phase's chunk list as last read, and what was made of each of its chunks.
type PhaseMade = (Arc<Vec<Chunk>>, Vec<Made>);

/// A chunk's figures and checkpoint state, as [`FactsMemo`] made them.
type Made = (Arc<ChunkFacts>, Arc<ChunkState>);

/// A chunk as [`FactsMemo`] read it: its figures and its checkpoint state.
#[derive(Debug)]
struct Kept {
    chunk: Chunk,
    facts: Arc<ChunkFacts>,
    state: Arc<ChunkState>,
}

impl FactsMemo {
    /// [`PlanFacts::of`] `plan`, exactly, reading again only the chunks whose text changed.
    pub(super) fn of(&self, plan: &Plan) -> PlanFacts {
        let mut known = self.chunks.borrow_mut();
        let mut phases = self.phases.borrow_mut();
        phases.truncate(plan.phases.len());
        let mut facts = PlanFacts::default();
        for (at, phase) in plan.phases.iter().enumerate() {
            let same =
                matches!(phases.get(at), Some((seen, _)) if Arc::ptr_eq(seen, &phase.chunks));
            if !same {
                let rows = phase.chunks.iter().map(|c| row_of(&mut known, c)).collect();
                let entry = (phase.chunks.clone(), rows);
                match phases.get_mut(at) {
                    Some(slot) => *slot = entry,
                    None => phases.push(entry),
                }
            }
            for (of, state) in &phases[at].1 {
                facts.add(of, state.clone());
            }
        }
        facts
    }
}

/// `chunk`'s figures and state: from `known` when its text is the one they were read from,
/// else read (and kept, when the chunk is its file's text).
fn row_of(known: &mut HashMap<String, Kept>, chunk: &Chunk) -> Made {
    if let Some(kept) = known.get(&chunk.id)
        && kept.chunk.shares_text_with(chunk)
    {
        let state = if kept.state.status == chunk.status.as_str() {
            kept.state.clone()
        } else {
            Arc::new(state_of(chunk, &kept.facts))
        };
        return (kept.facts.clone(), state);
    }
    let facts = Arc::new(ChunkFacts::of(chunk));
    let state = Arc::new(state_of(chunk, &facts));
    if chunk.is_verbatim() {
        let kept = Kept {
            chunk: chunk.clone(),
            facts: facts.clone(),
            state: state.clone(),
        };
        known.insert(chunk.id.clone(), kept);
    }
    (facts, state)
}

/// A chunk's entry in the last checkpoint written: the state it was made from, the commit it
/// names, and its text in the file.
#[derive(Debug)]
struct Row {
    state: Arc<ChunkState>,
    commit: Option<String>,
    text: String,
}

/// The checkpoint's chunk entries for `chunks`, a completed chunk's commit taken from
/// `commits` first: each one's text kept from `rows` (the last checkpoint's) when it is made
/// from the same state with the same commit, else made anew. The same texts as serialising
/// every chunk (tested).
fn chunk_rows(
    mut rows: Vec<Row>,
    chunks: &[Arc<ChunkState>],
    commits: &HashMap<String, String>,
) -> Vec<Row> {
    rows.truncate(chunks.len());
    let mut old = rows.into_iter();
    chunks
        .iter()
        .map(|state| {
            let commit = match commits.get(&state.id) {
                Some(c) if state.status == Status::Completed.as_str() => Some(c),
                _ => state.commit.as_ref(),
            };
            match old.next() {
                Some(row) if Arc::ptr_eq(&row.state, state) && row.commit.as_ref() == commit => row,
                _ => {
                    let written = ChunkState {
                        commit: commit.cloned(),
                        ..(**state).clone()
                    };
                    Row {
                        state: state.clone(),
                        text: checkpoint::chunk_text(&written),
                        commit: written.commit,
                    }
                }
            }
        })
        .collect()
}

/// The outcome of a run that never wrote its end and whose spec another run has taken up since.
pub const CUT_OFF: &str = "cut_off";

/// Every earlier run of the spec whose record never got its end was cut off (killed, or its
/// machine went away): this run holds the spec's lock, so none of them is still running. Each
/// gets `ended` = its last heartbeat and outcome [`CUT_OFF`], so that `runner runs --stale`
/// lists only work nobody has taken up again. Advisory, like every record write: a record that
/// cannot be read or written is left as it is.
fn close_cut_off(spec_dir: &std::path::Path, own_id: &str) {
    for id in crate::store::runs::list(spec_dir) {
        if id == own_id {
            continue;
        }
        if let crate::store::runs::Found::Record(mut r) = crate::store::runs::read(spec_dir, &id)
            && r.ended.is_none()
        {
            r.ended = Some(r.heartbeat);
            r.outcome = Some(CUT_OFF.to_string());
            if let Err(e) = crate::store::runs::write(spec_dir, &r) {
                tracing::warn!(run = %id, "could not mark the cut-off run as ended: {e}");
            }
        }
    }
}

/// The run's record and what its checkpoints carry from one write to the next.
pub(super) struct Keeper {
    pub(super) track: RunTrack,
    spec_dir: PathBuf,
    spec: String,
    slot: String,
    /// The commit of each chunk completed in this run or recorded by an earlier checkpoint.
    commits: RefCell<HashMap<String, String>>,
    verification: RefCell<Option<LastVerification>>,
    /// The planner's spending (its ledger file), read once per run and on each planner session.
    planner: RefCell<crate::policy::budget::Spent>,
    /// Each chunk's figures, read again only when its text changed.
    pub(super) facts: FactsMemo,
    /// The last checkpoint's chunk entries.
    rows: RefCell<Vec<Row>>,
}

impl Keeper {
    /// The run `run_id` of `paths` starts in `slot`: its record is written now, and what the
    /// spec's last checkpoint knew of completed chunks' commits is kept.
    pub(super) fn start(
        paths: &SpecPaths,
        run_id: &str,
        slot: &str,
        agent: &str,
        resumed_from: Option<&str>,
    ) -> Keeper {
        let mut record = RunRecord::starting(run_id, &paths.name, RunKind::Run);
        record.agent = Some(agent.to_string());
        record.slot = Some(slot.to_string());
        record.resumed_from = resumed_from.map(str::to_string);
        let track = RunTrack::start_with(&paths.dir, record);
        close_cut_off(&paths.dir, run_id);
        let mut commits = HashMap::new();
        let mut verification = None;
        if let checkpoint::Found::Checkpoint(c) = checkpoint::read(&paths.dir)
            && c.spec == paths.name
        {
            commits.extend(c.chunks.into_iter().filter_map(|s| Some((s.id, s.commit?))));
            verification = c.verification;
        }
        Keeper {
            track,
            spec_dir: paths.dir.clone(),
            spec: paths.name.clone(),
            slot: slot.to_string(),
            commits: RefCell::new(commits),
            verification: RefCell::new(verification),
            planner: RefCell::new(crate::store::ledger::planner(&paths.dir)),
            facts: FactsMemo::default(),
            rows: RefCell::default(),
        }
    }

    /// Chunk `id` was committed as `commit` (its own commit; `None`: it has none).
    pub(super) fn committed(&self, id: &str, commit: Option<&str>) {
        let mut commits = self.commits.borrow_mut();
        match commit {
            Some(c) => commits.insert(id.to_string(), c.to_string()),
            None => commits.remove(id),
        };
    }

    /// A verification command ran for chunk `chunk`.
    pub(super) fn verified(&self, chunk: &str, check: &CheckResult) {
        *self.verification.borrow_mut() = Some(LastVerification {
            chunk: chunk.to_string(),
            passed: check.passed,
            command: check.command.clone(),
            detail: check.detail_with_log().chars().take(500).collect(),
            time: Utc::now(),
        });
    }

    /// The planner's ledger changed: read it again (a small file).
    pub(super) fn planner_spent(&self) {
        *self.planner.borrow_mut() = crate::store::ledger::planner(&self.spec_dir);
    }

    /// Write the checkpoint: `facts` from the plan as it is now, the chunk being (or last)
    /// worked on, the branch's tip, the base.
    pub(super) fn checkpoint(
        &self,
        trigger: Trigger,
        facts: PlanFacts,
        current: Option<&str>,
        tip: Option<String>,
        base: Option<&str>,
    ) {
        let rows = chunk_rows(self.rows.take(), &facts.chunks, &self.commits.borrow());
        let planner = self.planner.borrow();
        let written = Checkpoint {
            schema: 1,
            id: crate::store::ids::run_id(),
            run_id: self.track.run_id(),
            spec: self.spec.clone(),
            time: Utc::now(),
            trigger,
            chunks: Vec::new(),
            current_chunk: current.map(str::to_string),
            branch: branch_for(&self.spec),
            tip,
            base: base.map(str::to_string),
            slot: Some(self.slot.clone()),
            verification: self.verification.borrow().clone(),
            seconds_spent: facts.seconds,
            cost_usd: crate::policy::budget::clean_usd(facts.usd + planner.usd),
            tokens: facts.tokens + planner.tokens,
        };
        let bytes = checkpoint::bytes_with_chunks(&written, rows.iter().map(|r| r.text.as_str()));
        *self.rows.borrow_mut() = rows;
        if let Err(e) = bytes.and_then(|b| checkpoint::write_bytes(&self.spec_dir, &b)) {
            tracing::warn!(
                file = %checkpoint::path(&self.spec_dir).display(),
                "could not write the checkpoint: {e}"
            );
        }
    }
}

/// The tip of the spec's branch as the worktree `wt` has it.
pub(super) fn tip_of(wt: Option<&crate::git::Repository>) -> Option<String> {
    wt.and_then(|wt| head_commit(wt).ok())
        .map(|oid| oid.to_string())
}

impl Run {
    /// Write the checkpoint from `facts` (none: no plan yet), the branch's tip as the
    /// worktree has it (`tip`, or looked up).
    pub(super) fn checkpoint_at(
        &self,
        trigger: Trigger,
        facts: Option<PlanFacts>,
        current: Option<&str>,
        tip: Option<String>,
    ) {
        let tip = tip.or_else(|| tip_of(self.open_worktree().ok().as_ref()));
        let current = current
            .map(str::to_string)
            .or_else(|| self.keeper.track.current_chunk());
        self.keeper.checkpoint(
            trigger,
            facts.unwrap_or_default(),
            current.as_deref(),
            tip,
            Some(&self.base),
        );
    }

    /// Chunk `id` was committed (`commit`: its own commit) and completed, the branch's tip is
    /// now `head`; `next` was taken in the same plan write.
    pub(super) fn chunk_done(
        &self,
        id: &str,
        commit: Option<&str>,
        facts: PlanFacts,
        next: Option<&str>,
        head: &str,
    ) {
        self.keeper.committed(id, commit);
        self.checkpoint_at(
            Trigger::ChunkDone,
            Some(facts),
            Some(next.unwrap_or(id)),
            Some(head.to_string()),
        );
    }

    /// [`Run::checkpoint_at`] with the tip looked up.
    pub(super) fn checkpoint(
        &self,
        trigger: Trigger,
        facts: Option<PlanFacts>,
        current: Option<&str>,
    ) {
        self.checkpoint_at(trigger, facts, current, None);
    }
}

#[cfg(test)]
#[path = "keep_tests.rs"]
mod tests;
