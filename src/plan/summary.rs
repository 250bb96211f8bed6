//! A light read of a plan for the commands that only look at it (`runner status`, the quiet
//! check of `runner recover --all`): ids, statuses, phase keys and dependencies, the merged
//! flag and each completed chunk's recorded commit, read over the borrowed bytes; everything
//! else is skipped (checked as the full parser reads it, not kept: see `Skip`).
//!
//! It answers only for plans it is sure of: a field of an unexpected type, a value the full
//! parser would spell differently, a rule broken, a shape that is not the usual one (a
//! top-level chunk list, `subtasks` and `chunks` that are not the same bytes, a string phase
//! number …) gives `None`, and the caller reads the plan with the full `parse_plan`, so that
//! every error and warning a user sees comes from the one full parser. The rules (unique ids,
//! dependencies, cycles, verifications) are the full parser's own functions, run over the
//! skeleton.

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

pub mod digest;
pub use digest::Digest;

mod de;
use de::{
    AS_TEXT, ATTEMPT_TEXT_KEYS, AttemptFields, COST_KEYS, ChunkFields, Fields, IN_PLACE, List,
    PhaseRead, Picked, TWO_LISTS, Text, Top, VerificationFields,
};

use super::session_facts::Spent;
use super::session_facts::Tokens;

use super::model::{Chunk, Phase, PhaseKey, PhaseRef, Plan, PlanShape};
use super::{MAX_ID_BYTES, PlanFile, Status, validate, verification};

/// A plan as the light read saw it: the phases with their keys and dependencies, the chunks
/// with their ids and statuses. A chunk's `raw` holds no more than its recorded commit (as one
/// completed attempt), the plan's `raw` no more than `merged`: enough for the counts, the next
/// chunk and the history check. Never written back (it is not the plan).
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSummary {
    plan: Plan,
    /// The attempt records summed as the cost ledger counts them (one session each).
    spent: Spent,
}

impl PlanSummary {
    /// The skeleton: ids, statuses, phases, dependencies, recorded commits, `merged`.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The plan's attempt records summed as the cost ledger counts them (`store::ledger`):
    /// sessions, dollars, tokens.
    pub fn spent(&self) -> Spent {
        self.spent
    }
}

/// Read the plan file and try the light read: `None` when the file cannot be read or the light
/// read is not sure; the caller then uses `PlanFile::load`, whose answer (no plan, an error, a
/// plan with warnings) is the one to show.
pub fn read_light(file: &PlanFile) -> Option<PlanSummary> {
    summarize(&crate::fs::safe::read(file.path()).ok()?)
}

/// The light read of plan bytes: `None` when it is not sure (the full parser decides).
pub fn summarize(bytes: &[u8]) -> Option<PlanSummary> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    // Each phase's chunk list read in place, in one pass. A phase with both `subtasks` and
    // `chunks` (or one of them twice) stops that read, and the plan is read again with the
    // lists kept as text (compared, the last of a repeated key counting). Where the read in
    // place answers, the read as text gives the same; it may not answer where the read as
    // text would (a list nested as deep as the full parser's limit, counted from the top of
    // the file; an invalid text in the first list of a repeated key): the full parser does.
    match serde_json::from_slice::<Top<IN_PLACE>>(bytes) {
        Ok(top) => skeleton(top),
        Err(e) if e.to_string().starts_with(TWO_LISTS) => {
            skeleton(serde_json::from_slice::<Top<AS_TEXT>>(bytes).ok()?)
        }
        Err(_) => None,
    }
}

/// The plan's skeleton from what was read, if it passes the full parser's rules.
fn skeleton<const P: bool>(top: Top<P>) -> Option<PlanSummary> {
    if top.top_level_list {
        return None;
    }
    let mut spent = Spent::default();
    let phases = top
        .phases?
        .into_iter()
        .map(|phase| read_phase(phase, &mut spent))
        .collect::<Option<Vec<Phase>>>()?;
    let mut raw = Map::new();
    if top.merged {
        raw.insert("merged".into(), Value::Null);
    }
    if top.budget_exhausted {
        raw.insert("budget_exhausted".into(), Value::Null);
    }
    let plan = Plan {
        raw,
        phases,
        shape: PlanShape::Phases,
        warnings: Vec::new(),
    };
    let mut problems = Vec::new();
    validate::check(&plan, &mut problems);
    problems.is_empty().then_some(PlanSummary { plan, spent })
}

fn is_null(r: &RawValue) -> bool {
    r.get() == "null"
}

fn is_text(r: &RawValue) -> bool {
    r.get().starts_with('"')
}

fn text(r: &RawValue) -> Option<Cow<'_, str>> {
    if let Some(plain) = de::plain_text(r.get()) {
        return Some(Cow::Borrowed(plain));
    }
    serde_json::from_str::<Text>(r.get()).ok().map(|t| t.0)
}

