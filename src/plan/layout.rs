//! Where each chunk's text lies in the bytes runner writes for a plan, and writing a changed
//! plan as the bytes of the plan before it with only its changed chunks' texts replaced.
//!
//! A run changes one chunk a session; serialising the whole plan for that (and serialising it
//! again to check a re-read) made the cost of a chunk grow with the plan. The bytes of a plan
//! are its levels' fields with each chunk's text at its place (`Plan`'s `Serialize`), and the
//! text a chunk writes at its place depends on that chunk alone (its JSON, indented to its
//! level). So when only chunks changed, the new bytes are the old bytes with those chunks' texts
//! replaced: `splice`. Anything else changed, and the plan is serialised whole (`plan_to_bytes`,
//! the slow path, which `splice` must always equal — tests compare them).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Map, Value};

use super::model::{Chunk, ChunkPos, Phase, Plan, PlanShape};
use super::parse::chunk_level;

/// One chunk's text in a plan's bytes: `bytes[start..end]`. A phase writing its chunks under
/// both `subtasks` and `chunks` has two spans per chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    pub pos: ChunkPos,
    pub start: usize,
    pub end: usize,
}

/// A plan and the bytes it writes (the file it was read from, or that runner wrote for it):
/// `plan_to_bytes(&plan) == bytes`, and `spans` are its chunks' texts in them, in file order.
#[derive(Debug)]
pub(super) struct Remembered {
    pub plan: Plan,
    pub bytes: Vec<u8>,
    pub spans: Vec<Span>,
    /// The plan keeps its own rules (`validate::check` finds nothing): a change of one chunk
    /// then needs only that chunk checked (`reread::one_chunk_ok`).
    pub valid: bool,
}

impl Remembered {
    /// `plan` and its bytes, serialised (the slow path, once).
    #[cfg(test)]
    pub fn of(plan: Plan) -> Remembered {
        let (bytes, spans) = bytes_and_spans(&plan);
        let valid = is_valid(&plan);
        Remembered {
            plan,
            bytes,
            spans,
            valid,
        }
    }

    /// `plan`, as `parse_plan` read it from `bytes` (so it keeps its rules: `parse_plan`
    /// checked them), if it writes exactly those bytes (compared as it is serialised, without
    /// building them).
    pub fn if_writes(plan: Plan, bytes: Vec<u8>) -> Option<Remembered> {
        let spans = spans_if_writes(&plan, &bytes)?;
        Some(Remembered {
            plan,
            bytes,
            spans,
            valid: true,
        })
    }
}

#[cfg(test)]
fn is_valid(plan: &Plan) -> bool {
    let mut problems = Vec::new();
    super::validate::check(plan, &mut problems);
    problems.is_empty()
}

/// While a plan is serialised: where the output stands, and the chunks' spans seen so far.
struct Marks<'a> {
    at: &'a Cell<usize>,
    spans: &'a RefCell<Vec<Span>>,
}

/// A plan to serialise, noting its chunks' spans when `marks` is given. `Plan`'s own
/// `Serialize` is this without marks, so the two write the same bytes.
pub(super) struct Layout<'a> {
    plan: &'a Plan,
    marks: Option<&'a Marks<'a>>,
}

impl<'a> Layout<'a> {
    pub fn plain(plan: &'a Plan) -> Layout<'a> {
        Layout { plan, marks: None }
    }
}

// Serialisation streams each level's `raw` map and puts the typed children in place of the
// stale `phases` / `chunks` entries, without copying the plan first.
impl Serialize for Layout<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let plan = self.plan;
        let mut map = s.serialize_map(Some(plan.raw.len()))?;
        // The one implicit phase of a top-level chunk list writes its chunks back there.
        let top_level = match plan.shape {
            PlanShape::TopLevelChunks => plan.phases.first(),
            PlanShape::Phases => None,
        };
        for (key, value) in &plan.raw {
            match top_level {
                Some(phase) if phase.holds_chunks(key) => {
                    map.serialize_entry(key, &ChunkList::new(phase, 0, self.marks))?
                }
                None if key == "phases" => map.serialize_entry(key, &PhaseList(self))?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

struct PhaseList<'a>(&'a Layout<'a>);

impl Serialize for PhaseList<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Layout { plan, marks } = self.0;
        s.collect_seq(
            plan.phases
                .iter()
                .enumerate()
                .map(|(index, phase)| PhaseLayout {
                    phase,
                    index,
                    marks: *marks,
                }),
        )
    }
}

pub(super) struct PhaseLayout<'a> {
    phase: &'a Phase,
    index: usize,
    marks: Option<&'a Marks<'a>>,
}

