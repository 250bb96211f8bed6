//! `runner watch`'s reading side: every spec as `runner status` judges it (its report, the one
//! rule), each active run's record and the agent's latest line, read again only when a stamp
//! says something changed (`stamps`), so that watching costs a few `lstat`s and lock probes a
//! poll. The rows the screen shows are worked out by the pure `model`; a spec's log pane is a
//! `follow::Follow`. Reads only: nothing is written but the status cache `status` keeps.

pub mod follow;
pub mod model;
mod stamps;

use std::collections::HashMap;
use std::path::PathBuf;

use chrono::{DateTime, Utc};

use crate::ops::status::{StatusReport, hide_finished, status_of};
use crate::store::runs::{self, Found};
use crate::store::workspace::SpecPaths;

pub use model::{Live, Row};

#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    /// Merged and discarded specs too (left out by default, as `status` leaves them out).
    pub all: bool,
}

/// What watch shows at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchView {
    pub rows: Vec<Row>,
    /// How many merged or discarded specs were left out.
    pub hidden: usize,
}

/// A watch of a workspace's specs: [`Watch::refresh`] as often as wanted, [`Watch::view`]
/// to see.
/// A spec's newest session, and the stamp of its sessions folder when it was read.
type NewestSeen = (Option<stamps::FileStamp>, Option<String>);

pub struct Watch<'a> {
    ctx: &'a super::Ctx,
    opts: WatchOptions,
    report: StatusReport,
    live: HashMap<String, Live>,
    /// The stamps `report` was read at: the specs folder, then each spec's.
    seen: (Option<stamps::FileStamp>, Vec<(String, stamps::SpecStamp)>),
    /// The stamps each active run's latest line was read at.
    logs: HashMap<String, stamps::LogStamp>,
    /// Each spec's newest session as a pane last asked, with the stamp of its sessions folder
    /// then: listing the sessions may read the journal (sessions of the same second), so it is
    /// done again only when the folder changed, not at every poll.
    newest: std::cell::RefCell<HashMap<String, NewestSeen>>,
}

impl<'a> Watch<'a> {
    /// A watch of `ctx`'s workspace, read once.
    pub fn open(ctx: &'a super::Ctx, opts: WatchOptions) -> anyhow::Result<Watch<'a>> {
        let mut watch = Watch {
            ctx,
            opts,
            report: StatusReport {
                specs: Vec::new(),
                slots: Vec::new(),
                hidden: 0,
            },
            live: HashMap::new(),
            seen: (None, Vec::new()),
            logs: HashMap::new(),
            newest: std::cell::RefCell::new(HashMap::new()),
        };
        watch.refresh(true)?;
        Ok(watch)
    }

    /// Look again: the specs' stamps first, and `status` read again only when one changed (or
    /// when `force`d: what no stamp shows, a pause running out or a branch rewritten, is
    /// caught by the caller forcing now and then); then each active run's latest line, read
    /// when its log changed. The caller compares the views to know what to draw.
    pub fn refresh(&mut self, force: bool) -> anyhow::Result<()> {
        let ws = &self.ctx.ws;
        let specs_dir = stamps::of(&ws.specs_dir);
        let names = if force || specs_dir != self.seen.0 {
            crate::store::spec::list(&ws.specs_dir)
        } else {
            self.seen.1.iter().map(|(name, _)| name.clone()).collect()
        };
        let seen: Vec<(String, stamps::SpecStamp)> = names
            .into_iter()
            .filter_map(|name| {
                let paths = ws.spec(&name).ok()?;
                let stamp = stamps::spec(&ws.state_dir, &paths);
                Some((name, stamp))
            })
            .collect();
        if force || (specs_dir, &seen) != (self.seen.0, &self.seen.1) {
            let mut report = status_of(ws, None)?;
            if !self.opts.all {
                hide_finished(&mut report);
            }
            self.report = report;
            self.read_records();
            self.seen = (specs_dir, seen);
        }
        self.read_latest_lines();
        Ok(())
    }

    /// The record of each active run; specs no longer active are forgotten.
    fn read_records(&mut self) {
        let mut live = HashMap::new();
        for s in &self.report.specs {
            let Some(run_id) = s.running.as_ref().and_then(|r| r.run_id.as_deref()) else {
                continue;
            };
            let Ok(paths) = self.ctx.ws.spec(&s.spec) else {
                continue;
            };
            let record = match runs::read_of(&paths.dir, &s.spec, run_id) {
                Found::Record(r) => Some(*r),
                Found::Nothing | Found::Unusable(_) => None,
            };
            let mut entry = self.live.remove(&s.spec).unwrap_or_default();
            entry.record = record;
            live.insert(s.spec.clone(), entry);
        }
        self.logs.retain(|spec, _| live.contains_key(spec));
        self.live = live;
    }

    /// Each active run's newest session and its latest line, read again when the sessions
    /// folder or that session's log changed.
    fn read_latest_lines(&mut self) {
        let specs: Vec<String> = self.live.keys().cloned().collect();
        for spec in specs {
            let Some(paths) = self.spec_paths(&spec) else {
                continue;
            };
            let stamp = self.logs.entry(spec.clone()).or_default();
            let sessions = stamps::of(&paths.sessions_dir);
            let live = self.live.entry(spec).or_default();
            if sessions != stamp.sessions || live.session.is_none() {
                stamp.sessions = sessions;
                let newest = crate::store::sessions::latest(&paths.sessions_dir);
                if newest != live.session {
                    live.session = newest;
                    stamp.log = None;
                }
            }
            let Some(session) = live.session.as_deref() else {
                continue;
            };
            let log_path = crate::store::sessions::log_of(&paths.sessions_dir, session);
            let log = stamps::of(&log_path);
            if log != stamp.log {
                stamp.log = log;
                live.latest = crate::agent::output::activity::latest_in_log(&log_path);
            }
        }
    }

    fn spec_paths(&self, spec: &str) -> Option<SpecPaths> {
        self.ctx.ws.spec(spec).ok()
    }

    /// What to show at `now`.
    pub fn view(&self, now: DateTime<Utc>) -> WatchView {
        WatchView {
            rows: model::rows(&self.report, &self.live, now),
            hidden: self.report.hidden,
        }
    }

    /// The log of `spec`'s newest session, to follow in a pane (`None`: it has no session).
    pub fn newest_log(&self, spec: &str) -> Option<(String, follow::Follow)> {
        let dir: PathBuf = self.spec_paths(spec)?.sessions_dir;
        let id = crate::store::sessions::latest(&dir)?;
        let follow = follow::Follow::new(&dir, &id);
        Some((id, follow))
    }

    /// The newest session of `spec`, if any (a pane follows into the next session).
    pub fn newest_session(&self, spec: &str) -> Option<String> {
        let dir = self.spec_paths(spec)?.sessions_dir;
        let stamp = stamps::of(&dir);
        let mut newest = self.newest.borrow_mut();
        if let Some((seen, id)) = newest.get(spec)
            && stamp.is_some()
            && *seen == stamp
        {
            return id.clone();
        }
        let id = crate::store::sessions::latest(&dir);
        newest.insert(spec.to_string(), (stamp, id.clone()));
        id
    }

    /// The repository's folder.
    pub fn root(&self) -> &std::path::Path {
        &self.ctx.ws.root
    }
}
