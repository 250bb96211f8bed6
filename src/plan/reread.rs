//! Reading a plan again after a small change, without reading it all: a run reads its plan
//! after every session, and the session's agent changed one chunk (`runner chunk done` records
//! its report). Parsing the whole file each time made a run quadratic in its chunks.
//!
//! The plan read last (`known`, kept by `PlanFile` with where each chunk's text lies in its
//! bytes) wrote some bytes; the file now differs from them in one stretch. When that stretch
//! lies inside one chunk's text, only that chunk is read (by the same `read_chunk` the whole
//! parse uses) and put in place, and only what a change of one chunk can break is checked
//! again (`one_chunk_ok`). Anything else (a change across chunks or outside them, a chunk not
//! in runner's form, a problem of any kind) answers `None`, and the whole parse reads the file
//! and says what is wrong, as always.

use super::layout::{Remembered, Span, chunk_text_at};
use super::model::{Chunk, Plan};
use super::parse::chunk_level;
use super::parse_chunk::read_chunk;
use super::{ChunkPos, validate};

/// The plan in `now`, read as `known`'s plan with one chunk changed (with its bytes and spans),
/// or `now` given back (read it whole).
///
/// Why the plan answered writes exactly `now`, without serialising it to compare: `known.plan`
/// writes `known.bytes`, and its spans are where its chunks' texts lie in them (both kept so
/// by `Remembered`). `now` and the old bytes agree up to `from` and after `to`, and the span
/// `start..end` of one chunk holds `from..to`: so `now` is `old[..start]`, then `text`, then
/// `old[end..]`. The plan answered is `known.plan` with that one chunk replaced by one kept as
/// `text` itself (`is_verbatim`: its `Serialize` writes the text as it is), in a phase that
/// writes its chunks once (no mirrored list). Serialising a plan writes each chunk's text
/// where the chunk sits, and what the pretty writer puts around a list element (separators,
/// indentation) does not depend on the element: everything but that chunk's text is written
/// as before. So the plan writes `old[..start] + text + old[end..]`, which is `now`. (A test
/// checks it against the whole serialisation on random changes.)
pub(super) fn one_chunk_changed(known: &Remembered, now: Vec<u8>) -> Result<Remembered, Vec<u8>> {
    match read_one_chunk(known, &now) {
        Some((plan, spans, valid)) => Ok(Remembered {
            plan,
            bytes: now,
            spans,
            valid,
        }),
        None => Err(now),
    }
}

/// `one_chunk_changed`'s plan, spans and validity.
fn read_one_chunk(known: &Remembered, now: &[u8]) -> Option<(Plan, Vec<Span>, bool)> {
    let (before, old) = (&known.plan, known.bytes.as_slice());
    if !before.warnings.is_empty() {
        return None;
    }
    let same_start = common_prefix(old, now);
    if same_start == old.len() && same_start == now.len() {
        return Some((before.clone(), known.spans.clone(), known.valid));
    }
    let room = old.len().min(now.len()) - same_start;
    let same_end = common_suffix(&old[same_start..], &now[same_start..]).min(room);
    let at = span_around(&known.spans, same_start, old.len() - same_end)?;
    let Span { pos, start, end } = known.spans[at];
    // The chunk is written once: a phase writing it under two keys has changed in one only.
    before.phases[pos.phase]
        .mirror_key
        .is_none()
        .then_some(())?;
    // The chunk's text now: the same start, its end moved by the change in length.
    let end_now = (end + now.len()).checked_sub(old.len())?;
    let text = std::str::from_utf8(now.get(start..end_now)?).ok()?;
    // As strict as the whole parse of the file: every escape and number of the new text read.
    if !serde_json::from_str::<serde_json::Value>(text)
        .ok()?
        .is_object()
    {
        return None;
    }
    let raw = serde_json::value::RawValue::from_string(text.to_string()).ok()?;
    let mut problems = Vec::new();
    let place = format_args!("phases[{}].chunks[{}]", pos.phase, pos.chunk);
    let chunk = read_chunk(&place, &raw, chunk_level(before.shape), &mut problems)?;
    if !problems.is_empty() || !chunk.is_verbatim() || chunk.text() != Some(text) {
        return None;
    }
    let mut plan = before.clone();
    *plan.chunk_mut(pos) = chunk;
    if !one_chunk_ok(known, pos, &plan) {
        return None;
    }
    debug_assert!(super::layout::spans_if_writes(&plan, now).is_some());
    // The spans after the chunk (all past its old end) move by the change in length.
    let spans = known
        .spans
        .iter()
        .map(|s| match s.start.cmp(&start) {
            std::cmp::Ordering::Less => *s,
            std::cmp::Ordering::Equal => Span { end: end_now, ..*s },
            std::cmp::Ordering::Greater => Span {
                start: s.start - end + end_now,
                end: s.end - end + end_now,
                ..*s
            },
        })
        .collect();
    Some((plan, spans, true))
}

