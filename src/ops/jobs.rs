//! `runner run --jobs N [SPEC…]`: which specs to build (the named ones, or every spec with
//! work to do), and the source that hands them to `engine::jobs` up to N at a time, holding
//! back the specs of an agent account whose usage limit one of the jobs hit.

use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;

use chrono::{DateTime, Utc};

use super::Ctx;
use crate::engine::jobs::{JobEnd, JobSource, JobStart};
use crate::engine::progress::{Event, Progress, ProgressSink};
use crate::engine::run::RunOptions;
use crate::policy::account::{Accounts, MayStart};
use crate::store::workspace::Workspace;

/// Where a spec taken stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Interrupted,
    /// A plan, some of it to do (or none yet: new).
    ToDo,
}

/// The specs `run --jobs` builds, in order, and the ones it leaves.
#[derive(Debug, Default)]
pub struct Chosen {
    pub take: Vec<(String, Kind)>,
    /// Left with a reason (failed, blocked, out of budget, another runner's): said, not an
    /// error.
    pub skipped: Vec<(String, String)>,
    /// Paused by a usage limit until then: said, and exit 6 if nothing else failed.
    pub paused: Vec<(String, DateTime<Utc>)>,
}

/// The specs `named` (each resolved as `--spec` is, exactly one; duplicates once), or every
/// spec with work to do: interrupted ones first, most recent first, then the planned and new
/// ones in name order. Complete, merged and discarded specs are not taken (a named discarded
/// one is: a run starts it again).
pub fn choose(ctx: &Ctx, named: &[String]) -> anyhow::Result<Chosen> {
    let mut names = Vec::new();
    for query in named {
        let name = ctx.spec_named(query)?;
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let found = crate::engine::run::interrupted_specs(&ctx.ws);
    let mut chosen = Chosen::default();
    let all = names.is_empty();
    if all {
        chosen.paused = found.paused.clone();
        chosen.take = found
            .specs
            .iter()
            .map(|s| (s.clone(), Kind::Interrupted))
            .collect();
        names = crate::store::spec::list(&ctx.ws.specs_dir)
            .into_iter()
            .filter(|n| !found.specs.contains(n) && !found.paused.iter().any(|(p, _)| p == n))
            .collect();
    }
    let cache = crate::store::status_cache::StatusCache::load(&ctx.ws.state_dir);
    let statuses = super::status::specs(&ctx.ws, names, &cache)?;
    for status in statuses {
        let spec = status.spec;
        if let Some((_, until)) = found.paused.iter().find(|(p, _)| *p == spec) {
            chosen.paused.push((spec, *until));
        } else if found.specs.contains(&spec) {
            chosen.take.push((spec, Kind::Interrupted));
        } else {
            match judge(&spec, &status.status, !all) {
                Judged::Take(kind) => chosen.take.push((spec, kind)),
                Judged::Skip(why) => chosen.skipped.push((spec, why)),
                Judged::Leave => {}
            }
        }
    }
    Ok(chosen)
}

enum Judged {
    Take(Kind),
    Skip(String),
    Leave,
}

/// What `run --jobs` does with a spec of `status` (the word `runner status` gives it).
fn judge(spec: &str, status: &str, named: bool) -> Judged {
    let look = format!("see `runner status --spec {spec}`");
    match status {
        "not_planned" | "planned" | "in_progress" => Judged::Take(Kind::ToDo),
        "interrupted" => Judged::Take(Kind::Interrupted),
        "discarded" if named => Judged::Take(Kind::ToDo),
        "complete" | "merged" | "discarded" if named => Judged::Skip(format!("it is {status}")),
        "complete" | "merged" | "discarded" => Judged::Leave,
        "running" | "planning" => Judged::Skip("another runner is running it".into()),
        "failed" => Judged::Skip(format!(
            "a chunk of it failed ({look}; `runner recover --spec {spec} --retry-failed` tries it again)"
        )),
        "blocked" => Judged::Skip(format!("it needs a person: a chunk is blocked ({look})")),
        "budget_exhausted" => Judged::Skip(format!(
            "it spent its budget ({look}; --max-usd or [budget] gives it more)"
        )),
        "paused" => Judged::Skip(format!("a usage limit pauses it ({look})")),
        other => Judged::Skip(format!("it needs a person: {other} ({look})")),
    }
}

/// Whether `spec` still has work for `run --jobs` (asked again just before its job starts).
pub fn still_to_do(ws: &Workspace, spec: &str, kind: Kind) -> bool {
    if crate::engine::run::still_interrupted(ws, spec) {
        return true;
    }
    if kind == Kind::Interrupted {
        return false;
    }
    let cache = crate::store::status_cache::StatusCache::load(&ws.state_dir);
    match super::status::specs(ws, vec![spec.to_string()], &cache) {
        Ok(statuses) => statuses.first().is_some_and(|s| {
            matches!(
                s.status.as_str(),
                "not_planned" | "planned" | "in_progress" | "interrupted" | "discarded"
            )
        }),
        Err(_) => false,
    }
}

/// `run --jobs`'s source: the chosen specs in order, each started once; the specs of an
/// account whose usage limit a job hit are held back (`policy::account`).
pub struct List<'a> {
    ws: &'a Workspace,
    queue: VecDeque<(String, Kind)>,
    kinds: HashMap<String, Kind>,
    accounts_of: HashMap<String, String>,
    accounts: Accounts,
    /// `--wait` (or `run.wait_for_limits`): specs held back for a paused account wait for
    /// its end when it comes by then (the start plus `run.max_wait`); `None`: no waiting.
    wait_until: Option<DateTime<Utc>>,
    progress: Rc<dyn ProgressSink>,
    /// Jobs that reported a wait (`--wait`): their pause was read once.
    waiting: HashSet<String>,
    /// Specs not started because their account was paused, with its end.
    pub limited: Vec<(String, String, DateTime<Utc>)>,
}

