//! The facts `policy::resolve` asks for, read from disk on demand and remembered: the runs
//! folders' file names for run ids (one `read_dir` per spec, no record opened), the records'
//! modification times for "most recent" (a record is rewritten at every heartbeat), a record
//! only for a run a reading matched, a spec's plan and lock only for a spec a reading reached.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::time::SystemTime;

use chrono::{DateTime, Duration, Utc};

use crate::plan::{Plan, Status};
use crate::policy::resolve::{Active, Facts, RunFacts, SpecFacts, SpecState};
use crate::policy::runs::RunState;
use crate::store::runs::{self, Found, RunKind, RunRecord};
use crate::store::workspace::{SpecPaths, Workspace};
use crate::store::{LockState, lock, spec_text};

pub struct DiskFacts<'a> {
    ws: &'a Workspace,
    now: DateTime<Utc>,
    stale_after: Duration,
    names: OnceCell<Vec<String>>,
    ids: OnceCell<Vec<(String, String)>>,
    /// A spec's runs with their records' modification times, newest first.
    spec_runs: RefCell<HashMap<String, Vec<(String, SystemTime)>>>,
    /// What a spec's plan says: its state, the chunk in progress, the chunk worked on last.
    plans: RefCell<HashMap<String, PlanFacts>>,
    specs: RefCell<HashMap<String, SpecFacts>>,
    /// Run id → spec, for the specs whose runs were listed.
    listed: RefCell<HashMap<String, String>>,
    /// Each spec's files, opened once (`None`: its folder links outside the repository).
    paths: RefCell<HashMap<String, Option<SpecPaths>>>,
    records: RefCell<HashMap<String, Option<RunRecord>>>,
    /// Each read spec's run lock: `Some(holder)` when held (the holder record if readable).
    locks: RefCell<HashMap<String, Option<Option<lock::Holder>>>>,
    /// Records that could not be used (each said once).
    pub warnings: RefCell<Vec<String>>,
}

