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
use std::fmt;
use std::marker::PhantomData;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::model::{Chunk, Phase, PhaseKey, PhaseRef, Plan, PlanShape};
use super::{MAX_ID_BYTES, PlanFile, Status, validate, verification};

/// A plan as the light read saw it: the phases with their keys and dependencies, the chunks
/// with their ids and statuses. A chunk's `raw` holds no more than its recorded commit (as one
/// completed attempt), the plan's `raw` no more than `merged`: enough for the counts, the next
/// chunk and the history check. Never written back (it is not the plan).
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSummary {
    plan: Plan,
}

impl PlanSummary {
    /// The skeleton: ids, statuses, phases, dependencies, recorded commits, `merged`.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }
}

/// Read the plan file and try the light read: `None` when the file cannot be read or the light
/// read is not sure; the caller then uses `PlanFile::load`, whose answer (no plan, an error, a
/// plan with warnings) is the one to show.
pub fn read_light(file: &PlanFile) -> Option<PlanSummary> {
    summarize(&crate::store::safe::read(file.path()).ok()?)
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
    let phases = top
        .phases?
        .into_iter()
        .map(read_phase)
        .collect::<Option<Vec<Phase>>>()?;
    let mut raw = Map::new();
    if top.merged {
        raw.insert("merged".into(), Value::Null);
    }
    let plan = Plan {
        raw,
        phases,
        shape: PlanShape::Phases,
        warnings: Vec::new(),
    };
    let mut problems = Vec::new();
    validate::check(&plan, &mut problems);
    problems.is_empty().then_some(PlanSummary { plan })
}

/// A text, borrowed from the file when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// How a phase's chunk lists are read: in place (one pass; a phase with a second list, or the
/// same key again, stops the read with `TWO_LISTS`), or kept as text to be compared and read
/// afterwards (every value of a repeated key as before: the last one counts).
const IN_PLACE: bool = true;
const AS_TEXT: bool = false;

/// The error that stops an in-place read at a phase with two chunk lists (or one key twice).
const TWO_LISTS: &str = "a phase with both subtasks and chunks";

/// The top level: `phases` read in place, `merged` noted, the rest skipped.
struct Top<'a, const LISTS_IN_PLACE: bool> {
    phases: Option<Vec<PhaseRead<'a, LISTS_IN_PLACE>>>,
    merged: bool,
    top_level_list: bool,
}

impl<'de, const P: bool> de::Deserialize<'de> for Top<'de, P> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const P: bool>;
        impl<'de, const P: bool> Visitor<'de> for V<P> {
            type Value = Top<'de, P>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a plan object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut top = Top {
                    phases: None,
                    merged: false,
                    top_level_list: false,
                };
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match &*key.0 {
                        // A repeated key: the last one counts, as in the full parser's map.
                        "phases" => top.phases = Some(map.next_value()?),
                        other => {
                            map.next_value::<Skip>()?;
                            match other {
                                "merged" => top.merged = true,
                                // A top-level chunk list (even beside `phases`): unusual.
                                "subtasks" | "chunks" => top.top_level_list = true,
                                _ => {}
                            }
                        }
                    }
                }
                Ok(top)
            }
        }
        d.deserialize_map(V::<P>)
    }
}

/// A phase: its fields of `PhaseFields` as `Picked` keeps them, and its chunk lists
/// (`LIST_KEYS`; `None`: missing or null, the last of a repeated key counting).
struct PhaseRead<'a, const LISTS_IN_PLACE: bool> {
    fields: Picked<'a, PhaseFields>,
    lists: [Option<List<'a>>; 2],
}

const LIST_KEYS: [&str; 2] = ["subtasks", "chunks"];

