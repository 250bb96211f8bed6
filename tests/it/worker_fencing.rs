//! `runner worker` when things go wrong (docs/fleet.md, "The lease and fencing"): a worker
//! killed with SIGKILL is taken over once its lease expires, and the spec completes from what
//! was published, one commit per chunk; a worker frozen past its lease (SIGSTOP, with its run
//! and agent) and thawed after another took the spec over lands nothing, says so and keeps
//! its leftovers on a local recovery ref; a usage limit met on one worker pauses every worker
//! of the same account, and no other.

use std::process::Child;

use crate::common::*;
use crate::worker::{Fleet, interrupt, wait_exit, wait_long, wait_or};

/// The pids of `pid` and all its descendants, parents first.
fn family(pid: u32) -> Vec<i32> {
    let mut all = vec![pid as i32];
    let mut i = 0;
    while i < all.len() {
        let parent = all[i];
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(child) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
                continue;
            };
            // pid (comm) state ppid …: the comm may hold spaces, the last ')' ends it.
            let after = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
            let ppid = after.split_whitespace().nth(1).and_then(|p| p.parse().ok());
            if ppid == Some(parent) && !all.contains(&child) {
                all.push(child);
            }
        }
        i += 1;
    }
    all
}

fn signal_all(pids: &[i32], sig: i32) {
    for pid in pids {
        unsafe { libc::kill(*pid, sig) };
    }
}

/// SIGKILL for `worker` and everything under it (its runs, their agents) at once, as a host
/// that dies; waited for.
fn kill_family(worker: &mut Child) {
    signal_all(&family(worker.id()), libc::SIGKILL);
    let _ = worker.wait();
}

/// A spec's remote branch after main, as commit subjects.
fn chunks_of(fleet: &Fleet, spec: &str) -> Vec<String> {
    fleet.branch_log(spec)
}

#[test]
fn a_worker_killed_with_sigkill_is_taken_over_after_its_lease_and_the_spec_completes_once() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    let lease = "[fleet]\nlease_secs = 3\n";
    let a = fleet.host("host-a", lease);
    // core-a done at once; core-b's session outlasts the kill.
    a.script("core-b * slow 60\n* * done\n");
    let mut worker_a = a.start_worker(&[]);
    wait_long("core-a published by worker A", 60, || {
        chunks_of(&fleet, "001-a").len() == 1
    });
    wait_long("worker A's session of core-b", 30, || {
        a.sessions()
            .iter()
            .any(|(_, _, chunk, _)| chunk == "core-b")
    });
    kill_family(&mut worker_a);
    let b = fleet.host("host-b", lease);
    let mut worker_b = b.start_worker(&["--json"]);
    wait_or(
        "worker B to complete the spec",
        90,
        || fleet.published_complete("001-a"),
        || format!("A: {}\nB: {}", a.worker_stderr(), b.worker_stderr()),
    );
    interrupt(&worker_b);
    let status = wait_exit(&mut worker_b, 60);
    assert_eq!(status.code(), Some(130), "{}", b.worker_stderr());
    // One commit per chunk: A's core-a, then B's core-b and polish; nothing twice.
    let log = chunks_of(&fleet, "001-a");
    assert_eq!(log.len(), 3, "{log:?}\n{}", b.worker_stderr());
    for (subject, chunk) in log.iter().zip(["core-a", "core-b", "polish"]) {
        assert!(subject.contains(chunk), "{log:?}");
    }
    // B did not redo what A had published.
    let chunks_b: Vec<String> = b.sessions().into_iter().map(|s| s.2).collect();
    assert!(!chunks_b.contains(&"core-a".to_string()), "{chunks_b:?}");
    assert!(chunks_b.contains(&"core-b".to_string()), "{chunks_b:?}");
    assert_eq!(fleet.remote_ref("refs/runner/leases/001-a"), None);
}

