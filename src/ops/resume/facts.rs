//! The facts `policy::resolve` asks for, read from disk on demand and remembered: the runs
//! folders' file names for run ids (one `read_dir` per spec, no record opened), the records'
//! modification times for "most recent" (a record is rewritten at every heartbeat), a record
//! only for a run a reading matched, a spec's plan and lock only for a spec a reading reached.
//!
//! What does not change between two resolutions is taken from the resolution cache
//! (`store::resolve_cache`) when the identity of what it was read from is unchanged: a runs
//! folder's run ids (a stat instead of a folder read), a plan's facts (a stat instead of a
//! parse), the newest record's facts (its stat is taken anyway). Everything that can change
//! without changing a file's identity (a lock, a heartbeat's age) is read every time.

use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::time::SystemTime;

use crate::store::resolve_cache::{PlanFacts, RecordFacts, ResolveCache, SpecEntry};
use crate::store::status_cache::Identity;

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
    /// When this resolution began: what the cache records must be settled before.
    began: SystemTime,
    cache: OnceCell<ResolveCache>,
    /// The specs folder, held open (each runs folder looked at below it).
    specs_folder: OnceCell<Option<runs::Folder>>,
    /// What this resolution found of each part of a spec's cache entry (`Some(None)`: looked
    /// at, nothing to keep).
    seen: RefCell<HashMap<String, Seen>>,
    names: OnceCell<Vec<String>>,
    ids: OnceCell<Vec<(String, String)>>,
    /// A spec's runs with their records' modification times (and identities), newest first.
    spec_runs: RefCell<HashMap<String, Vec<Listed>>>,
    /// What a spec's plan says: its state, the chunk in progress, the chunk worked on last.
    plans: RefCell<HashMap<String, PlanFacts>>,
    specs: RefCell<HashMap<String, SpecFacts>>,
    /// Run id → spec, for the specs whose runs were listed.
    listed: RefCell<HashMap<String, String>>,
    /// Each spec's files, opened once (`None`: its folder links outside the repository).
    paths: RefCell<HashMap<String, Option<SpecPaths>>>,
    /// Each record read, by spec and run id (a copied spec folder holds the same run ids).
    records: RefCell<HashMap<(String, String), Option<RunRecord>>>,
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
            began: SystemTime::now(),
            cache: OnceCell::new(),
            specs_folder: OnceCell::new(),
            seen: RefCell::default(),
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
                    self.run_list(spec)
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
        self.record_in(&self.spec_of(id)?, id)
    }

    /// The record of run `id` in the runs folder of `spec` (read once; an unusable one is
    /// warned of once).
    fn record_in(&self, spec: &str, id: &str) -> Option<RunRecord> {
        let key = (spec.to_string(), id.to_string());
        if let Some(known) = self.records.borrow().get(&key) {
            return known.clone();
        }
        let record = self
            .paths(spec)
            .and_then(|paths| match runs::read_of(&paths.dir, spec, id) {
                Found::Record(r) => Some(*r),
                Found::Nothing => None,
                Found::Unusable(why) => {
                    self.warnings.borrow_mut().push(why);
                    None
                }
            });
        self.records.borrow_mut().insert(key, record.clone());
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
    fn spec_runs(&self, spec: &str) -> Vec<Listed> {
        if let Some(known) = self.spec_runs.borrow().get(spec) {
            return known.clone();
        }
        let dir = self.ws.specs_dir.join(spec);
        let ids = self.run_list(spec);
        let stats = runs::stat_records(&dir, &ids);
        let mut runs: Vec<Listed> = ids
            .into_iter()
            .zip(stats)
            .map(|(id, stat)| match stat {
                Some((time, identity)) => (id, time, identity),
                None => (id, SystemTime::UNIX_EPOCH, None),
            })
            .collect();
        runs.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        let mut listed = self.listed.borrow_mut();
        for (id, ..) in &runs {
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
        let facts = self
            .paths(name)
            .map_or_else(PlanFacts::default, |paths| self.plan_read(name, &paths));
        self.plans
            .borrow_mut()
            .insert(name.to_string(), facts.clone());
        facts
    }

    fn cache(&self) -> &ResolveCache {
        self.cache
            .get_or_init(|| ResolveCache::load(&self.ws.state_dir))
    }

    /// Note what was found of `spec`'s cache entry.
    fn saw(&self, spec: &str, note: impl FnOnce(&mut Seen)) {
        note(self.seen.borrow_mut().entry(spec.to_string()).or_default());
    }

    /// The run ids in `spec`'s runs folder (`runs::list`): from the cache when the folder's
    /// identity is the recorded one, else from the folder (recorded when it is settled).
    fn run_list(&self, spec: &str) -> Vec<String> {
        let spec_dir = self.ws.specs_dir.join(spec);
        let specs = self
            .specs_folder
            .get_or_init(|| runs::Folder::open(&self.ws.specs_dir));
        let rel = format!("{spec}/{}", runs::RUNS_DIR);
        let identity = || specs.as_ref()?.dir_identity(&rel);
        let before = identity();
        if let Some(id) = before
            && let Some((_, ids)) = self
                .cache()
                .get(spec)
                .and_then(|e| e.runs.as_ref())
                .filter(|(known, _)| *known == id)
        {
            return ids.clone();
        }
        let ids = runs::list(&spec_dir);
        let entry = before
            .filter(|id| id.settled_before(self.began) && identity() == Some(*id))
            .map(|id| (id, ids.clone()));
        self.saw(spec, |s| s.runs = Some(entry));
        ids
    }

    /// What the plan of `name` says: from the cache when the plan file's identity is the
    /// recorded one, else from the plan (recorded when it is settled and read without a
    /// warning or an error).
    fn plan_read(&self, name: &str, paths: &SpecPaths) -> PlanFacts {
        let before = Identity::of(paths.plan.path());
        if let Some(id) = before
            && let Some((_, facts)) = self
                .cache()
                .get(name)
                .and_then(|e| e.plan.as_ref())
                .filter(|(known, _)| *known == id)
        {
            return facts.clone();
        }
        let (facts, clean) = match paths.plan.load() {
            Ok(Some(plan)) => (plan_facts_of(&plan), plan.warnings.is_empty()),
            _ => (PlanFacts::default(), false),
        };
        let entry = before
            .filter(|id| {
                clean
                    && id.settled_before(self.began)
                    && Identity::of(paths.plan.path()) == Some(*id)
            })
            .map(|id| (id, facts.clone()));
        self.saw(name, |s| s.plan = Some(entry));
        facts
    }

    /// What the newest record of `spec` (`listed`) says: from the cache when the record file's
    /// identity is the recorded one, else from the record (recorded when it is settled and
    /// usable).
    fn record_facts(&self, spec: &str, listed: &Listed) -> Option<RecordFacts> {
        let (id, _, identity) = listed;
        if let Some(now) = identity
            && let Some((_, _, facts)) = self
                .cache()
                .get(spec)
                .and_then(|e| e.record.as_ref())
                .filter(|(known_id, known, _)| known_id == id && known == now)
        {
            return Some(facts.clone());
        }
        let facts = self.record_in(spec, id).map(|r| RecordFacts {
            discard: r.kind == RunKind::Discard,
            chunk: r.chunk,
        });
        // A record that does not read leaves the cache's entry as it is: the entry is only
        // ever used for the id and identity it names, and the next record looked at (the
        // newest that reads) may be the one it holds.
        facts.as_ref()?;
        let spec_dir = self.ws.specs_dir.join(spec);
        let again = || runs::stat_records(&spec_dir, std::slice::from_ref(id)).pop();
        let entry = identity
            .filter(|i| i.settled_before(self.began) && again() == Some(Some((listed.1, Some(*i)))))
            .zip(facts.clone())
            .map(|(i, f)| (id.clone(), i, f));
        self.saw(spec, |s| s.record = Some(entry));
        facts
    }

    /// Keep what this resolution found in the resolution cache, if that changes it (the
    /// specs no longer there dropped).
    pub fn save(&self) {
        let Some(cache) = self.cache.get() else {
            return;
        };
        let seen = self.seen.borrow();
        let same = |name: &String, s: &Seen| {
            let known = cache.get(name);
            same_part(&s.runs, known.map(|e| &e.runs))
                && same_part(&s.plan, known.map(|e| &e.plan))
                && same_part(&s.record, known.map(|e| &e.record))
        };
        let gone = self.names.get().is_some_and(|names| {
            cache
                .entries()
                .keys()
                .any(|name| names.binary_search(name).is_err())
        });
        if !gone && seen.iter().all(|(name, s)| same(name, s)) {
            return;
        }
        drop(seen);
        let mut entries = cache.entries().clone();
        if let Some(names) = self.names.get() {
            entries.retain(|name, _| names.binary_search(name).is_ok());
        }
        for (name, seen) in self.seen.borrow_mut().drain() {
            let entry: &mut SpecEntry = entries.entry(name).or_default();
            if let Some(runs) = seen.runs {
                entry.runs = runs;
            }
            if let Some(plan) = seen.plan {
                entry.plan = plan;
            }
            if let Some(record) = seen.record {
                entry.record = record;
            }
        }
        cache.save(&self.ws.state_dir, entries);
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
        // The newest run whose record reads (`runs::read_of`, as `runner runs` reads them): a
        // file named like a run id that does not read is no run. Most often the first one.
        let (newest, newest_record) = self
            .spec_runs(name)
            .into_iter()
            .find_map(|listed| {
                let facts = self.record_facts(name, &listed)?;
                Some((listed, facts))
            })
            .unzip();
        let plan = self.plan_facts(name);
        facts.state = plan.state;
        facts.current_chunk = plan.current;
        facts.last_chunk = plan.last;
        if facts.state == SpecState::Resumable && discarded(&paths.dir, newest_record.as_ref()) {
            facts.state = SpecState::Discarded;
        }
        if facts.last_chunk.is_none() {
            facts.last_chunk = newest_record.and_then(|r| r.chunk);
        }
        let journal = crate::store::segments::modified(&paths.dir);
        let record = newest.as_ref().map(|(_, time, _)| *time);
        facts.last_active = journal.max(record).map(spec_text::utc_clamped);
        facts.newest_run = newest.map(|(id, ..)| id);
        facts
    }
}

/// A run id, its record's modification time and identity (`None`: not a regular file).
type Listed = (String, SystemTime, Option<Identity>);

/// What one resolution found of a spec's cache entry where the entry did not answer, part by
/// part (a part the entry answered for is kept as it is).
#[derive(Debug, Default)]
struct Seen {
    runs: Option<Option<(Identity, Vec<String>)>>,
    plan: Option<Option<(Identity, PlanFacts)>>,
    record: Option<Option<(String, Identity, RecordFacts)>>,
}

/// A part of a cache entry this resolution looked at (`seen`) is the one loaded (`known`).
fn same_part<T: PartialEq>(seen: &Option<Option<T>>, known: Option<&Option<T>>) -> bool {
    seen.as_ref()
        .is_none_or(|s| s.as_ref() == known.and_then(Option::as_ref))
}

/// What a plan says for resuming (the plan loaded in full).
fn plan_facts_of(plan: &Plan) -> PlanFacts {
    PlanFacts {
        state: plan_state(plan),
        current: plan
            .chunks()
            .find(|c| c.status == Status::InProgress)
            .map(|c| c.id.clone()),
        last: last_worked(plan),
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
fn discarded(spec_dir: &std::path::Path, newest: Option<&RecordFacts>) -> bool {
    use crate::store::Event;
    if let Some(r) = newest {
        return r.discard;
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
    fn run_ids(&self) -> Cow<'_, [(String, String)]> {
        Cow::Borrowed(self.ids())
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
            .map(|(id, time, _)| (id, spec_text::utc_clamped(time)))
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
