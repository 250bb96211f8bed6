//! Plan benchmarks on a realistic 500-chunk plan (25 phases × 20 chunks, subtasks era).
//!
//! Target: load + next chunk + save under 5 ms (`load_next_save`, which includes the plan lock,
//! the read, the parse and validation, the serialisation and the durable atomic write with its
//! fsyncs).
//!
//! Run with `cargo bench --bench plan`. See BENCHMARKS.md.
//!
//! Before the divan benches, `main` checks that loading a plan scales linearly with the number
//! of phases (dependency resolution was quadratic): 50,000 one-chunk phases against 5,000 must
//! take at most `MAX_RATIO` times as long, and 50,000 must load in under `MAX_LARGE_LOAD` (the
//! fastest of several runs each, the least disturbed on a shared machine; medians are printed
//! too). A missed target makes the bench exit 1, loudly. Under `cargo test --benches` (no `--bench`
//! argument, a debug build) the check runs once on a small plan, without a verdict.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    let timed = std::env::args().any(|a| a == "--bench");
    let scaling = if timed {
        Some(check_scaling())
    } else {
        smoke_scaling();
        None
    };
    let bytes = plan_bytes();
    println!(
        "plan: {PHASES} phases × {CHUNKS_PER_PHASE} chunks, {COMPLETED} completed, {} bytes",
        bytes.len()
    );
    divan::main();
    if let Some(Err(missed)) = scaling {
        eprintln!("\n!!! plan bench: TARGET MISSED: {missed}\n");
        std::process::exit(1);
    }
}

/// Phases in the two plans the scaling check compares.
const SMALL_PHASES: usize = 5_000;
const LARGE_PHASES: usize = 50_000;
/// Linear is 10×; the margin covers noise and cache effects of a plan ten times the size.
const MAX_RATIO: f64 = 15.0;
const MAX_LARGE_LOAD: Duration = Duration::from_millis(500);

/// `n` one-chunk phases, each depending on the one before, alternately by string `id` and by
/// numeric `phase` (both styles Auto-Claude wrote), with the first half of the chunks done.
fn chain_plan_bytes(n: usize) -> Vec<u8> {
    let phases: Vec<Value> = (1..=n)
        .map(|p| {
            let depends_on = match p {
                1 => json!([]),
                p if p % 2 == 0 => json!([format!("phase-{}", p - 1)]),
                p => json!([p - 1]),
            };
            json!({
                "id": format!("phase-{p}"),
                "phase": p,
                "name": format!("Phase {p}"),
                "depends_on": depends_on,
                "subtasks": [{
                    "id": format!("subtask-{p}-1"),
                    "description": format!("Step {p}"),
                    "status": if p <= n / 2 { "completed" } else { "pending" },
                }],
            })
        })
        .collect();
    serde_json::to_vec_pretty(&json!({ "feature": "a long chain", "phases": phases }))
        .expect("serialise")
}

/// What a run does first with a plan on disk: `PlanFile::load` (read, parse, validate:
/// unique ids, dependencies, cycles) and `next_step`.
fn load_and_next(file: &PlanFile, n: usize) -> Duration {
    let start = Instant::now();
    let plan = file.load().expect("load").expect("present");
    let step = next_step(&plan);
    let took = start.elapsed();
    let want = format!("subtask-{}-1", n / 2 + 1);
    assert!(
        matches!(step, NextStep::Chunk(pos) if plan.chunk(pos).id == want),
        "the chain's next chunk is {want}"
    );
    took
}

/// The fastest and the median of `runs` timings, after a warm-up (page cache, allocator).
/// The verdicts use the fastest: on a shared machine it is the run least disturbed by others.
fn fastest_and_median(runs: usize, mut time: impl FnMut() -> Duration) -> (Duration, Duration) {
    time();
    let mut times: Vec<Duration> = (0..runs).map(|_| time()).collect();
    times.sort();
    (times[0], times[runs / 2])
}

/// Timings of one plan size, in milliseconds where printed.
struct Timing {
    phases: usize,
    bytes: usize,
    fastest: Duration,
    median: Duration,
    /// The JSON layer alone (`serde_json::Value`), median, for scale.
    json: Duration,
}

impl std::fmt::Display for Timing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        write!(
            f,
            "{} phases ({} bytes): fastest {:.2} ms, median {:.2} ms (JSON layer alone, median: {:.2} ms)",
            self.phases,
            self.bytes,
            ms(self.fastest),
            ms(self.median),
            ms(self.json)
        )
    }
}