impl<'a> List<'a> {
    /// The source of `take`; `paused`: specs a usage limit paused in an earlier run, whose
    /// accounts are paused as well.
    pub fn new(
        ws: &'a Workspace,
        take: Vec<(String, Kind)>,
        paused: &[(String, DateTime<Utc>)],
        opts: &RunOptions,
        progress: Rc<dyn ProgressSink>,
    ) -> List<'a> {
        let config = ws.config().unwrap_or_default();
        let configured = config.fleet.account.clone();
        let account_of = |spec: &str| match crate::engine::run::agent_for(ws, spec, opts) {
            Some(agent) => crate::policy::account::account_of(configured.as_deref(), &agent),
            None => configured.clone().unwrap_or_else(|| "none".into()),
        };
        let accounts_of: HashMap<String, String> = take
            .iter()
            .map(|(spec, _)| (spec.clone(), account_of(spec)))
            .collect();
        let mut list = List {
            ws,
            kinds: take.iter().cloned().collect(),
            queue: take.into(),
            accounts_of,
            accounts: Accounts::default(),
            wait_until: (opts.wait || config.run.wait_for_limits).then(|| {
                chrono::Duration::from_std(config.run.max_wait())
                    .ok()
                    .and_then(|max| Utc::now().checked_add_signed(max))
                    .unwrap_or(DateTime::<Utc>::MAX_UTC)
            }),
            progress,
            waiting: HashSet::new(),
            limited: Vec::new(),
        };
        // A limit is the account's, whichever run met it: the other specs of an account an
        // earlier run's limit paused are held back as for a limit met here.
        let specs = list.kinds.keys().chain(paused.iter().map(|(spec, _)| spec));
        let records = specs
            .filter_map(|spec| {
                let crate::store::pause::Found::Paused(pause) =
                    crate::store::pause::read(&ws.state_dir, spec, Utc::now())
                else {
                    return None;
                };
                // The account whose preset met the limit: the spec may run another agent now,
                // whose account is not paused.
                let same_agent = crate::engine::run::agent_for(ws, spec, opts)
                    .is_some_and(|agent| agent.preset.name() == pause.preset);
                let account = match (same_agent, &configured) {
                    (true, _) => account_of(spec),
                    (false, Some(configured)) => configured.clone(),
                    (false, None) => pause.preset.clone(),
                };
                Some(crate::policy::account::PauseRecord {
                    account,
                    spec: spec.clone(),
                    set_at: pause.set_at,
                    until: pause.until,
                })
            })
            .collect();
        for on in crate::policy::account::paused_accounts(records, Utc::now()) {
            list.account_paused(&on.account, &on.spec, on.until, true);
        }
        list
    }

    /// The run of `spec` ended, stopped by its usage limit (exit 6) or not.
    pub fn job_ended(&mut self, spec: &str, limited: bool) {
        if limited {
            self.limit_hit(spec);
        } else {
            let account = self.account(spec);
            self.accounts.ended(&account, spec, Utc::now());
        }
    }

    fn account(&self, spec: &str) -> String {
        self.accounts_of.get(spec).cloned().unwrap_or_default()
    }

    /// A job of `spec` hit its account's limit: the account is paused until the spec's pause
    /// ends (a minute when it cannot be read); said once.
    fn limit_hit(&mut self, spec: &str) {
        let now = Utc::now();
        let until = match crate::store::pause::read(&self.ws.state_dir, spec, now) {
            crate::store::pause::Found::Paused(p) if p.until > now => p.until,
            _ => now + chrono::Duration::minutes(1),
        };
        let account = self.account(spec);
        self.account_paused(&account, spec, until, false);
    }

    /// `account` is paused until `until` by a limit `spec` met in this run, or in an
    /// `earlier` one; said once.
    fn account_paused(&mut self, account: &str, spec: &str, until: DateTime<Utc>, earlier: bool) {
        let now = Utc::now();
        if self.accounts.limited(account, until) {
            let then = if self.wait_until.is_some_and(|deadline| until <= deadline) {
                "then one spec first, the others once its first session got through"
            } else {
                "the others are left for a later run (exit 6)"
            };
            let met = match earlier {
                false => format!("hit its usage limit (spec {spec})"),
                true => format!("is paused by the usage limit spec {spec} hit in an earlier run"),
            };
            self.progress.report(Progress::Line(&format!(
                "Account {account} {met}: no other spec using it starts {} ({}); {then}",
                crate::clock::until_words(until, now),
                until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )));
        }
    }
}

