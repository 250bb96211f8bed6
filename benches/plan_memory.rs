//! Peak memory of the real binary changing one chunk of a long plan.
//!
//! A git repository gets a spec whose plan is about 35 MB: 10,000 chunks as runner leaves them
//! after a long run (long descriptions, verification objects, files lists, two attempt records,
//! fields runner does not know), in the form runner writes. Each case runs the real `runner`
//! on a fresh copy of that plan and reads the child's peak resident set (`ru_maxrss` from
//! `wait4`, which covers the child and the processes it waited for):
//!
//! - `runner chunk done <id>`, a chunk in the middle (a person's report: the same plan update an
//!   agent's report makes);
//! - `runner chunk fail <id> --reason …`;
//!
//! Target (issue 10): peak RSS ≤ 3 × the file's size, for both (the largest of 3 runs).
//! For reference it also prints the peak RSS of a trivial command (`runner --version`), and,
//! not judged:
//! - `runner chunk done` on the same plan written compactly (a plan runner has not written yet
//!   is read into values, as before; runner's first write puts it in its own form);
//! - `runner run` with one pending chunk left and an agent that reports it done. Its per-chunk
//!   plan updates are the same `PlanFile::update_if` as above, but the run's start journals a
//!   `plan_snapshot` event holding the whole plan, which the journal builds as JSON values
//!   (`Plan::to_value`, then `serde_json::to_value` of the event): that dominates its peak.
//!
//! `cargo bench --bench plan_memory` prints one `TARGET` line and exits 1 on a miss (2 if a run
//! fails). Without `--bench` (`cargo test --benches`) a 1 MB plan, one run, no verdict.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use serde_json::{Value, json};

mod support;
use support::{RUNNER, runner_command};
const SPEC: &str = "001-memory";
const CHUNKS: usize = 10_000;
const RUNS: usize = 3;
const LIMIT: f64 = 3.0;

const AGENT: &str = r#"sh -c 'runner chunk done "$RUNNER_CHUNK_ID"'"#;

fn main() -> ExitCode {
    if let Ok(spec) = std::env::var(GENERATE) {
        return match generate(&spec) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("plan_memory: {e}");
                ExitCode::from(2)
            }
        };
    }
    let full = std::env::args().any(|a| a == "--bench");
    match bench(full) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("plan_memory: {e}");
            ExitCode::from(2)
        }
    }
}

/// Set to a folder and a number of chunks (`DIR:N`), the bench only writes the plan there, as
/// `pretty.json` and `compact.json`, and exits: the process that measures never holds the plan
/// (a child starts with the resident set of the process that spawned it, which `ru_maxrss`
/// keeps through `exec`).
const GENERATE: &str = "PLAN_MEMORY_GENERATE";

fn generate(spec: &str) -> Result<(), String> {
    let (dir, chunks) = spec.rsplit_once(':').ok_or("expected DIR:N")?;
    let chunks: usize = chunks.parse().map_err(|_| "expected DIR:N")?;
    let plan = plan(chunks);
    let dir = Path::new(dir);
    let io = |e: std::io::Error| e.to_string();
    let pretty = serde_json::to_vec_pretty(&plan).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("pretty.json"), pretty).map_err(io)?;
    let compact = serde_json::to_vec(&plan).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("compact.json"), compact).map_err(io)
}

