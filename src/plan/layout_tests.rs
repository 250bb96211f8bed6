//! Splicing gives exactly the bytes of serialising the whole plan, always; the spans are where
//! the chunks' texts lie.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::*;
use crate::plan::{Attempt, Status, parse_plan, plan_to_bytes};

/// A small deterministic generator: the same cases on every run (`file_tests.rs` uses it too).
pub(in crate::plan) struct Rng(pub(in crate::plan) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(in crate::plan) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A piece of text with what makes serialising interesting: escapes, quotes, non-ASCII,
/// newlines (escaped in JSON), nothing at all.
fn text(rng: &mut Rng) -> String {
    let pieces = [
        "a",
        "Zz",
        "\"q\"",
        "line\nbreak",
        "tab\t",
        "ü",
        "日本",
        "\\",
        "😀",
        "",
        " ",
        "{",
        "]",
    ];
    (0..rng.below(5)).map(|_| *rng.pick(&pieces)).collect()
}

fn value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 2 { 5 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(rng.next() as i64 / 1000),
        3 => serde_json::from_str(rng.pick::<&str>(&[
            "1.5",
            "-0.0",
            "1e100",
            "0.1",
            "12345678901234567890123",
        ]))
        .unwrap(),
        4 => json!(text(rng)),
        5 => json!([]),
        6 => Value::Array((0..rng.below(3)).map(|_| value(rng, depth + 1)).collect()),
        _ => Value::Object(
            (0..rng.below(3))
                .map(|i| (format!("k{i}{}", text(rng)), value(rng, depth + 1)))
                .collect(),
        ),
    }
}

fn chunk_json(rng: &mut Rng, id: &str) -> Value {
    let mut chunk = Map::new();
    chunk.insert("id".into(), json!(id));
    chunk.insert("description".into(), json!(format!("do {}", text(rng))));
    let status = *rng.pick(&["pending", "completed", "in_progress", "failed"]);
    chunk.insert("status".into(), json!(status));
    for i in 0..rng.below(3) {
        chunk.insert(format!("extra{i}"), value(rng, 0));
    }
    Value::Object(chunk)
}

/// A random plan as runner writes it (so that it is remembered): phases or a top-level list,
/// one list or both (equal) per phase, empty phases, unknown fields at every level.
fn random_plan(rng: &mut Rng) -> Option<Plan> {
    let mut id = 0;
    let mut chunks = |rng: &mut Rng, n: usize| -> Vec<Value> {
        (0..n)
            .map(|_| {
                id += 1;
                chunk_json(rng, &format!("c{id}"))
            })
            .collect()
    };
    let top = if rng.below(5) == 0 {
        let n = rng.below(6);
        let list = chunks(rng, n);
        let mut top = Map::new();
        top.insert("feature".into(), json!(text(rng)));
        top.insert("subtasks".into(), Value::Array(list));
        top.insert("extra".into(), value(rng, 0));
        Value::Object(top)
    } else {
        let phases: Vec<Value> = (0..1 + rng.below(4))
            .map(|p| {
                let n = rng.below(5);
                let list = chunks(rng, n);
                let mut phase = Map::new();
                phase.insert("id".into(), json!(format!("phase-{p}")));
                phase.insert("name".into(), json!(text(rng)));
                phase.insert("subtasks".into(), Value::Array(list.clone()));
                if rng.below(2) == 0 {
                    phase.insert("chunks".into(), Value::Array(list));
                }
                phase.insert("note".into(), value(rng, 0));
                Value::Object(phase)
            })
            .collect();
        json!({"feature": text(rng), "phases": phases, "meta": value(rng, 0)})
    };
    let text = serde_json::to_vec_pretty(&top).unwrap();
    let plan = parse_plan(Path::new("p.json"), &text).ok()?;
    // Read back from the bytes runner writes: every chunk kept as text.
    parse_plan(Path::new("p.json"), &plan_to_bytes(&plan)).ok()
}

