//! Plan benchmarks on a realistic 500-chunk plan (25 phases × 20 chunks, subtasks era).
//!
//! Target: load + next chunk + save under 5 ms (`load_next_save`, which includes the plan lock,
//! the read, the parse and validation, the serialisation and the durable atomic write with its
//! fsyncs).
//!
//! Run with `cargo bench --bench plan`. See BENCHMARKS.md.

use std::path::{Path, PathBuf};

// The same allocator as the runner binary (src/main.rs), so the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use divan::Bencher;
use runner::plan::{
    NextStep, PLAN_FILE, Plan, PlanFile, Status, next_step, parse_plan, plan_to_bytes,
};
use serde_json::{Value, json};

const PHASES: usize = 25;
const CHUNKS_PER_PHASE: usize = 20;
/// Chunks in file order that are completed: about half the plan.
const COMPLETED: usize = 250;

fn main() {
    let bytes = plan_bytes();
    println!(
        "plan: {PHASES} phases × {CHUNKS_PER_PHASE} chunks, {COMPLETED} completed, {} bytes",
        bytes.len()
    );
    divan::main();
}

/// The plan as Auto-Claude (subtasks era) and runner would have left it half way through.
fn plan_json() -> Value {
    let mut phases = Vec::with_capacity(PHASES);
    let mut done = 0;
    for p in 1..=PHASES {
        let mut subtasks = Vec::with_capacity(CHUNKS_PER_PHASE);
        for c in 1..=CHUNKS_PER_PHASE {
            let id = format!("subtask-{p}-{c}");
            let completed = done < COMPLETED;
            let mut chunk = json!({
                "id": id,
                "description": format!(
                    "Implement part {c} of phase {p}: add the handler, wire it into the router, \
                     and cover the happy path and the error cases with unit tests"
                ),
                "service": "backend",
                "status": if completed { "completed" } else { "pending" },
                "files_to_modify": [
                    format!("src/phase{p}/mod.rs"),
                    format!("src/phase{p}/handler_{c}.rs"),
                    "src/router.rs",
                ],
                "files_to_create": [format!("tests/phase{p}_part{c}.rs")],
                "patterns_from": ["src/phase1/handler_1.rs"],
                "verification": {
                    "type": "command",
                    "command": format!("cargo test --test phase{p}_part{c}"),
                    "expected": "all tests pass",
                },
                // Fields runner does not know; they must survive a round trip.
                "estimated_complexity": "medium",
                "recoveryNote": null,
            });
            if completed {
                done += 1;
                let obj = chunk.as_object_mut().expect("object");
                obj.insert("started_at".into(), json!("2026-01-10T10:00:00Z"));
                obj.insert("completed_at".into(), json!("2026-01-10T10:12:00Z"));
                obj.insert(
                    "session_id".into(),
                    json!(format!("20260110T100000Z-1a2b-coder-{id}-a1")),
                );
                obj.insert(
                    "attempts".into(),
                    json!([{
                        "n": 1,
                        "session_id": format!("20260110T100000Z-1a2b-coder-{id}-a1"),
                        "run_id": "run-20260110T095900Z-4242",
                        "started_at": "2026-01-10T10:00:00Z",
                        "start_commit": "0123456789abcdef0123456789abcdef01234567",
                        "ended_at": "2026-01-10T10:12:00Z",
                        "reported": "done",
                        "outcome": "completed",
                        "commit": "89abcdef0123456789abcdef0123456789abcdef",
                    }]),
                );
            }
            subtasks.push(chunk);
        }
        let depends_on: Vec<String> = if p == 1 {
            Vec::new()
        } else {
            vec![format!("phase-{}", p - 1)]
        };
        phases.push(json!({
            "id": format!("phase-{p}"),
            "name": format!("Phase {p}: feature slice {p}"),
            "type": "implementation",
            "description": format!("Everything needed for slice {p} of the feature"),
            "depends_on": depends_on,
            "parallel_safe": false,
            "subtasks": subtasks,
        }));
    }
    json!({
        "feature": "A large feature in 25 slices",
        "workflow_type": "feature",
        "services_involved": ["backend"],
        "spec_file": "spec.md",
        "base_branch": "main",
        "created_at": "2026-01-10T09:00:00Z",
        "updated_at": "2026-01-10T16:00:00Z",
        "phases": phases,
        "final_acceptance": ["all tests pass", "the feature works end to end"],
        "qa_signoff": {"status": "pending", "notes": null},
        "summary": {"total_phases": PHASES, "total_subtasks": PHASES * CHUNKS_PER_PHASE},
    })
}

