//! A worker's decisions about leases and what it takes from the remote (docs/fleet.md), as
//! pure functions over times and what the remote's view says: whether a lease has expired,
//! when to renew it, when a lease that could not be renewed must be taken as lost, what a
//! refused publication means, which published spec to take next, and whether an account's
//! usage-limit pause lets a session start. The engine reads the remote and the clocks, pushes
//! and stops jobs; nothing here does I/O.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// A renewal is due every third of the lease: two may fail (a slow remote, a short network
/// cut) before the lease would expire.
pub const RENEWALS_PER_LEASE: u32 = 3;

/// How often an idle worker looks at the remote again: a third of the lease, at least a
/// second (a tight loop of fetches helps nobody) and at most 20 seconds (a new spec is
/// taken soon after it is submitted, whatever the lease).
pub fn poll_every(lease: Duration) -> Duration {
    (lease / RENEWALS_PER_LEASE).clamp(Duration::from_secs(1), Duration::from_secs(20))
}

/// How often a worker looks at its leases (and renews those due): twice per renewal
/// interval, so that a renewal is never late by more than a sixth of the lease (a tick that
/// comes an instant before one is due would otherwise put it off by a whole interval); at
/// least every quarter second, at most every 10 seconds.
pub fn tick_every(lease: Duration) -> Duration {
    (lease / (2 * RENEWALS_PER_LEASE)).clamp(Duration::from_millis(250), Duration::from_secs(10))
}

/// A lease that expires at `expires_at` has expired at `now` (the reading worker's clock):
/// another worker may take the spec over.
pub fn expired(expires_at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    expires_at < now
}

/// The lease a worker writes at `now` (taking or renewing): until when it holds.
pub fn expires_at(now: DateTime<Utc>, lease: Duration) -> DateTime<Utc> {
    now + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX)
}

/// The holder renews when a third of the lease has passed since its last successful renewal
/// (or its take), measured on a monotonic clock.
pub fn renew_due(since_last_success: Duration, lease: Duration) -> bool {
    since_last_success >= lease / RENEWALS_PER_LEASE
}

/// A lease whose renewals have failed (the remote unreachable) for as long as the lease lasts
/// is lost: by then its `expires_at` has passed, and another worker may have taken the spec.
/// Measured from the moment before the last successful push (its `expires_at` was computed
/// then), on a monotonic clock, so a wall clock that jumps changes nothing.
pub fn lapsed(since_last_success: Duration, lease: Duration) -> bool {
    since_last_success >= lease
}

/// What the remote holds of a spec's lease, as the worker read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseSeen {
    /// No lease ref: nobody holds the spec.
    Absent,
    /// A lease that reads, held by `holder` until `expires_at`.
    Held {
        holder: String,
        expires_at: DateTime<Utc>,
    },
    /// A lease ref that is not a lease runner wrote (or one of a newer runner): not believed,
    /// and never taken over (what is not understood is not stolen).
    Unbelieved,
}

/// What a spec's published plan says of the work left, as the worker judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PlanFacts {
    pub total: usize,
    pub completed: usize,
    pub failed: usize,
    pub blocked: usize,
    /// The plan records a merge.
    pub merged: bool,
    /// A run stopped because the spec's budget was spent.
    pub exhausted: bool,
}

/// Where a published spec stands, for a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    /// No plan yet: the worker plans it.
    NotPlanned,
    /// Chunks are left to build.
    Open,
    Complete,
    Merged,
    Discarded,
    /// A failed or blocked chunk, a spent budget, a plan that does not read: a person decides.
    NeedsHuman(String),
}

/// Where a published spec stands from its plan (`None`: none published; `Err`: one that does
/// not read) and whether its newest run record is a discard.
pub fn published(plan: Option<Result<PlanFacts, String>>, discarded: bool) -> Published {
    let facts = match plan {
        None if discarded => return Published::Discarded,
        None => return Published::NotPlanned,
        Some(Err(why)) => return Published::NeedsHuman(format!("its plan does not read: {why}")),
        Some(Ok(facts)) => facts,
    };
    if facts.merged {
        Published::Merged
    } else if discarded {
        Published::Discarded
    } else if facts.failed > 0 {
        Published::NeedsHuman(format!(
            "{} failed",
            crate::text::count(facts.failed, "chunk")
        ))
    } else if facts.blocked > 0 {
        Published::NeedsHuman(format!(
            "{} blocked",
            crate::text::count(facts.blocked, "chunk")
        ))
    } else if facts.exhausted {
        Published::NeedsHuman("its budget is spent".into())
    } else if facts.total > 0 && facts.completed == facts.total {
        Published::Complete
    } else if facts.total == 0 {
        Published::NotPlanned
    } else {
        Published::Open
    }
}

