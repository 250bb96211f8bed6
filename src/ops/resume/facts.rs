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
use crate::policy::runs::{Liveness, RunState};
use crate::store::runs::{self, Found, RunKind, RunRecord};
use crate::store::workspace::Workspace;
use crate::store::{LockState, lock};

pub struct DiskFacts<'a> {
    ws: &'a Workspace,
    now: DateTime<Utc>,
    stale_after: Duration,
    names: OnceCell<Vec<String>>,
    ids: OnceCell<Vec<(String, String)>>,
    /// Run id → its record's modification time.
    times: OnceCell<HashMap<String, SystemTime>>,
    specs: RefCell<HashMap<String, SpecFacts>>,
    records: RefCell<HashMap<String, Option<RunRecord>>>,
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
            times: OnceCell::new(),
            specs: RefCell::default(),
            records: RefCell::default(),
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

    fn spec_of(&self, id: &str) -> Option<&str> {
        self.ids()
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, s)| s.as_str())
    }

    fn times(&self) -> &HashMap<String, SystemTime> {
        self.times.get_or_init(|| {
            self.ids()
                .iter()
                .filter_map(|(id, spec)| {
                    let path = runs::path(&self.ws.specs_dir.join(spec), id);
                    let time = std::fs::symlink_metadata(path).and_then(|m| m.modified());
                    Some((id.clone(), time.ok()?))
                })
                .collect()
        })
    }

    /// The record of run `id` (read once; an unusable one is warned of once).
    pub fn record(&self, id: &str) -> Option<RunRecord> {
        if let Some(known) = self.records.borrow().get(id) {
            return known.clone();
        }
        let record = self.spec_of(id).and_then(|spec| {
            let paths = self.ws.spec(spec).ok()?;
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

    /// The runs of `spec`, most recently written first.
    fn runs_of(&self, spec: &str) -> Vec<String> {
        let times = self.times();
        let mut ids: Vec<(SystemTime, &str)> = self
            .ids()
            .iter()
            .filter(|(_, s)| s == spec)
            .map(|(id, _)| {
                (
                    times.get(id).copied().unwrap_or(SystemTime::UNIX_EPOCH),
                    id.as_str(),
                )
            })
            .collect();
        ids.sort_by(|a, b| b.cmp(a));
        ids.into_iter().map(|(_, id)| id.to_string()).collect()
    }

    fn read_spec(&self, name: &str) -> SpecFacts {
        let mut facts = SpecFacts::default();
        // A spec whose folder links outside the repository is never opened: `run` says why.
        let Ok(paths) = self.ws.spec(name) else {
            return facts;
        };
        if let Ok(LockState::Held(holder)) = lock::probe(&paths.run_lock) {
            facts.active = Some(active_from_holder(name, holder));
        }
        let newest = self.runs_of(name).into_iter().next();
        let newest_record = newest.as_deref().and_then(|id| self.record(id));
        if let Ok(Some(plan)) = paths.plan.load() {
            facts.state = plan_state(&plan);
            facts.current_chunk = plan
                .chunks()
                .find(|c| c.status == Status::InProgress)
                .map(|c| c.id.clone());
            facts.last_chunk = last_worked(&plan);
        }
        if facts.state == SpecState::Resumable && discarded(&paths.dir, newest_record.as_ref()) {
            facts.state = SpecState::Discarded;
        }
        if facts.last_chunk.is_none() {
            facts.last_chunk = newest_record.as_ref().and_then(|r| r.chunk.clone());
        }
        let journal = crate::store::segments::modified(&paths.dir);
        let record = newest.as_ref().and_then(|id| self.times().get(id).copied());
        facts.last_active = journal.max(record).map(DateTime::<Utc>::from);
        facts.newest_run = newest;
        facts
    }
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

    fn runs_newest_first(&self) -> Vec<String> {
        let times = self.times();
        let mut ids: Vec<(SystemTime, &String)> = times.iter().map(|(id, t)| (*t, id)).collect();
        ids.sort_by(|a, b| b.cmp(a));
        ids.into_iter().map(|(_, id)| id.clone()).collect()
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
        let folder = self.spec_of(id)?.to_string();
        let spec = self.spec(&folder);
        let lock_held_by_it = spec
            .active
            .as_ref()
            .is_some_and(|a| a.run_id.as_deref().is_none_or(|held| held == id));
        let here = r.host == crate::store::guard::hostname();
        let liveness = Liveness {
            lock_held_by_it,
            ended: r.ended.is_some(),
            heartbeat: r.heartbeat,
            process_gone: here && !crate::engine::recovery::repair::alive(r.pid as i32),
        };
        let state = crate::policy::runs::state(liveness, self.now, self.stale_after);
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
