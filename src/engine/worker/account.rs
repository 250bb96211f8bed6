//! The agent account's usage-limit pause, shared through the remote
//! (`refs/runner/pauses/<account>`, docs/fleet.md): a job that ends paused publishes it; no
//! worker of the account starts a job while it holds; after it, ONE worker claims the check
//! (it writes a pause of its own, as long as a lease, renewed at its heartbeat) and starts one
//! job; once that job's first chunk is done without the limit the worker deletes the pause and
//! every worker goes on. If the check's job is limited again, its new pause replaces the
//! claim. A worker that dies while checking holds the others back for one lease at most.

use std::time::Instant;

use chrono::{DateTime, Utc};

use crate::fleet::net::{Expect, PushOutcome, RefUpdate};
use crate::fleet::pause::AccountPause;
use crate::git::Oid;
use crate::policy::lease::Gate;
use crate::store::workspace::Workspace;

use super::held::Me;

/// What this worker knows of its account's pause.
#[derive(Debug)]
pub struct Account {
    pub name: String,
    /// The pause ref on the remote as last seen (its commit and until when it holds; an
    /// unreadable one is believed to hold for a lease from when it was seen).
    pub seen: Option<(Oid, DateTime<Utc>)>,
    /// This worker claimed the check: its claim's commit, and the spec of the check's job once
    /// it started (with the chunks it had done then).
    pub checking: Option<Check>,
}

#[derive(Debug)]
pub struct Check {
    pub claim: Oid,
    pub renewed: Instant,
    pub job: Option<(String, Option<usize>)>,
}

/// What the gate lets this worker do now.
#[derive(Debug, PartialEq, Eq)]
pub enum May {
    /// Start jobs.
    Start,
    /// Start the one job of the check.
    StartCheck,
    /// Start nothing (paused until then, or another job checks).
    Wait(Option<DateTime<Utc>>),
}

impl Account {
    pub fn new(name: String) -> Account {
        Account {
            name,
            seen: None,
            checking: None,
        }
    }

    /// The pause as read from the remote's view.
    pub fn saw(&mut self, pause: Option<(Oid, Result<AccountPause, String>)>) {
        self.seen = pause.map(|(oid, read)| {
            let until = match read {
                Ok(p) => p.until,
                // Not believed (a year ahead, not a pause at all): taken as over, so one
                // session checks the limit and the claim replaces it. Taken as a pause of
                // one more lease at every look, it would hold the account for ever.
                Err(_) => Utc::now() - chrono::TimeDelta::seconds(1),
            };
            (oid, until)
        });
    }

    /// Whether a job may start now; claims the check when the pause is over (one push).
    pub fn may_start(&mut self, ws: &Workspace, me: &Me) -> May {
        if let Some(check) = &self.checking {
            return match check.job {
                None => May::StartCheck,
                Some(_) => May::Wait(None),
            };
        }
        match crate::policy::lease::gate(self.seen.map(|(_, until)| until), Utc::now()) {
            Gate::Open => May::Start,
            Gate::Closed { until } => May::Wait(Some(until)),
            Gate::CheckFirst => {
                let now = Utc::now();
                let claim = AccountPause {
                    account: self.name.clone(),
                    until: crate::policy::lease::check_claim_until(now, me.lease),
                    reason: "after a usage limit: one session checks the limit is over".into(),
                    set_by: me.worker.clone(),
                    set_at: now,
                };
                let expect = self.seen.map_or(Expect::Absent, |(oid, _)| Expect::At(oid));
                match self.push(ws, me, &claim, expect) {
                    Ok(Some(oid)) => {
                        self.seen = Some((oid, claim.until));
                        self.checking = Some(Check {
                            claim: oid,
                            renewed: Instant::now(),
                            job: None,
                        });
                        May::StartCheck
                    }
                    // Another worker claimed it first, or the remote cannot be reached.
                    _ => May::Wait(None),
                }
            }
        }
    }

    /// A check was claimed but no job could be started for it: the claim goes (the pause is
    /// over; the next worker with a spec to take claims it again).
    pub fn no_check(&mut self, ws: &Workspace, me: &Me) {
        let Some(check) = self.checking.take_if(|c| c.job.is_none()) else {
            return;
        };
        // A pause that is over, in the claim's place: the next worker checks.
        let now = Utc::now();
        let over = AccountPause {
            account: self.name.clone(),
            until: now,
            reason: "a usage limit's pause is over; one session checks first".into(),
            set_by: me.worker.clone(),
            set_at: now,
        };
        if let Ok(Some(oid)) = self.push(ws, me, &over, Expect::At(check.claim)) {
            self.seen = Some((oid, now));
        }
    }

    /// The check's job started.
    pub fn check_started(&mut self, spec: &str) {
        if let Some(check) = &mut self.checking {
            check.job = Some((spec.to_string(), None));
        }
    }

    /// The job of `spec` is at `done` chunks: the check's job has done one more chunk than
    /// when it started, so its session ended without the limit: the pause is deleted.
    pub fn progressed(&mut self, ws: &Workspace, me: &Me, spec: &str, done: usize) {
        let Some(check) = &mut self.checking else {
            return;
        };
        let Some((job, first)) = &mut check.job else {
            return;
        };
        if job != spec {
            return;
        }
        match first {
            None => *first = Some(done),
            Some(first) if done > *first => self.lift(ws, me),
            Some(_) => {}
        }
    }

