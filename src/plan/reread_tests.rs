//! The quick re-read gives exactly what the whole parse gives, or nothing.

use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::plan::layout::Remembered;
use crate::plan::{Attempt, Plan, Status, parse_plan, plan_to_bytes};

/// A plan as runner writes it: phases with string ids, chunks with attempt records.
fn written_plan(chunks: usize) -> (Plan, Vec<u8>) {
    let phases: Vec<Value> = (0..3)
        .map(|p| {
            let subtasks: Vec<Value> = (0..chunks)
                .map(|c| {
                    json!({
                        "id": format!("c-{p}-{c}"),
                        "description": format!("Chunk {c} of phase {p}: \"quoted\" ü"),
                        "status": if c % 3 == 0 { "completed" } else { "pending" },
                        "files_to_modify": ["src/a.rs", "src/b.rs"],
                        "verification": {"type": "command", "command": "true"},
                    })
                })
                .collect();
            json!({"id": format!("phase-{p}"), "name": format!("Phase {p}"),
                   "depends_on": if p == 0 { json!([]) } else { json!([format!("phase-{}", p - 1)]) },
                   "subtasks": subtasks})
        })
        .collect();
    let text = serde_json::to_vec_pretty(&json!({"feature": "x", "phases": phases})).unwrap();
    let plan = parse_plan(Path::new("p.json"), &text).unwrap();
    let bytes = plan_to_bytes(&plan);
    let plan = parse_plan(Path::new("p.json"), &bytes).unwrap();
    (plan, bytes)
}

/// The whole parse's answer for `bytes`: the plan, if it reads without problem or warning.
fn slow(bytes: &[u8]) -> Option<Plan> {
    parse_plan(Path::new("p.json"), bytes)
        .ok()
        .filter(|p| p.warnings.is_empty())
}

/// The quick re-read of `now` after `before` agrees with the whole parse: the same plan (and
/// the same bytes written back), or no answer. Returns whether it answered.
fn agrees(before: &Plan, now: &[u8]) -> bool {
    let known = Remembered::of(before.clone());
    let Ok(quick) = one_chunk_changed(&known, now.to_vec()) else {
        return false;
    };
    // What it remembers: the plan, the file's bytes, where the chunks lie in them — those of
    // the whole serialisation, which the quick path no longer runs.
    assert_eq!(quick.bytes, now);
    assert_eq!(
        crate::plan::layout::bytes_and_spans(&quick.plan),
        (now.to_vec(), quick.spans.clone())
    );
    let quick = quick.plan;
    let Some(whole) = slow(now) else {
        panic!(
            "the quick re-read accepted what the whole parse refuses:\n{}",
            String::from_utf8_lossy(now)
        );
    };
    assert_eq!(
        quick, whole,
        "the quick re-read differs from the whole parse"
    );
    assert_eq!(plan_to_bytes(&quick), plan_to_bytes(&whole));
    assert_eq!(plan_to_bytes(&quick), now);
    true
}

/// A small deterministic generator of numbers below `n`: the same cases on every run.
fn below(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    }
}

fn replace_once(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    assert!(text.contains(from), "{from} not in the plan");
    text.replacen(from, to, 1).into_bytes()
}

#[test]
fn a_report_on_one_chunk_is_read_quickly_and_exactly() {
    let (before, _) = written_plan(20);
    // What `runner chunk done` does: one chunk's status and attempt record change.
    let mut after = before.clone();
    let pos = after.find_chunk("c-1-7").unwrap();
    let chunk = after.chunk_mut(pos);
    chunk.set_attempts(&[Attempt {
        n: 1,
        session_id: Some("s1".into()),
        reported: Some("done".into()),
        ..Attempt::default()
    }]);
    chunk.status = Status::Completed;
    chunk.set_str("status", "completed");
    let now = plan_to_bytes(&after);
    assert!(
        agrees(&before, &now),
        "a one-chunk change was not read quickly"
    );
    // The first and the last chunk of the file too.
    for id in ["c-0-0", "c-2-19"] {
        let mut after = before.clone();
        let pos = after.find_chunk(id).unwrap();
        after.chunk_mut(pos).set_str("notes", "did it");
        assert!(agrees(&before, &plan_to_bytes(&after)), "{id}");
    }
    // Nothing changed: the same plan.
    assert!(agrees(&before, &plan_to_bytes(&before)));
}