impl JobSource for List<'_> {
    fn next(&mut self, running: &[String]) -> Option<JobStart> {
        let now = Utc::now();
        let mut i = 0;
        while i < self.queue.len() {
            let (spec, kind) = self.queue[i].clone();
            let account = self.account(&spec);
            let others = running
                .iter()
                .filter(|r| self.accounts_of.get(*r) == Some(&account))
                .count();
            match self
                .accounts
                .may_start(&account, &spec, others, self.wait_until, now)
            {
                MayStart::Later => {
                    i += 1;
                    continue;
                }
                MayStart::No(until) => {
                    self.queue.remove(i);
                    self.limited.push((spec, account, until));
                    continue;
                }
                MayStart::Yes => {}
            }
            self.queue.remove(i);
            // Asked again now: another runner may have run it to its end since the list was
            // made. (One it holds is the loop's to skip, with that reason.)
            if crate::engine::jobs::held_by_another(self.ws, &spec)
                || still_to_do(self.ws, &spec, kind)
            {
                return Some(JobStart::new(spec));
            }
            // (Not started: it checks nothing.)
            self.accounts.ended(&account, &spec, now);
            let why = match kind {
                Kind::Interrupted => "it is no longer interrupted",
                Kind::ToDo => "it has nothing left to do",
            };
            self.progress
                .report(Progress::Line(&format!("Skipped spec {spec}: {why}")));
        }
        None
    }

    fn keep_waiting(&mut self) -> bool {
        // Only specs held back for a paused account are left (with --wait).
        !self.queue.is_empty()
    }

    fn progress(&mut self, spec: &str, event: &Event) -> Vec<crate::engine::jobs::StopJob> {
        match event {
            Event::SessionStarted { .. } => {
                self.waiting.remove(spec);
                let account = self.account(spec);
                self.accounts.session_started(&account, spec, Utc::now());
            }
            Event::Waiting { .. } if self.waiting.insert(spec.to_string()) => self.limit_hit(spec),
            _ => {}
        }
        Vec::new()
    }

    fn ended(&mut self, spec: &str, end: &JobEnd) {
        let limited = matches!(end, JobEnd::Failed(e)
            if crate::error::exit_code_of(e) == crate::error::exit::USAGE_LIMITED);
        self.job_ended(spec, limited);
    }

    fn starting(&self, spec: &str) -> String {
        match self.kinds.get(spec) {
            Some(Kind::Interrupted) => format!("Resuming interrupted spec {spec}"),
            _ => format!("Starting spec {spec}"),
        }
    }

    fn still_to_do(&mut self, spec: &str) -> bool {
        let kind = self.kinds.get(spec).copied().unwrap_or(Kind::ToDo);
        still_to_do(self.ws, spec, kind)
    }
}