fn bench(full: bool) -> Result<bool, String> {
    let (chunks, runs) = if full { (CHUNKS, RUNS) } else { (300, 1) };
    let tmp = tempfile::Builder::new()
        .prefix("runner-bench-mem-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let repo = tmp.path().join("repo");
    setup(&repo)?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let generated = Command::new(exe)
        .env(GENERATE, format!("{}:{chunks}", tmp.path().display()))
        .status()
        .map_err(|e| e.to_string())?;
    if !generated.success() {
        return Err("generating the plan failed".into());
    }
    let pretty = tmp.path().join("pretty.json");
    let compact = tmp.path().join("compact.json");
    let len = |p: &Path| std::fs::metadata(p).map(|m| m.len() as f64);
    let mib = |bytes: f64| bytes / (1024.0 * 1024.0);
    let size = len(&pretty).map_err(|e| e.to_string())?;
    println!(
        "plan: {chunks} chunks, {:.1} MiB as runner writes it ({:.1} MiB compact); {runs} runs a case",
        mib(size),
        mib(len(&compact).map_err(|e| e.to_string())?)
    );
    let baseline = peak_of(&repo, &["--version"])?;
    println!(
        "  reference: `runner --version` peaks at {:.1} MiB",
        mib(baseline)
    );
    let middle = format!("chunk-{:05}", chunks / 2);
    let cases: [(&str, Vec<&str>, &Path, bool); 4] = [
        (
            "runner chunk done (middle chunk)",
            vec!["chunk", "done", &middle, "--spec", "001"],
            &pretty,
            true,
        ),
        (
            "runner chunk fail (middle chunk)",
            vec![
                "chunk", "fail", &middle, "--reason", "bench", "--spec", "001",
            ],
            &pretty,
            true,
        ),
        (
            "runner run, last chunk pending (not judged: see below)",
            vec!["run", "--spec", "001", "--agent-command", AGENT],
            &pretty,
            false,
        ),
        (
            "runner chunk done, plan written compactly (not judged)",
            vec!["chunk", "done", &middle, "--spec", "001"],
            &compact,
            false,
        ),
    ];
    let mut ok = true;
    let mut worst: f64 = 0.0;
    for (label, args, bytes, judged) in cases {
        let mut peaks = Vec::new();
        for _ in 0..runs {
            reset(&repo, bytes)?;
            peaks.push(peak_of(&repo, &args)?);
        }
        peaks.sort_by(f64::total_cmp);
        let max = peaks[peaks.len() - 1];
        println!(
            "  {label}: peak RSS min {:.1} MiB, max {:.1} MiB = {:.2}× the file",
            mib(peaks[0]),
            mib(max),
            max / size
        );
        if judged {
            worst = worst.max(max);
        }
    }
    if full {
        let ratio = worst / size;
        ok = ratio <= LIMIT;
        println!(
            "TARGET plan-memory: peak RSS {:.1} MiB = {ratio:.2}× the {:.1} MiB plan (worst judged case, max of {runs}) vs ≤ {LIMIT}× — {}",
            mib(worst),
            mib(size),
            if ok { "met" } else { "MISSED" }
        );
    }
    Ok(ok)
}

/// Peak RSS in bytes of `runner args` run in `repo`; checks it succeeded.
fn peak_of(repo: &Path, args: &[&str]) -> Result<f64, String> {
    let child = runner_command()
        .current_dir(repo)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting {RUNNER}: {e}"))?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, not yet waited for; the pointers are valid for the call.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if waited != pid {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        let mut err = String::new();
        if let Some(mut e) = child.stderr {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        return Err(format!(
            "runner {} failed ({status}): {err}",
            args.join(" ")
        ));
    }
    // ru_maxrss is in KiB on Linux.
    Ok(usage.ru_maxrss as f64 * 1024.0)
}

fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

fn setup(repo: &Path) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    std::fs::create_dir_all(repo).map_err(io)?;
    git(repo, &["init", "-q", "-b", "main"])?;
    git(repo, &["config", "user.name", "runner bench"])?;
    git(repo, &["config", "user.email", "bench@localhost"])?;
    git(repo, &["config", "commit.gpgsign", "false"])?;
    std::fs::write(repo.join("README.md"), "# bench\n").map_err(io)?;
    git(repo, &["add", "README.md"])?;
    git(repo, &["commit", "-q", "-m", "initial commit"])?;
    let spec_dir = repo.join(".auto-claude/specs").join(SPEC);
    std::fs::create_dir_all(&spec_dir).map_err(io)?;
    std::fs::write(
        spec_dir.join("spec.md"),
        "# Bench\n\nMeasures runner's memory.\n",
    )
    .map_err(io)?;
    Ok(())
}

