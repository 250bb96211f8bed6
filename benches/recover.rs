//! `runner recover --all` over 200 specs of 50 chunks each: the target is under 200 ms.
//!
//! A temp git repository gets 200 specs, each with a 50-chunk plan (half completed, with the
//! attempt records runner leaves) and a journal of a few hundred events, as after a long day of
//! runs. Two scenarios, timed with the real release binary (`support::runner_command()`, with
//! an empty user config), 10 runs each after one warm-up:
//!
//! - **all quiet**: nothing was interrupted, the common case (the target);
//! - **10 interrupted**: 10 of the 200 specs have a chunk left `in_progress` with no worktree
//!   (recovery decides `restart` for each and writes its plan), for information.
//!
//! The bench exits 1 if the median of the first scenario is 200 ms or more, 2 on an error.
//! Run with `cargo bench --bench recover`. See BENCHMARKS.md.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use serde_json::{Value, json};

mod support;
use support::runner_command;
const SPECS: usize = 200;
const CHUNKS: usize = 50;
const RUNS: usize = 10;
const TARGET_MS: f64 = 200.0;

fn main() -> ExitCode {
    let full = std::env::args().any(|a| a == "--bench");
    let (specs, runs) = if full { (SPECS, RUNS) } else { (5, 1) };
    let mut failed = false;
    for (label, interrupted, gated) in [("all quiet", 0, true), ("10 interrupted", 10, false)] {
        match scenario(specs, interrupted.min(specs), runs) {
            Ok(median) => {
                println!(
                    "{label}: {specs} specs x {CHUNKS} chunks, median {median:.1} ms over {runs} runs"
                );
                if full && gated {
                    if median >= TARGET_MS {
                        println!("FAIL: median {median:.1} ms is not under {TARGET_MS} ms");
                        failed = true;
                    } else {
                        println!("ok: median {median:.1} ms is under {TARGET_MS} ms");
                    }
                }
            }
            Err(e) => {
                eprintln!("recover bench: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Median wall time of `runner recover --all --json`; the state is rebuilt before each run so
/// that every run does the same work.
fn scenario(specs: usize, interrupted: usize, runs: usize) -> Result<f64, String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let repo = tmp.path().join("repo");
    setup_repo(&repo)?;
    let mut times = Vec::new();
    for i in 0..=runs {
        write_specs(&repo, specs, interrupted)?;
        let started = Instant::now();
        let out = runner_command()
            .args(["recover", "--all", "--json"])
            .current_dir(&repo)
            .output()
            .map_err(|e| e.to_string())?;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        if !out.status.success() {
            return Err(format!(
                "runner recover failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        let recovered = report["specs"]
            .as_array()
            .map(|s| s.iter().filter(|s| s["outcome"] == "recovered").count())
            .unwrap_or(0);
        if report["specs"].as_array().map(Vec::len) != Some(specs) || recovered != interrupted {
            return Err(format!("unexpected report: {recovered} recovered"));
        }
        if i > 0 {
            times.push(ms);
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn setup_repo(repo: &Path) -> Result<(), String> {
    std::fs::create_dir_all(repo).map_err(|e| e.to_string())?;
    git(repo, &["init", "-q", "-b", "main"])?;
    git(
        repo,
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
    )
}

fn write_specs(repo: &Path, specs: usize, interrupted: usize) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    for s in 0..specs {
        let dir = repo.join(format!(".auto-claude/specs/{s:03}-spec"));
        std::fs::create_dir_all(&dir).map_err(io)?;
        std::fs::write(dir.join("spec.md"), "# a spec\n").map_err(io)?;
        let plan = plan(s < interrupted);
        std::fs::write(
            dir.join("implementation_plan.json"),
            serde_json::to_vec_pretty(&plan).map_err(|e| e.to_string())?,
        )
        .map_err(io)?;
        let mut journal = String::new();
        for c in 0..CHUNKS / 2 {
            for (event, extra) in [
                (
                    "session_start",
                    json!({"role": "coder", "session_id": format!("s{c}")}),
                ),
                (
                    "process_started",
                    json!({"pgid": 1_000_000 + c, "session_id": format!("s{c}")}),
                ),
                ("process_ended", json!({"pgid": 1_000_000 + c})),
                ("session_end", json!({"role": "coder", "duration_ms": 1000})),
                (
                    "chunk_status",
                    json!({"from": "in_progress", "to": "completed"}),
                ),
                ("commit", json!({"commit": "0".repeat(40)})),
            ] {
                let mut line = json!({"time": "2026-11-22T10:00:00Z", "run_id": "run-x", "event": event, "chunk": format!("chunk-{c}")});
                if let (Value::Object(l), Value::Object(e)) = (&mut line, extra) {
                    l.extend(e);
                }
                journal.push_str(&line.to_string());
                journal.push('\n');
            }
        }
        std::fs::write(dir.join("events.jsonl"), journal).map_err(io)?;
    }
    Ok(())
}

fn plan(interrupted: bool) -> Value {
    let chunks: Vec<Value> = (0..CHUNKS)
        .map(|c| {
            let status = if c < CHUNKS / 2 {
                "completed"
            } else if c == CHUNKS / 2 && interrupted {
                "in_progress"
            } else {
                "pending"
            };
            let mut chunk = json!({
                "id": format!("chunk-{c}"),
                "description": format!("Build part {c} of the feature"),
                "status": status,
                "files_to_modify": [format!("src/part_{c}.rs")],
                "verification": {"type": "command", "command": format!("test -f src/part_{c}.rs")},
            });
            if status != "pending" {
                chunk["attempts"] = json!([{"n": 1, "session_id": format!("s{c}"), "started_at": "2026-11-22T10:00:00Z"}]);
            }
            chunk
        })
        .collect();
    json!({
        "feature": "bench",
        "phases": [
            {"id": "phase-1", "name": "first half", "subtasks": chunks[..CHUNKS / 2]},
            {"id": "phase-2", "name": "second half", "depends_on": ["phase-1"], "subtasks": chunks[CHUNKS / 2..]},
        ],
    })
}
