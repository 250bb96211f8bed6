//! Many machines through the git remote (issue 29 §5, benchmarks), on bare repositories in a
//! temp folder, each part over `file://` and over `git daemon` on loopback:
//!
//! (a) **publishing a chunk**: the worker's one atomic push (a new lease commit renewing the
//!     lease, the spec folder's new commit, the branch's new chunk commit; `--atomic` with a
//!     `--force-with-lease` per ref, through `runner::fleet::net::push_atomic`, the lease and
//!     folder commits written in the same call) against a plain `git push <url>
//!     <commit>:<branch>` of the same chunk commit to a twin remote in the same state.
//!     Interleaved (runner first on even rounds, git first on odd). Target: median ≤ 1.5×.
//! (b) **the lease's renewal**: one renewal alone (a lease commit and its compare-and-swap
//!     push), median; and the CPU of an idle `runner worker --jobs N` holding N leases whose
//!     agents sleep, renewing every third of `lease_secs` (its own utime + stime, and its
//!     reaped children's: the git pushes), over a stretch of wall time. Reported, no target.
//! (c) **throughput**: 1, 2 and 4 workers (`runner worker --exit-when-idle`, each in a clone of
//!     its own) build S specs of C chunks whose agent takes D seconds; the wall time from the
//!     workers' start until every spec's published plan is complete, against the ideal
//!     S × C × D / W. Target: at least 75 % of the ideal at every W (the rest is runner's per
//!     chunk: the publication, the take, the session's start and commit).
//!
//! `cargo bench --bench fleet` (~4 min; `FLEET_ROUNDS` changes (a)'s rounds). Without
//! `--bench` (`cargo test --benches`) a smoke run: a few rounds, tiny specs, no verdict. Exit 1
//! when a target is missed, 2 when the bench itself fails.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use runner::fleet::lease::{Lease, write_lease};
use runner::fleet::names;
use runner::fleet::net::{Expect, PushOutcome, RefUpdate, push_atomic};
use runner::fleet::snapshot::commit_folder;
use runner::git::{Oid, Repository};

#[path = "support/fleet_place.rs"]
mod place;
mod support;
use place::{Host, Place, Transport, Worker, clock_hz, cpu_ticks, git, refs, wait};

const SPEC: &str = "001-bench";
const PUBLISH_TARGET: f64 = 1.5;
const THROUGHPUT_TARGET: f64 = 0.75;
const NET_TIMEOUT: Duration = Duration::from_secs(60);

struct Sizes {
    /// `cargo bench`: the verdicts; else the smoke run, which prints figures only.
    full: bool,
    rounds: usize,
    idle_leases: usize,
    idle: Duration,
    specs: usize,
    chunks: usize,
    chunk_secs: f64,
    workers: &'static [usize],
}