/// Does `plan` — `known`'s plan with the chunk at `pos` replaced, that chunk's own rules
/// already checked by `read_chunk` — keep the plan's rules (`validate::check` finds nothing)?
///
/// For a plan that kept them, only what one chunk can break is checked: `validate::check`
/// looks at the chunks for their ids alone (unique in the plan), and at the phases for their
/// ids, numbers and dependencies, which a chunk does not change. So the plan keeps its rules
/// when the chunk kept its id, or took one no other chunk has. A plan that did not keep them
/// is checked whole.
pub(super) fn one_chunk_ok(known: &Remembered, pos: ChunkPos, plan: &Plan) -> bool {
    if !known.valid {
        let mut problems = Vec::new();
        validate::check(plan, &mut problems);
        return problems.is_empty();
    }
    let id = &plan.chunk(pos).id;
    *id == known.plan.chunk(pos).id || !known.plan.chunks().any(|c: &Chunk| c.id == *id)
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    // Compared a block at a time (a memory comparison), then byte by byte in the block.
    const BLOCK: usize = 4096;
    let mut at = 0;
    let len = a.len().min(b.len());
    while at + BLOCK <= len && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    while at < len && a[at] == b[at] {
        at += 1;
    }
    at
}

fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let (mut a, mut b) = (a, b);
    let mut same = 0;
    while a.len() >= BLOCK && b.len() >= BLOCK && a[a.len() - BLOCK..] == b[b.len() - BLOCK..] {
        a = &a[..a.len() - BLOCK];
        b = &b[..b.len() - BLOCK];
        same += BLOCK;
    }
    same + a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// The span (its index) that holds the stretch `from..to` of the old bytes; `None` when the
/// stretch starts between chunks' texts or runs past one. Spans are in file order.
fn span_around(spans: &[Span], from: usize, to: usize) -> Option<usize> {
    let at = spans.partition_point(|s| s.start <= from).checked_sub(1)?;
    let span = spans[at];
    (from < span.end && to <= span.end).then_some(at)
}

/// Make each chunk runner changed (held as fields) text again, exactly as `plan_to_bytes`
/// writes it at its place, so that the plan remembered after a write holds text only: copies
/// of it cost little and the next change can be found in it (`one_chunk_changed`). A chunk
/// whose text would not read back as itself stays as it is.
pub(super) fn keep_as_text(plan: &mut Plan) {
    let level = chunk_level(plan.shape);
    let changed: Vec<ChunkPos> = plan
        .positions()
        .filter(|&pos| !plan.chunk(pos).is_verbatim())
        .collect();
    for pos in changed {
        let chunk = plan.chunk(pos);
        let Some(text) = chunk_text_at(chunk, plan.shape)
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .and_then(|text| serde_json::value::RawValue::from_string(text).ok())
        else {
            continue;
        };
        let mut problems = Vec::new();
        let Some(text) = read_chunk(&"", &text, level, &mut problems) else {
            continue;
        };
        if problems.is_empty()
            && text.is_verbatim()
            && text.id == chunk.id
            && text.status == chunk.status
        {
            *plan.chunk_mut(pos) = text;
        }
    }
}

#[cfg(test)]
#[path = "reread_tests.rs"]
mod tests;
