//! Reading a plan again after a small change, without reading it all: a run reads its plan
//! after every session, and the session's agent changed one chunk (`runner chunk done` records
//! its report). Parsing the whole file each time made a run quadratic in its chunks.
//!
//! The plan read last (`before`, kept by `PlanFile`) wrote some bytes; the file now differs
//! from them in one stretch. When that stretch lies inside one chunk, only that chunk is read
//! (by the same `read_chunk` the whole parse uses) and put in place, the plan's own rules are
//! checked again (`validate`), and the result is accepted only if it writes exactly the file's
//! bytes — so it is the plan the whole parse would give. Anything else (a change across chunks
//! or outside them, a chunk not in runner's form, a problem of any kind) answers `None`, and
//! the whole parse reads the file and says what is wrong, as always.

use super::file::writes_exactly;
use super::model::Plan;
use super::parse::chunk_level;
use super::parse_chunk::read_chunk;
use super::{ChunkPos, validate};

/// The plan in `now`, read as `before` (which writes `old`) with one chunk changed, or `None`
/// (read it whole).
pub(super) fn one_chunk_changed(before: &Plan, old: &[u8], now: &[u8]) -> Option<Plan> {
    if !before.warnings.is_empty() {
        return None;
    }
    let same_start = common_prefix(old, now);
    if same_start == old.len() && same_start == now.len() {
        return Some(before.clone());
    }
    let room = old.len().min(now.len()) - same_start;
    let same_end = common_suffix(&old[same_start..], &now[same_start..]).min(room);
    let (pos, start, end) = chunk_around(before, old, same_start, old.len() - same_end)?;
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
    let at = format_args!("phases[{}].chunks[{}]", pos.phase, pos.chunk);
    let chunk = read_chunk(&at, &raw, chunk_level(before.shape), &mut problems)?;
    if !problems.is_empty() || !chunk.is_verbatim() {
        return None;
    }
    let mut plan = before.clone();
    *plan.chunk_mut(pos) = chunk;
    validate::check(&plan, &mut problems);
    (problems.is_empty() && writes_exactly(&plan, now)).then_some(plan)
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

/// The chunk whose text in `old` (what `plan` writes) holds the stretch `from..to`: its
/// position and its span in `old`. Each chunk's text is found after the one before it; `None`
/// when the stretch starts between chunks, runs past one, or a chunk is not kept as text.
fn chunk_around(
    plan: &Plan,
    old: &[u8],
    from: usize,
    to: usize,
) -> Option<(ChunkPos, usize, usize)> {
    let mut cursor = 0;
    for pos in plan.positions() {
        let text = plan.chunk(pos).text()?.as_bytes();
        let start = find_from(old, cursor, text)?;
        let end = start + text.len();
        if end <= from {
            cursor = end;
            continue;
        }
        return (start <= from && to <= end).then_some((pos, start, end));
    }
    None
}

/// Where `text` (a chunk's, starting with `{`) next occurs in `bytes` from `from`: normally a
/// few bytes on (`,\n` and indentation between two chunks).
fn find_from(bytes: &[u8], from: usize, text: &[u8]) -> Option<usize> {
    let first = *text.first()?;
    let mut at = from;
    loop {
        at += memchr::memchr(first, bytes.get(at..)?)?;
        if bytes[at..].starts_with(text) {
            return Some(at);
        }
        at += 1;
    }
}

/// Make each chunk runner changed (held as fields) text again, exactly as `plan_to_bytes`
/// writes it at its place, so that the plan remembered after a write holds text only: copies
/// of it cost little and the next change can be found in it (`one_chunk_changed`). A chunk
/// whose text would not read back as itself stays as it is.
pub(super) fn keep_as_text(plan: &mut Plan) {
    let level = chunk_level(plan.shape);
    // Pretty JSON has no raw newline inside a string: every newline starts an indented line.
    let indent = format!("\n{}", "  ".repeat(level));
    let changed: Vec<ChunkPos> = plan
        .positions()
        .filter(|&pos| !plan.chunk(pos).is_verbatim())
        .collect();
    for pos in changed {
        let chunk = plan.chunk(pos);
        let Ok(pretty) = serde_json::to_string_pretty(chunk.raw()) else {
            continue;
        };
        let Ok(raw) = serde_json::value::RawValue::from_string(pretty.replace('\n', &indent))
        else {
            continue;
        };
        let mut problems = Vec::new();
        let Some(text) = read_chunk(&"", &raw, level, &mut problems) else {
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