#[test]
fn a_worker_frozen_past_its_lease_lands_nothing_once_another_took_the_spec_over() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    let lease = "[fleet]\nlease_secs = 3\n";
    let a = fleet.host("host-a", lease);
    // core-b's session is under way when A is frozen; it finishes once A thaws.
    a.script("core-b * slow 4\n* * done\n");
    let mut worker_a = a.start_worker(&["--json"]);
    wait_long("core-a published by worker A", 60, || {
        chunks_of(&fleet, "001-a").len() == 1
    });
    wait_long("worker A's session of core-b", 30, || {
        a.sessions()
            .iter()
            .any(|(_, _, chunk, _)| chunk == "core-b")
    });
    let frozen = family(worker_a.id());
    signal_all(&frozen, libc::SIGSTOP);
    // B takes the spec over once A's lease expired, and builds it to the end.
    let b = fleet.host("host-b", lease);
    let mut worker_b = b.start_worker(&[]);
    wait_long("worker B to complete the spec", 90, || {
        fleet.published_complete("001-a") && fleet.remote_ref("refs/runner/leases/001-a").is_none()
    });
    interrupt(&worker_b);
    wait_exit(&mut worker_b, 60);
    let branch = fleet.remote_ref("auto-claude/001-a");
    let folder = fleet.remote_ref("refs/runner/specs/001-a");
    // A thaws: its run finishes core-b, its worker tries to publish and is refused.
    signal_all(&frozen, libc::SIGCONT);
    wait_long("worker A to say its lease is lost", 60, || {
        a.worker_stderr().contains("lease of spec 001-a lost")
    });
    interrupt(&worker_a);
    let status = wait_exit(&mut worker_a, 60);
    assert_eq!(status.code(), Some(130), "{}", a.worker_stderr());
    // Nothing of A's reached the remote after B's work.
    assert_eq!(fleet.remote_ref("auto-claude/001-a"), branch);
    assert_eq!(fleet.remote_ref("refs/runner/specs/001-a"), folder);
    assert_eq!(fleet.remote_ref("refs/runner/leases/001-a"), None);
    let log = chunks_of(&fleet, "001-a");
    assert_eq!(log.len(), 3, "{log:?}");
    // A's leftovers are on its local recovery refs, and its report says so.
    let kept = git_in(
        &a.root,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/auto-claude/recovery/001-a/_lease-lost/",
        ],
    );
    assert!(
        kept.contains("/_lease-lost/1/branch"),
        "{kept}\n{}",
        a.worker_stderr()
    );
    assert!(kept.contains("/_lease-lost/1/folder"), "{kept}");
    let report: serde_json::Value = serde_json::from_str(&a.worker_stdout()).unwrap();
    let lost = &report["leases_lost"][0];
    assert_eq!(lost["spec"], "001-a", "{report}");
    assert!(lost["kept"].as_array().unwrap().len() == 2, "{report}");
    // Its late work was pushed and refused by the remote (the lease was no longer its own),
    // or never pushed: a push frozen with it ran past its timeout at the thaw, and by its own
    // clock the lease had lapsed (no renewal for a whole lease) before it tried another.
    let lapsed = lost["reason"]
        .as_str()
        .is_some_and(|r| r.starts_with("no renewal reached origin"));
    assert!(
        report["pushes_refused"].as_u64().unwrap() >= 1 || lapsed,
        "{report}"
    );
    assert_eq!(report["specs"][0]["end"], "lease_lost", "{report}");
    assert!(
        a.worker_stderr()
            .contains("refs/auto-claude/recovery/001-a/_lease-lost/1/branch")
    );
}

/// Another worker's lease on `spec`, pushed over whatever the remote holds (as a worker that
/// believed the lease expired would take it), until an hour from now.
fn steal_lease(fleet: &Fleet, spec: &str) {
    let lease = crate::fleet_support::lease_json(
        "intruder:1:abcd",
        "elsewhere",
        1,
        chrono::Utc::now(),
        3600,
    );
    let origin = &fleet.origin;
    let commit = crate::fleet_support::lease_commit(&origin.root, &lease);
    let refspec = format!("{commit}:refs/runner/leases/{spec}");
    // The holder may renew at the same instant: the push then fails to lock the ref; again.
    wait_long("the stolen lease on the remote", 30, || {
        git_result(&origin.root, &["push", "-q", "--force", "origin", &refspec]).is_ok()
    });
}