/// A whole number written exactly as the full parser prints it back (`1`, `-3`; not `1.0`).
fn integer(r: &RawValue) -> Option<i64> {
    let s = r.get();
    let n: i64 = s.parse().ok()?;
    (n.to_string() == s).then_some(n)
}

/// An id the full parser takes as written (see `parse::check_id`): a string or a whole number.
fn id_of(r: &RawValue) -> Option<String> {
    if let Some(n) = integer(r) {
        return Some(n.to_string());
    }
    let id = text(r)?;
    let good = id.len() <= MAX_ID_BYTES
        && id
            .chars()
            .all(|c| !c.is_control() && !crate::text::is_invisible(c));
    good.then(|| id.into_owned())
}

fn read_phase<const P: bool>(phase: PhaseRead<P>, spent: &mut Spent) -> Option<Phase> {
    let p = &phase.fields;
    let id = match p.get("id") {
        None => None,
        Some(r) if is_null(r) => None,
        Some(r) => Some(id_of(r)?),
    };
    let number = match p.get("phase") {
        None => None,
        Some(r) if is_null(r) => None,
        Some(r) => Some(integer(r)?),
    };
    let depends_on = match p.get("depends_on") {
        None => Vec::new(),
        Some(r) if is_null(r) => Vec::new(),
        Some(r) if r.get().starts_with('[') => serde_json::from_str::<Vec<&RawValue>>(r.get())
            .ok()?
            .into_iter()
            .map(phase_ref)
            .collect::<Option<Vec<_>>>()?,
        Some(r) => vec![phase_ref(r)?],
    };
    let (key, mirror, items) = match phase.lists {
        [None, None] => (None, None, None),
        [Some(a), None] => (Some("subtasks"), None, Some(a)),
        [None, Some(b)] => (Some("chunks"), None, Some(b)),
        // Both, the same bytes: one list. Anything else the full parser compares.
        [Some(List::Text(a)), Some(List::Text(b))] if a.get() == b.get() => {
            (Some("subtasks"), Some("chunks"), Some(List::Text(a)))
        }
        [Some(_), Some(_)] => return None,
    };
    let chunks = match items {
        None => Vec::new(),
        Some(List::Text(r)) => serde_json::from_str::<Vec<Picked<ChunkFields>>>(r.get()).ok()?,
        Some(List::Read(chunks)) => chunks,
    };
    let chunks = chunks
        .into_iter()
        .map(|chunk| read_chunk(chunk, spent))
        .collect::<Option<Vec<Chunk>>>()?;
    Some(Phase {
        raw: Map::new(),
        key: PhaseKey { id, number },
        depends_on,
        chunks_key: key,
        mirror_key: mirror,
        chunks: chunks.into(),
    })
}

fn phase_ref(r: &RawValue) -> Option<PhaseRef> {
    match integer(r) {
        Some(n) => Some(PhaseRef::Number(n)),
        None if is_text(r) => Some(PhaseRef::Name(text(r)?.into_owned())),
        None => None,
    }
}

fn read_chunk(c: Picked<ChunkFields>, spent: &mut Spent) -> Option<Chunk> {
    // A missing, null or blank `id` (Auto-Claude's `subtask_id` then) is the full parser's.
    let id = id_of(c.get("id")?)?;
    if id.trim().is_empty() {
        return None;
    }
    let has_text = |key| {
        c.get(key)
            .filter(|r| is_text(r))
            .and_then(text)
            .is_some_and(|t| !t.trim().is_empty())
    };
    if !has_text("description") && !has_text("title") {
        return None;
    }
    let status = match c.get("status") {
        None => Status::Pending,
        Some(r) if is_null(r) => Status::Pending,
        Some(r) => Status::parse(&text(r)?)?,
    };
    let recorded = match c.get("attempts") {
        None => None,
        Some(r) => recorded_commit(r, spent)?,
    };
    if let Some(v) = c.get("verification") {
        check_verification(v)?;
    }
    let mut raw = Map::new();
    if status == Status::Completed
        && let Some(commit) = recorded
    {
        raw.insert(
            "attempts".into(),
            json!([{"n": 1, "outcome": "completed", "commit": commit}]),
        );
    }
    Some(Chunk::from_map(raw, id, status))
}