impl<'a> DiskFacts<'a> {
    pub fn new(ws: &'a Workspace, now: DateTime<Utc>, stale_after: Duration) -> DiskFacts<'a> {
        DiskFacts {
            ws,
            now,
            stale_after,
            names: OnceCell::new(),
            ids: OnceCell::new(),
            spec_runs: RefCell::default(),
            plans: RefCell::default(),
            specs: RefCell::default(),
            paths: RefCell::default(),
            listed: RefCell::default(),
            records: RefCell::default(),
            locks: RefCell::default(),
            warnings: RefCell::default(),
        }
    }

    fn names(&self) -> &[String] {
        self.names
            .get_or_init(|| crate::store::spec::list(&self.ws.specs_dir))
    }

    fn ids(&self) -> &[(String, String)] {
        self.ids.get_or_init(|| {
            self.names()
                .iter()
                .flat_map(|spec| {
                    runs::list(&self.ws.specs_dir.join(spec))
                        .into_iter()
                        .map(move |id| (id, spec.clone()))
                })
                .collect()
        })
    }

    /// The spec whose runs folder holds `id`: known without listing every folder once that
    /// spec's runs were listed (a spec's facts, or no hint), else from every folder's names.
    fn spec_of(&self, id: &str) -> Option<String> {
        if let Some(spec) = self.listed.borrow().get(id) {
            return Some(spec.clone());
        }
        self.ids()
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, s)| s.clone())
    }

    /// The files of spec `name` (`Workspace::spec`, once).
    fn paths(&self, name: &str) -> Option<SpecPaths> {
        if let Some(known) = self.paths.borrow().get(name) {
            return known.clone();
        }
        let paths = self.ws.spec(name).ok();
        self.paths
            .borrow_mut()
            .insert(name.to_string(), paths.clone());
        paths
    }

    /// The record of run `id` (read once; an unusable one is warned of once).
    pub fn record(&self, id: &str) -> Option<RunRecord> {
        if let Some(known) = self.records.borrow().get(id) {
            return known.clone();
        }
        let record = self.spec_of(id).and_then(|spec| {
            let paths = self.paths(&spec)?;
            match runs::read(&paths.dir, id) {
                Found::Record(r) => Some(*r),
                Found::Nothing => None,
                Found::Unusable(why) => {
                    self.warnings.borrow_mut().push(why);
                    None
                }
            }
        });
        self.records
            .borrow_mut()
            .insert(id.to_string(), record.clone());
        record
    }

    /// Every run id with a record, shown at its shortest unique prefix (`policy::runs`).
    pub fn run_ids_shown(&self) -> HashMap<String, String> {
        let ids: Vec<&str> = self.ids().iter().map(|(id, _)| id.as_str()).collect();
        let lengths = crate::policy::runs::shortest_unique_lengths(&ids);
        ids.iter()
            .zip(lengths)
            .map(|(id, n)| (id.to_string(), id[..n].to_string()))
            .collect()
    }

    /// The runs of `spec` with their records' modification times (a record is rewritten at
    /// every heartbeat), newest first: one folder read and a stat per record of that spec.
    fn spec_runs(&self, spec: &str) -> Vec<(String, SystemTime)> {
        if let Some(known) = self.spec_runs.borrow().get(spec) {
            return known.clone();
        }
        let dir = self.ws.specs_dir.join(spec);
        let mut runs: Vec<(String, SystemTime)> = runs::list(&dir)
            .into_iter()
            .map(|id| {
                let time = std::fs::symlink_metadata(runs::path(&dir, &id))
                    .and_then(|m| m.modified())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                (id, time)
            })
            .collect();
        runs.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        let mut listed = self.listed.borrow_mut();
        for (id, _) in &runs {
            listed.insert(id.clone(), spec.to_string());
        }
        drop(listed);
        self.spec_runs
            .borrow_mut()
            .insert(spec.to_string(), runs.clone());
        runs
    }

    /// What the plan of `name` says (read once).
    fn plan_facts(&self, name: &str) -> PlanFacts {
        if let Some(known) = self.plans.borrow().get(name) {
            return known.clone();
        }
        let facts = match self.paths(name).map(|p| p.plan.load()) {
            Some(Ok(Some(plan))) => PlanFacts {
                state: plan_state(&plan),
                current: plan
                    .chunks()
                    .find(|c| c.status == Status::InProgress)
                    .map(|c| c.id.clone()),
                last: last_worked(&plan),
            },
            _ => PlanFacts::default(),
        };
        self.plans
            .borrow_mut()
            .insert(name.to_string(), facts.clone());
        facts
    }

    fn read_spec(&self, name: &str) -> SpecFacts {
        let mut facts = SpecFacts::default();
        // A spec whose folder links outside the repository is never opened: `run` says why.
        let Some(paths) = self.paths(name) else {
            return facts;
        };
        let held = match lock::probe(&paths.run_lock) {
            Ok(LockState::Held(holder)) => Some(holder),
            _ => None,
        };
        if let Some(holder) = &held {
            facts.active = Some(active_from_holder(name, holder.clone()));
        }
        self.locks.borrow_mut().insert(name.to_string(), held);
        let newest = self.spec_runs(name).into_iter().next();
        let newest_record = newest.as_ref().and_then(|(id, _)| self.record(id));
        let plan = self.plan_facts(name);
        facts.state = plan.state;
        facts.current_chunk = plan.current;
        facts.last_chunk = plan.last;
        if facts.state == SpecState::Resumable && discarded(&paths.dir, newest_record.as_ref()) {
            facts.state = SpecState::Discarded;
        }
        if facts.last_chunk.is_none() {
            facts.last_chunk = newest_record.as_ref().and_then(|r| r.chunk.clone());
        }
        let journal = crate::store::segments::modified(&paths.dir);
        let record = newest.as_ref().map(|(_, time)| *time);
        facts.last_active = journal.max(record).map(spec_text::utc_clamped);
        facts.newest_run = newest.map(|(id, _)| id);
        facts
    }
}

#[derive(Debug, Clone, Default)]
struct PlanFacts {
    state: SpecState,
    current: Option<String>,
    last: Option<String>,
}

