//! Issue 29 §5, first point: three workers in separate clones, each restarted by a loop when it
//! dies, build six specs through one remote while workers, their runs and their agents are
//! killed at random (kill -9) for a minute; then every spec completes and every remote branch
//! holds exactly one commit per chunk. Once over `file://`, once over `git daemon`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;

use super::audit::audit;
use super::harness::{Host, Remote};
use super::procs::{self, Kind};
use super::reports::Reports;
use super::supervise::{Starter, Supervisor};
use crate::common::*;

const HOSTS: usize = 3;
const SPECS: usize = 6;
/// Each spec: 2 phases of 4 chunks (48 chunks in all: enough work to outlast the minute of
/// kills).
const PHASES: usize = 2;
const CHUNKS_PER_PHASE: usize = 4;
/// Seconds each agent session takes.
const CHUNK_SECS: &str = "1.5";
const LEASE_SECS: u64 = 3;
const CHAOS: Duration = Duration::from_secs(60);
/// How long the fleet may take to finish once the killing stops.
const FINISH: Duration = Duration::from_secs(150);

#[derive(Clone, Copy, Debug)]
enum Transport {
    File,
    Daemon,
}

#[test]
fn a_minute_of_kill_9_over_file_url_loses_and_duplicates_no_chunk() {
    chaos("fleet_chaos_file", Transport::File);
}

#[test]
fn a_minute_of_kill_9_over_git_daemon_loses_and_duplicates_no_chunk() {
    chaos("fleet_chaos_daemon", Transport::Daemon);
}

fn seed() -> u64 {
    Rng::seed_from("RUNNER_FLEET_SEED")
}

/// A worker that keeps polling, restarted by the host's loop: its output in the host's
/// `logs/worker-<n>.{stdout,stderr}`.
pub fn polling_worker(host: &Host, extra: &[&str]) -> Starter {
    let host = host.clone();
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    Box::new(move |n| {
        let mut cmd = runner_command();
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        cmd.args(Host::worker_args(&extra));
        host.environ(&mut cmd);
        (
            cmd,
            host.log_file(&format!("worker-{n}.stdout")),
            host.log_file(&format!("worker-{n}.stderr")),
        )
    })
}

