//! Reconstruction for `runner resume` (`engine::resume::reconstruct`) with a 10,000-event
//! journal: p99 under 50 ms from the checkpoint and from the events, for the reconstruction
//! alone and for all of `runner resume --no-run`'s work (resolution, reconstruction, summary)
//! (issue 12).
//!
//! The fixture, in a real git repository made with the git CLI: spec `001-bench` with a
//! 48-chunk plan (4 phases × 12 subtasks, the fields Auto-Claude's planner writes); 31 chunks
//! completed, each with its `auto-claude: <id> - …` commit on `auto-claude/001-bench` (checked
//! out in `.worktrees/auto-claude`), chunk 32 in progress, the rest pending; a journal of
//! exactly 10,000 typed events written through runner's own `Journal` (rotated every 1 MB,
//! so the reader crosses segments): runs started and ended, and for each attempt the status
//! changes, session start and end (with the agent's report: cost and tokens), process group,
//! report, verification and, for the last attempt of a completed chunk, its commit; a long
//! history, each completed chunk failing many times first; and a checkpoint that agrees.
//!
//! Timed in this process: `Workspace::open`, `Workspace::spec` and `reconstruct`, alternating
//! the two paths (A B A B …, the checkpoint moved aside for B, outside the timing) so that
//! noise hits both; 250 samples each after 5 warm-ups; min, median, p99 and max printed. Exit
//! 1 when a p99 is 50 ms or more, 2 when the set-up or an answer is wrong (both paths must give
//! the plan's statuses and the same commits).
//!
//! Run with `cargo bench --bench resume`; `cargo test --benches` runs a smoke version (a few
//! samples, no verdict).

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use chrono::Utc;
use runner::engine::resume::{Reconstruction, Source, reconstruct};
use runner::ops::resume::{ResumeOptions, ResumeOutcome};
use runner::store::checkpoint::{self, Checkpoint, ChunkState, Trigger};
use runner::store::{Journal, Workspace};
use serde_json::{Value, json};

const SPEC: &str = "001-bench";
const PHASES: usize = 4;
const SUBTASKS: usize = 12;
const COMPLETED: usize = 31;
const EVENTS: usize = 10_000;
const SAMPLES: usize = 250;
const WARMUP: usize = 5;
const TARGET_MS: f64 = 50.0;
const RUN_ID: &str = "r0123456789ab";