/// One random change of one chunk, of the kinds runner makes (or a whole new chunk).
fn change_chunk(rng: &mut Rng, plan: &mut Plan, pos: ChunkPos) {
    let chunk = plan.chunk_mut(pos);
    match rng.below(6) {
        0 => chunk.set_status(*rng.pick(&[Status::Completed, Status::Failed, Status::Pending])),
        1 => chunk.set_str(&format!("f{}", rng.below(3)), &text(rng)),
        2 => chunk.remove(rng.pick::<&str>(&["description", "extra0", "status", "nothing"])),
        3 => chunk.set_attempts(&[Attempt {
            n: 1,
            session_id: Some(text(rng)),
            reported: Some("done".into()),
            ..Attempt::default()
        }]),
        4 => {
            let v = value(rng, 0);
            chunk.raw_mut().insert("extra0".into(), v);
        }
        _ => {
            let id = chunk.id.clone();
            let Value::Object(raw) = chunk_json(rng, &id) else {
                unreachable!()
            };
            *chunk = Chunk::from_map(raw, id, Status::Pending);
        }
    }
}

/// Something other than a chunk's content changed: splicing must decline — but for chunks
/// moved within their list (then each place holds another chunk, re-serialised there), which
/// says `false`.
fn change_frame(rng: &mut Rng, plan: &mut Plan) -> bool {
    match rng.below(6) {
        0 => plan.set_field("feature", json!(text(rng))),
        1 => {
            let p = rng.below(plan.phases.len());
            plan.phases[p].raw.insert("name".into(), json!(text(rng)));
        }
        2 => {
            // The same fields in another order: equal as JSON values, not as bytes.
            let p = rng.below(plan.phases.len());
            let raw = &mut plan.phases[p].raw;
            let first = raw.keys().next().cloned();
            if let Some(v) = first.as_ref().and_then(|k| raw.shift_remove(k)) {
                raw.insert(first.unwrap_or_default(), v);
            }
        }
        3 => {
            let p = rng.below(plan.phases.len());
            let chunks = std::sync::Arc::make_mut(&mut plan.phases[p].chunks);
            if chunks.pop().is_none() {
                let Value::Object(raw) = chunk_json(rng, "new") else {
                    unreachable!()
                };
                chunks.push(Chunk::from_map(raw, "new".into(), Status::Pending));
            }
        }
        4 => {
            let p = rng.below(plan.phases.len());
            std::sync::Arc::make_mut(&mut plan.phases[p].chunks).reverse();
            return false;
        }
        _ => plan.warnings.push("a warning".into()),
    }
    true
}

/// `splice` gives exactly `plan_to_bytes` and the spans of the whole serialisation, or
/// declines; returns whether it answered.
fn splice_is_exact(known: &Remembered, now: &Plan) -> bool {
    let Some((bytes, spans)) = splice(known, now) else {
        return false;
    };
    let (whole, whole_spans) = bytes_and_spans(now);
    assert_eq!(
        String::from_utf8_lossy(&bytes),
        String::from_utf8_lossy(&plan_to_bytes(now)),
        "spliced bytes differ from plan_to_bytes"
    );
    assert_eq!(bytes, whole);
    assert_eq!(spans, whole_spans);
    true
}

#[test]
fn the_spans_are_where_each_chunk_is_written() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..300 {
        let Some(plan) = random_plan(&mut rng) else {
            continue;
        };
        let (bytes, spans) = bytes_and_spans(&plan);
        assert_eq!(bytes, plan_to_bytes(&plan));
        assert_eq!(spans_if_writes(&plan, &bytes), Some(spans.clone()));
        let mut bad = bytes.clone();
        bad.push(b' ');
        assert_eq!(spans_if_writes(&plan, &bad), None);
        let twice = |p: &Phase| 1 + usize::from(p.mirror_key.is_some());
        let expected: usize = plan.phases.iter().map(|p| p.chunks.len() * twice(p)).sum();
        assert_eq!(spans.len(), expected);
        for span in &spans {
            let chunk = plan.chunk(span.pos);
            assert_eq!(
                &bytes[span.start..span.end],
                chunk_text_at(chunk, plan.shape).unwrap().as_slice()
            );
        }
        assert!(spans.windows(2).all(|w| w[0].end < w[1].start));
    }
}

