//! The journal's cost per chunk must not grow with the run (issue 10).
//!
//! Two spec folders get a journal with the history of a run of 50 chunks and of 800 chunks
//! (written through runner's own `Journal`, about 1.9 KB a chunk, as a real run writes: status
//! changes, session start and end, process group, report, verification, commit; every tenth
//! chunk fails once first). The last chunk of each is being retried after two failures. In
//! one process, alternating the two folders (A B A B …) so that noise hits both, the bench
//! times:
//!
//! - **prompt failures**: what `Run::previous_failures` does to list a chunk's earlier failures
//!   (`store::failures::previous`: the records beside the chunk's sessions, the lines they
//!   point to in the journal);
//! - **append**: one journal line (`Journal::write` of a status change, which also checks the
//!   size for rotation);
//! - for reference, not gated: the old way, a scan of the whole journal (`failures::scanned`).
//!
//! Each sample is the mean of a batch of calls; the figures are the medians (with min and
//! spread) of the samples. Targets: 800-chunk median ≤ 1.3 × the 50-chunk median, for the
//! prompt failures and for the append. Exit 1 if a target is missed, 2 if the set-up is wrong
//! (the fast path must give exactly the scan's answer).
//!
//! Run with `cargo bench --bench journal`; `cargo test --benches` runs a seconds-long smoke
//! version with no verdict.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use runner::store::Journal;
use runner::store::failures::{self, AttemptRef};
use serde_json::{Value, json};

const SMALL: usize = 50;
const LARGE: usize = 800;
const LIMIT: f64 = 1.3;
const TARGET: &str = "target";

fn event(v: Value) -> runner::store::Event {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("bad event {v}: {e}"))
}

fn hex(i: usize, salt: u64) -> String {
    format!(
        "{:040x}",
        (i as u128 + 1) * 0x9e37_79b9_7f4a_7c15 + salt as u128
    )
}

/// One session of `chunk` (attempt `n`): its journal lines; `fail` for a failed attempt.
fn session(journal: &Journal, dir: &Path, chunk: &str, i: usize, n: u32, fail: bool) -> String {
    let sid = format!("20261123T080000Z-{:04x}-coder-{chunk}-a{n}", i & 0xffff);
    std::fs::create_dir_all(dir.join("sessions").join(&sid)).unwrap();
    let start = hex(i, n as u64);
    let command = [
        "claude",
        "-p",
        "--dangerously-skip-permissions",
        "--output-format",
        "stream-json",
    ];
    let lines = [
        json!({"event": "chunk_status", "chunk": chunk, "from": "pending", "to": "in_progress",
               "attempt": n, "session_id": sid, "start_commit": start}),
        json!({"event": "session_start", "chunk": chunk, "role": "coder", "attempt": n,
               "session_id": sid, "start_commit": start, "command": command}),
        json!({"event": "process_started", "pgid": 40_000 + i, "session_id": sid}),
        json!({"event": "chunk_report", "chunk": chunk, "report": if fail { "failed" } else { "done" },
               "session_id": sid, "text": "Implemented the step, added tests for the edge cases the spec names, ran the \
               test suite and the linters: everything passes."}),
        json!({"event": "process_ended", "pgid": 40_000 + i, "session_id": sid}),
        json!({"event": "session_end", "chunk": chunk, "role": "coder", "attempt": n,
               "session_id": sid, "start_commit": start, "command": command, "exit_status": 0,
               "ended": "2026-11-23T08:01:00Z", "duration_ms": 61_234, "pgid": 40_000 + i}),
    ];
    for line in lines {
        journal.write(&event(line)).unwrap();
    }
    if fail {
        journal
            .write(&event(json!({"event": "attempt_failed", "chunk": chunk, "attempt": n,
                "session_id": sid, "reason": format!("the agent reported failure: {chunk} attempt {n}: tests fail"),
                "log": dir.join("sessions").join(&sid).join("output.log"), "failed_attempts": n})))
            .unwrap();
        journal
            .write(&event(
                json!({"event": "chunk_status", "chunk": chunk, "from": "in_progress",
                "to": "pending", "attempt": n, "session_id": sid, "why": "attempt failed"}),
            ))
            .unwrap();
    } else {
        let lines = [
            json!({"event": "verification", "chunk": chunk, "command": "cargo test --all-targets -- --quiet",
                   "passed": true, "detail": "exit status 0"}),
            json!({"event": "commit", "chunk": chunk, "commit": hex(i, 7),
                   "message": format!("auto-claude: {chunk} - implement the step as described in the spec")}),
            json!({"event": "chunk_status", "chunk": chunk, "from": "in_progress", "to": "completed",
                   "attempt": n, "session_id": sid, "commit": hex(i, 7), "verified": true}),
        ];
        for line in lines {
            journal.write(&event(line)).unwrap();
        }
    }
    sid
}

/// A spec folder whose journal holds `chunks` chunks' history, then two failures of the
/// chunk being retried; the plan's attempts of that chunk.
fn history(dir: &Path, chunks: usize) -> Vec<AttemptRef> {
    let journal = Journal::new(dir, "r0123456789ab");
    journal
        .write(&event(
            json!({"event": "run_start", "spec": "001-bench", "pid": 4242,
            "slot": "auto-claude", "base_branch": "main", "auto_continue": true}),
        ))
        .unwrap();
    for i in 0..chunks {
        let chunk = format!("subtask-{}-{}", i / 12 + 1, i % 12 + 1);
        if i % 10 == 3 {
            session(&journal, dir, &chunk, i, 1, true);
            session(&journal, dir, &chunk, i, 2, false);
        } else {
            session(&journal, dir, &chunk, i, 1, false);
        }
    }
    let mut attempts = Vec::new();
    for n in 1..=2 {
        let sid = session(&journal, dir, TARGET, chunks, n, true);
        attempts.push(AttemptRef {
            session_id: sid,
            failed: true,
        });
    }
    // The attempt being prepared: no record, not failed.
    attempts.push(AttemptRef {
        session_id: format!("20261123T090000Z-ffff-coder-{TARGET}-a3"),
        failed: false,
    });
    attempts
}