#[test]
fn a_lease_taken_over_while_the_job_runs_refuses_the_next_push_and_the_job_stops_at_once() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    let a = fleet.host("host-a", "[fleet]\nlease_secs = 30\n");
    // core-b's session would take a minute: the job is stopped long before.
    a.script("core-b * slow 60\n* * done\n");
    let mut worker_a = a.start_worker(&["--json", "--exit-when-idle"]);
    wait_long("core-a published by worker A", 60, || {
        chunks_of(&fleet, "001-a").len() == 1
    });
    wait_long("worker A's session of core-b", 30, || {
        a.sessions()
            .iter()
            .any(|(_, _, chunk, _)| chunk == "core-b")
    });
    steal_lease(&fleet, "001-a");
    // From here on nothing of A's may land.
    let before = fleet.remote_ref("refs/runner/specs/001-a");
    let branch = fleet.remote_ref("auto-claude/001-a");
    let stolen = fleet.remote_ref("refs/runner/leases/001-a");
    // The next renewal (every 10 s) is refused: the job is stopped, the worker goes idle and
    // exits, well before core-b's session would have ended.
    let started = std::time::Instant::now();
    let status = wait_exit(&mut worker_a, 40);
    assert!(started.elapsed() < std::time::Duration::from_secs(40));
    assert_eq!(status.code(), Some(0), "{}", a.worker_stderr());
    let err = a.worker_stderr();
    assert!(
        err.contains("lease of spec 001-a lost (intruder:1:abcd on elsewhere holds it now)"),
        "{err}"
    );
    // The worker stopped the job: no person pressed Ctrl-C, and nothing says so.
    assert!(!err.contains("Ctrl-C"), "{err}");
    // Nothing more of A reached the remote, and the intruder's lease stands.
    assert_eq!(chunks_of(&fleet, "001-a").len(), 1);
    assert_eq!(fleet.remote_ref("auto-claude/001-a"), branch);
    assert_eq!(fleet.remote_ref("refs/runner/specs/001-a"), before);
    assert_eq!(fleet.remote_ref("refs/runner/leases/001-a"), stolen);
    let report: serde_json::Value = serde_json::from_str(&a.worker_stdout()).unwrap();
    assert_eq!(report["specs"][0]["end"], "lease_lost", "{report}");
    assert_eq!(report["specs"][0]["released"], false, "{report}");
    assert_eq!(
        report["leases_lost"][0]["holder"], "intruder:1:abcd on elsewhere",
        "{report}"
    );
    assert!(report["pushes_refused"].as_u64().unwrap() >= 1, "{report}");
}

/// A host whose agent is the fake claude CLI (which can say "usage limit"), account `account`.
fn claude_host(
    fleet: &Fleet,
    name: &str,
    account: &str,
    preset_script: &str,
) -> crate::worker::Host {
    let host = fleet.host(
        name,
        &format!("[fleet]\nlease_secs = 3\naccount = \"{account}\"\n"),
    );
    let program = fixture("fake-claude").display().to_string();
    // The sessions log, kept by a wrapper around the fake CLI.
    let wrapper = host.dir.join("claude.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$RUNNER_SPEC $RUNNER_ROLE ${{RUNNER_CHUNK_ID:-}} $(date +%s.%N)\" >> '{}'\nexec '{program}' \"$@\"\n",
            host.dir.join("sessions.log").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    host.write(
        ".auto-claude/config.toml",
        &format!(
            "[agent]\npreset = \"claude\"\nprogram = \"{}\"\n[fleet]\nlease_secs = 3\naccount = \"{account}\"\n",
            wrapper.display()
        ),
    );
    std::fs::write(host.dir.join("preset-script"), preset_script).unwrap();
    std::fs::create_dir_all(host.dir.join("fake-sessions")).unwrap();
    host
}

fn claude_worker(host: &crate::worker::Host, args: &[&str]) -> Child {
    let mut all = vec!["worker"];
    all.extend_from_slice(args);
    host.cmd(&all)
        .env("FAKE_PRESET_SCRIPT", host.dir.join("preset-script"))
        .env("FAKE_SESSIONS_DIR", host.dir.join("fake-sessions"))
        .stdout(std::fs::File::create(host.dir.join("worker.out")).unwrap())
        .stderr(std::fs::File::create(host.dir.join("worker.err")).unwrap())
        .spawn()
        .unwrap()
}

#[test]
fn a_usage_limit_on_one_worker_pauses_the_others_of_its_account_and_no_other() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    // A meets the limit in its first session, reset 8 s after it started.
    let a = claude_host(&fleet, "host-a", "team", "core-a 1 limit +8\n");
    let mut worker_a = claude_worker(&a, &["--exit-when-idle", "--json"]);
    let status = wait_exit(&mut worker_a, 60);
    assert_eq!(status.code(), Some(0), "{}", a.worker_stderr());
    let pause = fleet
        .remote_git(&["log", "-1", "--format=%B", "refs/runner/pauses/team"])
        .unwrap_or_else(|| panic!("no pause published\n{}", a.worker_stderr()));
    let pause: serde_json::Value = serde_json::from_str(pause.trim()).unwrap();
    let until = chrono::DateTime::parse_from_rfc3339(pause["until"].as_str().unwrap())
        .unwrap()
        .timestamp() as f64;
    assert!(until > chrono::Utc::now().timestamp() as f64, "{pause}");
    // The spec was released (not lost): it waits for the pause's end.
    assert_eq!(fleet.remote_ref("refs/runner/leases/001-a"), None);
    fleet.submit("002-b", true);
    // B shares the account; C's is another. C is slow, so that B has a spec left after the
    // reset.
    let b = claude_host(&fleet, "host-b", "team", "");
    let c = claude_host(&fleet, "host-c", "other", "");
    c.script("* * slow 5\n");
    let mut worker_b = claude_worker(&b, &[]);
    let mut worker_c = claude_worker(&c, &[]);
    wait_long("both specs complete", 120, || {
        fleet.published_complete("001-a") && fleet.published_complete("002-b")
    });
    for w in [&worker_b, &worker_c] {
        interrupt(w);
    }
    wait_exit(&mut worker_b, 60);
    wait_exit(&mut worker_c, 60);
    let (sessions_b, sessions_c) = (b.sessions(), c.sessions());
    // C was not held back by another account's pause.
    assert!(
        sessions_c.iter().any(|s| s.3 < until),
        "C: {sessions_c:?}, until {until}\n{}",
        c.worker_stderr()
    );
    // B built after the reset, and no session of B started before it.
    assert!(!sessions_b.is_empty(), "{}", b.worker_stderr());
    assert!(
        sessions_b.iter().all(|s| s.3 >= until),
        "B: {sessions_b:?}, until {until}"
    );
    // The check went well: the pause is gone.
    assert_eq!(
        fleet.remote_ref("refs/runner/pauses/team"),
        None,
        "{}",
        b.worker_stderr()
    );
}