impl<'a> PhaseLayout<'a> {
    pub fn plain(phase: &'a Phase) -> PhaseLayout<'a> {
        PhaseLayout {
            phase,
            index: 0,
            marks: None,
        }
    }
}

impl Serialize for PhaseLayout<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let phase = self.phase;
        let mut map = s.serialize_map(Some(phase.raw.len()))?;
        for (key, value) in &phase.raw {
            if phase.holds_chunks(key) {
                map.serialize_entry(key, &ChunkList::new(phase, self.index, self.marks))?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

struct ChunkList<'a> {
    chunks: &'a [Chunk],
    phase: usize,
    marks: Option<&'a Marks<'a>>,
}

impl<'a> ChunkList<'a> {
    fn new(phase: &'a Phase, index: usize, marks: Option<&'a Marks<'a>>) -> ChunkList<'a> {
        ChunkList {
            chunks: phase.chunks.as_slice(),
            phase: index,
            marks,
        }
    }
}

impl Serialize for ChunkList<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(marks) = self.marks else {
            return s.collect_seq(self.chunks);
        };
        s.collect_seq(self.chunks.iter().enumerate().map(|(chunk, text)| Marked {
            text,
            pos: ChunkPos {
                phase: self.phase,
                chunk,
            },
            marks,
        }))
    }
}

/// A chunk that notes its span: the pretty writer puts the separator and indentation out
/// before it serialises an element, and nothing after, so the output between the two counts
/// is the chunk's text.
struct Marked<'a> {
    text: &'a Chunk,
    pos: ChunkPos,
    marks: &'a Marks<'a>,
}

impl Serialize for Marked<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let start = self.marks.at.get();
        let out = self.text.serialize(s)?;
        self.marks.spans.borrow_mut().push(Span {
            pos: self.pos,
            start,
            end: self.marks.at.get(),
        });
        Ok(out)
    }
}

/// A writer that counts what went through it.
struct Counted<'a, W> {
    inner: W,
    at: &'a Cell<usize>,
}

impl<W: std::io::Write> std::io::Write for Counted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.at.set(self.at.get() + n);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Serialise `plan` as `plan_to_bytes` does into `out`, noting its chunks' spans; false if
/// serialisation or `out` failed.
fn write_marked<W: std::io::Write>(plan: &Plan, out: W, spans: &RefCell<Vec<Span>>) -> bool {
    let at = Cell::new(0);
    let marks = Marks { at: &at, spans };
    let layout = Layout {
        plan,
        marks: Some(&marks),
    };
    let mut out = Counted {
        inner: out,
        at: &at,
    };
    serde_json::to_writer_pretty(&mut out, &layout).is_ok()
        && std::io::Write::write_all(&mut out, b"\n").is_ok()
}

/// `plan_to_bytes(plan)` and its chunks' spans.
pub(super) fn bytes_and_spans(plan: &Plan) -> (Vec<u8>, Vec<Span>) {
    let mut out = Vec::with_capacity(plan.size_hint());
    let spans = RefCell::new(Vec::new());
    if !write_marked(plan, &mut out, &spans) {
        // What `plan_to_bytes` writes when serialisation fails: the final newline alone.
        return (b"\n".to_vec(), Vec::new());
    }
    (out, spans.into_inner())
}

/// The chunks' spans, if `plan` writes exactly `bytes` (`plan_to_bytes(plan) == bytes`).
/// Compared as the plan is serialised, without building the bytes.
pub(super) fn spans_if_writes(plan: &Plan, bytes: &[u8]) -> Option<Vec<Span>> {
    struct Compare<'a>(&'a [u8]);
    impl std::io::Write for Compare<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            match self.0.strip_prefix(buf) {
                Some(rest) => {
                    self.0 = rest;
                    Ok(buf.len())
                }
                None => Err(std::io::Error::other("differs")),
            }
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut rest = Compare(bytes);
    let spans = RefCell::new(Vec::new());
    (write_marked(plan, &mut rest, &spans) && rest.0.is_empty()).then(|| spans.into_inner())
}

