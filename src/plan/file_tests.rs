//! A run's life with its plan file, against the slow path at every step: runner's writes (the
//! spliced bytes) against `plan_to_bytes` of the plan changed the same way, and every read (the
//! quick re-read, the remembered plan) against the whole parse of the file — over chains of
//! runner's changes and an agent's edits of the file between them (reports, duplicate ids, bad
//! statuses, dependencies, reformatting, CRLF, escapes, duplicate keys, older copies put back),
//! two runner processes writing the same file, random plans and the real Auto-Claude plans.

use std::path::Path;

use serde_json::{Value, json};

use super::PlanFile;
use crate::plan::layout::tests::{Rng, reference_plans};
use crate::plan::{Attempt, ChunkPos, Plan, Status, parse_plan, plan_to_bytes};

const TEXTS: [&str; 6] = [
    "plain",
    "é ü 😀",
    "quote \" backslash \\ tab \t",
    "line\nbreak",
    "\u{2028} sep \u{7f}",
    "",
];

/// One change runner makes in `update`, the same on the plan under test and on the oracle's.
fn apply(op: usize, pick: usize, plan: &mut Plan) {
    let positions: Vec<ChunkPos> = plan.positions().collect();
    if positions.is_empty() {
        plan.set_field("feature", json!(TEXTS[pick % TEXTS.len()]));
        return;
    }
    let pos = positions[pick % positions.len()];
    let text = TEXTS[pick % TEXTS.len()];
    match op % 7 {
        0 => plan
            .chunk_mut(pos)
            .set_status([Status::Completed, Status::Failed, Status::Pending][pick % 3]),
        1 => plan.chunk_mut(pos).set_str("notes", text),
        2 => plan.chunk_mut(pos).set_attempts(&[Attempt {
            n: 1,
            session_id: Some(text.into()),
            reported: Some("done".into()),
            ..Attempt::default()
        }]),
        3 => plan.chunk_mut(pos).remove("notes"),
        4 => plan.set_field("feature", json!(text)),
        5 => {
            // Two chunks at once.
            let other = positions[(pick / 7) % positions.len()];
            plan.chunk_mut(pos).set_status(Status::Completed);
            plan.chunk_mut(other).set_str("notes", text);
        }
        _ => {}
    }
}

/// The places in `text` where `key`'s string value starts and ends (inside the quotes).
fn string_values(text: &str, key: &str) -> Vec<(usize, usize)> {
    let pat = format!("\"{key}\": \"");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(&pat) {
        let start = from + at + pat.len();
        let mut end = start;
        let bytes = text.as_bytes();
        while end < bytes.len() && bytes[end] != b'"' {
            end += if bytes[end] == b'\\' { 2 } else { 1 };
        }
        out.push((start, end.min(bytes.len())));
        from = start;
    }
    out
}

