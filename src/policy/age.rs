//! How old a recorded time is (a run's heartbeat, a checkpoint, the journal's last event), in
//! the words a person reads, and whether it is believed: one rule for every screen that shows
//! such an age (`runner runs`, `show`, `resume`) and every decision that asks whether it is
//! fresh (a run's liveness in `policy::runs`, a source's confidence in `policy::confidence`).
//!
//! A time ahead of now is always *said* to be in the future ("2 h in the future (clock
//! skew)"), never "0 s ago". When deciding, a time up to [`FUTURE_SLACK`] ahead is the skew of
//! two machines' clocks (or a second's rounding) and counts as now; further ahead it is not
//! believed (a clock far off, or a file edited to look fresh): never fresh.

use chrono::{DateTime, Utc};

/// How far ahead of now a time may be and still count as now when deciding.
pub const FUTURE_SLACK: i64 = 120;

/// Seconds from `then` to `now`: below zero when `then` is in the future.
pub fn age_secs(then: DateTime<Utc>, now: DateTime<Utc>) -> i64 {
    (now - then).num_seconds()
}

/// The age to judge freshness by (a little in the future counts as 0), or `None` when the time
/// is too far in the future to be believed.
pub fn believed(age_secs: i64) -> Option<i64> {
    (age_secs >= -FUTURE_SLACK).then_some(age_secs.max(0))
}

/// Is a time `age_secs` old ahead of now at all (a second or more)?
pub fn is_future(age_secs: i64) -> bool {
    age_secs < 0
}

/// "3 min", "2 h 5 min", "4 d 3 h": a span of time in words (its sign ignored).
pub fn span(secs: i64) -> String {
    let secs = secs.unsigned_abs();
    let (d, h, m, s) = (
        secs / 86_400,
        secs % 86_400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, 0) => format!("{h} h"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, 0, _) => format!("{d} d"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

/// The words said after a time ahead of now.
pub const SKEW: &str = "in the future (clock skew)";

/// "3 min ago", or "2 h in the future (clock skew)".
pub fn ago(age_secs: i64) -> String {
    if is_future(age_secs) {
        format!("{} {SKEW}", span(age_secs))
    } else {
        format!("{} ago", span(age_secs))
    }
}

/// The same for a table column: "12s ago", "5m ago", "3h ago", "2d ago", "3h in the future
/// (clock skew)".
pub fn ago_short(age_secs: i64) -> String {
    let secs = age_secs.unsigned_abs();
    let amount = match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    };
    if is_future(age_secs) {
        format!("{amount} {SKEW}")
    } else {
        format!("{amount} ago")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_ahead_is_said_to_be_in_the_future_never_zero_seconds_ago() {
        assert_eq!(ago(0), "0 s ago");
        assert_eq!(ago(59), "59 s ago");
        assert_eq!(ago(3600 + 120), "1 h 2 min ago");
        assert_eq!(ago(-1), "1 s in the future (clock skew)");
        assert_eq!(ago(-3 * 3600), "3 h in the future (clock skew)");
        assert_eq!(ago_short(12), "12s ago");
        assert_eq!(ago_short(5 * 60), "5m ago");
        assert_eq!(ago_short(2 * 86_400), "2d ago");
        assert_eq!(ago_short(-7200), "2h in the future (clock skew)");
        assert_eq!(
            ago_short(i64::MIN),
            "106751991167300d in the future (clock skew)"
        );
    }

    #[test]
    fn a_little_ahead_counts_as_now_and_far_ahead_is_not_believed() {
        assert_eq!(believed(30), Some(30));
        assert_eq!(believed(-FUTURE_SLACK), Some(0));
        assert_eq!(believed(-FUTURE_SLACK - 1), None);
        assert_eq!(believed(i64::MIN), None);
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        assert_eq!(age_secs(now + chrono::Duration::hours(1), now), -3600);
    }

    #[test]
    fn spans_read_as_words() {
        assert_eq!(span(0), "0 s");
        assert_eq!(span(60), "1 min");
        assert_eq!(span(86_400 * 2 + 3600 * 5 + 7), "2 d 5 h");
        assert_eq!(span(86_400), "1 d");
        assert_eq!(span(-3), "3 s");
        assert_eq!(span(i64::MIN), "106751991167300 d 15 h");
    }
}