#[test]
fn a_worker_cut_off_from_the_remote_past_its_lease_stops_the_spec_and_keeps_its_work() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    let a = fleet.host("host-a", "[fleet]\nlease_secs = 3\n");
    a.script("core-b * slow 60\n* * done\n");
    let mut worker_a = a.start_worker(&["--json", "--exit-when-idle"]);
    wait_long("worker A's session of core-b", 60, || {
        a.sessions()
            .iter()
            .any(|(_, _, chunk, _)| chunk == "core-b")
    });
    // The network is cut: the remote's address leads nowhere.
    let nowhere = fleet.tmp.path().join("cut-off.git");
    git_in(
        &a.root,
        &["remote", "set-url", "origin", &crate::worker::url(&nowhere)],
    );
    let status = wait_exit(&mut worker_a, 40);
    assert_eq!(status.code(), Some(0), "{}", a.worker_stderr());
    let err = a.worker_stderr();
    assert!(
        err.contains(
            "lease of spec 001-a lost (no renewal reached origin for as long as the lease lasts)"
        ),
        "{err}"
    );
    let report: serde_json::Value = serde_json::from_str(&a.worker_stdout()).unwrap();
    assert_eq!(report["specs"][0]["end"], "lease_lost", "{report}");
    assert!(report["remote_errors"].as_u64().unwrap() >= 1, "{report}");
    let kept = git_in(
        &a.root,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/auto-claude/recovery/001-a/_lease-lost/",
        ],
    );
    assert!(kept.contains("/_lease-lost/1/branch"), "{kept}");
}

/// The last attempt of `chunk` in the plan published for `spec`.
fn published_attempt(fleet: &Fleet, spec: &str, chunk: &str) -> Option<serde_json::Value> {
    let plan = fleet.published_plan(spec)?;
    plan["phases"]
        .as_array()?
        .iter()
        .flat_map(|p| p["subtasks"].as_array().cloned().unwrap_or_default())
        .find(|c| c["id"] == chunk)?["attempts"]
        .as_array()?
        .last()
        .cloned()
}

/// An agent reports its chunk done and the worker publishes that report (a heartbeat), then
/// worker, run and agent die before the run commits the work. The report is about files that
/// never left that host: the worker that takes the spec over must build the chunk again, not
/// take the report for the work and mark the chunk completed with no commit (a chunk lost —
/// what a CI chaos run found).
#[test]
fn a_published_report_whose_work_was_never_committed_is_not_taken_for_the_work() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    let lease = "[fleet]\nlease_secs = 3\n";
    let a = fleet.host("host-a", lease);
    // polish (no verification command) is reported done, then its agent never exits.
    a.script("polish * done-stubborn\n* * done\n");
    let mut worker_a = a.start_worker(&[]);
    wait_or(
        "worker A to publish polish reported done",
        90,
        || {
            published_attempt(&fleet, "001-a", "polish")
                .is_some_and(|at| at["reported"] == "done" && at["outcome"].is_null())
        },
        || a.worker_stderr(),
    );
    kill_family(&mut worker_a);
    assert_eq!(
        chunks_of(&fleet, "001-a").len(),
        2,
        "polish not yet committed"
    );
    let b = fleet.host("host-b", lease);
    let mut worker_b = b.start_worker(&["--json"]);
    wait_or(
        "worker B to complete the spec",
        90,
        || fleet.published_complete("001-a"),
        || b.worker_stderr(),
    );
    interrupt(&worker_b);
    wait_exit(&mut worker_b, 60);
    let log = chunks_of(&fleet, "001-a");
    assert_eq!(
        log.len(),
        3,
        "every completed chunk has its commit: {log:?}"
    );
    assert!(log[2].contains("polish"), "{log:?}");
    let chunks_b: Vec<String> = b.sessions().into_iter().map(|s| s.2).collect();
    assert_eq!(chunks_b, ["polish"], "B built polish again, and only it");
    let report: serde_json::Value = serde_json::from_str(&b.worker_stdout()).unwrap();
    assert_eq!(
        report["specs"][0]["reports_withdrawn"],
        serde_json::json!(["polish"]),
        "{report}"
    );
    assert!(
        b.worker_stderr().contains(
            "chunk polish was reported done where it ran, but its work was never published"
        ),
        "{}",
        b.worker_stderr()
    );
}