/// One edit an agent makes of the file (or `None` when it does not apply).
fn agent_edit(rng: &mut Rng, bytes: &[u8], older: &[Vec<u8>]) -> Option<Vec<u8>> {
    // Edits of bytes: a byte-order mark, a byte that is not UTF-8 in a description, trailing
    // spaces, the final newline dropped, a chunk's text swapped with the next one's.
    if rng.below(4) == 0 {
        let mut out = bytes.to_vec();
        match rng.below(5) {
            0 => out.splice(0..0, *b"\xEF\xBB\xBF"),
            1 => {
                let at = out.windows(17).position(|w| w == b"\"description\": \"")?;
                out.insert(at + 17, 0xff);
                return Some(out);
            }
            2 => {
                out.extend_from_slice(b"  \n");
                return Some(out);
            }
            3 => {
                out.pop();
                return Some(out);
            }
            _ => {
                let text = String::from_utf8(out).ok()?;
                let a = text.find("\"id\": \"")?;
                let b = a + 1 + text[a + 1..].find("\"id\": \"")?;
                let (ea, eb) = (text[a..].find('\n')? + a, text[b..].find('\n')? + b);
                let mut swapped = text[..a].to_string();
                swapped.push_str(&text[b..eb]);
                swapped.push_str(&text[ea..b]);
                swapped.push_str(&text[a..ea]);
                swapped.push_str(&text[eb..]);
                return Some(swapped.into_bytes());
            }
        };
        return Some(out);
    }
    let mut text = String::from_utf8(bytes.to_vec()).ok()?;
    let ids = string_values(&text, "id");
    let pick = |list: &[(usize, usize)], rng: &mut Rng| list.get(rng.below(list.len())).copied();
    match rng.below(12) {
        0 | 1 => {
            let (s, e) = pick(&string_values(&text, "description"), rng)?;
            text.replace_range(
                s..e,
                TEXTS[rng.below(TEXTS.len())]
                    .escape_default()
                    .to_string()
                    .as_str(),
            );
        }
        2 => {
            let (s, e) = pick(&string_values(&text, "status"), rng)?;
            let status = [
                "completed",
                "pending",
                "failed",
                "nearly",
                "done",
                "in_progress",
            ];
            text.replace_range(s..e, status[rng.below(status.len())]);
        }
        3 => {
            // Another chunk's (or phase's) id: a duplicate.
            let (s, e) = pick(&ids, rng)?;
            let (s2, e2) = pick(&ids, rng)?;
            let other = text[s2..e2].to_string();
            text.replace_range(s..e, &other);
        }
        4 => {
            let (s, e) = pick(&ids, rng)?;
            let id = format!("{}-x{}", &text[s..e], rng.below(3));
            text.replace_range(s..e, &id);
        }
        5 => {
            let at = text.find("\"depends_on\": [")? + "\"depends_on\": [".len();
            let dep = ["\"nope\", ", "\"phase-2\", ", "1, ", "\"phase-0\", "][rng.below(4)];
            text.insert_str(at, dep);
        }
        6 => text = text.replace('\n', "\r\n"),
        7 => {
            let value: Value = serde_json::from_str(&text).ok()?;
            text = serde_json::to_string(&value).ok()?;
        }
        8 => {
            // `é` spelled as an escape, or a key given twice in a chunk.
            if rng.below(2) == 0 && text.contains('é') {
                text = text.replacen('é', "\\u00e9", 1);
            } else {
                let (s, _) = pick(&ids, rng)?;
                text.insert_str(s - "\"id\": \"".len(), "\"id\": \"dup\",\n          ");
            }
        }
        9 => return older.get(rng.below(older.len())).cloned(),
        10 => {
            let cut = rng.below(bytes.len());
            return Some(bytes[..cut].to_vec());
        }
        _ => {
            // A whole chunk rewritten in runner's form with another field.
            let (s, e) = pick(&string_values(&text, "description"), rng)?;
            text.insert_str(e + 1, ",\n          \"agent\": \"was here\"");
            let _ = s;
        }
    }
    Some(text.into_bytes())
}

/// The whole parse's answer for the file.
fn whole(path: &Path) -> Result<Plan, ()> {
    parse_plan(path, &std::fs::read(path).unwrap()).map_err(|_| ())
}

/// Runner's `update` with `op` on `file`, checked against the slow path: the file ends as
/// `plan_to_bytes` of the whole parse changed by `op`, or untouched when that parse fails.
fn update_checked(file: &PlanFile, op: usize, pick: usize, what: &str) {
    let before = std::fs::read(file.path()).unwrap();
    let expected = parse_plan(file.path(), &before).map(|mut plan| {
        apply(op, pick, &mut plan);
        plan_to_bytes(&plan)
    });
    let got = file.update(|plan| {
        apply(op, pick, plan);
        Ok(())
    });
    let after = std::fs::read(file.path()).unwrap();
    match expected {
        Ok(bytes) => {
            assert!(got.is_ok(), "{what}: update failed: {got:?}");
            assert_eq!(
                String::from_utf8_lossy(&after),
                String::from_utf8_lossy(&bytes),
                "{what}: runner wrote other bytes than plan_to_bytes (op {op})"
            );
        }
        Err(_) => {
            assert!(
                got.is_err(),
                "{what}: updated a plan the whole parse refuses"
            );
            assert_eq!(after, before, "{what}: a refused plan was written");
        }
    }
}

