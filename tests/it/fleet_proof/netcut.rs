//! Issue 29 §5, third point: a host in a network namespace of its own is cut off (its link
//! down) past its lease while a worker in the root namespace takes the spec over; once it is
//! reconnected, nothing it did after the cut reaches the branch or the plan, it says it lost
//! the lease, and its leftovers stay on a local ref. Needs root and iproute2: with `CI` set
//! their absence fails the test, without it the test says NOT RUN and passes.

use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::json;

use super::audit::{audit, current_lease};
use super::harness::{Host, Remote};
use super::procs::{self, Reaper};
use super::reports::Reports;
use super::supervise::{Starter, Supervisor};
use crate::common::*;

const SPEC: &str = "001-cut";
const LEASE_SECS: u64 = 3;

/// `ip ARGS`; Err with what it said.
fn ip(args: &[&str]) -> Result<Output, String> {
    let out = isolated("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {args:?}: {e}"))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!("ip {args:?}: {}", stderr(&out).trim()))
    }
}

/// A network namespace joined to the root one by a veth pair on a private /30 (198.18.0.0/15,
/// the range set aside for tests): removed, links and all, when dropped.
struct NetNs {
    ns: String,
    /// The root namespace's end of the pair.
    link: String,
    /// The root namespace's address, where the daemon listens.
    root_addr: String,
    /// The namespace's address: what the remote sees as the cut host's.
    ns_addr: String,
}

impl NetNs {
    fn create() -> Result<NetNs, String> {
        // Unique per test process: the names are global to the machine (15 bytes at most for
        // a link).
        let pid = std::process::id();
        let ns = format!("rfp-cut-{pid}");
        let link = format!("rfp{pid}r");
        let peer = format!("rfp{pid}n");
        let block = pid % 16384;
        let (hi, lo) = (block / 64, (block % 64) * 4);
        let root_addr = format!("198.18.{hi}.{}", lo + 1);
        let ns_addr = format!("198.18.{hi}.{}", lo + 2);
        ip(&["netns", "add", &ns])?;
        let net = NetNs {
            ns: ns.clone(),
            link: link.clone(),
            root_addr,
            ns_addr,
        };
        let in_ns = |args: &[&str]| ip(&[&["netns", "exec", ns.as_str(), "ip"][..], args].concat());
        ip(&["link", "add", &link, "type", "veth", "peer", "name", &peer])?;
        ip(&["link", "set", &peer, "netns", &ns])?;
        ip(&[
            "addr",
            "add",
            &format!("{}/30", net.root_addr),
            "dev",
            &link,
        ])?;
        ip(&["link", "set", &link, "up"])?;
        in_ns(&["addr", "add", &format!("{}/30", net.ns_addr), "dev", &peer])?;
        in_ns(&["link", "set", &peer, "up"])?;
        in_ns(&["link", "set", "lo", "up"])?;
        Ok(net)
    }

    fn set_link(&self, state: &str) {
        ip(&["link", "set", &self.link, state]).unwrap();
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = ip(&["link", "del", &self.link]);
        let _ = ip(&["netns", "del", &self.ns]);
    }
}

/// Root and iproute2 with network namespaces, or why not.
fn capable() -> Result<NetNs, String> {
    if !rustix::process::geteuid().is_root() {
        return Err("not root".into());
    }
    NetNs::create()
}

/// A worker started in `ns` (`ip netns exec`), restarted by the host's loop.
fn worker_in(ns: &str, host: &Host) -> Starter {
    let host = host.clone();
    let ns = ns.to_string();
    Box::new(move |n| {
        let mut cmd = isolated("ip");
        cmd.args(["netns", "exec", &ns, RUNNER]);
        cmd.args(Host::worker_args(&[]));
        host.environ(&mut cmd);
        (
            cmd,
            host.log_file(&format!("worker-{n}.stdout")),
            host.log_file(&format!("worker-{n}.stderr")),
        )
    })
}