/// The attempts as `Attempt::list_from_value` takes them: the commit of the last completed one
/// (`integrity::recorded_commit`), each one's session added to `spent` as `Attempt::cost_usd`
/// and `Attempt::tokens` read it; `None` when they do not read.
fn recorded_commit(r: &RawValue, spent: &mut Spent) -> Option<Option<String>> {
    let attempts: Vec<Picked<AttemptFields>> = serde_json::from_str(r.get()).ok()?;
    let mut recorded = None;
    for a in &attempts {
        let n = integer(a.get("n")?)?;
        u32::try_from(n).ok()?;
        // As the full reader: the value as JSON, then `as_f64` / the `Tokens` it reads as.
        let value = |key| {
            a.get(key)
                .and_then(|r| serde_json::from_str::<Value>(r.get()).ok())
        };
        let usd = value(COST_KEYS[0]).and_then(|v| v.as_f64());
        let tokens = value(COST_KEYS[1])
            .and_then(|v| serde_json::from_value::<Tokens>(v).ok())
            .unwrap_or_default();
        spent.add(&Spent::session(usd, tokens.total()));
        let texts = &AttemptFields::KEYS[ATTEMPT_TEXT_KEYS];
        if texts
            .iter()
            .filter_map(|k| a.get(k))
            .any(|v| !is_null(v) && !is_text(v))
        {
            return None;
        }
        let read = |key| match a.get(key) {
            Some(v) if is_text(v) => text(v).map(|t| Some(t.into_owned())),
            _ => Some(None),
        };
        if read("outcome")?.as_deref() == Some("completed") {
            recorded = Some(read("commit")?);
        }
    }
    Some(recorded.flatten())
}

/// The verification passes `verification::check` (a text, null, or an object whose fields
/// have their types); `None` otherwise.
fn check_verification(r: &RawValue) -> Option<()> {
    if is_null(r) || is_text(r) {
        return Some(());
    }
    if !r.get().starts_with('{') {
        return None;
    }
    let v: Picked<VerificationFields> = serde_json::from_str(r.get()).ok()?;
    if plainly_a_command(&v) {
        return Some(());
    }
    let mut fields = Map::new();
    for key in VerificationFields::KEYS {
        if let Some(raw) = v.get(key) {
            fields.insert(key.to_string(), serde_json::from_str(raw.get()).ok()?);
        }
    }
    let mut problems = Vec::new();
    verification::check(&"verification", &Value::Object(fields), &mut problems);
    problems.is_empty().then_some(())
}

/// The usual verification, which `verification::check` passes without building a JSON value
/// for it (that was most of the light read's time): type `command` (or none), a command in
/// `command`, every text field a text or null, no expected status. Anything else is checked by
/// `verification::check` itself.
fn plainly_a_command(v: &Picked<VerificationFields>) -> bool {
    let texts_ok = VerificationFields::KEYS[..5]
        .iter()
        .filter_map(|k| v.get(k))
        .all(|r| is_null(r) || is_text(r));
    let no_status = VerificationFields::KEYS[5..]
        .iter()
        .filter_map(|k| v.get(k))
        .all(is_null);
    let command_type = match v.get("type") {
        None => true,
        Some(r) if is_null(r) => true,
        Some(r) => text(r).is_some_and(|t| t.trim().eq_ignore_ascii_case("command")),
    };
    let command = v
        .get("command")
        .and_then(text)
        .is_some_and(|c| !c.trim().is_empty());
    texts_ok && no_status && command_type && command
}

#[cfg(test)]
mod tests;

/// Where the light read and the full parser disagree on what `status` and recovery read of a
/// plan: ids, statuses, phases and their dependencies, `merged`, recorded commits, the next
/// chunk, warnings. Empty when they agree (the tests hold every plan they know to it).
pub fn differences(light: &PlanSummary, full: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    let l = &light.plan;
    if !full.warnings.is_empty() {
        out.push(format!("the full parser warns: {:?}", full.warnings));
    }
    for key in ["merged", "budget_exhausted"] {
        if l.raw.contains_key(key) != full.raw.contains_key(key) {
            out.push(format!("{key} differs"));
        }
    }
    if l.phases.len() != full.phases.len() {
        out.push(format!(
            "{} phases, the full parser {}",
            l.phases.len(),
            full.phases.len()
        ));
    }
    for (i, (a, b)) in l.phases.iter().zip(&full.phases).enumerate() {
        if a.key != b.key || a.depends_on != b.depends_on {
            out.push(format!("phases[{i}]: key or depends_on differ"));
        }
    }
    let last_completed = |c: &Chunk| {
        c.attempts()
            .into_iter()
            .rev()
            .find(|a| a.outcome.as_deref() == Some("completed"))
            .and_then(|a| a.commit)
    };
    let chunks = |p: &Plan| {
        p.chunks()
            .map(|c| {
                let recorded = (c.status == Status::Completed)
                    .then(|| last_completed(c))
                    .flatten();
                (c.id.clone(), c.status, recorded)
            })
            .collect::<Vec<_>>()
    };
    let (a, b) = (chunks(l), chunks(full));
    if a != b {
        out.push(format!("chunks differ: {a:?} vs {b:?}"));
    }
    let mut full_spent = Spent::default();
    for a in full.chunks().flat_map(Chunk::attempts) {
        full_spent.add(&Spent::session(
            a.cost_usd().map(|c| c.0),
            a.tokens().total(),
        ));
    }
    if light.spent != full_spent {
        out.push(format!(
            "the ledger differs: {:?}, the full parser {full_spent:?}",
            light.spent
        ));
    }
    if super::next_chunk_id(l) != super::next_chunk_id(full) {
        out.push("the next chunk differs".into());
    }
    out
}