/// `file.load()` gives what the whole parse gives.
fn load_checked(file: &PlanFile, what: &str) {
    let quick = file.load().map(Option::unwrap);
    match (quick, whole(file.path())) {
        (Ok(quick), Ok(whole)) => {
            assert_eq!(
                quick, whole,
                "{what}: the read differs from the whole parse"
            );
            assert_eq!(plan_to_bytes(&quick), plan_to_bytes(&whole), "{what}");
        }
        (Err(_), Err(())) => {}
        (Ok(_), Err(())) => panic!(
            "{what}: read a plan the whole parse refuses:\n{}",
            String::from_utf8_lossy(&std::fs::read(file.path()).unwrap())
        ),
        (Err(e), Ok(_)) => panic!("{what}: refused a plan the whole parse reads: {e:#}"),
    }
}

/// A life of `steps` steps from the file `start`.
fn live(rng: &mut Rng, start: &[u8], steps: usize, what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path();
    std::fs::write(spec.join(super::PLAN_FILE), start).unwrap();
    let runner = PlanFile::in_spec_dir(spec);
    // A second runner process on the same file, with its own memory.
    let other = PlanFile::in_spec_dir(spec);
    let mut older: Vec<Vec<u8>> = vec![start.to_vec()];
    let mut last_good = start.to_vec();
    for step in 0..steps {
        let what = format!("{what} step {step}");
        match rng.below(10) {
            0..=3 => update_checked(&runner, rng.below(7), rng.below(1000), &what),
            4 => update_checked(&other, rng.below(7), rng.below(1000), &what),
            5 | 6 => load_checked(&runner, &what),
            _ => {
                let now = std::fs::read(runner.path()).unwrap();
                if let Some(edited) = agent_edit(rng, &now, &older) {
                    std::fs::write(runner.path(), &edited).unwrap();
                    older.push(now);
                    load_checked(&runner, &what);
                }
            }
        }
        // Put a good plan back now and then, so that a life is not spent on a broken file.
        let now = std::fs::read(runner.path()).unwrap();
        if parse_plan(runner.path(), &now).is_ok() {
            last_good = now;
        } else if rng.below(3) == 0 {
            std::fs::write(runner.path(), &last_good).unwrap();
        }
    }
}

fn random_start(rng: &mut Rng) -> Vec<u8> {
    let mut id = 0;
    let mut chunk = |rng: &mut Rng| {
        id += 1;
        let status = ["pending", "completed", "done"][rng.below(3)];
        json!({
            "id": format!("c{id}"),
            "description": TEXTS[rng.below(TEXTS.len() - 1)],
            "status": status,
            "files": ["a", "b"],
            "nested": {"k": [1, 2.50, {"e": []}]},
        })
    };
    let top = if rng.below(5) == 0 {
        let list: Vec<Value> = (0..1 + rng.below(5)).map(|_| chunk(rng)).collect();
        json!({"feature": "top", "subtasks": list})
    } else {
        let phases: Vec<Value> = (0..1 + rng.below(4))
            .map(|p| {
                let list: Vec<Value> = (0..rng.below(5)).map(|_| chunk(rng)).collect();
                let mut phase = json!({
                    "id": format!("phase-{p}"),
                    "name": format!("Phase {p}"),
                    "depends_on": if p == 0 { json!([]) } else { json!([format!("phase-{}", p - 1)]) },
                    "subtasks": list.clone(),
                });
                if rng.below(2) == 0 {
                    phase["chunks"] = Value::Array(list);
                }
                phase
            })
            .collect();
        json!({"feature": "x", "phases": phases})
    };
    let pretty = serde_json::to_vec_pretty(&top).unwrap();
    match parse_plan(Path::new("p.json"), &pretty) {
        // As runner writes it, most often; else as a planner wrote it.
        Ok(plan) if rng.below(3) > 0 => plan_to_bytes(&plan),
        _ => pretty,
    }
}

#[test]
fn every_write_and_read_of_a_plan_file_life_is_what_the_slow_path_gives() {
    let mut rng = Rng(0x6a09_e667_f3bc_c908);
    for life in 0..60 {
        let start = random_start(&mut rng);
        live(&mut rng, &start, 30, &format!("random plan {life}"));
    }
}

#[test]
fn every_write_and_read_of_the_real_plans_lives_is_what_the_slow_path_gives() {
    let mut rng = Rng(0xbb67_ae85_84ca_a73b);
    let Some(plans) = reference_plans() else {
        return;
    };
    for path in plans {
        let file = std::fs::read(&path).unwrap();
        for life in 0..10 {
            live(
                &mut rng,
                &file,
                40,
                &format!("{} life {life}", path.display()),
            );
        }
    }
}