/// A chunk list: its text, read afterwards, or its chunks read in place.
enum List<'a> {
    Text(&'a RawValue),
    Read(Vec<Picked<'a, ChunkFields>>),
}

impl<'de, const P: bool> de::Deserialize<'de> for PhaseRead<'de, P> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const P: bool>;
        impl<'de, const P: bool> Visitor<'de> for V<P> {
            type Value = PhaseRead<'de, P>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut values = vec![None; PhaseFields::KEYS.len()];
                let mut lists = [None, None];
                let mut seen = false;
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    if let Some(i) = LIST_KEYS.iter().position(|k| *k == key.0) {
                        if P && std::mem::replace(&mut seen, true) {
                            return Err(de::Error::custom(TWO_LISTS));
                        }
                        lists[i] = if P {
                            map.next_value::<InPlace>()?.0
                        } else {
                            list_text(map.next_value()?)?
                        };
                    } else if let Some(i) = PhaseFields::KEYS.iter().position(|k| *k == key.0) {
                        values[i] = Some(kept(map.next_value()?)?);
                    } else {
                        map.next_value::<Skip>()?;
                    }
                }
                Ok(PhaseRead {
                    fields: Picked {
                        values,
                        _keys: PhantomData,
                    },
                    lists,
                })
            }
        }
        d.deserialize_map(V::<P>)
    }
}

/// A chunk list kept as text: a list is read afterwards, null is no list, anything else is
/// not the usual shape.
fn list_text<E: de::Error>(raw: &RawValue) -> Result<Option<List<'_>>, E> {
    if raw.get().starts_with('[') {
        Ok(Some(List::Text(raw)))
    } else if is_null(raw) {
        Ok(None)
    } else {
        Err(E::custom("a chunk list that is not a list"))
    }
}

/// A chunk list read in place: its chunks, `None` for null; anything else does not read.
struct InPlace<'a>(Option<List<'a>>);

impl<'de> de::Deserialize<'de> for InPlace<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = InPlace<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of chunks or null")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(InPlace(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut chunks = Vec::new();
                while let Some(chunk) = seq.next_element()? {
                    chunks.push(chunk);
                }
                Ok(InPlace(Some(List::Read(chunks))))
            }
        }
        d.deserialize_any(V)
    }
}

/// The keys of one level the light read looks at.
trait Fields {
    const KEYS: &'static [&'static str];
}

/// A phase's fields besides its chunk lists (`PhaseRead`).
struct PhaseFields;
impl Fields for PhaseFields {
    const KEYS: &'static [&'static str] = &["id", "phase", "depends_on"];
}

struct ChunkFields;
impl Fields for ChunkFields {
    const KEYS: &'static [&'static str] = &[
        "id",
        "description",
        "title",
        "status",
        "attempts",
        "verification",
    ];
}

struct AttemptFields;
impl Fields for AttemptFields {
    // `n`, then the text fields of `Attempt` (see `model::ATTEMPT_TEXTS`).
    const KEYS: &'static [&'static str] = &[
        "n",
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
}

struct VerificationFields;
impl Fields for VerificationFields {
    // Every field `verification::check` reads.
    const KEYS: &'static [&'static str] = &[
        "type",
        "command",
        "run",
        "expect_output",
        "expect_stdout",
        "expect_status",
        "expected_status",
        "expected_exit_code",
    ];
}

/// An object's fields of `F::KEYS` as raw JSON (the last of a repeated key, as in the full
/// parser's map), every other field skipped. Only an object reads (serde's derived structs
/// would also take a list). Every value, kept or skipped, is read as the full parser reads it
/// (see `Skip`, `kept`).
struct Picked<'a, F> {
    values: Vec<Option<&'a RawValue>>,
    _keys: PhantomData<F>,
}

impl<'a, F: Fields> Picked<'a, F> {
    fn get(&self, key: &str) -> Option<&'a RawValue> {
        let i = F::KEYS.iter().position(|k| *k == key)?;
        self.values[i]
    }
}

