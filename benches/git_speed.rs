//! runner's git work against git's own command line, on one large repository, in one run.
//!
//! A repository of 20,000 files (500 folders of 40 files, 2–6 KB each, one commit) is built
//! once. Then, interleaved (runner, git, git, runner, …) so that noise from other processes hits
//! both sides alike:
//!
//! (a) **commit of one chunk's change**: one file is rewritten, then runner's commit step runs
//!     as a library call (`open_worktree_exactly` + `commit_all`, exactly what a chunk's
//!     completion calls, in-process: the commit happens inside the long-running `runner run`);
//!     against one file rewritten and `git add -A` + `git commit -q -m …` (two processes, their
//!     start included). Both commit in the same linked worktree, one after the other.
//! (b) **worktree creation by the first `runner run`**: the real binary runs a one-chunk spec
//!     whose agent stamps the clock (ns) as it starts; the time from spawning `runner run` to
//!     that stamp (process start, spec resolution, recovery checks, branch and worktree
//!     creation, the chunk taken, the prompt, the agent spawned) against the wall time of
//!     `git worktree add -b <branch> <path> main`. The worktrees are removed between rounds.
//!
//!     Then the same change committed through a `git::Stager` (a run's watched commit,
//!     which looks only at the paths the worktree's watch saw change): reported, no target.
//!
//! Targets (medians): (a) runner ≤ 1.0× git; (b) runner ≤ 1.0× git. One `TARGET` line each;
//! exit 1 if one is missed, 2 if the bench itself fails.
//!
//! `cargo bench --bench git_speed` (15 rounds; `GIT_SPEED_ROUNDS` / `GIT_SPEED_FILES` change
//! it; `GIT_SPEED_ONLY=commit` or `worktree` runs one part). Without `--bench` (`cargo test --benches`) a smoke run: 300 files, 2 rounds, no verdict.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

mod support;
use support::{RUNNER, runner_command};
const SPEC: &str = "001-bench";
const PER_FOLDER: usize = 40;
/// The agent: stamp the clock, report the chunk done.
const AGENT: &str = r#"sh -c 'date +%s%N > "$BENCH_START"; runner chunk done "$RUNNER_CHUNK_ID"'"#;

fn main() -> ExitCode {
    let full = std::env::args().any(|a| a == "--bench");
    let env_num = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (files, rounds) = if full {
        (
            env_num("GIT_SPEED_FILES", 20_000),
            env_num("GIT_SPEED_ROUNDS", 15),
        )
    } else {
        (300, 2)
    };
    match bench(files, rounds, full) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("git_speed: {e}");
            ExitCode::from(2)
        }
    }
}

