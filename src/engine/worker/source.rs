//! The worker as a [`JobSource`]: which published spec to start next (taken with its lease
//! and made local first), what to publish on a job's progress and at each heartbeat, which
//! jobs to stop because their lease is lost, and what to do at a job's end.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use chrono::Utc;

use crate::engine::jobs::{JobEnd, JobSource, JobStart, StopJob};
use crate::engine::progress::{Event, Progress, ProgressSink};
use crate::fleet::net::Expect;
use crate::fleet::view::RemoteView;
use crate::policy::lease::{LeaseSeen, Offer, Refused};
use crate::store::workspace::Workspace;

use super::account::{Account, May};
use super::held::{Held, Lost, Me, Pushed};
use super::{LostLease, TakenSpec, WorkerOptions, WorkerReport};

pub struct Fleet<'a> {
    ws: &'a Workspace,
    me: Me,
    exit_when_idle: bool,
    progress: Rc<dyn ProgressSink>,
    /// The remote's view, when it was fetched, and the published specs weighed.
    view: Option<(Instant, RemoteView)>,
    offers: Vec<Offer>,
    /// Specs not to take again while the remote's folder is still this commit: their run
    /// ended with an error a new run would meet again (or their folder could not be made
    /// local), and taking them over and over would only hammer the remote.
    skip: BTreeMap<String, crate::git::Oid>,
    /// Where each published folder commit seen leaves its spec.
    judged: BTreeMap<(String, crate::git::Oid), crate::policy::lease::Published>,
    held: BTreeMap<String, Held>,
    account: Account,
    report: WorkerReport,
}