/// The same, with runner's commit of the chunk published beside the report (the worker
/// published between the run's commit and its plan saying completed): the report stands, and
/// the worker that takes the spec over completes the chunk from that commit, building nothing
/// twice.
#[test]
fn a_published_report_whose_commit_was_published_too_completes_the_chunk_once() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    let lease = "[fleet]\nlease_secs = 3\n";
    let a = fleet.host("host-a", lease);
    // Every run of A stops for 4 s after committing a chunk, before its plan says so: A's
    // heartbeat publishes polish's commit with the plan still saying it is in progress.
    let mut worker_a = a
        .cmd(&["worker"])
        .env("RUNNER_FAILPOINTS", "after_commit~4000")
        .stdout(std::fs::File::create(a.dir.join("worker.out")).unwrap())
        .stderr(std::fs::File::create(a.dir.join("worker.err")).unwrap())
        .spawn()
        .unwrap();
    wait_or(
        "worker A to publish polish's commit with the plan saying it is in progress",
        120,
        || {
            chunks_of(&fleet, "001-a").len() == 3
                && published_attempt(&fleet, "001-a", "polish")
                    .is_some_and(|at| at["reported"] == "done" && at["outcome"].is_null())
        },
        || a.worker_stderr(),
    );
    kill_family(&mut worker_a);
    let b = fleet.host("host-b", lease);
    let mut worker_b = b.start_worker(&["--json"]);
    wait_or(
        "worker B to complete the spec",
        90,
        || fleet.published_complete("001-a"),
        || b.worker_stderr(),
    );
    interrupt(&worker_b);
    wait_exit(&mut worker_b, 60);
    let log = chunks_of(&fleet, "001-a");
    assert_eq!(log.len(), 3, "one commit per chunk: {log:?}");
    assert!(
        b.sessions().is_empty(),
        "B built nothing: {:?}",
        b.sessions()
    );
    let report: serde_json::Value = serde_json::from_str(&b.worker_stdout()).unwrap();
    assert_eq!(
        report["specs"][0]["reports_withdrawn"],
        serde_json::json!([]),
        "{report}"
    );
}