/// Wait for `cond` up to `limit`, naming `what` if it never holds.
fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn a_host_cut_off_past_its_lease_lands_nothing_after_the_cut() {
    let net = match capable() {
        Ok(net) => net,
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("the network-cut test needs root and iproute2 with netns, and CI is set: {why}")
        }
        Err(why) => {
            eprintln!(
                "NOT RUN: a_host_cut_off_past_its_lease_lands_nothing_after_the_cut needs root \
                 and iproute2 with network namespaces ({why}); CI fails without them"
            );
            return;
        }
    };
    let mut remote = Remote::new("fleet_netcut");
    let _reaper = Reaper(remote.mark.clone());
    let url = remote.serve(&net.root_addr);
    // The namespace reaches the daemon before anything is measured.
    wait_until(
        "the namespace to reach the daemon",
        Duration::from_secs(10),
        || {
            isolated("ip")
                .args(["netns", "exec", &net.ns, "git", "ls-remote", &url])
                .output()
                .is_ok_and(|o| o.status.success())
        },
    );

    let desk = remote.host("desk", &url, LEASE_SECS);
    desk.add_planned_spec(SPEC, 1, 4);
    desk.submit(SPEC);
    let cut_host = remote.host("hostA", &url, LEASE_SECS);
    // p1-c2 works in small steps for 8 s: cut off during it, the host has leftovers.
    cut_host.script("p1-c2 * steps 32 0.25\n* * signed 0.5\n");
    let other = remote.host("hostB", &url, LEASE_SECS);
    other.script("* * signed 0.5\n");

    let mut sup = Supervisor::new(&remote.mark);
    sup.start(&cut_host.name, worker_in(&net.ns, &cut_host));
    let branch = format!("refs/heads/auto-claude/{SPEC}");
    let first_published = || {
        git_result(&remote.bare, &["log", "--format=%s", &branch])
            .is_ok_and(|log| log.contains("auto-claude: p1-c1 - "))
    };
    wait_until(
        "hostA to publish p1-c1",
        Duration::from_secs(60),
        first_published,
    );
    let leftover = cut_host.root.clone();
    wait_until(
        "hostA's agent to leave p1-c2 work in its slot",
        Duration::from_secs(30),
        || {
            cut_host
                .agent_log()
                .iter()
                .any(|l| l.starts_with("coder p1-c2 "))
                && slot_has(&leftover, "work/p1-c2/1.txt")
        },
    );
    let held_by_a = current_lease(&remote, SPEC).expect("hostA holds the lease");
    let a_worker = held_by_a["worker"].clone();

    let cut_at = now_secs();
    net.set_link("down");
    sup.start(&other.name, super::chaos::polling_worker(&other, &[]));
    wait_until(
        "hostB to take the spec over",
        Duration::from_secs(30),
        || current_lease(&remote, SPEC).is_some_and(|l| l["worker"] != a_worker),
    );
    let taken_after = now_secs() - cut_at;
    net.set_link("up");
    let reconnected_at = now_secs();
    let spec = [SPEC.to_string()];
    wait_until("the spec to complete", Duration::from_secs(60), || {
        audit(&remote, &spec).all_complete()
    });
    // hostA, back on the network, must have found out and said so.
    let said_lost = || Reports::of_logs(&cut_host.dir.join("logs")).lease_lost() > 0;
    wait_until(
        "hostA to say it lost the lease",
        Duration::from_secs(30),
        said_lost,
    );

    let loops = sup.stop(Duration::from_secs(30));
    let left = procs::wait_none_left(&remote.mark, Duration::from_secs(15));
    let audit = audit(&remote, &spec);
    let updates = remote.updates();
    let from_a: Vec<_> = updates.iter().filter(|u| u.from == net.ns_addr).collect();
    // The fence: hostB's first lease update on the remote. A push of hostA's already on the
    // wire when the link went down may still land before it (the remote cannot tell it from
    // one sent a moment earlier); nothing of hostA's may land after it.
    let lease_ref = format!("refs/runner/leases/{SPEC}");
    let fenced_at = updates
        .iter()
        .find(|u| u.from == net.root_addr && u.reference == lease_ref)
        .map(|u| u.at);
    let late: Vec<_> = from_a
        .iter()
        .filter(|u| fenced_at.is_none_or(|f| u.at >= f))
        .collect();
    let in_flight = from_a.iter().filter(|u| u.at >= cut_at).count() - late.len();
    let reports_a = Reports::gather(&loops[..1]);
    let figures = json!({
        "test": "fleet_netcut",
        "lease_secs": LEASE_SECS,
        "takeover_after_cut_secs": taken_after,
        "cut_secs": reconnected_at - cut_at,
        "accepted_from_cut_host_before_cut": from_a.len() - late.len() - in_flight,
        "accepted_from_cut_host_in_flight_at_the_cut": in_flight,
        "accepted_from_cut_host_after_takeover": late.len(),
        "cut_host_says": reports_a.figures(),
        "takeovers": audit.takeovers,
        "chunks_lost": audit.lost(),
        "chunks_duplicated": audit.duplicated(),
        "restarts": loops.iter().map(|l| l.restarts()).sum::<usize>(),
        "processes_left": left.len(),
    });
    let path = super::write_figures("fleet_netcut", &figures);
    eprintln!(
        "fleet_netcut figures ({}): {figures:#}\nhostA said:\n{}",
        path.display(),
        reports_a.tail(20)
    );

    let context = || format!("{}\n{}", audit.describe(), reports_a.tail(30));
    // The remote saw hostA's address before the cut (the check below is not vacuous), and
    // nothing from it after hostB took the spec over.
    assert!(
        !from_a.is_empty(),
        "no update from hostA at all: {updates:#?}"
    );
    assert!(
        late.is_empty(),
        "hostA landed after hostB's takeover at {fenced_at:?}: {late:#?}\n{}",
        context()
    );
    assert!(audit.all_complete(), "{}", context());
    assert_eq!(
        (audit.lost(), audit.duplicated(), audit.strangers()),
        (0, 0, 0),
        "{}",
        context()
    );
    assert!(audit.rewrites.is_empty(), "{}", context());
    assert!(
        audit.takeovers >= 1,
        "no takeover on the remote: {}",
        context()
    );
    // hostA's published chunk stays; the rest is hostB's; hostA's p1-c2 steps are nowhere on
    // the branch.
    let file = |f: &str| git_result(&remote.bare, &["show", &format!("{branch}:{f}")]);
    assert_eq!(file("work/p1-c1.txt").unwrap().trim(), "p1-c1 by hostA");
    for c in ["p1-c2", "p1-c3", "p1-c4"] {
        assert_eq!(
            file(&format!("work/{c}.txt")).unwrap().trim(),
            format!("{c} by hostB")
        );
    }
    assert!(
        file("work/p1-c2/1.txt").is_err(),
        "hostA's late work on the branch"
    );
    // hostA kept its leftovers on a local ref.
    let kept = local_refs_with(&cut_host, "work/p1-c2/1.txt");
    assert!(
        !kept.is_empty(),
        "hostA kept no ref with its p1-c2 leftovers\n{}",
        context()
    );
    assert!(
        left.is_empty(),
        "processes left behind:\n{}",
        procs::describe(&left)
    );
    let ends: String = loops.iter().map(|l| l.describe()).collect();
    assert!(
        loops.iter().all(|l| l.restarts() == 0 && !l.killed_at_stop),
        "a worker died or did not stop on SIGTERM:\n{ends}"
    );
}

/// Whether some slot (worktree) of the host holds `rel`.
fn slot_has(root: &std::path::Path, rel: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(root.join(".worktrees")) else {
        return false;
    };
    entries.flatten().any(|e| e.path().join(rel).exists())
}

/// The host's local refs (all of them) whose commit holds `rel`.
fn local_refs_with(host: &Host, rel: &str) -> Vec<String> {
    host.git(&["for-each-ref", "--format=%(refname)"])
        .lines()
        .filter(|r| git_result(&host.root, &["cat-file", "-e", &format!("{r}:{rel}")]).is_ok())
        .map(str::to_string)
        .collect()
}