fn main() -> ExitCode {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes = if full {
        Sizes {
            full,
            rounds: std::env::var("FLEET_ROUNDS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(21),
            idle_leases: 4,
            idle: Duration::from_secs(10),
            specs: 4,
            chunks: 4,
            chunk_secs: 3.0,
            workers: &[1, 2, 4],
        }
    } else {
        Sizes {
            full,
            rounds: 3,
            idle_leases: 2,
            idle: Duration::from_secs(1),
            specs: 2,
            chunks: 2,
            chunk_secs: 0.2,
            workers: &[2],
        }
    };
    match bench(&sizes) {
        Ok(misses) if !full => {
            let _ = misses;
            println!(
                "fleet bench smoke test: ok (run `cargo bench --bench fleet` for the verdicts)"
            );
            ExitCode::SUCCESS
        }
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => {
            eprintln!("fleet bench: a target was missed");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("fleet bench: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Every part over both transports; the number of targets missed.
fn bench(sizes: &Sizes) -> anyhow::Result<usize> {
    let mut misses = 0;
    for transport in [Transport::File, Transport::Daemon] {
        misses += publish(sizes, transport)?;
        renewal(sizes, transport)?;
        for &workers in sizes.workers {
            misses += throughput(sizes, transport, workers)?;
        }
    }
    Ok(misses)
}

fn word(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

// ---------------------------------------------------------------------------------------------
// (a) publishing a chunk, (b) a renewal
// ---------------------------------------------------------------------------------------------

fn publish(sizes: &Sizes, transport: Transport) -> anyhow::Result<usize> {
    let place = Place::new(transport, &["plain.git", "fleet.git"])?;
    let work = place.clone_of("fleet.git", "work")?;
    let spec_dir = work.join(".auto-claude/specs").join(SPEC);
    std::fs::create_dir_all(&spec_dir)?;
    std::fs::write(spec_dir.join("spec.md"), "# bench\n\nPublish chunks.\n")?;
    let repo = Repository::open(&work)?;
    let (plain_url, fleet_url) = (place.url("plain.git"), place.url("fleet.git"));
    let mut state = Published::start(&repo, &work, &spec_dir, &fleet_url)?;
    let mut runner_ms = Vec::new();
    let mut commit_ms = Vec::new();
    let mut git_ms = Vec::new();
    for round in 0..sizes.rounds {
        // The chunk's commit on the branch, and the plan that says so (not timed).
        let chunk = chunk_commit(&work, round)?;
        write_plan(&spec_dir, round + 1, sizes.rounds.max(round + 1))?;
        let run_git = || -> anyhow::Result<f64> {
            let t = Instant::now();
            git(
                &work,
                &[
                    "push",
                    "-q",
                    &plain_url,
                    &format!("{chunk}:{}", names::branch_ref(SPEC)),
                ],
            )?;
            Ok(t.elapsed().as_secs_f64() * 1000.0)
        };
        let mut ours = || -> anyhow::Result<()> {
            let (ms, commits) = state.publish(&repo, &work, &spec_dir, &fleet_url, chunk)?;
            runner_ms.push(ms);
            commit_ms.push(commits);
            Ok(())
        };
        if round % 2 == 0 {
            ours()?;
            git_ms.push(run_git()?);
        } else {
            git_ms.push(run_git()?);
            ours()?;
        }
    }
    let (r, g) = (median(&runner_ms), median(&git_ms));
    let ratio = r / g;
    println!(
        "(a) publish a chunk over {transport:?}, median of {}: runner's atomic push {r:.1} ms (its lease and folder commits {:.1} ms of it), plain git push {g:.1} ms ({ratio:.2}×)",
        sizes.rounds,
        median(&commit_ms)
    );
    let ok = ratio <= PUBLISH_TARGET;
    if sizes.full {
        println!(
            "TARGET publish a chunk over {transport:?}: {ratio:.2}× vs {PUBLISH_TARGET}× — {}",
            word(ok)
        );
    }
    Ok(usize::from(!ok))
}

/// What this bench's worker holds on the fleet remote: its lease, the published folder, the
/// branch's tip.
struct Published {
    lease: Lease,
    lease_commit: Oid,
    folder: Oid,
    branch: Oid,
}

impl Published {
    /// Take the lease and publish the folder and the branch (main's tip) once.
    fn start(repo: &Repository, work: &Path, spec_dir: &Path, url: &str) -> anyhow::Result<Self> {
        let now = chrono::Utc::now();
        let lease = Lease {
            worker: "bench-worker".into(),
            host: "bench".into(),
            pid: std::process::id(),
            taken_at: now,
            renewed_at: now,
            expires_at: now + chrono::TimeDelta::seconds(60),
            lease_secs: 60,
        };
        let lease_commit = write_lease(repo, &lease)?;
        let folder = commit_folder(repo, spec_dir, None, "runner: submit 001-bench")?;
        let branch = repo.head()?.peel_to_commit()?.id();
        let updates = [
            RefUpdate {
                dst: names::lease_ref(SPEC),
                new: Some(lease_commit),
                expect: Expect::Absent,
            },
            RefUpdate {
                dst: names::spec_ref(SPEC),
                new: Some(folder),
                expect: Expect::Absent,
            },
            RefUpdate {
                dst: names::branch_ref(SPEC),
                new: Some(branch),
                expect: Expect::Absent,
            },
        ];
        pushed(push_atomic(work, url, &updates, NET_TIMEOUT)?)?;
        Ok(Published {
            lease,
            lease_commit,
            folder,
            branch,
        })
    }

    /// A new lease commit (renewed now).
    fn renew(&mut self, repo: &Repository) -> anyhow::Result<Oid> {
        let now = chrono::Utc::now();
        self.lease.renewed_at = now;
        self.lease.expires_at = now + chrono::TimeDelta::seconds(60);
        write_lease(repo, &self.lease)
    }

    /// The worker's publication of `chunk`: lease, folder and branch in one atomic push; its
    /// time in ms (the lease and folder commits included), and the commits' part of it.
    fn publish(
        &mut self,
        repo: &Repository,
        work: &Path,
        spec_dir: &Path,
        url: &str,
        chunk: Oid,
    ) -> anyhow::Result<(f64, f64)> {
        let t = Instant::now();
        let lease = self.renew(repo)?;
        let folder = commit_folder(
            repo,
            spec_dir,
            Some(self.folder),
            "runner: publish 001-bench",
        )?;
        let updates = [
            RefUpdate {
                dst: names::lease_ref(SPEC),
                new: Some(lease),
                expect: Expect::At(self.lease_commit),
            },
            RefUpdate {
                dst: names::spec_ref(SPEC),
                new: Some(folder),
                expect: Expect::At(self.folder),
            },
            RefUpdate {
                dst: names::branch_ref(SPEC),
                new: Some(chunk),
                expect: Expect::At(self.branch),
            },
        ];
        let commits = t.elapsed().as_secs_f64() * 1000.0;
        pushed(push_atomic(work, url, &updates, NET_TIMEOUT)?)?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        (self.lease_commit, self.folder, self.branch) = (lease, folder, chunk);
        Ok((ms, commits))
    }

    /// One renewal alone: its time in ms.
    fn renewal(&mut self, repo: &Repository, work: &Path, url: &str) -> anyhow::Result<f64> {
        let t = Instant::now();
        let lease = self.renew(repo)?;
        let update = RefUpdate {
            dst: names::lease_ref(SPEC),
            new: Some(lease),
            expect: Expect::At(self.lease_commit),
        };
        pushed(push_atomic(work, url, &[update], NET_TIMEOUT)?)?;
        self.lease_commit = lease;
        Ok(t.elapsed().as_secs_f64() * 1000.0)
    }
}

fn pushed(outcome: PushOutcome) -> anyhow::Result<()> {
    match outcome {
        PushOutcome::Pushed => Ok(()),
        PushOutcome::Refused { reason } => {
            anyhow::bail!("the bench's own push was refused: {reason}")
        }
    }
}

/// A new commit on the work clone's HEAD: chunk `n`'s file (4 KB), as a chunk's commit.
fn chunk_commit(work: &Path, n: usize) -> anyhow::Result<Oid> {
    let dir = work.join("work");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join(format!("chunk-{n}.txt")),
        format!("chunk {n}\n").repeat(512),
    )?;
    git(work, &["add", "work"])?;
    git(
        work,
        &[
            "commit",
            "-q",
            "-m",
            &format!("auto-claude: chunk-{n} - Chunk {n}"),
        ],
    )?;
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(work)
        .output()?;
    Ok(Oid::from_str(String::from_utf8_lossy(&head.stdout).trim())?)
}

/// The spec's plan with `done` of `total` chunks completed.
fn write_plan(spec_dir: &Path, done: usize, total: usize) -> anyhow::Result<()> {
    let subtasks: Vec<serde_json::Value> = (0..total)
        .map(|n| {
            serde_json::json!({
                "id": format!("chunk-{n}"),
                "description": format!("Chunk {n}"),
                "status": if n < done { "completed" } else { "pending" },
            })
        })
        .collect();
    let plan = serde_json::json!({"feature": "bench", "phases": [{"id": "p1", "name": "All", "subtasks": subtasks}]});
    std::fs::write(
        spec_dir.join("implementation_plan.json"),
        serde_json::to_vec_pretty(&plan)?,
    )?;
    Ok(())
}

fn renewal(sizes: &Sizes, transport: Transport) -> anyhow::Result<()> {
    let place = Place::new(transport, &["fleet.git", "idle.git"])?;
    let work = place.clone_of("fleet.git", "work")?;
    let spec_dir = work.join(".auto-claude/specs").join(SPEC);
    std::fs::create_dir_all(&spec_dir)?;
    std::fs::write(spec_dir.join("spec.md"), "# bench\n")?;
    let repo = Repository::open(&work)?;
    let url = place.url("fleet.git");
    let mut state = Published::start(&repo, &work, &spec_dir, &url)?;
    let mut ms = Vec::new();
    for _ in 0..sizes.rounds {
        ms.push(state.renewal(&repo, &work, &url)?);
    }
    println!(
        "(b) one lease renewal over {transport:?}, median of {}: {:.1} ms",
        sizes.rounds,
        median(&ms)
    );
    idle_worker(sizes, &place)
}

/// The CPU of an idle worker holding `sizes.idle_leases` leases (its agents sleep).
fn idle_worker(sizes: &Sizes, place: &Place) -> anyhow::Result<()> {
    let n = sizes.idle_leases;
    let lease_secs = 6;
    let specs: Vec<String> = (1..=n).map(|i| format!("{i:03}-idle")).collect();
    submit_specs(place, "idle.git", &specs, 1)?;
    let host = place.host("idle.git", "idle-host", lease_secs, "* * signed 3600")?;
    let mut worker = host.worker(&["--jobs", &n.to_string()])?;
    let result = (|| {
        let bare = place.base.join("idle.git");
        wait(
            Duration::from_secs(60),
            "the worker to hold every lease",
            || {
                worker.alive()?;
                Ok(refs(&bare, "refs/runner/leases/")?.len() == n)
            },
        )
        .map_err(|e| e.context(worker.said()))?;
        std::thread::sleep(Duration::from_secs(1));
        let before = (cpu_ticks(worker.child.id())?, Instant::now());
        std::thread::sleep(sizes.idle);
        let after = (cpu_ticks(worker.child.id())?, before.1.elapsed());
        let hz = clock_hz();
        let pct = |a: u64, b: u64| (b - a) as f64 / hz / after.1.as_secs_f64() * 100.0;
        println!(
            "(b) idle worker holding {n} leases (lease_secs {lease_secs}: each renewed every {} s) over {:.0} s: {:.2} % of a core (runner), {:.2} % with the git processes it ran",
            lease_secs / 3,
            after.1.as_secs_f64(),
            pct(before.0.own, after.0.own),
            pct(
                before.0.own + before.0.children,
                after.0.own + after.0.children
            ),
        );
        Ok(())
    })();
    worker.stop();
    result
}

fn throughput(sizes: &Sizes, transport: Transport, workers: usize) -> anyhow::Result<usize> {
    let place = Place::new(transport, &["tp.git"])?;
    let specs: Vec<String> = (1..=sizes.specs).map(|i| format!("{i:03}-tp")).collect();
    submit_specs(&place, "tp.git", &specs, sizes.chunks)?;
    let script = format!("* * signed {}", sizes.chunk_secs);
    let hosts: Vec<Host> = (1..=workers)
        .map(|i| place.host("tp.git", &format!("host{i}"), 10, &script))
        .collect::<anyhow::Result<_>>()?;
    let ideal = (sizes.specs * sizes.chunks) as f64 * sizes.chunk_secs / workers as f64;
    let started = Instant::now();
    let mut running: Vec<Worker> = hosts
        .iter()
        .map(|h| h.worker(&["--exit-when-idle"]))
        .collect::<anyhow::Result<_>>()?;
    let limit = Duration::from_secs_f64(ideal * 4.0 + 60.0);
    let ended = wait(limit, "the workers to finish", || {
        let mut all = true;
        for w in &mut running {
            all &= w.child.try_wait()?.is_some();
        }
        Ok(all)
    });
    let took = started.elapsed().as_secs_f64();
    for w in &mut running {
        w.stop();
    }
    ended?;
    let bare = place.base.join("tp.git");
    for spec in &specs {
        anyhow::ensure!(
            complete(&bare, spec)?,
            "{spec} is not complete on the remote"
        );
    }
    let share = ideal / took;
    println!(
        "(c) {workers} worker(s) over {transport:?}: {} specs × {} chunks × {} s in {took:.1} s, ideal {ideal:.1} s ({:.0} % of the ideal)",
        sizes.specs,
        sizes.chunks,
        sizes.chunk_secs,
        share * 100.0
    );
    let ok = share >= THROUGHPUT_TARGET;
    if !sizes.full {
        return Ok(0);
    }
    println!(
        "TARGET throughput, {workers} worker(s) over {transport:?}: {:.0} % vs {:.0} % of the ideal — {}",
        share * 100.0,
        THROUGHPUT_TARGET * 100.0,
        word(ok)
    );
    Ok(usize::from(!ok))
}

/// Whether `spec`'s published plan on the bare remote has every chunk completed.
fn complete(bare: &Path, spec: &str) -> anyhow::Result<bool> {
    let out = Command::new("git")
        .args([
            "show",
            &format!("{}:implementation_plan.json", names::spec_ref(spec)),
        ])
        .current_dir(bare)
        .output()?;
    if !out.status.success() {
        return Ok(false);
    }
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let chunks: Vec<&serde_json::Value> = plan["phases"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["subtasks"].as_array().into_iter().flatten())
        .collect();
    Ok(!chunks.is_empty() && chunks.iter().all(|c| c["status"] == "completed"))
}

/// Specs with a plan of `chunks` chunks each, written in a desk clone and `runner submit`ted.
fn submit_specs(place: &Place, bare: &str, specs: &[String], chunks: usize) -> anyhow::Result<()> {
    let desk = place.clone_of(bare, "desk")?;
    for spec in specs {
        let dir = desk.join(".auto-claude/specs").join(spec);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("spec.md"), format!("# {spec}\n\nBuild it.\n"))?;
        write_plan(&dir, 0, chunks)?;
        let out = support::runner_command()
            .args(["submit", "--spec", spec])
            .current_dir(&desk)
            .stdin(std::process::Stdio::null())
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "runner submit {spec}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