fn main() -> ExitCode {
    let full = std::env::args().any(|a| a == "--bench");
    let tmp = tempfile::tempdir().expect("a temp folder");
    let root = tmp.path().join("repo");
    let truth = match setup(&root) {
        Ok(truth) => truth,
        Err(e) => {
            eprintln!("resume bench: set-up failed: {e}");
            return ExitCode::from(2);
        }
    };
    let samples = if full { SAMPLES } else { 3 };
    let spec_dir = root.join(".auto-claude/specs").join(SPEC);
    let (cp, aside) = (
        checkpoint::path(&spec_dir),
        spec_dir.join("checkpoint.aside"),
    );
    // 0, 1: `reconstruct` from the checkpoint, from the events; 2, 3: the whole of what
    // `runner resume --no-run` computes (resolution, reconstruction and the summary: git
    // status, recent actions, next steps), which is what the target is about.
    let mut times: [Vec<f64>; 4] = Default::default();
    for i in 0..WARMUP + samples {
        for (path, source) in [(0, Source::Checkpoint), (1, Source::Events)] {
            let (from, to) = if path == 0 {
                (&aside, &cp)
            } else {
                (&cp, &aside)
            };
            if from.exists() {
                std::fs::rename(from, to).expect("moving the checkpoint");
            }
            let started = Instant::now();
            let r = rebuild(&root);
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            if let Err(e) = check(&r, source, &truth) {
                eprintln!("resume bench: wrong answer from the {source:?} path: {e}");
                return ExitCode::from(2);
            }
            let started = Instant::now();
            let summary = summarize(&root);
            let summary_ms = started.elapsed().as_secs_f64() * 1000.0;
            match summary {
                Some(found) if found == source => {}
                other => {
                    eprintln!("resume bench: the summary's source is {other:?}, not {source:?}");
                    return ExitCode::from(2);
                }
            }
            if i >= WARMUP {
                times[path].push(ms);
                times[2 + path].push(summary_ms);
            }
        }
    }
    let mut failed = false;
    let labels = [
        "reconstruct from the checkpoint",
        "reconstruct from the events",
        "resolve + reconstruct + summary from the checkpoint",
        "resolve + reconstruct + summary from the events",
    ];
    for (label, mut t) in labels.into_iter().zip(times) {
        t.sort_by(f64::total_cmp);
        let at = |q: f64| t[((t.len() as f64 * q).ceil() as usize).clamp(1, t.len()) - 1];
        let p99 = at(0.99);
        println!(
            "{label} ({EVENTS} events, {} chunks): min {:.2} ms, median {:.2} ms, p99 {p99:.2} ms, max {:.2} ms over {} samples",
            PHASES * SUBTASKS,
            t[0],
            at(0.5),
            t[t.len() - 1],
            t.len()
        );
        if full {
            if p99 >= TARGET_MS {
                println!("FAIL: {label}: p99 {p99:.2} ms is not under {TARGET_MS} ms");
                failed = true;
            } else {
                println!("ok: {label}: p99 {p99:.2} ms is under {TARGET_MS} ms");
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `runner resume --spec 001-bench --no-run`'s work, in process: the source it used.
fn summarize(root: &Path) -> Option<Source> {
    let ws = Workspace::open(root).ok()?;
    let req = ResumeOptions {
        spec: Some(SPEC.to_string()),
        ..ResumeOptions::default()
    };
    match runner::ops::resume::summarize(&ws, &req, Utc::now()).ok()? {
        ResumeOutcome::Summary(s) => Some(s.source),
        ResumeOutcome::Ambiguous { .. } => None,
    }
}

fn rebuild(root: &Path) -> Option<Reconstruction> {
    let ws = Workspace::open(root).ok()?;
    let spec = ws.spec(SPEC).ok()?;
    reconstruct(&ws, &spec, Utc::now()).ok()?
}

/// Both paths must give every chunk its status in the plan and the commits of the branch.
fn check(r: &Option<Reconstruction>, source: Source, truth: &[ChunkState]) -> Result<(), String> {
    let r = r.as_ref().ok_or("nothing rebuilt")?;
    if r.source != source {
        return Err(format!("source {:?}, warnings {:?}", r.source, r.warnings));
    }
    if r.chunks != truth {
        return Err(format!("chunks differ:\n{:?}\n{truth:?}", r.chunks));
    }
    Ok(())
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn chunk_id(i: usize) -> String {
    format!("subtask-{}-{}", i / SUBTASKS + 1, i % SUBTASKS + 1)
}

fn status_of(i: usize) -> &'static str {
    match i {
        i if i < COMPLETED => "completed",
        i if i == COMPLETED => "in_progress",
        _ => "pending",
    }
}

/// The repository, the branch and its worktree, the plan, the journal and the checkpoint;
/// returns every chunk's state as reconstruction must give it.
fn setup(root: &Path) -> Result<Vec<ChunkState>, String> {
    std::fs::create_dir_all(root).map_err(|e| e.to_string())?;
    git(root, &["init", "-q", "-b", "main"])?;
    git(root, &["config", "user.name", "Bench"])?;
    git(root, &["config", "user.email", "bench@example.com"])?;
    std::fs::write(root.join("README.md"), "# bench\n").map_err(|e| e.to_string())?;
    std::fs::write(root.join(".gitignore"), ".auto-claude/\n.worktrees/\n")
        .map_err(|e| e.to_string())?;
    git(root, &["add", "-A"])?;
    git(root, &["commit", "-q", "-m", "initial"])?;
    let branch = format!("auto-claude/{SPEC}");
    git(
        root,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            &branch,
            ".worktrees/auto-claude",
            "main",
        ],
    )?;
    let wt = root.join(".worktrees/auto-claude");
    let mut truth = Vec::new();
    for i in 0..PHASES * SUBTASKS {
        let id = chunk_id(i);
        let commit = if i < COMPLETED {
            let dir = wt.join("src").join(format!("part{}", i / SUBTASKS));
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            std::fs::write(dir.join(format!("{id}.rs")), format!("// {id}\n"))
                .map_err(|e| e.to_string())?;
            git(&wt, &["add", "-A"])?;
            git(
                &wt,
                &[
                    "commit",
                    "-q",
                    "-m",
                    &format!("auto-claude: {id} - {}", description(i)),
                ],
            )?;
            Some(git(&wt, &["rev-parse", "HEAD"])?)
        } else {
            None
        };
        truth.push(ChunkState {
            id,
            status: status_of(i).into(),
            commit,
        });
    }
    let spec_dir = root.join(".auto-claude/specs").join(SPEC);
    std::fs::create_dir_all(&spec_dir).map_err(|e| e.to_string())?;
    std::fs::write(spec_dir.join("spec.md"), "# bench\n").map_err(|e| e.to_string())?;
    let plan = serde_json::to_vec_pretty(&plan()).map_err(|e| e.to_string())?;
    std::fs::write(spec_dir.join("implementation_plan.json"), plan).map_err(|e| e.to_string())?;
    let written = journal(&spec_dir, &truth)?;
    if written != EVENTS {
        return Err(format!("wrote {written} events, not {EVENTS}"));
    }
    let tip = git(&wt, &["rev-parse", "HEAD"])?;
    checkpoint::write(
        &spec_dir,
        &Checkpoint {
            schema: 1,
            id: "r00000000c0de".into(),
            run_id: RUN_ID.into(),
            spec: SPEC.into(),
            // After every event: nothing newer to replay on top.
            time: Utc::now() + chrono::Duration::seconds(2),
            trigger: Trigger::ChunkDone,
            chunks: truth.clone(),
            current_chunk: Some(chunk_id(COMPLETED)),
            branch,
            tip: Some(tip),
            base: Some("main".into()),
            slot: Some("auto-claude".into()),
            verification: None,
            seconds_spent: 3600,
            cost_usd: 12.5,
            tokens: 1_000_000,
        },
    )
    .map_err(|e| e.to_string())?;
    Ok(truth)
}

fn description(i: usize) -> String {
    format!("implement step {i} of the feature as the spec describes it")
}

fn plan() -> Value {
    let phases: Vec<Value> = (0..PHASES)
        .map(|p| {
            let subtasks: Vec<Value> = (0..SUBTASKS)
                .map(|c| {
                    let i = p * SUBTASKS + c;
                    json!({
                        "id": chunk_id(i), "description": description(i), "status": status_of(i),
                        "service": "backend",
                        "files_to_modify": [format!("src/part{p}/mod.rs")],
                        "files_to_create": [format!("src/part{p}/{}.rs", chunk_id(i))],
                        "patterns_from": ["src/lib.rs"],
                        "verification": {"type": "command", "command": "cargo test --quiet",
                                         "expected": "all tests pass"}
                    })
                })
                .collect();
            json!({"id": format!("phase-{}", p + 1), "name": format!("Phase {}", p + 1),
                   "depends_on": if p == 0 { json!([]) } else { json!([format!("phase-{p}")]) },
                   "subtasks": subtasks})
        })
        .collect();
    json!({"feature": "Bench", "workflow_type": "feature", "base_branch": "main",
           "phases": phases})
}

struct Writer {
    journal: Journal,
    count: usize,
}

impl Writer {
    fn write(&mut self, v: Value) -> Result<(), String> {
        let event = serde_json::from_value(v.clone()).map_err(|e| format!("bad event {v}: {e}"))?;
        self.journal.write(&event).map_err(|e| e.to_string())?;
        self.count += 1;
        Ok(())
    }

    /// One attempt of chunk `id` (attempt `n`, session number `s`): 9 events.
    fn attempt(&mut self, id: &str, n: u32, s: usize, commit: Option<&str>) -> Result<(), String> {
        let sid = format!("20261123T080000Z-{s:04x}-coder-{id}-a{n}");
        let start = format!("{:040x}", s as u128 * 0x9e37_79b9_7f4a_7c15);
        let report = json!({"agent_session_id": format!("sess-{s}"), "cost_usd": 0.0123,
            "cost_source": "reported", "tokens": {"input": 1200, "output": 800, "cache_read": 5000,
            "cache_write": 0}, "model": "claude-sonnet-4-5", "turns": 12});
        let lines = [
            json!({"event": "chunk_status", "chunk": id, "from": "pending", "to": "in_progress",
                   "attempt": n, "session_id": sid, "start_commit": start}),
            json!({"event": "session_start", "chunk": id, "role": "coder", "attempt": n,
                   "session_id": sid, "start_commit": start, "preset": "claude",
                   "command": ["claude", "-p", "--output-format", "stream-json"]}),
            json!({"event": "process_started", "pgid": 40_000 + s, "session_id": sid}),
            json!({"event": "chunk_report", "chunk": id, "report": if commit.is_some() { "done" } else { "failed" },
                   "session_id": sid, "text": "Implemented the step and ran the tests."}),
            json!({"event": "process_ended", "pgid": 40_000 + s, "session_id": sid}),
            json!({"event": "session_end", "chunk": id, "role": "coder", "attempt": n,
                   "session_id": sid, "start_commit": start, "exit_status": 0,
                   "ended": "2026-11-23T08:01:00Z", "duration_ms": 61_234, "pgid": 40_000 + s,
                   "report": report}),
            json!({"event": "verification", "chunk": id, "command": "cargo test --quiet",
                   "passed": commit.is_some(), "detail": "exit status 0"}),
        ];
        for line in lines {
            self.write(line)?;
        }
        match commit {
            Some(commit) => {
                self.write(json!({"event": "commit", "chunk": id, "commit": commit,
                    "message": format!("auto-claude: {id} - step")}))?;
                self.write(
                    json!({"event": "chunk_status", "chunk": id, "from": "in_progress",
                    "to": "completed", "attempt": n, "session_id": sid, "commit": commit,
                    "verified": true}),
                )?;
            }
            None => {
                self.write(json!({"event": "attempt_failed", "chunk": id, "attempt": n,
                    "session_id": sid, "reason": "the verification failed", "log": "output.log",
                    "failed_attempts": n}))?;
                self.write(
                    json!({"event": "chunk_status", "chunk": id, "from": "in_progress",
                    "to": "pending", "attempt": n, "session_id": sid, "why": "attempt failed"}),
                )?;
            }
        }
        Ok(())
    }
}

/// Exactly [`EVENTS`] events: the completed chunks' history (failures first, spread so the
/// total comes out), then the take of the chunk in progress, padded with run starts and ends.
fn journal(spec_dir: &Path, truth: &[ChunkState]) -> Result<usize, String> {
    let mut w = Writer {
        journal: Journal::new(spec_dir, RUN_ID).with_segment_bytes(1 << 20),
        count: 0,
    };
    // A failed attempt is 9 events and its run's start 1; a completion is 9.
    let budget = EVENTS - COMPLETED * 9 - 1;
    let failures = budget / 10;
    let mut s = 0;
    for (i, chunk) in truth.iter().take(COMPLETED).enumerate() {
        let mine = failures / COMPLETED + usize::from(i < failures % COMPLETED);
        for n in 0..mine {
            w.write(
                json!({"event": "run_start", "spec": SPEC, "pid": 4242, "slot": "auto-claude",
                "base_branch": "main", "auto_continue": true}),
            )?;
            w.attempt(&chunk.id, n as u32 + 1, s, None)?;
            s += 1;
        }
        w.attempt(&chunk.id, mine as u32 + 1, s, chunk.commit.as_deref())?;
        s += 1;
    }
    while w.count < EVENTS - 1 {
        w.write(json!({"event": "run_end", "outcome": "interrupted", "sessions": 1}))?;
    }
    w.write(
        json!({"event": "chunk_status", "chunk": truth[COMPLETED].id, "from": "pending",
        "to": "in_progress", "attempt": 1, "session_id": "s-last", "start_commit": "0"}),
    )?;
    Ok(w.count)
}