    /// The job of `spec` ended; `limited_until`: paused by a usage limit until then.
    pub fn ended(
        &mut self,
        ws: &Workspace,
        me: &Me,
        spec: &str,
        limited_until: Option<DateTime<Utc>>,
    ) -> Option<String> {
        let checked = self
            .checking
            .as_ref()
            .and_then(|c| c.job.as_ref())
            .is_some_and(|(job, _)| job == spec);
        match limited_until {
            Some(until) => Some(self.publish(ws, me, until)),
            // The check's job ended without the limit (done, failed, stopped): lifted.
            None if checked => {
                self.lift(ws, me);
                None
            }
            None => None,
        }
    }

    /// Renew the claim of a check under way (with the leases' heartbeat).
    pub fn heartbeat(&mut self, ws: &Workspace, me: &Me) {
        let Some(check) = &self.checking else {
            return;
        };
        if !crate::policy::lease::renew_due(check.renewed.elapsed(), me.lease) {
            return;
        }
        let now = Utc::now();
        let claim = AccountPause {
            account: self.name.clone(),
            until: crate::policy::lease::check_claim_until(now, me.lease),
            reason: "after a usage limit: one session checks the limit is over".into(),
            set_by: me.worker.clone(),
            set_at: now,
        };
        let expect = Expect::At(check.claim);
        match self.push(ws, me, &claim, expect) {
            Ok(Some(oid)) => {
                self.seen = Some((oid, claim.until));
                self.checking = Some(Check {
                    claim: oid,
                    renewed: Instant::now(),
                    job: check_job(&self.checking),
                });
            }
            // Replaced by another worker's pause (a limit met elsewhere): that one holds.
            Ok(None) => self.checking = None,
            Err(_) => {}
        }
    }

    /// Publish a pause until `until` after a job of this worker met the limit; the words to say.
    fn publish(&mut self, ws: &Workspace, me: &Me, until: DateTime<Utc>) -> String {
        let now = Utc::now();
        let pause = AccountPause {
            account: self.name.clone(),
            until,
            reason: "an agent session met the account's usage limit".into(),
            set_by: me.worker.clone(),
            set_at: now,
        };
        let mut expect = self.seen.map_or(Expect::Absent, |(oid, _)| Expect::At(oid));
        // Twice at most: a pause another worker published meanwhile is read, then replaced
        // only if it ends sooner.
        for _ in 0..2 {
            match self.push(ws, me, &pause, expect) {
                Ok(Some(oid)) => {
                    self.seen = Some((oid, until));
                    self.checking = None;
                    return format!(
                        "account {} paused on {} until {}",
                        self.name,
                        me.remote,
                        until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    );
                }
                Ok(None) => match self.reread(ws, me) {
                    Some((_, theirs)) if theirs >= until => {
                        self.checking = None;
                        return format!("account {} is paused already", self.name);
                    }
                    other => expect = other.map_or(Expect::Absent, |(oid, _)| Expect::At(oid)),
                },
                Err(e) => {
                    return format!(
                        "could not publish the pause of account {}: {e:#}",
                        self.name
                    );
                }
            }
        }
        format!(
            "could not publish the pause of account {}: the remote kept changing it",
            self.name
        )
    }

    /// Delete this worker's claim: the check went well.
    fn lift(&mut self, ws: &Workspace, me: &Me) {
        let Some(check) = self.checking.take() else {
            return;
        };
        if let Ok(true) = self.update(ws, me, None, Expect::At(check.claim)) {
            self.seen = None;
        }
    }

    /// The pause ref on the remote now.
    fn reread(&mut self, ws: &Workspace, me: &Me) -> Option<(Oid, DateTime<Utc>)> {
        let view =
            crate::fleet::view::fetch_view(&ws.root, &ws.main.repo, &me.remote, me.timeout).ok()?;
        let pause = pause_in(ws, me, &view, &self.name);
        self.saw(pause);
        self.seen
    }

    /// One CAS push of the pause ref to `pause`: its new commit when accepted, `None` when
    /// refused (the ref was not as expected).
    fn push(
        &self,
        ws: &Workspace,
        me: &Me,
        pause: &AccountPause,
        expect: Expect,
    ) -> anyhow::Result<Option<Oid>> {
        let new = crate::fleet::pause::write_pause(&ws.main.repo, pause)?;
        Ok(self.update(ws, me, Some(new), expect)?.then_some(new))
    }

    /// One CAS push of the pause ref (`None`: delete it); whether the remote accepted it.
    fn update(
        &self,
        ws: &Workspace,
        me: &Me,
        new: Option<Oid>,
        expect: Expect,
    ) -> anyhow::Result<bool> {
        let update = RefUpdate {
            dst: crate::fleet::names::pause_ref(&self.name),
            new,
            expect,
        };
        let pushed = crate::fleet::net::push_atomic(&ws.root, &me.remote, &[update], me.timeout)?;
        Ok(matches!(pushed, PushOutcome::Pushed))
    }
}

/// The pause of `account` in a view just fetched: its commit (the fetched copy's target) and
/// what it reads as.
pub fn pause_in(
    ws: &Workspace,
    me: &Me,
    view: &crate::fleet::view::RemoteView,
    account: &str,
) -> Option<(Oid, Result<AccountPause, String>)> {
    let read = view.pauses.get(account)?.clone();
    let local = crate::fleet::names::fetched_ref(&me.remote, "pauses", account);
    let oid = crate::git::refs::target(&ws.main.repo, &local)?;
    Some((oid, read))
}

fn check_job(checking: &Option<Check>) -> Option<(String, Option<usize>)> {
    checking.as_ref().and_then(|c| c.job.clone())
}
