//! runner's attempt records, kept in each chunk's `attempts` list.

use serde_json::{Map, Value};

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
}
