//! Timestamps as runner writes them: RFC 3339, UTC, seconds precision; and a time ahead as a
//! person reads it on a screen (local time, time left).

use chrono::{DateTime, TimeZone, Utc};

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A compact stamp for ids and file names: `20261122T192400Z`.
pub fn stamp() -> String {
    chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string()
}

/// `until` as a person reads it on a screen, in the local zone (the `TZ` variable honoured):
/// `14:05 local`, or `2026-11-24 09:00 local` on another day than `now`'s. JSON and files keep
/// RFC 3339 UTC.
pub fn local_time(until: DateTime<Utc>, now: DateTime<Utc>) -> String {
    local_time_in(until, now, &chrono::Local)
}

/// "until 14:05 local, in 25 min": when `until` is and how long is left of it at `now` (see
/// [`local_time`] and [`time_left`]).
pub fn until_words(until: DateTime<Utc>, now: DateTime<Utc>) -> String {
    until_words_in(until, now, &chrono::Local)
}

/// [`local_time`] in zone `tz`.
pub fn local_time_in<Tz: TimeZone>(until: DateTime<Utc>, now: DateTime<Utc>, tz: &Tz) -> String {
    let (at, today) = (until.with_timezone(tz), now.with_timezone(tz));
    let format = if at.date_naive() == today.date_naive() {
        "%H:%M"
    } else {
        "%Y-%m-%d %H:%M"
    };
    format!("{} local", at.naive_local().format(format))
}

/// [`until_words`] in zone `tz`.
pub fn until_words_in<Tz: TimeZone>(until: DateTime<Utc>, now: DateTime<Utc>, tz: &Tz) -> String {
    let when = local_time_in(until, now, tz);
    match (until - now).to_std() {
        Ok(left) if !left.is_zero() => {
            format!("until {when}, in {}", time_left(left.as_secs_f64()))
        }
        _ => format!("until {when} (past)"),
    }
}

/// "40 s", "25 min", "2 h", "2 h 5 min", "30 h": a wait of `secs` seconds in words. Minutes
/// are rounded up, so a wait is never shorter than said.
pub fn time_left(secs: f64) -> String {
    if secs < 59.5 {
        return format!("{} s", secs.ceil().max(1.0) as u64);
    }
    let minutes = (secs / 60.0).ceil() as u64;
    match (minutes / 60, minutes % 60) {
        (0, m) => format!("{m} min"),
        (h, 0) => format!("{h} h"),
        (h, m) => format!("{h} h {m} min"),
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, FixedOffset};

    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn time_left_in_words() {
        assert_eq!(time_left(0.2), "1 s");
        assert_eq!(time_left(40.0), "40 s");
        assert_eq!(time_left(59.0), "59 s");
        assert_eq!(time_left(60.0), "1 min");
        assert_eq!(time_left(61.0), "2 min");
        assert_eq!(time_left(25.0 * 60.0), "25 min");
        assert_eq!(time_left(24.0 * 60.0 + 1.0), "25 min");
        assert_eq!(time_left(3599.0), "1 h");
        assert_eq!(time_left(3600.0), "1 h");
        assert_eq!(time_left(2.0 * 3600.0 + 5.0 * 60.0), "2 h 5 min");
        assert_eq!(time_left(30.0 * 3600.0), "30 h");
    }

    #[test]
    fn until_reads_in_the_zone_given_with_a_date_on_another_day() {
        let now = at("2026-11-23T13:40:00Z");
        let paris = FixedOffset::east_opt(3600).unwrap();
        let kolkata = FixedOffset::east_opt(5 * 3600 + 1800).unwrap();
        let until = now + Duration::minutes(25);
        assert_eq!(
            until_words_in(until, now, &paris),
            "until 15:05 local, in 25 min"
        );
        assert_eq!(
            until_words_in(until, now, &kolkata),
            "until 19:35 local, in 25 min"
        );
        assert_eq!(
            until_words_in(until, now, &Utc),
            "until 14:05 local, in 25 min"
        );
        // The next day where it is read: its date.
        let late = at("2026-11-23T18:00:00Z");
        assert_eq!(
            until_words_in(late + Duration::minutes(20), late, &kolkata),
            "until 23:50 local, in 20 min"
        );
        assert_eq!(
            until_words_in(late + Duration::minutes(40), late, &kolkata),
            "until 2026-11-24 00:10 local, in 40 min"
        );
        assert_eq!(
            local_time_in(now + Duration::hours(30), now, &paris),
            "2026-11-24 20:40 local"
        );
        // Past (a clock set forward): no time left to speak of.
        assert_eq!(
            until_words_in(now - Duration::minutes(1), now, &Utc),
            "until 13:39 local (past)"
        );
        assert_eq!(until_words_in(now, now, &Utc), "until 13:40 local (past)");
    }
}