/// Complete (every chunk), merged, or resumable (anything else, a plan still to write too).
fn plan_state(plan: &Plan) -> SpecState {
    if plan.raw.contains_key("merged") {
        SpecState::Merged
    } else if plan.total() > 0 && plan.count(Status::Completed) == plan.total() {
        SpecState::Complete
    } else {
        SpecState::Resumable
    }
}

/// The chunk whose last attempt started last.
fn last_worked(plan: &Plan) -> Option<String> {
    plan.chunks()
        .filter_map(|c| Some((c.last_attempt()?.started_at?, c.id.clone())))
        .max()
        .map(|(_, id)| id)
}

/// The spec's work was thrown away and nothing ran since: its newest record is a discard's,
/// or (no records: runs of an older runner) the journal's last run start or discard is a
/// discard.
fn discarded(spec_dir: &std::path::Path, newest: Option<&RunRecord>) -> bool {
    use crate::store::Event;
    if let Some(r) = newest {
        return r.kind == RunKind::Discard;
    }
    matches!(
        crate::store::journal::last_event_containing(spec_dir, "\"event\":\"", |e| matches!(
            e,
            Event::RunStart(_) | Event::Discarded(_) | Event::Undone(_)
        )),
        Some(Event::Discarded(_))
    )
}

fn active_from_holder(spec: &str, holder: Option<lock::Holder>) -> Active {
    let time = |t: &str| {
        DateTime::parse_from_rfc3339(t)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    };
    Active {
        spec: spec.to_string(),
        heartbeat: holder
            .as_ref()
            .and_then(|h| time(&h.heartbeat).or_else(|| time(&h.since))),
        run_id: holder.as_ref().map(|h| h.run_id.clone()),
        pid: holder.as_ref().map(|h| h.pid),
        host: holder.map(|h| h.host),
    }
}

impl Facts for DiskFacts<'_> {
    fn run_ids(&self) -> Vec<(String, String)> {
        self.ids().to_vec()
    }

    /// Ordered by their runs folders' modification times: a record is written by a rename
    /// into the folder, which sets the folder's time, so it is the newest record's time
    /// (a stat per spec instead of one per record).
    fn specs_by_recent_runs(&self) -> Vec<(String, DateTime<Utc>)> {
        let mut specs: Vec<(String, DateTime<Utc>)> = self
            .names()
            .iter()
            .filter_map(|name| {
                let dir = runs::dir(&self.ws.specs_dir.join(name));
                let time = std::fs::symlink_metadata(dir).and_then(|m| m.modified());
                Some((name.clone(), spec_text::utc_clamped(time.ok()?)))
            })
            .collect();
        specs.sort_by_key(|s| std::cmp::Reverse(s.1));
        specs
    }

    fn runs_of(&self, spec: &str) -> Vec<(String, DateTime<Utc>)> {
        self.spec_runs(spec)
            .into_iter()
            .map(|(id, time)| (id, spec_text::utc_clamped(time)))
            .collect()
    }

    fn worked_chunks(&self, name: &str) -> (Option<String>, Option<String>) {
        let plan = self.plan_facts(name);
        (plan.current, plan.last)
    }

    fn spec_names(&self) -> Vec<String> {
        self.names().to_vec()
    }

    fn spec(&self, name: &str) -> SpecFacts {
        if let Some(known) = self.specs.borrow().get(name) {
            return known.clone();
        }
        let facts = self.read_spec(name);
        self.specs
            .borrow_mut()
            .insert(name.to_string(), facts.clone());
        facts
    }

    /// The run's spec is the folder its record is in (a record naming another is not
    /// believed).
    fn run(&self, id: &str) -> Option<RunFacts> {
        let r = self.record(id)?;
        let folder = self.spec_of(id)?;
        // The spec's facts probe its lock once; the run's state is judged as `runner runs`
        // judges it.
        self.spec(&folder);
        let lock = self.locks.borrow().get(&folder).cloned().flatten();
        let state = crate::ops::runs::state_of(&r, lock.as_ref(), self.now, self.stale_after);
        Some(RunFacts {
            spec: folder,
            active: state == RunState::Active,
            heartbeat: r.heartbeat,
            pid: r.pid,
            host: r.host,
            chunk: r.chunk,
        })
    }
}