/// A link planted where a published file belongs (an agent can write anything in its clone):
/// the worker cannot publish the spec, says so in those words (not "unreachable"), stops its
/// job, lets the spec go at once and keeps its leftovers; the remote keeps the last whole
/// publication, and another worker builds the spec from it.
#[test]
fn a_spec_folder_that_cannot_be_published_is_let_go_and_built_elsewhere() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    let lease = "[fleet]\nlease_secs = 30\n";
    let a = fleet.host("host-a", lease);
    a.script("core-b * slow 60\n* * done\n");
    let mut worker_a = a.start_worker(&["--json"]);
    wait_long("core-a published by worker A", 60, || {
        chunks_of(&fleet, "001-a").len() == 1
    });
    let folder_before = fleet.remote_ref("refs/runner/specs/001-a");
    std::os::unix::fs::symlink(
        "/etc/hostname",
        a.root.join(".auto-claude/specs/001-a/requirements.json"),
    )
    .unwrap();
    // Let go at once: long before the 30 s lease would expire.
    wait_or(
        "worker A to let the spec go",
        20,
        || fleet.remote_ref("refs/runner/leases/001-a").is_none(),
        || a.worker_stderr(),
    );
    interrupt(&worker_a);
    let status = wait_exit(&mut worker_a, 60);
    assert_eq!(status.code(), Some(130), "{}", a.worker_stderr());
    let err = a.worker_stderr();
    assert!(
        err.contains("spec 001-a lost (this clone's copy of the spec cannot be published"),
        "{err}"
    );
    assert!(err.contains("requirements.json"), "{err}");
    assert!(!err.contains("unreachable"), "{err}");
    let report: serde_json::Value = serde_json::from_str(&a.worker_stdout()).unwrap();
    // Not told as the remote's fault (a fetch may still time out under load: that one is),
    // and its branch kept all the same.
    assert!(
        err.contains("refs/auto-claude/recovery/001-a/_lease-lost/1/branch"),
        "{err}"
    );
    // (Taken again at a later look, it is left alone: its copy cannot be made the remote's.)
    assert!(
        !err.lines()
            .any(|l| l.starts_with("runner worker: spec 001-a:")
                && l.contains("requirements.json")
                && !l.contains("making this clone's copy the remote's")),
        "{err}"
    );
    assert_eq!(report["specs"][0]["end"], "lease_lost", "{report}");
    assert_eq!(report["specs"][0]["released"], true, "{report}");
    assert!(
        report["leases_lost"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("cannot be published"),
        "{report}"
    );
    // Nothing of the planted link reached the remote; another worker finishes the spec.
    let planted = fleet.remote_git(&["show", "refs/runner/specs/001-a:requirements.json"]);
    assert_eq!(planted, None, "the link was published");
    assert_eq!(
        fleet.remote_ref("refs/runner/specs/001-a").is_some(),
        folder_before.is_some()
    );
    let b = fleet.host("host-b", lease);
    let mut worker_b = b.start_worker(&[]);
    wait_or(
        "worker B to complete the spec",
        90,
        || fleet.published_complete("001-a"),
        || b.worker_stderr(),
    );
    interrupt(&worker_b);
    wait_exit(&mut worker_b, 60);
    assert_eq!(chunks_of(&fleet, "001-a").len(), 3);
}

/// Run worker A with `a_script` until its agent has edited the plan (the fake agent's pid
/// file, written after its edit) and two heartbeats have published since (the lease renewed
/// twice: each renewal publishes the folder in the same push), then kill A with its run and
/// agent (SIGKILL) and let worker B take the spec over; the spec's chunk commits on the remote,
/// the chunks B built, and what B said.
fn take_over_after(
    fleet: &Fleet,
    a_script: &str,
    what: &str,
) -> (Vec<String>, Vec<String>, String) {
    fleet.submit("001-a", true);
    let lease = "[fleet]\nlease_secs = 3\n";
    let a = fleet.host("host-a", lease);
    a.script(a_script);
    let mut worker_a = a.start_worker(&[]);
    let pid_file = a.root.join(".auto-claude/specs/001-a/fake-agent.pid");
    wait_or(what, 90, || pid_file.exists(), || a.worker_stderr());
    let lease_ref = "refs/runner/leases/001-a";
    for _ in 0..2 {
        let seen = fleet.remote_ref(lease_ref);
        wait_or(
            "worker A to renew its lease",
            30,
            || fleet.remote_ref(lease_ref) != seen,
            || a.worker_stderr(),
        );
    }
    kill_family(&mut worker_a);
    let b = fleet.host("host-b", lease);
    let mut worker_b = b.start_worker(&[]);
    // A's lease expires after 3 s; B polls at least once a second (90 s: CI runs these
    // beside the whole suite on 2 cores).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while std::time::Instant::now() < deadline && chunks_of(fleet, "001-a").len() < 3 {
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    interrupt(&worker_b);
    wait_exit(&mut worker_b, 60);
    let built: Vec<String> = b.sessions().into_iter().map(|s| s.2).collect();
    (chunks_of(fleet, "001-a"), built, b.worker_stderr())
}

/// An agent marks its own chunk completed in the plan file (as Auto-Claude's
/// `update_subtask_status` does: runner takes that for a report of done, and judges it when
/// the session ends) and leaves its work uncommitted; the worker's heartbeat publishes the
/// plan as the agent left it, then worker, run and agent die. The published plan must not
/// stand for the work: the chunk is built again by whoever takes the spec, never left
/// completed with no commit (the report withdrawn when taken only looks at chunks in
/// progress; this one says completed, and the remote's plan even reads complete).
#[test]
fn a_chunk_its_agent_marked_completed_in_the_published_plan_is_not_lost_in_a_takeover() {
    let fleet = Fleet::new();
    let (log, built, stderr_b) = take_over_after(
        &fleet,
        "polish * marked-stubborn\n* * done\n",
        "polish's agent to mark it completed in the plan file",
    );
    assert_eq!(
        log.len(),
        3,
        "every completed chunk has its commit on the published branch: {log:?}; B built {built:?}; B said: {stderr_b}"
    );
    assert!(log[2].contains("polish"), "{log:?}");
}