/// The text `chunk` writes at its place in a plan of `shape`: its pretty JSON, each line
/// indented to the chunk's level. (Pretty JSON holds no raw newline inside a string, so every
/// newline is one the pretty writer put before an indented line, and a value nested `level`
/// deeper is indented `level` steps more; empty lists and objects are written `[]`, `{}` at
/// any depth.)
pub(super) fn chunk_text_at(chunk: &Chunk, shape: PlanShape) -> Option<Vec<u8>> {
    if let Some(text) = chunk.text() {
        return Some(text.as_bytes().to_vec());
    }
    let pretty = serde_json::to_vec_pretty(chunk).ok()?;
    let indent = "  ".repeat(chunk_level(shape));
    let mut out = Vec::with_capacity(pretty.len() + pretty.len() / 4);
    for (i, line) in pretty.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
            out.extend_from_slice(indent.as_bytes());
        }
        out.extend_from_slice(line);
    }
    Some(out)
}

/// `now`'s bytes and spans as `known`'s bytes with the texts of the chunks that changed since
/// replaced — exactly `plan_to_bytes(now)` — or `None` when anything but chunks changed (a
/// field of the plan or a phase, a chunk added, removed or moved, warnings) and the plan must
/// be serialised whole.
///
/// Only the changed chunks are serialised; the rest is a copy of the old bytes and a walk over
/// the spans (a pointer comparison a chunk).
pub(super) fn splice(known: &Remembered, now: &Plan) -> Option<(Vec<u8>, Vec<Span>)> {
    if !same_frame(&known.plan, now) {
        return None;
    }
    // A changed chunk is written twice in a phase that keeps two lists: its text made once.
    let mut texts: HashMap<ChunkPos, Vec<u8>> = HashMap::new();
    let mut out: Vec<u8> = Vec::with_capacity(known.bytes.len() + 4096);
    let mut spans = Vec::with_capacity(known.spans.len());
    let mut copied = 0;
    for span in &known.spans {
        let chunk = now.chunk(span.pos);
        if chunk.shares_text_with(known.plan.chunk(span.pos)) {
            // Unchanged: where it lies moves by what the changes before it added.
            let shift = out.len() + (span.start - copied);
            spans.push(Span {
                pos: span.pos,
                start: shift,
                end: shift + (span.end - span.start),
            });
            continue;
        }
        let text = match texts.entry(span.pos) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(chunk_text_at(chunk, now.shape)?)
            }
        };
        out.extend_from_slice(known.bytes.get(copied..span.start)?);
        let start = out.len();
        out.extend_from_slice(text);
        spans.push(Span {
            pos: span.pos,
            start,
            end: out.len(),
        });
        copied = span.end;
    }
    out.extend_from_slice(known.bytes.get(copied..)?);
    Some((out, spans))
}

/// Do the two plans write the same bytes around their chunks — the same levels, fields (in
/// the same order, numbers spelled the same), keys and number of chunks a phase — and say the
/// same of their phases (keys, dependencies), with no warnings?
fn same_frame(a: &Plan, b: &Plan) -> bool {
    let same_phase = |x: &Phase, y: &Phase| {
        x.chunks.len() == y.chunks.len()
            && x.chunks_key == y.chunks_key
            && x.mirror_key == y.mirror_key
            && x.key == y.key
            && x.depends_on == y.depends_on
            && identical_maps(&x.raw, &y.raw)
    };
    a.warnings.is_empty()
        && b.warnings.is_empty()
        && a.shape == b.shape
        && a.phases.len() == b.phases.len()
        && identical_maps(&a.raw, &b.raw)
        && a.phases
            .iter()
            .zip(&b.phases)
            .all(|(x, y)| same_phase(x, y))
}

/// Equal and in the same order at every depth (`Map`'s own equality ignores the order of keys,
/// which the bytes do not). Numbers compare as written (`arbitrary_precision`).
fn identical_maps(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && identical(va, vb))
}

fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => identical_maps(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| identical(v, w))
        }
        _ => a == b,
    }
}

#[cfg(test)]
#[path = "layout_tests.rs"]
pub(super) mod tests;

// A plan writes its levels' fields with each chunk's text at its place (`layout`).
impl Serialize for Plan {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Layout::plain(self).serialize(s)
    }
}

impl Serialize for Phase {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PhaseLayout::plain(self).serialize(s)
    }
}