/// `runs` timed loads of an `n`-phase chain plan written to a temp dir.
fn time_load(n: usize, runs: usize) -> Timing {
    let tmp = tempfile::tempdir().expect("temp dir");
    let bytes = chain_plan_bytes(n);
    std::fs::write(tmp.path().join(PLAN_FILE), &bytes).expect("write plan");
    let file = PlanFile::in_spec_dir(tmp.path());
    let (fastest, median) = fastest_and_median(runs, || load_and_next(&file, n));
    let (_, json) = fastest_and_median(runs, || {
        let start = Instant::now();
        divan::black_box(serde_json::from_slice::<Value>(&bytes).expect("JSON"));
        start.elapsed()
    });
    Timing {
        phases: n,
        bytes: bytes.len(),
        fastest,
        median,
        json,
    }
}

/// The scaling targets: `Err` says which was missed.
fn check_scaling() -> Result<(), String> {
    let small_timing = time_load(SMALL_PHASES, 21);
    let large_timing = time_load(LARGE_PHASES, 9);
    let (small, large) = (small_timing.fastest, large_timing.fastest);
    let ratio = large.as_secs_f64() / small.as_secs_f64();
    println!(
        "scaling, load + next_step:\n  {small_timing}\n  {large_timing}\n  ratio of the fastest runs \
         {ratio:.1}× (targets: ratio ≤ {MAX_RATIO}×, {LARGE_PHASES} phases < {} ms)",
        MAX_LARGE_LOAD.as_millis()
    );
    let mut missed = Vec::new();
    if ratio > MAX_RATIO {
        missed.push(format!(
            "{LARGE_PHASES} phases took {ratio:.1}× as long as {SMALL_PHASES} (at most {MAX_RATIO}×): loading is not linear"
        ));
    }
    if large > MAX_LARGE_LOAD {
        missed.push(format!(
            "{LARGE_PHASES} phases took {:.0} ms to load (at most {} ms)",
            large.as_secs_f64() * 1e3,
            MAX_LARGE_LOAD.as_millis()
        ));
    }
    if missed.is_empty() {
        Ok(())
    } else {
        let text = missed.join("; ");
        eprintln!("\n!!! plan bench: TARGET MISSED: {text}\n");
        Err(text)
    }
}

/// `cargo test --benches`: the same code once, small, in a debug build: no verdict.
fn smoke_scaling() {
    let timing = time_load(500, 1);
    println!("scaling smoke test: {timing} (no verdict outside cargo bench)");
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

/// The same plan written compactly, as another writer might: no chunk is in runner's own
/// form, so every chunk is read into JSON values (the way every chunk was read before chunks
/// were kept as text).
#[divan::bench]
fn parse_compact(bencher: Bencher) {
    let bytes = serde_json::to_vec(&plan_json()).expect("serialise");
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

/// `Plan` → bytes when every chunk has been changed (held as fields, serialised field by
/// field), against `to_bytes` where they are the file's text.
#[divan::bench]
fn to_bytes_all_changed(bencher: Bencher) {
    let mut plan = parsed();
    let positions: Vec<_> = plan.positions().collect();
    for pos in positions {
        plan.chunk_mut(pos).raw_mut();
    }
    bencher.bench(|| plan_to_bytes(divan::black_box(&plan)));
}

/// What runner does to take a chunk: under the plan lock, read and parse the plan, pick the
/// next chunk, mark it in progress, write the plan back durably (temp file, fsync, rename,
/// fsync of the folder).
///
/// To keep every iteration identical, the chunk the previous iteration marked in progress is
/// set back to pending first, so the plan on disk stays the same size and the same chunk is
/// picked each time. (The plan each iteration wrote is remembered, so the next one reads it
/// without parsing, as a run's next take after its last completion does.)
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

/// `PlanFile::load` alone: read + parse (no lock, no write), to split `load_next_save`. A
/// new `PlanFile` each time, so that nothing read before is remembered.
#[divan::bench]
fn load_only(bencher: Bencher) {
    let (_tmp, dir) = spec_dir();
    bencher.bench(|| {
        PlanFile::in_spec_dir(&dir)
            .load()
            .expect("load")
            .expect("present")
    });
}

/// `PlanFile::load` of a plan this `PlanFile` read before and nobody changed since (a run
/// reads its plan several times a chunk): read, compare with the remembered plan as it is
/// serialised, copy it.
#[divan::bench]
fn load_unchanged(bencher: Bencher) {
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
