//! Usage limits pause a spec; they do not fail it. Pure decisions over times: until when a
//! spec is paused after its agent hit a usage limit ([`pause_until`]), and what a run does
//! when it meets a pause ([`on_pause`]). The engine reads the clock, stores the pause
//! (`store::pause`) and sleeps; nothing here does I/O.

use chrono::{DateTime, Duration, Utc};

/// A reset time further ahead than this is not believed (claude's weekly limit resets within
/// seven days; a time in years is a misread number, e.g. milliseconds read as seconds): the
/// default wait applies instead. A pause file that says so is not believed either.
pub const MAX_BELIEVED: Duration = Duration::days(8);

/// A reset time already past (the CLI's clock and ours disagree, or the limit just lifted):
/// the next session starts after this short wait, not at once, so a CLI that keeps saying
/// "limited, resets in the past" cannot make runner start sessions in a tight loop.
pub const PAST_RESET_RETRY: Duration = Duration::seconds(60);

/// `--wait` sleeps until the reset plus this margin: the CLI's clock may be a little behind.
pub const MARGIN: Duration = Duration::seconds(2);

/// Where a pause's time came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// The time the CLI said.
    Reported,
    /// The CLI said a time already past: [`PAST_RESET_RETRY`] from now.
    PastRetry,
    /// No time could be read (aider prints none), or one beyond [`MAX_BELIEVED`]:
    /// `run.limit_wait_default` from now.
    Default,
}

/// Until when a spec is paused after a usage limit whose reset the CLI said was `resets_at`.
pub fn pause_until(
    resets_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    default_wait: Duration,
) -> (DateTime<Utc>, Basis) {
    let (until, basis) = match resets_at {
        Some(at) if at <= now => (now + PAST_RESET_RETRY, Basis::PastRetry),
        Some(at) if at - now <= MAX_BELIEVED => (at, Basis::Reported),
        _ => (now + default_wait, Basis::Default),
    };
    (whole_second_up(until), basis)
}

/// `t`, or the next whole second: the time is shown (and stored) to the second, and "run
/// again after T" must hold at T.
fn whole_second_up(t: DateTime<Utc>) -> DateTime<Utc> {
    let floor = DateTime::from_timestamp(t.timestamp(), 0).unwrap_or(t);
    if floor == t {
        t
    } else {
        floor + Duration::seconds(1)
    }
}

/// Is a stored pause until `until` believable at `now`? One further ahead than
/// [`MAX_BELIEVED`] was not written by runner (or the clock jumped back by days): it is ignored.
pub fn believable(until: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    until - now <= MAX_BELIEVED
}

/// What a run does when its spec is paused until `until`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnPause {
    /// The pause is over: go on (and clear it).
    Go,
    /// Stop (exit 6): no `--wait`, or waiting would take the run's waiting past
    /// `run.max_wait` (`too_long`).
    Stop { too_long: bool },
    /// Sleep `for_` (the reset plus [`MARGIN`]), then look again.
    Wait { for_: std::time::Duration },
}

/// `waited` is what this run already spent waiting; `max_wait` bounds it in total.
pub fn on_pause(
    until: DateTime<Utc>,
    now: DateTime<Utc>,
    wait: bool,
    waited: std::time::Duration,
    max_wait: std::time::Duration,
) -> OnPause {
    if until <= now {
        return OnPause::Go;
    }
    if !wait {
        return OnPause::Stop { too_long: false };
    }
    let for_ = (until + MARGIN - now).to_std().unwrap_or_default();
    if waited.saturating_add(for_) > max_wait {
        return OnPause::Stop { too_long: true };
    }
    OnPause::Wait { for_ }
}

/// The attempt a usage limit cut short: how it is recorded, and whether its chunk is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitedAttempt {
    /// The agent did not report its chunk done: the attempt is `usage_limited` (it does not
    /// count toward `run.max_attempts`) and the chunk goes back to `pending`.
    Unjudged,
    /// The agent reported the chunk done before the limit hit: its work is judged as any
    /// other (verification, commit); the limit's words are not a failure of that work. The
    /// pause still applies before the next session.
    Judged,
}

pub fn limited_attempt(reported_done: bool) -> LimitedAttempt {
    if reported_done {
        LimitedAttempt::Judged
    } else {
        LimitedAttempt::Unjudged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    const MIN15: Duration = Duration::minutes(15);

    #[test]
    fn the_reported_reset_is_the_pause_unless_past_or_absurd() {
        let now = t(0);
        assert_eq!(
            pause_until(Some(t(90)), now, MIN15),
            (t(90), Basis::Reported)
        );
        // Past (or now): a short retry, never an immediate new session.
        assert_eq!(
            pause_until(Some(t(-5)), now, MIN15),
            (t(60), Basis::PastRetry)
        );
        assert_eq!(
            pause_until(Some(now), now, MIN15),
            (t(60), Basis::PastRetry)
        );
        // A week is believed; years are not.
        let week = t(7 * 86_400);
        assert_eq!(pause_until(Some(week), now, MIN15), (week, Basis::Reported));
        assert_eq!(
            pause_until(Some(t(400 * 86_400)), now, MIN15),
            (t(900), Basis::Default)
        );
        // No time said: the default wait.
        assert_eq!(pause_until(None, now, MIN15), (t(900), Basis::Default));
        // A fraction of a second rounds up: "after T" holds at T.
        let fraction = t(90) + Duration::milliseconds(300);
        assert_eq!(pause_until(Some(fraction), now, MIN15).0, t(91));
        assert!(believable(t(8 * 86_400), now));
        assert!(!believable(t(8 * 86_400 + 1), now));
    }

    #[test]
    fn a_pause_stops_the_run_waits_within_max_wait_or_lets_it_go() {
        let s = std::time::Duration::from_secs;
        let day = s(86_400);
        assert_eq!(on_pause(t(0), t(0), false, s(0), day), OnPause::Go);
        assert_eq!(on_pause(t(-1), t(0), true, s(0), day), OnPause::Go);
        assert_eq!(
            on_pause(t(10), t(0), false, s(0), day),
            OnPause::Stop { too_long: false }
        );
        assert_eq!(
            on_pause(t(10), t(0), true, s(0), day),
            OnPause::Wait { for_: s(12) }
        );
        // The run's total waiting is bounded.
        assert_eq!(
            on_pause(t(10), t(0), true, day - s(11), day),
            OnPause::Stop { too_long: true }
        );
        assert_eq!(
            on_pause(t(10), t(0), true, day - s(12), day),
            OnPause::Wait { for_: s(12) }
        );
        assert_eq!(
            on_pause(t(10), t(0), true, s(0), s(0)),
            OnPause::Stop { too_long: true }
        );
    }

    #[test]
    fn done_and_limited_is_judged_else_the_attempt_is_unjudged() {
        assert_eq!(limited_attempt(true), LimitedAttempt::Judged);
        assert_eq!(limited_attempt(false), LimitedAttempt::Unjudged);
    }
}
