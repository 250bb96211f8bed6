//! The checkpoint's figures and entries kept between writes are the ones made from scratch.

use super::*;
use crate::plan::PlanFile;

fn attempt(n: u32, usd: f64, outcome: &str) -> Value {
    serde_json::json!({
        "n": n, "session_id": format!("s{n}"), "started_at": "2026-01-10T10:00:00Z",
        "ended_at": format!("2026-01-10T10:0{n}:07Z"), "outcome": outcome,
        "commit": format!("{n:0>40}"), "cost_usd": usd,
        "tokens": {"input": 10 * n, "output": 3, "cache_read": 0, "cache_write": 0},
    })
}

/// The memo gives exactly `PlanFacts::of` (sums to the last bit) as the plan changes by
/// runner's writes and behind its back, and reads again only the chunks that changed.
#[test]
fn the_memo_gives_exactly_the_facts_of_the_whole_plan() {
    let dir = tempfile::tempdir().unwrap();
    let chunks: Vec<Value> = (1..=5)
        .map(|i| {
            let attempts: Vec<Value> = (1..=i as u32)
                .map(|n| attempt(n, 0.1 * f64::from(n) + 0.07, if n == i as u32 { "completed" } else { "failed" }))
                .collect();
            serde_json::json!({"id": format!("c{i}"), "description": "d", "status": "completed", "attempts": attempts})
        })
        .collect();
    let plan = serde_json::json!({"feature": "f", "phases": [{"id": "p1", "name": "P", "subtasks": chunks}]});
    std::fs::write(
        dir.path().join("implementation_plan.json"),
        serde_json::to_vec_pretty(&plan).unwrap(),
    )
    .unwrap();
    let file = PlanFile::in_spec_dir(dir.path());
    let memo = FactsMemo::default();
    let check = |plan: &Plan| {
        let (fast, slow) = (memo.of(plan), PlanFacts::of(plan));
        assert_eq!(fast, slow);
        assert_eq!(fast.usd.to_bits(), slow.usd.to_bits());
        fast
    };
    let first = check(&file.load().unwrap().unwrap());
    assert_eq!(first.chunks.len(), 5);
    assert_eq!(
        first.chunks[4].commit.as_deref(),
        Some(&*format!("{:0>40}", 5))
    );
    // runner changes one chunk (its text is rewritten; the others stay shared).
    let changed = file
        .update(|plan| {
            let pos = plan.find_chunk("c3").unwrap();
            plan.chunk_mut(pos).update_last_attempt(|a| {
                a.extra.insert("cost_usd".into(), serde_json::json!(1.3));
            });
            Ok(plan.clone())
        })
        .unwrap();
    let second = check(&changed);
    assert_ne!(second.usd.to_bits(), first.usd.to_bits());
    let reread = file.load().unwrap().unwrap();
    assert_eq!(check(&reread), second);
    // Someone else edits a chunk in the file: read anew, not taken from the memo.
    let path = dir.path().join("implementation_plan.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("\"cost_usd\": 0.27", "\"cost_usd\": 2.5"),
    )
    .unwrap();
    let edited = file.load().unwrap().unwrap();
    let third = check(&edited);
    assert_ne!(third, second);
    // A chunk whose status alone changes keeps its figures but not its commit.
    let text = std::fs::read_to_string(&path).unwrap();
    let at = text.rfind("\"status\": \"completed\"").unwrap();
    let edited = format!(
        "{}\"status\": \"pending\"{}",
        &text[..at],
        &text[at + "\"status\": \"completed\"".len()..]
    );
    std::fs::write(&path, edited).unwrap();
    let fourth = check(&file.load().unwrap().unwrap());
    assert_eq!(fourth.chunks[4].status, "pending");
    assert_eq!(fourth.chunks[4].commit, None);
    assert_eq!(fourth.usd.to_bits(), third.usd.to_bits());
}
/// The entries kept from one checkpoint to the next are the ones serialising every chunk
/// gives, as chunks change (a new state), move, appear and go, and as runner's record of
/// commits changes.
#[test]
fn kept_chunk_entries_are_the_ones_of_the_whole_list() {
    let mut seed: u64 = 11;
    let mut roll = |n: usize| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) as usize % n
    };
    let statuses = ["pending", "in_progress", "completed", "failed"];
    let new_state = |i: usize, r: &mut dyn FnMut(usize) -> usize| {
        Arc::new(ChunkState {
            id: format!("c{i}"),
            status: statuses[r(statuses.len())].to_string(),
            commit: (r(2) == 0).then(|| format!("{:0>40}", r(3))),
        })
    };
    let mut chunks: Vec<Arc<ChunkState>> = (0..6).map(|i| new_state(i, &mut roll)).collect();
    let mut commits: HashMap<String, String> = HashMap::new();
    let mut rows = Vec::new();
    for _ in 0..500 {
        match roll(5) {
            0 => {
                let at = roll(chunks.len());
                chunks[at] = new_state(roll(8), &mut roll);
            }
            1 => {
                commits.insert(format!("c{}", roll(8)), format!("{:0>40}", roll(3)));
            }
            2 if chunks.len() > 1 => {
                chunks.remove(roll(chunks.len()));
            }
            3 => chunks.insert(roll(chunks.len() + 1), new_state(roll(8), &mut roll)),
            _ => {
                let (a, b) = (roll(chunks.len()), roll(chunks.len()));
                chunks.swap(a, b);
            }
        }
        rows = chunk_rows(rows, &chunks, &commits);
        let whole: Vec<String> = chunks
            .iter()
            .map(|c| {
                let mut c = (**c).clone();
                if c.status == Status::Completed.as_str() {
                    c.commit = commits.get(&c.id).cloned().or(c.commit);
                }
                checkpoint::chunk_text(&c)
            })
            .collect();
        let kept: Vec<String> = rows.iter().map(|r| r.text.clone()).collect();
        assert_eq!(kept, whole);
    }
}
/// Copies of a plan in several phases, each changed in one chunk (the other phases shared),
/// re-read from text, and older copies again: the memo gives `PlanFacts::of` every time.
#[test]
fn the_memo_follows_copies_that_share_phases() {
    let mut seed: u64 = 3;
    let mut roll = |n: usize| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) as usize % n
    };
    let phases: Vec<Value> = (0..4)
        .map(|p| {
            let chunks: Vec<Value> = (0..5)
                .map(|c| serde_json::json!({"id": format!("c{p}-{c}"), "description": "d", "status": "completed",
                    "attempts": [attempt(1 + (c as u32 % 3), 0.1 * f64::from(c) + 0.03, "completed")]}))
                .collect();
            serde_json::json!({"id": format!("p{p}"), "name": "P", "subtasks": chunks})
        })
        .collect();
    let text = serde_json::to_vec(&serde_json::json!({"feature": "f", "phases": phases})).unwrap();
    let path = std::path::Path::new("p.json");
    let mut plans = vec![crate::plan::parse_plan(path, &text).unwrap()];
    let memo = FactsMemo::default();
    for _ in 0..300 {
        let mut plan = plans[roll(plans.len())].clone();
        match roll(4) {
            0 => {
                let pos = plan.positions().nth(roll(plan.total())).unwrap();
                let statuses = [Status::Pending, Status::Completed, Status::Failed];
                plan.chunk_mut(pos).set_status(statuses[roll(3)]);
            }
            1 => {
                let pos = plan.positions().nth(roll(plan.total())).unwrap();
                let usd = roll(100) as f64 / 3.0;
                plan.chunk_mut(pos).update_last_attempt(|a| {
                    a.extra.insert("cost_usd".into(), serde_json::json!(usd));
                });
            }
            2 => plan = crate::plan::parse_plan(path, &crate::plan::plan_to_bytes(&plan)).unwrap(),
            _ => {}
        }
        let (fast, slow) = (memo.of(&plan), PlanFacts::of(&plan));
        assert_eq!(fast, slow);
        assert_eq!(fast.usd.to_bits(), slow.usd.to_bits());
        plans.push(plan);
    }
}