/// The same with an agent that marks the OTHER chunks completed in the plan file (and keeps
/// its session going): a heartbeat publishes those marks, and the worker that takes the spec
/// over must not take them for work done.
#[test]
fn chunks_an_agent_marked_completed_in_the_published_plan_are_built_after_a_takeover() {
    let fleet = Fleet::new();
    let (log, built, stderr_b) = take_over_after(
        &fleet,
        "core-a * edit-plan 120\n* * done\n",
        "core-a's agent to mark the other chunks completed in the plan file",
    );
    assert_eq!(
        log.len(),
        3,
        "every completed chunk has its commit on the published branch: {log:?}; B built {built:?}; B said: {stderr_b}"
    );
}

/// `runner review --remote` brings a spec here without withdrawing an unpublished report. Host
/// C's worker built core-a and core-b and died waiting on polish's agent (nothing written yet),
/// leaving its slot on the branch at the published tip, clean. Host B took the spec over; its
/// polish agent reported done with the work uncommitted, B published that and died. Back on C,
/// a person reviews the spec from the remote (the branch does not move, so C's slot is allowed
/// to stay) and runs it: recovery must not take B's report for work C's clean slot does not
/// hold, and complete polish with no commit of it.
#[test]
fn a_report_brought_by_review_remote_is_not_taken_for_the_work_by_a_local_run() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    let lease = "[fleet]\nlease_secs = 3\n";
    let c = fleet.host("host-c", lease);
    c.script("polish * slow 120\n* * done\n");
    let mut worker_c = c.start_worker(&[]);
    wait_or(
        "worker C to publish core-a and core-b, polish started",
        90,
        || {
            chunks_of(&fleet, "001-a").len() == 2
                && fleet
                    .published_statuses("001-a")
                    .iter()
                    .any(|(id, s)| id == "polish" && s == "in_progress")
        },
        || c.worker_stderr(),
    );
    kill_family(&mut worker_c);
    let b = fleet.host("host-b", lease);
    b.script("polish * done-stubborn\n* * done\n");
    let mut worker_b = b.start_worker(&[]);
    wait_or(
        "worker B to publish polish reported done",
        90,
        || {
            b.sessions().iter().any(|s| s.2 == "polish")
                && published_attempt(&fleet, "001-a", "polish")
                    .is_some_and(|at| at["reported"] == "done" && at["outcome"].is_null())
        },
        || b.worker_stderr(),
    );
    kill_family(&mut worker_b);
    assert_eq!(
        chunks_of(&fleet, "001-a").len(),
        2,
        "polish never published"
    );
    // Back on C: the spec as the remote has it, then built here.
    c.script("* * done\n");
    let out = c.runner(&["review", "--remote", "origin", "--spec", "001-a"]);
    assert_exit(&out, 0);
    let out = c.runner(&["run", "--spec", "001-a", "--auto-continue", "--yes"]);
    let plan: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            c.root
                .join(".auto-claude/specs/001-a/implementation_plan.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let polish_completed = plan["phases"][1]["subtasks"][0]["status"] == "completed";
    let log =
        git_result(&c.root, &["log", "--format=%s", "main..auto-claude/001-a"]).unwrap_or_default();
    assert!(
        !polish_completed || log.contains("auto-claude: polish"),
        "polish completed with no commit of it: branch {log:?}; run said: {}{}",
        stdout(&out),
        stderr(&out)
    );
}

/// An agent overwrites the plan file with garbage and its session goes on; the heartbeat
/// publishes the garbled plan, then worker, run and agent die. A run restores such a plan from
/// the journal (published beside it); the worker that takes the spec over must get that far,
/// not give up on the spec for good because the plan cannot be read when it is taken (the
/// remote's folder never changes again, so the spec would never be built).
#[test]
fn a_published_plan_that_does_not_parse_does_not_strand_the_spec() {
    let fleet = Fleet::new();
    let (log, built, stderr_b) = take_over_after(
        &fleet,
        "polish * garbage-plan 120\n* * done\n",
        "polish's agent to garble the plan file",
    );
    assert_eq!(
        log.len(),
        3,
        "the spec is built to the end: {log:?}; B built {built:?}; B said: {stderr_b}"
    );
}

/// The plan a heartbeat publishes mid-session is the file settled against the copy kept as the
/// session started — a file beside the plan, which the agent can delete as easily as it edits
/// the plan. An agent that deletes that copy and then marks the other chunks completed in the
/// plan file (its session going on) must not get those marks published: the worker that takes
/// the spec over after a crash would take them for work done, and those chunks would end
/// completed with no commit.
#[test]
fn chunks_marked_completed_by_an_agent_that_deleted_the_copy_are_built_after_a_takeover() {
    let fleet = Fleet::new();
    let (log, built, stderr_b) = take_over_after(
        &fleet,
        "core-a * drop-copy 120\n* * done\n",
        "core-a's agent to delete the copy and mark the other chunks completed",
    );
    assert_eq!(
        log.len(),
        3,
        "every completed chunk has its commit on the published branch: {log:?}; B built {built:?}; B said: {stderr_b}"
    );
}