fn plan_bytes() -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(&plan_json()).expect("serialise");
    bytes.push(b'\n');
    bytes
}

fn parsed() -> Plan {
    let plan = parse_plan(Path::new(PLAN_FILE), &plan_bytes()).expect("the bench plan is valid");
    assert_eq!(plan.total(), PHASES * CHUNKS_PER_PHASE);
    assert_eq!(plan.count(Status::Completed), COMPLETED);
    plan
}

/// A spec folder in the temp dir (on the filesystem of /tmp) holding the plan.
fn spec_dir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("001-bench");
    std::fs::create_dir_all(&dir).expect("spec dir");
    std::fs::write(dir.join(PLAN_FILE), plan_bytes()).expect("write plan");
    (tmp, dir)
}

/// Bytes → `Plan`: JSON parse, typed view, validation (unique ids, dependencies, cycles).
#[divan::bench]
fn parse(bencher: Bencher) {
    let bytes = plan_bytes();
    bencher
        .counter(divan::counter::BytesCount::new(bytes.len()))
        .bench(|| parse_plan(Path::new(PLAN_FILE), divan::black_box(&bytes)).expect("valid"));
}

/// Which chunk comes next, on a parsed plan.
#[divan::bench(name = "next_step")]
fn next_step_only(bencher: Bencher) {
    let plan = parsed();
    bencher.bench(|| next_step(divan::black_box(&plan)));
}

/// `Plan` → the canonical bytes runner writes (no I/O).
#[divan::bench]
fn to_bytes(bencher: Bencher) {
    let plan = parsed();
    bencher.bench(|| plan_to_bytes(divan::black_box(&plan)));
}

/// What runner does to take a chunk: under the plan lock, read and parse the plan, pick the
/// next chunk, mark it in progress, write the plan back durably (temp file, fsync, rename,
/// fsync of the folder).
///
/// To keep every iteration identical, the chunk the previous iteration marked in progress is
/// set back to pending first, so the plan on disk stays the same size and the same chunk is
/// picked each time.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn load_next_save(bencher: Bencher) {
    let (_tmp, dir) = spec_dir();
    let file = PlanFile::in_spec_dir(&dir);
    bencher.bench(|| {
        file.update(|plan| {
            let taken = plan
                .positions()
                .find(|&pos| plan.chunk(pos).status == Status::InProgress);
            if let Some(pos) = taken {
                plan.chunk_mut(pos).set_status(Status::Pending);
            }
            let NextStep::Chunk(pos) = next_step(plan) else {
                panic!("the bench plan always has a next chunk");
            };
            plan.chunk_mut(pos).set_status(Status::InProgress);
            Ok(())
        })
        .expect("update")
    });
}

/// `PlanFile::load` alone: read + parse (no lock, no write), to split `load_next_save`.
#[divan::bench]
fn load_only(bencher: Bencher) {
    let (_tmp, dir) = spec_dir();
    let file = PlanFile::in_spec_dir(&dir);
    bencher.bench(|| file.load().expect("load").expect("present"));
}

/// `PlanFile::replace` alone (plan lock, serialise, durable atomic replace, last-good copy), to
/// split `load_next_save`.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn write_only(bencher: Bencher) {
    let (_tmp, dir) = spec_dir();
    let file = PlanFile::in_spec_dir(&dir);
    let plan = parsed();
    bencher.bench(|| file.replace(&plan).expect("write"));
}

/// The JSON syntax layer alone (bytes → `serde_json::Value`), to see what the typed view adds.
#[divan::bench]
fn json_only(bencher: Bencher) {
    let bytes = plan_bytes();
    bencher.bench(|| {
        serde_json::from_slice::<serde_json::Value>(divan::black_box(&bytes)).expect("valid")
    });
}