/// Whether a worker may take a spec now, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Takeable {
    Yes,
    No(String),
}

/// May a worker take a spec that stands at `state` with lease `lease` at `now`?
pub fn takeable(state: &Published, lease: &LeaseSeen, now: DateTime<Utc>) -> Takeable {
    let no = |why: &str| Takeable::No(why.to_string());
    match state {
        Published::NotPlanned | Published::Open => {}
        Published::Complete => return no("it is complete"),
        Published::Merged => return no("it is merged"),
        Published::Discarded => return no("its build was discarded"),
        Published::NeedsHuman(why) => return Takeable::No(format!("it needs a person: {why}")),
    }
    match lease {
        LeaseSeen::Absent => Takeable::Yes,
        LeaseSeen::Held { expires_at, .. } if expired(*expires_at, now) => Takeable::Yes,
        LeaseSeen::Held { holder, .. } => Takeable::No(format!("{holder} holds its lease")),
        LeaseSeen::Unbelieved => no("its lease is not one runner wrote"),
    }
}

/// One published spec as a worker weighs it.
#[derive(Debug, Clone)]
pub struct Offer {
    pub spec: String,
    pub state: Published,
    pub lease: LeaseSeen,
}

/// The specs to try to take, in the order to try them: takeable at `now`, not run by a job of
/// this worker (`running`) nor held by another runner on this host (`busy_here`); in name
/// order (a spec's number first), so that two workers agree and the one that loses the race
/// for a spec goes on with the next.
pub fn to_take<'a>(
    offers: &'a [Offer],
    running: &[String],
    busy_here: &[String],
    now: DateTime<Utc>,
) -> Vec<&'a str> {
    let mut out: Vec<&str> = offers
        .iter()
        .filter(|o| !running.contains(&o.spec) && !busy_here.contains(&o.spec))
        .filter(|o| takeable(&o.state, &o.lease, now) == Takeable::Yes)
        .map(|o| o.spec.as_str())
        .collect();
    out.sort_unstable();
    out
}

/// What a refused publication (or renewal) means, from the lease the remote holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Another worker holds the spec now (`holder`), or nobody does (`None`: released or
    /// deleted): this worker's lease is lost.
    Lost { holder: Option<String> },
    /// The lease is still this worker's, but the branch or the folder on the remote is not
    /// what this worker published last: someone wrote them around the lease. The work cannot
    /// be published on top of that either: the spec is stopped as for a lost lease.
    Diverged,
}

/// `now_at`: the lease ref's commit on the remote now, with its holder when it reads;
/// `mine`: the lease commit this worker pushed last.
pub fn after_refusal<Id: PartialEq>(now_at: Option<(Id, Option<String>)>, mine: &Id) -> Refused {
    match now_at {
        Some((id, _)) if &id == mine => Refused::Diverged,
        Some((_, holder)) => Refused::Lost {
            holder: Some(holder.unwrap_or_else(|| "an unreadable lease".into())),
        },
        None => Refused::Lost { holder: None },
    }
}

/// An account's usage-limit pause, as the worker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// No pause, or one that is over and whose check session went well: sessions start.
    Open,
    /// Paused until then: no session of the account starts.
    Closed { until: DateTime<Utc> },
    /// The pause is over: one session checks first (this worker may claim the check), the
    /// others wait until it went well.
    CheckFirst,
}

/// The gate of an account whose pause on the remote is `pause_until` (none: no pause) at
/// `now`. A pause is never cleared by its time alone: the worker whose check session ends
/// without the limit deletes it, so that the others resume after one session went well.
pub fn gate(pause_until: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Gate {
    match pause_until {
        None => Gate::Open,
        Some(until) if until > now => Gate::Closed { until },
        Some(_) => Gate::CheckFirst,
    }
}

/// How long a worker's claim to run the check session lasts (the pause it writes while its
/// check runs, renewed with its leases): as long as a lease, so that a worker that dies while
/// checking holds the others back no longer than it would hold a spec.
pub fn check_claim_until(now: DateTime<Utc>, lease: Duration) -> DateTime<Utc> {
    expires_at(now, lease)
}

#[cfg(test)]
#[path = "lease_tests.rs"]
mod tests;
