//! Timestamps as runner writes them: RFC 3339, UTC, seconds precision.

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A compact stamp for ids and file names: `20261122T192400Z`.
pub fn stamp() -> String {
    chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string()
}