fn bench(files: usize, rounds: usize, full: bool) -> Result<bool, String> {
    let tmp = tempfile::Builder::new()
        .prefix("runner-git-speed-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let root = tmp.path().join("repo");
    let started = Instant::now();
    build_repo(&root, files)?;
    println!(
        "repository: {files} files in {} folders, one commit, built in {:.1} s ({})",
        files.div_ceil(PER_FOLDER),
        started.elapsed().as_secs_f64(),
        root.display()
    );

    let only = std::env::var("GIT_SPEED_ONLY").unwrap_or_default();
    let mut results = Vec::new();
    if only != "worktree" {
        results.push((
            "commit_one_change",
            commits(&root, tmp.path(), files, rounds)?,
        ));
    }
    if only != "commit" {
        results.push(("first_run_worktree", creations(&root, tmp.path(), rounds)?));
    }

    println!();
    let mut met = true;
    for (name, (runner, git)) in results {
        let ratio = runner / git;
        let ok = ratio <= 1.0;
        met &= ok;
        println!(
            "TARGET {name}: {ratio:.2}× git ({runner:.1} ms vs {git:.1} ms, medians) vs ≤ 1.00× — {}",
            if !full {
                "smoke run, no verdict"
            } else if ok {
                "met"
            } else {
                "MISSED"
            }
        );
    }
    Ok(met || !full)
}

/// (a): `rounds` commits of one changed file each way; the medians (runner, git) in ms.
fn commits(root: &Path, tmp: &Path, files: usize, rounds: usize) -> Result<(f64, f64), String> {
    let wt = tmp.join("commit-wt");
    git(
        root,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "bench-commit",
            path(&wt)?,
            "main",
        ],
    )?;
    let common = root.join(".git");
    let mut runner_ms = Vec::new();
    let mut git_ms = Vec::new();
    let mut n = 0usize;
    let mut edit = |wt: &Path| -> Result<(), String> {
        n += 1;
        let file = wt.join(file_name((n * 7919) % files));
        let text = format!("{}\nchange {n}\n", content((n * 31) % files, 3000));
        std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))
    };
    // One round of each first, not counted: caches warm, both sides' index written once.
    for round in 0..=rounds {
        for runner_side in [round % 2 == 0, round % 2 == 1] {
            edit(&wt)?;
            let head_before = git_out(&wt, &["rev-parse", "HEAD"])?;
            let t = Instant::now();
            if runner_side {
                let repo = runner::git::repo::open_worktree_exactly(&wt, &common)?;
                runner::git::commit_all(&repo, &format!("chunk {round}"))
                    .map_err(|e| format!("commit_all: {e:#}"))?
                    .ok_or("runner committed nothing")?;
            } else {
                git(&wt, &["add", "-A"])?;
                git(&wt, &["commit", "-q", "-m", &format!("chunk {round}")])?;
            }
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if git_out(&wt, &["rev-parse", "HEAD"])? == head_before {
                return Err("a commit did not move HEAD".into());
            }
            if round > 0 {
                if runner_side {
                    &mut runner_ms
                } else {
                    &mut git_ms
                }
                .push(ms);
            }
        }
    }
    // The run's own path, reported (no target): the same change committed through one
    // `Stager` kept over the rounds, as a run keeps it; its first commit (the full pass, the
    // watch started) is not counted.
    let mut stager = runner::git::Stager::new(&wt);
    let mut watched_ms = Vec::new();
    for round in 0..=rounds {
        edit(&wt)?;
        let t = Instant::now();
        let repo = runner::git::repo::open_worktree_exactly(&wt, &common)?;
        stager
            .commit(&repo, &format!("watched {round}"), false)
            .map_err(|e| format!("Stager::commit: {e:#}"))?
            .ok_or("the watched commit committed nothing")?;
        if round > 0 {
            watched_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    watched_ms.sort_by(f64::total_cmp);
    let (commits, full) = stager.passes();
    if !git_out(&wt, &["status", "--porcelain"])?.is_empty() {
        return Err("the worktree is not clean after the commits".into());
    }
    let medians = report(
        &format!("(a) commit of one changed file in {files} files, {rounds} rounds"),
        "runner commit_all (library call, repository opened)",
        &mut runner_ms,
        "git add -A && git commit (2 processes)",
        &mut git_ms,
    )?;
    println!(
        "  {:<52} median {:7.1} ms  ({full} of {commits} commits the full pass)",
        "runner's watched commit (a run's Stager)",
        median(&watched_ms)
    );
    Ok(medians)
}

/// (b): `rounds` worktree creations each way; the medians (runner, git) in ms.
fn creations(root: &Path, tmp: &Path, rounds: usize) -> Result<(f64, f64), String> {
    let stamp = tmp.join("agent-start");
    let mut runner_ms = Vec::new();
    let mut git_ms = Vec::new();
    let git_wt = root.join(".worktrees/git-wt");
    for round in 0..=rounds {
        for runner_side in [round % 2 == 0, round % 2 == 1] {
            let ms = if runner_side {
                add_spec(root)?;
                let _ = std::fs::remove_file(&stamp);
                let spawned = epoch_ns();
                let out = runner_command()
                    .current_dir(root)
                    .args(["run", "--spec", "001", "--agent-command", AGENT])
                    .env("BENCH_START", &stamp)
                    .stdin(Stdio::null())
                    .output()
                    .map_err(|e| format!("starting {RUNNER}: {e}"))?;
                if !out.status.success() {
                    return Err(format!(
                        "runner run exited with {}:\n{}{}",
                        out.status,
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
                let agent: i128 = std::fs::read_to_string(&stamp)
                    .map_err(|e| format!("the agent's stamp: {e}"))?
                    .trim()
                    .parse()
                    .map_err(|e| format!("the agent's stamp: {e}"))?;
                let slot = root.join(".worktrees/auto-claude");
                check_clean_worktree(&slot)?;
                std::fs::remove_dir_all(&slot).map_err(|e| e.to_string())?;
                git(root, &["worktree", "prune"])?;
                git(
                    root,
                    &["branch", "-q", "-D", &format!("auto-claude/{SPEC}")],
                )?;
                (agent - spawned) as f64 / 1e6
            } else {
                let branch = format!("git-wt-{round}");
                let t = Instant::now();
                git(
                    root,
                    &[
                        "worktree",
                        "add",
                        "-q",
                        "-b",
                        &branch,
                        path(&git_wt)?,
                        "main",
                    ],
                )?;
                let ms = t.elapsed().as_secs_f64() * 1e3;
                check_clean_worktree(&git_wt)?;
                std::fs::remove_dir_all(&git_wt).map_err(|e| e.to_string())?;
                git(root, &["worktree", "prune"])?;
                git(root, &["branch", "-q", "-D", &branch])?;
                ms
            };
            if round > 0 {
                if runner_side {
                    &mut runner_ms
                } else {
                    &mut git_ms
                }
                .push(ms);
            }
            let side = if runner_side { "runner" } else { "git" };
            let warm = if round == 0 {
                " (warm-up, not counted)"
            } else {
                ""
            };
            eprintln!("  (b) round {round}/{rounds} {side}: {ms:.1} ms{warm}");
        }
    }
    report(
        &format!("(b) worktree creation, {rounds} rounds"),
        "runner run: spawn → agent start (real binary)",
        &mut runner_ms,
        "git worktree add -b (wall)",
        &mut git_ms,
    )
}

/// The worktree at `wt` is registered and `git status` finds nothing to report.
fn check_clean_worktree(wt: &Path) -> Result<(), String> {
    let status = git_out(wt, &["status", "--porcelain", "--untracked-files=all"])?;
    if !status.is_empty() {
        return Err(format!("{} is not clean:\n{status}", wt.display()));
    }
    Ok(())
}

/// Prints both sides' figures; the medians (a, b).
fn report(
    title: &str,
    a_name: &str,
    a: &mut [f64],
    b_name: &str,
    b: &mut [f64],
) -> Result<(f64, f64), String> {
    println!("\n{title}:");
    for (name, xs) in [(a_name, &mut *a), (b_name, &mut *b)] {
        xs.sort_by(f64::total_cmp);
        println!(
            "  {name:<52} median {:7.1} ms  min {:7.1}  max {:7.1}  (n={})",
            median(xs),
            xs.first().copied().unwrap_or(0.0),
            xs.last().copied().unwrap_or(0.0),
            xs.len()
        );
    }
    Ok((median(a), median(b)))
}

/// The middle of sorted `xs`.
fn median(xs: &[f64]) -> f64 {
    match xs.len() {
        0 => 0.0,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

fn file_name(i: usize) -> String {
    let folder = i / PER_FOLDER;
    format!("src/m{:02}/p{:03}/file_{i:05}.rs", folder / 25, folder % 25)
}

/// Text of about `len` bytes, different for each `seed`.
fn content(seed: usize, len: usize) -> String {
    let mut x = (seed as u64)
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = String::with_capacity(len + 80);
    while out.len() < len {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push_str(&format!(
            "pub fn item_{:x}(value: u64) -> u64 {{ value.wrapping_mul({}) ^ {} }}\n",
            x >> 40,
            x % 1000,
            x >> 50
        ));
    }
    out
}

fn build_repo(root: &Path, files: usize) -> Result<(), String> {
    std::fs::create_dir_all(root).map_err(|e| e.to_string())?;
    git(root, &["init", "-q", "-b", "main"])?;
    for (k, v) in [
        ("user.name", "runner bench"),
        ("user.email", "bench@localhost"),
        ("commit.gpgsign", "false"),
    ] {
        git(root, &["config", k, v])?;
    }
    for i in 0..files {
        let file = root.join(file_name(i));
        if i % PER_FOLDER == 0 {
            std::fs::create_dir_all(file.parent().unwrap()).map_err(|e| e.to_string())?;
        }
        std::fs::write(&file, content(i, 2000 + (i * 37) % 4000)).map_err(|e| e.to_string())?;
    }
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").map_err(|e| e.to_string())?;
    std::fs::write(root.join("README.md"), "# bench\n").map_err(|e| e.to_string())?;
    git(root, &["add", "-A"])?;
    git(root, &["commit", "-q", "-m", "initial commit"])?;
    Ok(())
}

/// A fresh one-chunk spec (state of earlier rounds removed).
fn add_spec(root: &Path) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    let state = root.join(".auto-claude");
    if state.exists() {
        std::fs::remove_dir_all(&state).map_err(io)?;
    }
    let dir = state.join("specs").join(SPEC);
    std::fs::create_dir_all(&dir).map_err(io)?;
    std::fs::write(dir.join("spec.md"), "# Bench\n\nNothing to build.\n").map_err(io)?;
    let plan = r#"{"feature": "Bench", "workflow_type": "feature", "phases": [
        {"id": "phase-1", "name": "One", "subtasks": [
            {"id": "chunk-1", "description": "Nothing", "status": "pending"}]}]}"#;
    std::fs::write(dir.join("implementation_plan.json"), plan).map_err(io)
}

fn path(p: &Path) -> Result<&str, String> {
    p.to_str()
        .ok_or_else(|| format!("{} is not UTF-8", p.display()))
}

fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    git_out(dir, args).map(drop)
}

fn git_out(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn epoch_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}