/// The same with an agent that forges a person's `runner chunk done core-b` (the journal line
/// it writes, appended to events.jsonl by the agent, with core-b set completed in the plan
/// file) and keeps its session going. The session's end takes a person's changes from the
/// run's socket, never from that line; the publication must not take them from the journal
/// either, or the takeover finds core-b completed with no commit.
#[test]
fn a_person_change_forged_in_the_journal_is_not_published_as_a_chunk_done() {
    let fleet = Fleet::new();
    let (log, built, stderr_b) = take_over_after(
        &fleet,
        "core-a * forge-person core-b 120\n* * done\n",
        "core-a's agent to forge a person's chunk done of core-b",
    );
    assert_eq!(
        log.len(),
        3,
        "every completed chunk has its commit on the published branch: {log:?}; B built {built:?}; B said: {stderr_b}"
    );
}

/// The copy of the plan kept as a session started stays in the spec folder after that session
/// (written over at the next one only), and is not published: a host that takes a spec over
/// may hold one from a session of its own whose attempt never reached the remote (a worker
/// cut off right after the session started). Until its run starts a session, that copy is
/// the latest, its attempt unjudged in the remote's plan, and the heartbeat must not publish
/// the remote's plan "settled" against it — the chunks completed since (their commits on the
/// published branch) back to pending, for the next takeover to build a second time.
#[test]
fn a_stale_copy_of_the_plan_does_not_undo_published_chunks_in_a_takeover() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    let lease = "[fleet]\nlease_secs = 3\n";
    let a = fleet.host("host-a", lease);
    a.script("polish * slow 120\n* * done\n");
    let mut worker_a = a.start_worker(&[]);
    wait_or(
        "worker A to publish core-a and core-b, polish started",
        90,
        || {
            chunks_of(&fleet, "001-a").len() == 2
                && fleet
                    .published_statuses("001-a")
                    .iter()
                    .any(|(id, s)| id == "polish" && s == "in_progress")
        },
        || a.worker_stderr(),
    );
    kill_family(&mut worker_a);
    // Host B's own earlier session of core-a, never published: its copy of the plan.
    let b = fleet.host("host-b", lease);
    b.script("* * done\n");
    let dir = b.root.join(".auto-claude/specs/001-a");
    std::fs::create_dir_all(&dir).unwrap();
    let mut stale: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("plans/two-phases.json")).unwrap())
            .unwrap();
    stale["phases"][0]["subtasks"][0]["status"] = "in_progress".into();
    stale["phases"][0]["subtasks"][0]["attempts"] = serde_json::json!([{"n": 1, "session_id": "s-of-host-b", "started_at": "2026-01-01T00:00:00Z"}]);
    std::fs::write(
        dir.join("implementation_plan.json.before-session"),
        serde_json::to_vec_pretty(&stale).unwrap(),
    )
    .unwrap();
    // B's run waits before its first session (which would write the copy over); its worker's
    // heartbeats publish meanwhile.
    let mut worker_b = b
        .cmd(&["worker"])
        .env("RUNNER_FAILPOINTS", "after_prepare_slot~15000")
        .stdout(std::fs::File::create(b.dir.join("worker.out")).unwrap())
        .stderr(std::fs::File::create(b.dir.join("worker.err")).unwrap())
        .spawn()
        .unwrap();
    let lease_ref = "refs/runner/leases/001-a";
    wait_or(
        "worker B to take the spec",
        45,
        || b.worker_stderr().contains("taken from origin"),
        || b.worker_stderr(),
    );
    for _ in 0..3 {
        let seen = fleet.remote_ref(lease_ref);
        wait_or(
            "worker B to renew its lease",
            30,
            || fleet.remote_ref(lease_ref) != seen,
            || b.worker_stderr(),
        );
    }
    let published = fleet.published_statuses("001-a");
    interrupt(&worker_b);
    wait_exit(&mut worker_b, 60);
    let completed = |id: &str| published.iter().any(|(c, s)| c == id && s == "completed");
    assert!(
        completed("core-a") && completed("core-b"),
        "chunks completed on the published branch ({:?}) are published as not completed: {published:?}; B said: {}",
        chunks_of(&fleet, "001-a"),
        b.worker_stderr()
    );
}