#[test]
fn a_change_the_whole_parse_refuses_gets_no_quick_answer() {
    let (before, bytes) = written_plan(5);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "unknown status",
            replace_once(&bytes, "\"status\": \"pending\"", "\"status\": \"nearly\""),
        ),
        (
            "a duplicate id",
            replace_once(&bytes, "\"id\": \"c-1-2\"", "\"id\": \"c-1-1\""),
        ),
        (
            "broken JSON",
            replace_once(&bytes, "\"id\": \"c-1-2\"", "\"id\": \"c-1-2"),
        ),
        (
            "a lone surrogate escape",
            replace_once(&bytes, "Chunk 2 of phase 1", "Chunk \\ud800 of phase 1"),
        ),
        (
            "a raw control character",
            replace_once(&bytes, "Chunk 2 of phase 1", "Chunk \u{1} of phase 1"),
        ),
        (
            "no description",
            replace_once(
                &bytes,
                "\"description\": \"Chunk 2 of phase 1: \\\"quoted\\\" ü\",",
                "",
            ),
        ),
        (
            "a bad verification",
            replace_once(&bytes, "\"command\": \"true\"", "\"command\": 7"),
        ),
        (
            "an id with a newline",
            replace_once(&bytes, "\"id\": \"c-1-2\"", "\"id\": \"c-1\\n2\""),
        ),
    ];
    for (what, now) in cases {
        assert!(!agrees(&before, &now), "{what}: answered quickly");
        assert!(slow(&now).is_none(), "{what}: the whole parse took it");
    }
    // Not valid UTF-8 inside a chunk.
    let mut now = bytes.clone();
    let at = String::from_utf8_lossy(&bytes)
        .find("Chunk 3 of phase 2")
        .unwrap();
    now[at + "Chunk ".len()] = 0xff;
    assert!(!agrees(&before, &now));
    assert!(slow(&now).is_none());
}

#[test]
fn a_change_outside_one_chunk_is_read_whole() {
    let (before, bytes) = written_plan(5);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "a plan field",
            replace_once(&bytes, "\"feature\": \"x\"", "\"feature\": \"y\""),
        ),
        (
            "a phase field",
            replace_once(&bytes, "\"name\": \"Phase 1\"", "\"name\": \"Phase one\""),
        ),
        (
            "two chunks",
            replace_once(
                &replace_once(&bytes, "Chunk 1 of phase 0", "Chunk one of phase 0"),
                "Chunk 4 of phase 2",
                "Chunk four of phase 2",
            ),
        ),
        (
            "other spacing in a chunk",
            replace_once(&bytes, "\"id\": \"c-1-2\"", "\"id\":  \"c-1-2\""),
        ),
        (
            "a status synonym",
            replace_once(&bytes, "\"status\": \"pending\"", "\"status\": \"todo\""),
        ),
        (
            "a byte-order mark",
            [b"\xEF\xBB\xBF".as_slice(), &bytes].concat(),
        ),
        ("a chunk removed", {
            let text = String::from_utf8(bytes.clone()).unwrap();
            let start = text.find("{\n          \"id\": \"c-1-2\"").unwrap();
            let end = text[start..].find("},\n").unwrap() + start + 3;
            let mut t = text.clone();
            t.replace_range(start..end, "");
            t.into_bytes()
        }),
    ];
    for (what, now) in cases {
        // Whatever the whole parse says of it, the quick path gave no answer of its own.
        assert!(!agrees(&before, &now), "{what}: read quickly");
    }
}

#[test]
fn random_damage_never_gets_another_answer_than_the_whole_parse() {
    let (before, bytes) = written_plan(4);
    // A small deterministic generator: the same cases on every run.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let alphabet = b"{}[],:\" \n\\0a-ud8";
    let mut answered = 0;
    let mut refused = 0;
    for _ in 0..3000 {
        let mut now = bytes.clone();
        let at = (next() % now.len() as u64) as usize;
        match next() % 3 {
            0 => now[at] = alphabet[(next() % alphabet.len() as u64) as usize],
            1 => {
                now.remove(at);
            }
            _ => now.insert(at, alphabet[(next() % alphabet.len() as u64) as usize]),
        }
        if agrees(&before, &now) {
            answered += 1;
        } else if slow(&now).is_none() {
            refused += 1;
        }
    }
    // Some damage is harmless (a letter in a description): the quick path answers those; most
    // breaks the plan, and the whole parse says so.
    assert!(answered > 100, "the quick path answered {answered} of 3000");
    assert!(refused > 1000, "the whole parse refused {refused} of 3000");
}

#[test]
fn a_plan_remembered_after_a_write_holds_text_only() {
    let (mut plan, _) = written_plan(3);
    let pos = plan.find_chunk("c-2-1").unwrap();
    plan.chunk_mut(pos).set_str("notes", "changed");
    assert!(!plan.chunk(pos).is_verbatim());
    let bytes = plan_to_bytes(&plan);
    let mut kept = plan.clone();
    keep_as_text(&mut kept);
    assert!(kept.chunks().all(|c| c.is_verbatim()));
    assert_eq!(kept, plan);
    assert_eq!(plan_to_bytes(&kept), bytes);
    assert_eq!(slow(&bytes).unwrap(), kept);
}

