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

use std::borrow::Cow;
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
            (Cow::Owned(facts), state)
        })
    }

    /// [`PlanFacts::of`], with each chunk's figures and state from `facts_of`: the sums are
    /// made in the same order (attempt by attempt, chunk by chunk), so they are the same to the
    /// last bit.
    fn gather<'m>(
        plan: &Plan,
        mut facts_of: impl FnMut(&Chunk) -> (Cow<'m, ChunkFacts>, Arc<ChunkState>),
    ) -> Self {
        let mut facts = PlanFacts::default();
        for chunk in plan.chunks() {
            let (of, state) = facts_of(chunk);
            facts.seconds += of.seconds;
            for usd in &of.usd {
                facts.usd += usd;
            }
            facts.tokens += of.tokens;
            facts.chunks.push(state);
        }
        facts
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
#[derive(Debug, Default)]
pub(super) struct FactsMemo(RefCell<HashMap<String, Kept>>);

/// A chunk as [`FactsMemo`] read it: its figures and its checkpoint state.
#[derive(Debug)]
struct Kept {
    chunk: Chunk,
    facts: ChunkFacts,
    state: Arc<ChunkState>,
}

impl FactsMemo {
    /// [`PlanFacts::of`] `plan`, exactly, reading again only the chunks whose text changed.
    pub(super) fn of(&self, plan: &Plan) -> PlanFacts {
        let mut memo = self.0.borrow_mut();
        let mut fresh: Vec<(String, Kept)> = Vec::new();
        let known = &*memo;
        let facts = PlanFacts::gather(plan, |chunk| match known.get(&chunk.id) {
            Some(kept) if kept.chunk.shares_text_with(chunk) => {
                let state = if kept.state.status == chunk.status.as_str() {
                    kept.state.clone()
                } else {
                    Arc::new(state_of(chunk, &kept.facts))
                };
                (Cow::Borrowed(&kept.facts), state)
            }
            _ => {
                let facts = ChunkFacts::of(chunk);
                let state = Arc::new(state_of(chunk, &facts));
                if chunk.is_verbatim() {
                    let kept = Kept {
                        chunk: chunk.clone(),
                        facts: facts.clone(),
                        state: state.clone(),
                    };
                    fresh.push((chunk.id.clone(), kept));
                }
                (Cow::Owned(facts), state)
            }
        });
        for (id, kept) in fresh {
            memo.insert(id, kept);
        }
        facts
    }
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
            detail: check.detail.chars().take(500).collect(),
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
mod tests {
    use super::*;
    use crate::plan::PlanFile;

    fn attempt(n: u32, usd: f64, outcome: &str) -> Value {
        serde_json::json!({
            "n": n, "session_id": format!("s{n}"), "started_at": "2026-01-10T10:00:00Z",
            "ended_at": format!("2026-01-10T10:0{n}:07Z"), "outcome": outcome,
            "commit": format!("{n:0>40}"), "cost_usd": usd,
            "tokens": {"input": 10 * n, "output": 3, "cache_read": 0, "cache_write": 0},
        })
    }

    /// The memo gives exactly `PlanFacts::of` (sums to the last bit) as the plan changes by
    /// runner's writes and behind its back, and reads again only the chunks that changed.
    #[test]
    fn the_memo_gives_exactly_the_facts_of_the_whole_plan() {
        let dir = tempfile::tempdir().unwrap();
        let chunks: Vec<Value> = (1..=5)
            .map(|i| {
                let attempts: Vec<Value> = (1..=i as u32)
                    .map(|n| attempt(n, 0.1 * f64::from(n) + 0.07, if n == i as u32 { "completed" } else { "failed" }))
                    .collect();
                serde_json::json!({"id": format!("c{i}"), "description": "d", "status": "completed", "attempts": attempts})
            })
            .collect();
        let plan = serde_json::json!({"feature": "f", "phases": [{"id": "p1", "name": "P", "subtasks": chunks}]});
        std::fs::write(
            dir.path().join("implementation_plan.json"),
            serde_json::to_vec_pretty(&plan).unwrap(),
        )
        .unwrap();
        let file = PlanFile::in_spec_dir(dir.path());
        let memo = FactsMemo::default();
        let check = |plan: &Plan| {
            let (fast, slow) = (memo.of(plan), PlanFacts::of(plan));
            assert_eq!(fast, slow);
            assert_eq!(fast.usd.to_bits(), slow.usd.to_bits());
            fast
        };
        let first = check(&file.load().unwrap().unwrap());
        assert_eq!(first.chunks.len(), 5);
        assert_eq!(
            first.chunks[4].commit.as_deref(),
            Some(&*format!("{:0>40}", 5))
        );
        // runner changes one chunk (its text is rewritten; the others stay shared).
        let changed = file
            .update(|plan| {
                let pos = plan.find_chunk("c3").unwrap();
                plan.chunk_mut(pos).update_last_attempt(|a| {
                    a.extra.insert("cost_usd".into(), serde_json::json!(1.3));
                });
                Ok(plan.clone())
            })
            .unwrap();
        let second = check(&changed);
        assert_ne!(second.usd.to_bits(), first.usd.to_bits());
        let reread = file.load().unwrap().unwrap();
        assert_eq!(check(&reread), second);
        // Someone else edits a chunk in the file: read anew, not taken from the memo.
        let path = dir.path().join("implementation_plan.json");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            text.replace("\"cost_usd\": 0.27", "\"cost_usd\": 2.5"),
        )
        .unwrap();
        let edited = file.load().unwrap().unwrap();
        let third = check(&edited);
        assert_ne!(third, second);
        // A chunk whose status alone changes keeps its figures but not its commit.
        let text = std::fs::read_to_string(&path).unwrap();
        let at = text.rfind("\"status\": \"completed\"").unwrap();
        let edited = format!(
            "{}\"status\": \"pending\"{}",
            &text[..at],
            &text[at + "\"status\": \"completed\"".len()..]
        );
        std::fs::write(&path, edited).unwrap();
        let fourth = check(&file.load().unwrap().unwrap());
        assert_eq!(fourth.chunks[4].status, "pending");
        assert_eq!(fourth.chunks[4].commit, None);
        assert_eq!(fourth.usd.to_bits(), third.usd.to_bits());
    }
    /// The entries kept from one checkpoint to the next are the ones serialising every chunk
    /// gives, as chunks change (a new state), move, appear and go, and as runner's record of
    /// commits changes.
    #[test]
    fn kept_chunk_entries_are_the_ones_of_the_whole_list() {
        let mut seed: u64 = 11;
        let mut roll = |n: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as usize % n
        };
        let statuses = ["pending", "in_progress", "completed", "failed"];
        let new_state = |i: usize, r: &mut dyn FnMut(usize) -> usize| {
            Arc::new(ChunkState {
                id: format!("c{i}"),
                status: statuses[r(statuses.len())].to_string(),
                commit: (r(2) == 0).then(|| format!("{:0>40}", r(3))),
            })
        };
        let mut chunks: Vec<Arc<ChunkState>> = (0..6).map(|i| new_state(i, &mut roll)).collect();
        let mut commits: HashMap<String, String> = HashMap::new();
        let mut rows = Vec::new();
        for _ in 0..500 {
            match roll(5) {
                0 => {
                    let at = roll(chunks.len());
                    chunks[at] = new_state(roll(8), &mut roll);
                }
                1 => {
                    commits.insert(format!("c{}", roll(8)), format!("{:0>40}", roll(3)));
                }
                2 if chunks.len() > 1 => {
                    chunks.remove(roll(chunks.len()));
                }
                3 => chunks.insert(roll(chunks.len() + 1), new_state(roll(8), &mut roll)),
                _ => {
                    let (a, b) = (roll(chunks.len()), roll(chunks.len()));
                    chunks.swap(a, b);
                }
            }
            rows = chunk_rows(rows, &chunks, &commits);
            let whole: Vec<String> = chunks
                .iter()
                .map(|c| {
                    let mut c = (**c).clone();
                    if c.status == Status::Completed.as_str() {
                        c.commit = commits.get(&c.id).cloned().or(c.commit);
                    }
                    checkpoint::chunk_text(&c)
                })
                .collect();
            let kept: Vec<String> = rows.iter().map(|r| r.text.clone()).collect();
            assert_eq!(kept, whole);
        }
    }
}