impl<'de, F: Fields> de::Deserialize<'de> for Picked<'de, F> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<F>(PhantomData<F>);
        impl<'de, F: Fields> Visitor<'de> for V<F> {
            type Value = Picked<'de, F>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut values = vec![None; F::KEYS.len()];
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match F::KEYS.iter().position(|k| *k == key.0) {
                        Some(i) => values[i] = Some(kept(map.next_value()?)?),
                        None => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(Picked {
                    values,
                    _keys: PhantomData,
                })
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

/// A value skipped, but read as the full parser reads it into a JSON value: serde_json's own
/// skipping (`IgnoredAny`, a raw value) checks neither its recursion limit, nor escapes (a lone
/// surrogate), nor, reading bytes, UTF-8; the full parser rejects a plan for any of them.
/// Nothing is kept: texts without escapes are borrowed, numbers are not stored.
struct Skip;

impl<'de> de::Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Capped(usize::MAX).deserialize(d)
    }
}

/// `Skip`, at most this many lists or objects deep (`usize::MAX`: serde_json's own limit).
#[derive(Clone, Copy)]
struct Capped(usize);

impl<'de> DeserializeSeed<'de> for Capped {
    type Value = Skip;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Capped {
    type Value = Skip;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        let inner = self.inner::<A::Error>()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        let inner = self.inner::<A::Error>()?;
        while map.next_key_seed(inner)?.is_some() {
            map.next_value_seed(inner)?;
        }
        Ok(Skip)
    }
}

impl Capped {
    fn inner<E: de::Error>(self) -> Result<Capped, E> {
        match self.0 {
            0 => Err(E::custom("nested deeper than the light read looks")),
            usize::MAX => Ok(self),
            n => Ok(Capped(n - 1)),
        }
    }
}

/// How deep a value the light read keeps may nest: it is read again on its own, where
/// serde_json's recursion limit counts from it and not from the top of the file as in the full
/// parser; anything deeper goes to the full parser (a usual verification is 1 deep).
const KEPT_DEPTH: usize = 16;

/// A kept value reads as the full parser reads it (see `Skip`), and nests no deeper than
/// `KEPT_DEPTH`.
fn sound(r: &RawValue) -> bool {
    let mut de = serde_json::Deserializer::from_str(r.get());
    Capped(KEPT_DEPTH).deserialize(&mut de).is_ok()
}

/// A kept value, once `sound`.
fn kept<E: de::Error>(raw: &RawValue) -> Result<&RawValue, E> {
    if sound(raw) {
        Ok(raw)
    } else {
        Err(E::custom("not read as the full parser"))
    }
}

fn is_null(r: &RawValue) -> bool {
    r.get() == "null"
}

fn is_text(r: &RawValue) -> bool {
    r.get().starts_with('"')
}

fn text(r: &RawValue) -> Option<Cow<'_, str>> {
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

fn read_phase<const P: bool>(phase: PhaseRead<P>) -> Option<Phase> {
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
        .map(read_chunk)
        .collect::<Option<Vec<Chunk>>>()?;
    Some(Phase {
        raw: Map::new(),
        key: PhaseKey { id, number },
        depends_on,
        chunks_key: key,
        mirror_key: mirror,
        chunks,
    })
}

fn phase_ref(r: &RawValue) -> Option<PhaseRef> {
    match integer(r) {
        Some(n) => Some(PhaseRef::Number(n)),
        None if is_text(r) => Some(PhaseRef::Name(text(r)?.into_owned())),
        None => None,
    }
}

fn read_chunk(c: Picked<ChunkFields>) -> Option<Chunk> {
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
        Some(r) => recorded_commit(r)?,
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

/// The attempts as `Attempt::list_from_value` takes them, and the commit of the last completed
/// one (`integrity::recorded_commit`): `None` when they do not read.
fn recorded_commit(r: &RawValue) -> Option<Option<String>> {
    let attempts: Vec<Picked<AttemptFields>> = serde_json::from_str(r.get()).ok()?;
    let mut recorded = None;
    for a in &attempts {
        let n = integer(a.get("n")?)?;
        u32::try_from(n).ok()?;
        let texts = &AttemptFields::KEYS[1..];
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
    if l.raw.contains_key("merged") != full.raw.contains_key("merged") {
        out.push("merged differs".into());
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
    if super::next_chunk_id(l) != super::next_chunk_id(full) {
        out.push("the next chunk differs".into());
    }
    out
}
