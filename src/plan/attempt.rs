//! runner's attempt records, kept in each chunk's `attempts` list.

use serde_json::{Map, Value};

use super::session_facts::{CostSource, SessionFacts, Tokens};

/// One try at a chunk, recorded by runner in the chunk's `attempts` list. Read and written by
/// hand (not through serde's `flatten`, which loses the exact text of numbers): a record runner
/// updates keeps its key order, its nulls and the keys runner does not know.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Attempt {
    pub n: u32,
    pub session_id: Option<String>,
    pub run_id: Option<String>,
    pub started_at: Option<String>,
    /// The worktree's HEAD when the attempt began: recovery compares it with the real state.
    pub start_commit: Option<String>,
    pub ended_at: Option<String>,
    /// What the agent said through `runner chunk done|fail`: `"done"` or `"fail"`.
    pub reported: Option<String>,
    pub report_notes: Option<String>,
    /// runner's verdict: `completed`, `failed`, `interrupted`.
    pub outcome: Option<String>,
    pub reason: Option<String>,
    pub commit: Option<String>,
    /// Fields a later runner (or a person) added: kept.
    pub extra: Map<String, Value>,
}

/// The text fields of an attempt record, in the order a new record is written.
pub(in crate::plan) const ATTEMPT_TEXTS: [&str; 10] = [
    "session_id",
    "run_id",
    "started_at",
    "start_commit",
    "ended_at",
    "reported",
    "report_notes",
    "outcome",
    "reason",
    "commit",
];

impl Attempt {
    fn texts_mut(&mut self) -> [&mut Option<String>; 10] {
        [
            &mut self.session_id,
            &mut self.run_id,
            &mut self.started_at,
            &mut self.start_commit,
            &mut self.ended_at,
            &mut self.reported,
            &mut self.report_notes,
            &mut self.outcome,
            &mut self.reason,
            &mut self.commit,
        ]
    }

    fn texts(&self) -> [&Option<String>; 10] {
        [
            &self.session_id,
            &self.run_id,
            &self.started_at,
            &self.start_commit,
            &self.ended_at,
            &self.reported,
            &self.report_notes,
            &self.outcome,
            &self.reason,
            &self.commit,
        ]
    }

    /// A record as runner writes it: an object with a whole number `n`, its text fields texts
    /// (or null). `None` for anything else.
    pub fn from_value(value: &Value) -> Option<Attempt> {
        let Value::Object(record) = value else {
            return None;
        };
        let n = record.get("n")?.as_u64()?;
        let mut attempt = Attempt {
            n: u32::try_from(n).ok()?,
            ..Attempt::default()
        };
        for (key, slot) in ATTEMPT_TEXTS.into_iter().zip(attempt.texts_mut()) {
            match record.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => *slot = Some(s.clone()),
                Some(_) => return None,
            }
        }
        attempt.extra = record
            .iter()
            .filter(|(k, _)| *k != "n" && !ATTEMPT_TEXTS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Some(attempt)
    }

    /// Does `value` read as a record (`from_value` gives one), without copying it?
    pub fn reads(value: &Value) -> bool {
        let Value::Object(record) = value else {
            return false;
        };
        record
            .get("n")
            .and_then(Value::as_u64)
            .is_some_and(|n| u32::try_from(n).is_ok())
            && ATTEMPT_TEXTS.iter().all(|key| {
                matches!(
                    record.get(*key),
                    None | Some(Value::Null) | Some(Value::String(_))
                )
            })
    }

    /// A list of records, or `None` if it is not a list or one record does not read.
    pub fn list_from_value(value: &Value) -> Option<Vec<Attempt>> {
        match value {
            Value::Array(items) => items.iter().map(Attempt::from_value).collect(),
            _ => None,
        }
    }

    /// This attempt written over `base`, the record as it is in the file (empty for a new
    /// one): changed fields are replaced in place, an unset field that was null stays null,
    /// keys runner does not know stay where they were.
    pub(super) fn write_over(&self, mut base: Map<String, Value>) -> Map<String, Value> {
        base.insert("n".into(), Value::from(self.n));
        for (key, value) in ATTEMPT_TEXTS.into_iter().zip(self.texts()) {
            match value {
                Some(text) => {
                    base.insert(key.into(), Value::String(text.clone()));
                }
                None if base.get(key).is_some_and(|v| !v.is_null()) => {
                    base.shift_remove(key);
                }
                None => {}
            }
        }
        base.retain(|k, _| {
            k == "n" || ATTEMPT_TEXTS.contains(&k.as_str()) || self.extra.contains_key(k)
        });
        for (key, value) in &self.extra {
            base.insert(key.clone(), value.clone());
        }
        base
    }

    /// Keep what the agent's report said about this attempt's session on the record: the
    /// plan (not only the journal, which is advisory) is the cost ledger. Keys are written only
    /// for what the report knows; an empty report (the generic `command` preset) writes nothing.
    pub fn record_report(&mut self, report: &SessionFacts) {
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                self.extra.insert(key.to_string(), value);
            }
        };
        put(
            "agent_session_id",
            report.agent_session_id.clone().map(Value::String),
        );
        put(
            "cost_usd",
            report
                .cost_usd
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number),
        );
        if report.cost_usd.is_some() {
            put("cost_source", serde_json::to_value(report.cost_source).ok());
        }
        if report.tokens != Tokens::default() {
            put("tokens", serde_json::to_value(report.tokens).ok());
        }
        put("model", report.model.clone().map(Value::String));
        put("turns", report.turns.map(Value::from));
        put("agent_error", report.error.clone().map(Value::String));
        if let Some(limit) = report.usage_limit {
            put(
                "usage_limit_resets_at",
                Some(
                    limit
                        .resets_at
                        .map_or(Value::Null, |t| Value::String(t.to_rfc3339())),
                ),
            );
        }
        if let Some(total) = report.thread_total {
            put("thread_total", serde_json::to_value(total).ok());
        }
    }

    /// The agent's own session id recorded on this attempt (what `--resume` takes).
    pub fn agent_session_id(&self) -> Option<&str> {
        self.extra.get("agent_session_id").and_then(Value::as_str)
    }

    /// The dollars recorded for this attempt's session, and where the figure came from.
    pub fn cost_usd(&self) -> Option<(f64, CostSource)> {
        let usd = self.extra.get("cost_usd")?.as_f64()?;
        let source = self
            .extra
            .get("cost_source")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or(CostSource::Reported);
        Some((usd, source))
    }

    /// The tokens recorded for this attempt's session (zero when none were).
    pub fn tokens(&self) -> Tokens {
        self.extra
            .get("tokens")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// codex's running token total of the thread at the end of this attempt's session.
    pub fn thread_total(&self) -> Option<Tokens> {
        self.extra
            .get("thread_total")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }
}