/// A fresh spec folder holding `plan` (and nothing a previous case left: journal, locks, the
/// run's worktree and branch).
fn reset(repo: &Path, plan: &Path) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    let spec_dir = repo.join(".auto-claude/specs").join(SPEC);
    for entry in std::fs::read_dir(&spec_dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.file_name().is_some_and(|n| n != "spec.md") {
            if path.is_dir() {
                std::fs::remove_dir_all(&path).map_err(io)?;
            } else {
                std::fs::remove_file(&path).map_err(io)?;
            }
        }
    }
    std::fs::copy(plan, spec_dir.join("implementation_plan.json")).map_err(io)?;
    let worktrees = repo.join(".worktrees");
    if worktrees.exists() {
        std::fs::remove_dir_all(&worktrees).map_err(io)?;
    }
    git(repo, &["worktree", "prune"])?;
    let branches = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["for-each-ref", "--format=%(refname:short)", "refs/heads/"])
        .output()
        .map_err(|e| format!("git: {e}"))?;
    for branch in String::from_utf8_lossy(&branches.stdout).lines() {
        if branch != "main" {
            git(repo, &["branch", "-q", "-D", branch])?;
        }
    }
    Ok(())
}

/// `chunks` chunks in phases of 50, all completed but the last, each as a long run leaves it.
fn plan(chunks: usize) -> Value {
    let words = "Add the handler for this part of the service, wire it into the router with its \
                 middleware, validate every field of the request, map each error to a clear \
                 response, log what a person needs to follow a failure, and cover the whole \
                 path with unit and integration tests, including the edge cases named in the \
                 spec (empty input, a very long name, a non-UTF-8 byte, a second request racing \
                 the first). ";
    let list: Vec<Value> = (1..=chunks)
        .map(|i| {
            let id = format!("chunk-{i:05}");
            let pending = i == chunks;
            let attempt = |n: u32, outcome: &str| {
                json!({
                    "n": n,
                    "session_id": format!("20260110T100000Z-1a2b-coder-{id}-a{n}"),
                    "run_id": "run-20260110T095900Z-4242",
                    "started_at": "2026-01-10T10:00:00Z",
                    "start_commit": "0123456789abcdef0123456789abcdef01234567",
                    "ended_at": "2026-01-10T10:12:00Z",
                    "reported": "done",
                    "report_notes": "Implemented as described; the tests cover the edge cases.",
                    "outcome": outcome,
                    "reason": if outcome == "failed" { "verification failed: 2 tests" } else { "" },
                    "commit": "89abcdef0123456789abcdef0123456789abcdef",
                    "x_tokens": {"input": 123456, "output": 7890, "cost_usd": 1.2345},
                })
            };
            let mut chunk = json!({
                "id": id,
                "description": format!("Part {i}: {}", words.repeat(3)),
                "service": "backend",
                "status": if pending { "pending" } else { "completed" },
                "files_to_modify": [format!("src/part_{i}.rs"), "src/router.rs", "src/errors.rs"],
                "files_to_create": [format!("tests/part_{i}.rs")],
                "patterns_from": ["src/part_1.rs"],
                "verification": {
                    "type": "command",
                    "command": format!("cargo test --test part_{i} -- --nocapture"),
                    "expected": "all tests pass",
                },
                "estimated_complexity": "medium",
                "x_agent_notes": {"risk": "low", "touched": [1, 2.5, "three"], "reviewed": true},
            });
            if pending {
                // The run checks it: a check that passes.
                chunk["verification"]["command"] = json!("true");
            } else {
                chunk["started_at"] = json!("2026-01-10T10:00:00Z");
                chunk["completed_at"] = json!("2026-01-10T10:12:00Z");
                chunk["attempts"] = json!([attempt(1, "failed"), attempt(2, "completed")]);
            }
            chunk
        })
        .collect();
    let phases: Vec<Value> = list
        .chunks(50)
        .enumerate()
        .map(|(p, subtasks)| {
            let depends_on: Vec<String> = if p == 0 {
                Vec::new()
            } else {
                vec![format!("phase-{p}")]
            };
            json!({
                "id": format!("phase-{}", p + 1),
                "name": format!("Phase {}", p + 1),
                "depends_on": depends_on,
                "subtasks": subtasks,
            })
        })
        .collect();
    json!({"feature": "Memory bench", "workflow_type": "feature", "qa_signoff": null, "phases": phases})
}