impl<'a> Fleet<'a> {
    /// The worker, with a first look at the remote (an error: it cannot be reached).
    pub fn new(
        ws: &'a Workspace,
        opts: &WorkerOptions,
        progress: Rc<dyn ProgressSink>,
    ) -> anyhow::Result<Fleet<'a>> {
        let host = crate::store::guard::hostname();
        let pid = std::process::id();
        let worker = format!("{host}:{pid}:{}", &crate::ids::uuid_v4()[..8]);
        let me = Me {
            worker: worker.clone(),
            host,
            pid,
            remote: opts.remote.clone(),
            lease: opts.lease,
            // No network step may outlast what is left of a lease renewed every third of it: a
            // hanging remote must not keep an agent building past its lease.
            timeout: (opts.lease / 3).max(Duration::from_secs(2)),
        };
        let mut fleet = Fleet {
            ws,
            me,
            exit_when_idle: opts.exit_when_idle,
            progress,
            view: None,
            offers: Vec::new(),
            skip: BTreeMap::new(),
            judged: BTreeMap::new(),
            held: BTreeMap::new(),
            account: Account::new(opts.account.clone()),
            report: WorkerReport {
                worker,
                remote: opts.remote.clone(),
                account: opts.account.clone(),
                ..WorkerReport::default()
            },
        };
        fleet.refresh()?;
        Ok(fleet)
    }

    /// The report, once every job ended.
    pub fn finish(mut self) -> WorkerReport {
        // A spec still held (its end never came): let its lease go.
        for (spec, held) in std::mem::take(&mut self.held) {
            let _ = super::held::let_go(self.ws, &self.me, &spec, held.lease);
        }
        self.report
    }

    fn line(&self, text: &str) {
        self.progress.report(Progress::Line(text));
    }

    fn notice(&self, text: &str) {
        self.progress.report(Progress::Notice(text));
    }

    /// Fetch the remote's view and weigh its specs.
    fn refresh(&mut self) -> anyhow::Result<()> {
        let ws = self.ws;
        let view = crate::fleet::view::fetch_view(
            &ws.root,
            &ws.main.repo,
            &self.me.remote,
            self.me.timeout,
        )?;
        // (Counted by a test: how often an idle worker looks at the remote.)
        crate::failpoint::hit("worker_view_fetched");
        for warning in &view.warnings {
            crate::output::warn(warning);
        }
        let judged = &mut self.judged;
        self.offers = view
            .specs
            .iter()
            .filter_map(|(spec, published)| {
                // A spec whose folder was never published is not one to build.
                let folder = published.folder?;
                if self.skip.get(spec) == Some(&folder) {
                    return None;
                }
                let lease = match &published.lease {
                    None => LeaseSeen::Absent,
                    Some((_, Ok(l))) => LeaseSeen::Held {
                        holder: format!("{} on {}", l.worker, l.host),
                        expires_at: l.expires_at,
                    },
                    Some((_, Err(_))) => LeaseSeen::Unbelieved,
                };
                // A spec's folder commit is judged once: its plan and records never change.
                let state = judged
                    .entry((spec.clone(), folder))
                    .or_insert_with(|| super::judge::published(&ws.main.repo, spec, folder))
                    .clone();
                Some(Offer {
                    spec: spec.clone(),
                    state,
                    lease,
                })
            })
            .collect();
        let pause = super::account::pause_in(ws, &self.me, &view, &self.account.name);
        self.account.saw(pause);
        self.view = Some((Instant::now(), view));
        Ok(())
    }

    /// The view again when it is older than the poll interval.
    fn refresh_if_stale(&mut self) -> bool {
        let poll = crate::policy::lease::poll_every(self.me.lease);
        let stale = self
            .view
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed() >= poll);
        if stale && let Err(e) = self.refresh() {
            self.report.remote_errors += 1;
            self.notice(&format!("runner worker: {e:#}"));
            return false;
        }
        true
    }

    /// Specs a runner on this host holds (their run lock): never taken here meanwhile.
    fn busy_here(&self) -> Vec<String> {
        self.offers
            .iter()
            .filter(|o| {
                self.ws.spec(&o.spec).is_ok_and(|p| {
                    !matches!(
                        crate::fs::lock::probe(&p.run_lock),
                        Ok(crate::fs::lock::LockState::Free)
                    )
                })
            })
            .map(|o| o.spec.clone())
            .collect()
    }

    /// Try to take `spec`: its lease, then the remote's state of it made local. `Ok(None)`:
    /// not taken (another worker was first, or it turned out not to need building).
    fn try_take(&mut self, spec: &str) -> anyhow::Result<Option<Held>> {
        let expect = self
            .view
            .as_ref()
            .and_then(|(_, v)| v.specs.get(spec))
            .and_then(|p| p.lease.as_ref())
            .map_or(Expect::Absent, |(oid, _)| Expect::At(*oid));
        let Some((lease, taken_at, started)) = super::held::take(self.ws, &self.me, spec, expect)?
        else {
            self.report.pushes_refused += 1;
            self.forget(spec);
            return Ok(None);
        };
        // What the remote holds of the spec now that nobody else may change it: the view
        // may be older than another worker's last publication and release.
        let fresh = self.refresh();
        let published = self
            .view
            .as_ref()
            .and_then(|(_, v)| v.specs.get(spec))
            .filter(|_| fresh.is_ok())
            .map(|p| (p.folder, p.branch));
        let state = self
            .offers
            .iter()
            .find(|o| o.spec == spec)
            .map(|o| o.state.clone());
        let usable = match (published, state) {
            (Some((Some(folder), branch)), Some(state)) => {
                match crate::policy::lease::takeable(&state, &LeaseSeen::Absent, Utc::now()) {
                    crate::policy::lease::Takeable::Yes => Some((folder, branch)),
                    crate::policy::lease::Takeable::No(_) => None,
                }
            }
            _ => None,
        };
        let Some((folder, branch)) = usable else {
            let _ = super::held::let_go(self.ws, &self.me, spec, lease);
            self.forget(spec);
            return Ok(None);
        };
        let adopted = match super::local::adopt(self.ws, spec, folder, branch) {
            Ok(adopted) => adopted,
            Err(e) => {
                let _ = super::held::let_go(self.ws, &self.me, spec, lease);
                self.forget(spec);
                // A run still ending here is gone soon: asked again at the next look, not
                // set aside until the remote's folder changes.
                if crate::error::exit_code_of(&e) != crate::error::exit::BUSY {
                    self.skip.insert(spec.to_string(), folder);
                }
                return Err(e.context(format!(
                    "spec {spec}: making this clone's copy the remote's"
                )));
            }
        };
        if !adopted.kept.is_empty() {
            self.notice(&format!(
                "spec {spec}: what this clone had that differs from {} is kept on {}",
                self.me.remote,
                adopted.kept.join(", ")
            ));
        }
        for chunk in &adopted.withdrawn {
            self.notice(&format!(
                "spec {spec}: chunk {chunk} was reported done where it ran, but its work was never published; it is built again"
            ));
        }
        self.report.specs.push(TakenSpec {
            spec: spec.to_string(),
            kept_when_taken: adopted.kept,
            reports_withdrawn: adopted.withdrawn,
            ..TakenSpec::default()
        });
        Ok(Some(Held {
            spec: spec.to_string(),
            lease,
            taken_at,
            folder: Some(folder),
            branch,
            last_success: started,
            publications: 0,
            lost: None,
            released: false,
            maybe_landed: None,
        }))
    }

    /// `spec` is not to be taken now (until the view is fetched again).
    fn forget(&mut self, spec: &str) {
        self.offers.retain(|o| o.spec != spec);
    }

    /// Publish `spec`'s work (or release it); a lost lease is recorded and its job stopped.
    fn publish(&mut self, spec: &str, release: bool) -> Option<StopJob> {
        let held = self.held.get_mut(spec)?;
        if held.lost.is_some() {
            return None;
        }
        let pushed = super::held::publish(self.ws, &self.me, held, release);
        let lost = match pushed {
            Ok(Pushed::Done) => {
                held.released = release;
                if release {
                    self.line(&format!("Released spec {spec} on {}", self.me.remote));
                }
                return None;
            }
            Ok(Pushed::Refused(why)) => {
                self.report.pushes_refused += 1;
                why
            }
            Ok(Pushed::Unreachable(e)) | Err(e) => {
                self.report.remote_errors += 1;
                self.notice(&format!("runner worker: spec {spec}: {e:#}"));
                return self.lapsed(spec);
            }
            Ok(Pushed::Unpublishable(e)) => {
                // Let go at once (best effort; a lease left behind expires): another worker
                // builds the spec from its last publication, which is whole.
                let lease = held.lease;
                held.released =
                    super::held::let_go(self.ws, &self.me, spec, lease).unwrap_or(false);
                return self.lose(spec, Lost::Unpublishable(format!("{e:#}")));
            }
        };
        self.lose(spec, Lost::Refused(lost))
    }

    /// A lease not renewed for as long as it lasts is lost.
    fn lapsed(&mut self, spec: &str) -> Option<StopJob> {
        let held = self.held.get(spec)?;
        if held.lost.is_none()
            && crate::policy::lease::lapsed(held.last_success.elapsed(), self.me.lease)
        {
            return self.lose(spec, Lost::Lapsed);
        }
        None
    }

    fn lose(&mut self, spec: &str, why: Lost) -> Option<StopJob> {
        let held = self.held.get_mut(spec)?;
        held.lost = Some(why);
        Some(StopJob::Stop(spec.to_string()))
    }

    /// A lost lease at its job's end: the leftovers kept, said, reported.
    fn lost_at_end(&mut self, spec: &str, why: &Lost) {
        let kept = super::local::keep_leftovers(self.ws, spec).unwrap_or_else(|e| {
            self.notice(&format!(
                "runner worker: spec {spec}: keeping its leftovers: {e:#}"
            ));
            Vec::new()
        });
        let (holder, reason) = match why {
            Lost::Refused(Refused::Lost { holder: Some(h) }) => {
                (Some(h.clone()), format!("{h} holds it now"))
            }
            Lost::Lapsed => (
                None,
                format!(
                    "no renewal reached {} for as long as the lease lasts",
                    self.me.remote
                ),
            ),
            Lost::Refused(Refused::Lost { holder: None }) => (
                None,
                "it expired or was released before this worker could renew it".to_string(),
            ),
            Lost::Unpublishable(e) => (
                None,
                format!("this clone's copy of the spec cannot be published, so it was let go: {e}"),
            ),
            Lost::Refused(Refused::Diverged) => (
                None,
                format!(
                    "the spec's branch or folder on {} was changed by someone else",
                    self.me.remote
                ),
            ),
        };
        self.notice(&format!(
            "runner worker: lease of spec {spec} lost ({reason}): its job was stopped, nothing more of it is pushed; what it had not published is kept on {}",
            if kept.is_empty() { "no ref (nothing was left)".to_string() } else { kept.join(", ") }
        ));
        self.report.leases_lost.push(LostLease {
            spec: spec.to_string(),
            holder,
            reason,
            kept,
        });
    }
}