#[test]
fn splicing_random_changes_gives_exactly_the_whole_serialisation() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut spliced, mut declined) = (0, 0);
    for _ in 0..400 {
        let Some(plan) = random_plan(&mut rng) else {
            continue;
        };
        let mut known = Remembered::of(plan);
        // A run's worth of changes, each spliced onto the bytes of the one before.
        for _ in 0..6 {
            let mut now = known.plan.clone();
            if rng.below(4) == 0 {
                change_frame(&mut rng, &mut now);
            }
            let positions: Vec<ChunkPos> = now.positions().collect();
            for _ in 0..1 + rng.below(2) {
                if let Some(&pos) = positions.get(rng.below(positions.len())) {
                    change_chunk(&mut rng, &mut now, pos);
                }
            }
            if splice_is_exact(&known, &now) {
                spliced += 1;
            } else {
                declined += 1;
            }
            // Remembered as the run does after a write: changed chunks made text again.
            let (bytes, spans) = bytes_and_spans(&now);
            super::super::reread::keep_as_text(&mut now);
            known = Remembered {
                plan: now,
                bytes,
                spans,
                valid: true,
            };
        }
    }
    assert!(spliced > 1000, "spliced {spliced}");
    assert!(declined > 200, "declined {declined}");
}

#[test]
fn splicing_declines_every_change_outside_the_chunks() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut cases = 0;
    for _ in 0..300 {
        let Some(plan) = random_plan(&mut rng) else {
            continue;
        };
        let known = Remembered::of(plan);
        let mut now = known.plan.clone();
        if !change_frame(&mut rng, &mut now) {
            splice_is_exact(&known, &now);
            continue;
        }
        // Nothing written differently (a name set to what it was): nothing to decline.
        if plan_to_bytes(&now) == known.bytes && now.warnings.is_empty() {
            continue;
        }
        cases += 1;
        assert_eq!(splice(&known, &now), None, "spliced a change of the frame");
    }
    assert!(cases > 100);
}

/// Where the real Auto-Claude plans are and what a test does without them: the integration
/// tests' own file, so that both test binaries answer alike.
#[path = "../../tests/it/corpus.rs"]
pub(in crate::plan) mod corpus;

/// The real Auto-Claude plans (`file_tests.rs` uses them too), or `None`, said on the terminal,
/// when the corpus is absent (a failure under CI).
pub(in crate::plan) fn reference_plans() -> Option<Vec<PathBuf>> {
    corpus::plans()
}

#[test]
fn splicing_the_real_auto_claude_plans_gives_exactly_the_whole_serialisation() {
    let mut rng = Rng(0x0bad_cafe_dead_beef);
    let Some(plans) = reference_plans() else {
        return;
    };
    for path in plans {
        let file = std::fs::read(&path).unwrap();
        let plan = parse_plan(&path, &file).unwrap();
        // As a run sees it: read from what runner wrote.
        let written = plan_to_bytes(&plan);
        let plan = parse_plan(&path, &written).unwrap();
        let known = Remembered::if_writes(plan.clone(), written.clone())
            .unwrap_or_else(|| panic!("{} does not write its bytes", path.display()));
        assert_eq!(known.spans, bytes_and_spans(&plan).1);
        let positions: Vec<ChunkPos> = plan.positions().collect();
        for pos in &positions {
            let mut now = plan.clone();
            change_chunk(&mut rng, &mut now, *pos);
            assert!(splice_is_exact(&known, &now), "{}", path.display());
        }
        for _ in 0..50 {
            let mut now = plan.clone();
            for _ in 0..1 + rng.below(4) {
                let pos = *rng.pick(&positions);
                change_chunk(&mut rng, &mut now, pos);
            }
            assert!(splice_is_exact(&known, &now), "{}", path.display());
        }
    }
}