fn chaos(test: &str, transport: Transport) {
    let seed = seed();
    eprintln!("{test}: seed {seed} (rerun with RUNNER_FLEET_SEED={seed})");
    let mut rng = Rng(seed);
    let mut remote = Remote::new(test);
    let url = match transport {
        Transport::File => remote.file_url(),
        Transport::Daemon => remote.serve("127.0.0.1"),
    };
    let desk = remote.host("desk", &url, LEASE_SECS);
    let specs: Vec<String> = (1..=SPECS).map(|i| format!("{i:03}-fleet")).collect();
    for spec in &specs {
        desk.add_planned_spec(spec, PHASES, CHUNKS_PER_PHASE);
        desk.submit(spec);
    }
    let hosts: Vec<Host> = (1..=HOSTS)
        .map(|i| {
            let host = remote.host(&format!("host{i}"), &url, LEASE_SECS);
            // A killed agent is a failed attempt: enough attempts that the dice cannot fail a
            // chunk for good (nothing loops forever all the same).
            host.write(
                ".auto-claude/config.toml",
                &format!("[fleet]\nlease_secs = {LEASE_SECS}\n\n[run]\nmax_attempts = 30\n"),
            );
            host.script(&format!("* * signed {CHUNK_SECS}\n"));
            host
        })
        .collect();

    let started = Instant::now();
    let mut sup = Supervisor::new(&remote.mark);
    for host in &hosts {
        sup.start(&host.name, polling_worker(host, &[]));
    }
    let kills = kill_at_random(&remote, &specs, &mut rng);
    let chaos_secs = started.elapsed().as_secs_f64();

    // The killing is over: the fleet must finish on its own.
    let deadline = Instant::now() + FINISH;
    let mut last = audit(&remote, &specs);
    while !last.all_complete() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
        last = audit(&remote, &specs);
    }
    let total_secs = started.elapsed().as_secs_f64();
    let loops = sup.stop(Duration::from_secs(30));
    let left = procs::wait_none_left(&remote.mark, Duration::from_secs(15));
    let audit = audit(&remote, &specs);
    let reports = Reports::gather(&loops);

    let restarts: usize = loops.iter().map(|l| l.restarts()).sum();
    let figures = json!({
        "test": test,
        "seed": seed,
        "transport": format!("{transport:?}"),
        "workers": HOSTS,
        "specs": SPECS,
        "chunks": SPECS * PHASES * CHUNKS_PER_PHASE,
        "chunk_secs": CHUNK_SECS,
        "lease_secs": LEASE_SECS,
        "chaos_secs": chaos_secs,
        "total_secs": total_secs,
        "kills": {
            "workers": kills.get(&Kind::Worker).copied().unwrap_or(0),
            "runs": kills.get(&Kind::Run).copied().unwrap_or(0),
            "agents": kills.get(&Kind::Agent).copied().unwrap_or(0),
            "chunk_reports": kills.get(&Kind::Report).copied().unwrap_or(0),
        },
        "restarts": restarts,
        "lease_takes": audit.takes,
        "takeovers": audit.takeovers,
        "renewals": audit.renewals,
        "workers_say": reports.figures(),
        "chunks_lost": audit.lost(),
        "chunks_duplicated": audit.duplicated(),
        "stranger_commits": audit.strangers(),
        "rewrites_on_remote": audit.rewrites.len(),
        "processes_left": left.len(),
        "workers_killed_at_stop": loops.iter().filter(|l| l.killed_at_stop).count(),
    });
    let path = super::write_figures(test, &figures);
    eprintln!(
        "{test} figures ({}):\n{}",
        path.display(),
        serde_json::to_string_pretty(&figures).unwrap()
    );

    let wrong = !audit.all_complete()
        || audit.lost() + audit.duplicated() + audit.strangers() + audit.rewrites.len() > 0;
    let kept = match wrong {
        true => format!("its files are kept in {}\n", remote.keep_files().display()),
        false => String::new(),
    };
    let context = || {
        format!(
            "seed {seed}\n{kept}{}\nprocesses left:\n{}workers:\n{}{}",
            audit.describe(),
            procs::describe(&left),
            loops.iter().map(|l| l.describe()).collect::<String>(),
            reports.tail(30)
        )
    };
    assert!(
        audit.all_complete(),
        "not every spec completed:\n{}",
        context()
    );
    assert_eq!(audit.lost(), 0, "chunks lost:\n{}", context());
    assert_eq!(audit.duplicated(), 0, "chunks duplicated:\n{}", context());
    assert_eq!(audit.strangers(), 0, "commits of no chunk:\n{}", context());
    assert!(audit.rewrites.is_empty(), "work rewritten:\n{}", context());
    assert!(left.is_empty(), "processes left behind:\n{}", context());
    assert!(
        loops.iter().all(|l| !l.killed_at_stop),
        "a worker did not stop on SIGTERM:\n{}",
        context()
    );
    // The chaos did happen: each kind was killed, and workers were restarted.
    for kind in [Kind::Worker, Kind::Run, Kind::Agent] {
        assert!(
            kills.get(&kind).copied().unwrap_or(0) > 0,
            "no {kind:?} was killed: {kills:?}"
        );
    }
    assert!(restarts > 0, "no worker was restarted");
}

/// For `CHAOS`, every 0.3–1.5 s: kill -9 one marked process, its kind (worker, run, agent,
/// an agent's `runner chunk done`)
/// drawn first, then one of that kind. Stops early once every spec is complete (there is
/// nothing left to break). The kills made, by kind.
fn kill_at_random(remote: &Remote, specs: &[String], rng: &mut Rng) -> BTreeMap<Kind, usize> {
    let mut kills = BTreeMap::new();
    let end = Instant::now() + CHAOS;
    let mut checked = Instant::now();
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(300 + rng.below(1200)));
        let targets: Vec<procs::Proc> = procs::marked(&remote.mark)
            .into_iter()
            .filter(|p| p.kind != Kind::Other)
            .collect();
        let mut kinds: Vec<Kind> = targets.iter().map(|p| p.kind).collect();
        kinds.sort();
        kinds.dedup();
        if kinds.is_empty() {
            continue;
        }
        let kind = kinds[rng.below(kinds.len() as u64) as usize];
        let of_kind: Vec<&procs::Proc> = targets.iter().filter(|p| p.kind == kind).collect();
        let victim = of_kind[rng.below(of_kind.len() as u64) as usize];
        if procs::kill9(victim.pid, kind, &remote.mark) {
            *kills.entry(kind).or_default() += 1;
        }
        if checked.elapsed() > Duration::from_secs(5) {
            checked = Instant::now();
            if audit(remote, specs).all_complete() {
                break;
            }
        }
    }
    kills
}