#[test]
fn a_copy_shares_its_phases_until_a_chunk_of_one_changes() {
    let (plan, bytes) = written_plan(5);
    let mut copy = plan.clone();
    for (a, b) in plan.phases.iter().zip(&copy.phases) {
        assert!(std::sync::Arc::ptr_eq(&a.chunks, &b.chunks));
    }
    assert!(copy.same_json(&plan));
    let pos = copy.find_chunk("c-1-2").unwrap();
    copy.chunk_mut(pos).set_status(Status::Completed);
    // The copy's change is its own: the original still writes its file's bytes.
    assert_eq!(plan.chunk(pos).status, Status::Pending);
    assert_eq!(plan_to_bytes(&plan), bytes);
    assert!(!copy.same_json(&plan));
    assert_ne!(plan_to_bytes(&copy), bytes);
    // Only the changed chunk's phase was copied.
    let shared: Vec<bool> = plan
        .phases
        .iter()
        .zip(&copy.phases)
        .map(|(a, b)| std::sync::Arc::ptr_eq(&a.chunks, &b.chunks))
        .collect();
    assert_eq!(shared, [true, false, true]);
    // Changed back to what it was, the copy says the same as the original again (compared
    // chunk by chunk, not by sharing).
    copy.chunk_mut(pos).set_status(Status::Pending);
    assert!(copy.same_json(&plan));
    assert_eq!(
        slow(&plan_to_bytes(&copy)).unwrap().to_value(),
        plan.to_value()
    );
}

#[test]
fn the_check_of_one_changed_chunk_agrees_with_the_whole_check() {
    let (plan, _) = written_plan(4);
    // Before: a plan keeping its rules, and one already breaking one (a duplicate id), which
    // is checked whole.
    let mut broken = plan.clone();
    let pos = broken.find_chunk("c-2-3").unwrap();
    broken.chunk_mut(pos).id = "c-0-0".into();
    let mut next = below(0x5851_f42d_4c95_7f2d);
    let (mut kept, mut broke) = (0, 0);
    for before in [plan, broken] {
        let known = Remembered::of(before.clone());
        let positions: Vec<ChunkPos> = before.positions().collect();
        let ids: Vec<String> = before.chunks().map(|c| c.id.clone()).collect();
        for _ in 0..2000 {
            let pos = positions[next(positions.len())];
            let mut after = before.clone();
            let chunk = after.chunk_mut(pos);
            // Its own id, another chunk's (a duplicate), a new one; a status, good or bad
            // (a chunk's own fields are `read_chunk`'s to check, not the plan's rules).
            chunk.id = match next(3) {
                0 => chunk.id.clone(),
                1 => ids[next(ids.len())].clone(),
                _ => format!("new-{}", next(5)),
            };
            let status = ["completed", "pending", "nearly"][next(3)];
            chunk.set_str("status", status);
            let mut problems = Vec::new();
            validate::check(&after, &mut problems);
            assert_eq!(
                one_chunk_ok(&known, pos, &after),
                problems.is_empty(),
                "{problems:?}"
            );
            if problems.is_empty() {
                kept += 1;
            } else {
                broke += 1;
            }
        }
    }
    assert!(kept > 500 && broke > 500, "kept {kept}, broke {broke}");
}

#[test]
fn random_one_chunk_edits_of_the_file_read_as_the_whole_parse_reads_them() {
    let (before, bytes) = written_plan(6);
    let text = String::from_utf8(bytes).unwrap();
    let ids: Vec<String> = before.chunks().map(|c| c.id.clone()).collect();
    let mut next = below(0x2127_599b_f432_5c37);
    let (mut answered, mut refused) = (0, 0);
    for _ in 0..600 {
        let id = &ids[next(ids.len())];
        let edit = match next(5) {
            0 => (
                format!("\"id\": \"{id}\""),
                format!("\"id\": \"{}\"", ids[next(ids.len())]),
            ),
            1 => (format!("\"id\": \"{id}\""), format!("\"id\": \"{id}-x\"")),
            2 => (
                format!("\"id\": \"{id}\",\n          \"description\": \""),
                format!("\"id\": \"{id}\",\n          \"description\": \"more "),
            ),
            _ => {
                let status = ["completed", "pending", "failed", "nearly", "done"][next(5)];
                (
                    format!("\"id\": \"{id}\",\n          \"description\": "),
                    format!(
                        "\"id\": \"{id}\",\n          \"status_note\": \"{status}\",\n          \"description\": "
                    ),
                )
            }
        };
        let now = replace_once(text.as_bytes(), &edit.0, &edit.1);
        let now = match next(2) {
            0 => now,
            _ => {
                // The status of the edited chunk, to anything.
                let status = ["completed", "pending", "failed", "nearly", "done"][next(5)];
                let t = String::from_utf8(now).unwrap();
                let at = t.find(&edit.1).unwrap();
                let from = at + t[at..].find("\"status\": \"").unwrap() + "\"status\": \"".len();
                let to = from + t[from..].find('"').unwrap();
                let mut t = t;
                t.replace_range(from..to, status);
                t.into_bytes()
            }
        };
        if agrees(&before, &now) {
            answered += 1;
        } else if slow(&now).is_none() {
            refused += 1;
        }
    }
    assert!(
        answered > 100 && refused > 100,
        "answered {answered}, refused {refused}"
    );
}