impl JobSource for Fleet<'_> {
    fn next(&mut self, running: &[String]) -> Option<JobStart> {
        self.refresh_if_stale();
        let busy = self.busy_here();
        let order: Vec<String> =
            crate::policy::lease::to_take(&self.offers, running, &busy, Utc::now())
                .into_iter()
                .map(str::to_string)
                .collect();
        // The account's gate is asked only when there is a spec to take: a check is claimed
        // for a job that starts.
        if order.is_empty() {
            return None;
        }
        let may = self.account.may_start(self.ws, &self.me);
        if let May::Wait(_) = may {
            return None;
        }
        for spec in order {
            match self.try_take(&spec) {
                Ok(Some(held)) => {
                    self.held.insert(spec.clone(), held);
                    if may == May::StartCheck {
                        self.account.check_started(&spec);
                    }
                    return Some(JobStart::new(spec));
                }
                Ok(None) => {}
                Err(e) => {
                    self.report.remote_errors += 1;
                    self.notice(&format!("runner worker: {e:#}"));
                }
            }
        }
        if may == May::StartCheck {
            self.account.no_check(self.ws, &self.me);
        }
        None
    }

    fn starting(&self, spec: &str) -> String {
        format!("Building spec {spec}, taken from {}", self.me.remote)
    }

    fn keep_waiting(&mut self) -> bool {
        !self.exit_when_idle
    }

    fn tick_every(&self) -> Option<Duration> {
        Some(crate::policy::lease::tick_every(self.me.lease))
    }

    fn tick(&mut self, _running: &[String]) -> Vec<StopJob> {
        let mut stops = Vec::new();
        let due: Vec<String> = self
            .held
            .values()
            .filter(|h| h.lost.is_none())
            .filter(|h| crate::policy::lease::renew_due(h.last_success.elapsed(), self.me.lease))
            .map(|h| h.spec.clone())
            .collect();
        for spec in due {
            stops.extend(self.publish(&spec, false));
        }
        self.account.heartbeat(self.ws, &self.me);
        stops
    }

    fn progress(&mut self, spec: &str, event: &Event) -> Vec<StopJob> {
        let Event::Position { done, .. } = event else {
            return Vec::new();
        };
        self.account.progressed(self.ws, &self.me, spec, *done);
        self.publish(spec, false).into_iter().collect()
    }

    fn ended(&mut self, spec: &str, end: &JobEnd) {
        let (word, code, message) = end_words(end);
        let limited = (code == crate::error::exit::USAGE_LIMITED)
            .then(|| limited_until(self.ws, spec))
            .flatten();
        if let Some(words) = self.account.ended(self.ws, &self.me, spec, limited) {
            self.notice(&format!("runner worker: {words}"));
        }
        // Publish what was done and let the spec go, in one push.
        let _ = self.publish(spec, true);
        let Some(held) = self.held.remove(spec) else {
            return;
        };
        let released = held.released;
        let again = [
            0,
            crate::error::exit::USAGE_LIMITED,
            crate::error::exit::INTERRUPTED,
        ];
        if !again.contains(&code)
            && let Some(folder) = held.folder
        {
            self.skip.insert(spec.to_string(), folder);
        }
        if let Some(why) = &held.lost {
            self.lost_at_end(spec, why);
        }
        let word = match held.lost {
            Some(_) => "lease_lost".to_string(),
            None => word,
        };
        if let Some(taken) = self.report.specs.iter_mut().rev().find(|t| t.spec == spec) {
            taken.end = word;
            taken.exit_code = code;
            taken.message = message;
            taken.publications = held.publications;
            taken.released = released;
        }
    }
}

/// A job's end in the report's words: its outcome or its error's kind, its exit code, its
/// error.
fn end_words(end: &JobEnd) -> (String, i32, Option<String>) {
    match end {
        JobEnd::Ran(report) => (report.outcome.to_string(), 0, None),
        JobEnd::Failed(e) => {
            let report = crate::error::ErrorReport::of(e);
            (report.kind.to_string(), report.code, Some(report.message))
        }
        JobEnd::Skipped(why) => ("skipped".into(), 0, Some(why.clone())),
    }
}

/// Until when the spec's run stored its usage-limit pause.
fn limited_until(ws: &Workspace, spec: &str) -> Option<chrono::DateTime<Utc>> {
    match crate::store::pause::read(&ws.state_dir, spec, Utc::now()) {
        crate::store::pause::Found::Paused(pause) => Some(pause.until),
        _ => None,
    }
}