fn journal_bytes(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("events.jsonl"))
        .map(|m| m.len())
        .unwrap_or(0)
        + runner::store::segments::list(dir)
            .iter()
            .map(|(_, p)| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
            .sum::<u64>()
}

struct Stats {
    median: f64,
    min: f64,
    max: f64,
}

fn stats(mut xs: Vec<f64>) -> Stats {
    xs.sort_by(f64::total_cmp);
    Stats {
        median: xs[xs.len() / 2],
        min: xs[0],
        max: xs[xs.len() - 1],
    }
}

/// `samples` samples of each side, alternating; each the mean µs of `batch` calls.
fn interleaved(
    samples: usize,
    batch: usize,
    mut small: impl FnMut(),
    mut large: impl FnMut(),
) -> (Stats, Stats) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        t.elapsed().as_secs_f64() * 1e6 / batch as f64
    };
    for i in 0..samples {
        // Alternate which side goes first too.
        if i % 2 == 0 {
            a.push(time(&mut small));
            b.push(time(&mut large));
        } else {
            b.push(time(&mut large));
            a.push(time(&mut small));
        }
    }
    (stats(a), stats(b))
}

/// Prints one measurement; its verdict if gated. Whether it met its target.
fn report(
    what: &str,
    small: &Stats,
    large: &Stats,
    sizes: (usize, usize),
    gated: Option<&str>,
) -> bool {
    let ratio = large.median / small.median;
    println!(
        "{what}: {} chunks median {:.1} µs (min {:.1}, max {:.1}); {} chunks median {:.1} µs (min {:.1}, max {:.1}); ratio {ratio:.2}",
        sizes.0, small.median, small.min, small.max, sizes.1, large.median, large.min, large.max
    );
    match gated {
        Some(name) => {
            let met = ratio <= LIMIT;
            println!(
                "TARGET {name}: {ratio:.2}× vs {LIMIT}× — {}",
                if met { "met" } else { "MISSED" }
            );
            met
        }
        None => true,
    }
}

fn main() -> ExitCode {
    let full = std::env::args().any(|a| a == "--bench");
    let (small_n, large_n, samples, batch) = if full {
        (SMALL, LARGE, 41, 200)
    } else {
        (5, 20, 3, 5)
    };
    let (small_dir, large_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let small_attempts = history(small_dir.path(), small_n);
    let large_attempts = history(large_dir.path(), large_n);
    println!(
        "journal bench ({}): journals of {small_n} chunks ({} bytes) and {large_n} chunks ({} bytes), {samples} samples a side, alternating",
        if full { "full" } else { "smoke, no verdict" },
        journal_bytes(small_dir.path()),
        journal_bytes(large_dir.path()),
    );
    // The fast path must answer, and exactly as the scan does.
    for (dir, attempts) in [
        (small_dir.path(), &small_attempts),
        (large_dir.path(), &large_attempts),
    ] {
        let fast = failures::from_records(dir, TARGET, attempts);
        let sessions: Vec<&str> = attempts.iter().map(|a| a.session_id.as_str()).collect();
        let slow = failures::scanned(dir, TARGET, &sessions);
        if fast.as_ref() != Some(&slow) || slow.len() != 2 {
            eprintln!(
                "journal bench: the records do not give the scan's answer: {fast:?} vs {slow:?}"
            );
            return ExitCode::from(2);
        }
    }

    let mut ok = true;
    let (a, b) = interleaved(
        samples,
        batch,
        || {
            assert_eq!(
                failures::previous(small_dir.path(), TARGET, &small_attempts).len(),
                2
            )
        },
        || {
            assert_eq!(
                failures::previous(large_dir.path(), TARGET, &large_attempts).len(),
                2
            )
        },
    );
    ok &= report(
        &format!("prompt failures (records; batches of {batch})"),
        &a,
        &b,
        (small_n, large_n),
        full.then_some("prompt_failures_800_vs_50"),
    );
    let scan = |dir: &Path, attempts: &[AttemptRef]| {
        let sessions: Vec<&str> = attempts.iter().map(|a| a.session_id.as_str()).collect();
        assert_eq!(failures::scanned(dir, TARGET, &sessions).len(), 2);
    };
    let scan_batch = (batch / 20).max(1);
    let (a, b) = interleaved(
        samples.min(11),
        scan_batch,
        || scan(small_dir.path(), &small_attempts),
        || scan(large_dir.path(), &large_attempts),
    );
    report(
        &format!("for reference, the old way: scan of the whole journal (batches of {scan_batch})"),
        &a,
        &b,
        (small_n, large_n),
        None,
    );

    let line = event(
        json!({"event": "chunk_status", "chunk": "subtask-9-9", "from": "pending",
        "to": "in_progress", "attempt": 1, "session_id": "20261123T090000Z-0000-coder-subtask-9-9-a1"}),
    );
    let (js, jl) = (
        Journal::new(small_dir.path(), "r0123456789ab"),
        Journal::new(large_dir.path(), "r0123456789ab"),
    );
    let (a, b) = interleaved(
        samples,
        batch,
        || js.write(&line).unwrap(),
        || jl.write(&line).unwrap(),
    );
    ok &= report(
        &format!("append one line (batches of {batch})"),
        &a,
        &b,
        (small_n, large_n),
        full.then_some("journal_append_800_vs_50"),
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
