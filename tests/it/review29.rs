//! Adversarial review of issue 29 (§1 remote state, §2 workers): each test is a defect found
//! by attacking `submit`, `review/merge/undo --remote` and `runner worker` with real bare
//! remotes over file://; each FAILS on the code it was written against.

use crate::common::*;
use crate::worker::Fleet;

const SPEC: &str = "001-feature";

fn two_machines() -> (TestRepo, TestRepo, std::path::PathBuf) {
    crate::fleet_support::two_machines(SPEC)
}

/// `review --remote` refuses to move a branch checked out in one of runner's slots, but not
/// one the user has checked out in the main worktree: there it moves HEAD's branch under the
/// user's index and files, so `git status` shows the worker's chunks as staged reversals and
/// the user's unpublished commit as staged changes; a `git commit -a` then silently reverts
/// the remote's work. It must be refused as the slot case is (exit 2), nothing moved.
#[test]
fn review_remote_does_not_move_the_branch_checked_out_in_the_main_worktree() {
    let (a, b, _bare) = two_machines();
    let branch = format!("auto-claude/{SPEC}");
    let tip = a.git(&["rev-parse", &branch]);
    // B has the spec's branch checked out here, with a commit of its own on it.
    b.git(&["fetch", "-q", "origin", &branch]);
    b.git(&["checkout", "-q", "-b", &branch, "FETCH_HEAD~1"]);
    b.write("mine.txt", "my own work\n");
    b.git(&["add", "mine.txt"]);
    b.git(&["commit", "-q", "-m", "mine"]);
    let mine = b.git(&["rev-parse", "HEAD"]);
    assert_ne!(mine, tip);
    let out = b.runner(&["review", "--spec", SPEC, "--remote", "origin"]);
    let status = b.git(&["status", "--porcelain"]);
    assert_eq!(
        b.git(&["rev-parse", "HEAD"]),
        mine,
        "HEAD's branch was moved under the main worktree (exit {:?}); git status now:\n{status}",
        out.status.code()
    );
    assert_exit(&out, 2);
    assert_eq!(status, "", "the main worktree no longer matches HEAD");
}

/// A renewal that reached the remote but whose answer did not reach the worker (the push
/// timed out after the remote had taken the new lease: a slow `post-receive`, a cut
/// connection) leaves the remote holding a lease THIS worker wrote. The next renewal
/// expects the old one, is refused, and `why_refused` compares ids only: the worker declares
/// its own lease "lost (<itself> holds it now)", stops the spec and leaves its own lease to
/// block every other worker until it expires. A lease on the remote whose `worker` is this
/// worker's own name is still this worker's: it should adopt it and build the spec to its end.
#[test]
fn a_renewal_whose_answer_was_lost_does_not_make_the_worker_give_up_its_own_lease() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    // Pushes take 10 s at most (a third of the lease); a flag makes the remote's
    // post-receive (run after its refs were updated) outlast that once.
    let flag = fleet.tmp.path().join("slow-once");
    let hook = fleet.remote.join("hooks/post-receive");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat >/dev/null\nif [ -e '{0}' ]; then rm -f '{0}'; sleep 14; fi\n",
            flag.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let a = fleet.host("host-a", "[fleet]\nlease_secs = 30\n");
    a.script("core-b * slow 30\n* * done\n");
    let mut worker = a.start_worker(&["--json", "--exit-when-idle"]);
    crate::worker::wait_long("worker A's session of core-b", 60, || {
        a.sessions()
            .iter()
            .any(|(_, _, chunk, _)| chunk == "core-b")
    });
    let lease = fleet.remote_ref("refs/runner/leases/001-a");
    std::fs::write(&flag, "").unwrap();
    // The next renewal lands on the remote (a new lease commit) while the worker hears nothing.
    crate::worker::wait_long("a renewal that landed", 30, || {
        !flag.exists() && fleet.remote_ref("refs/runner/leases/001-a") != lease
    });
    let status = crate::worker::wait_exit(&mut worker, 120);
    assert_eq!(status.code(), Some(0), "{}", a.worker_stderr());
    let err = a.worker_stderr();
    assert!(
        !err.contains("lost"),
        "the worker gave up its own lease:\n{err}"
    );
    assert!(fleet.published_complete("001-a"), "{err}");
    assert_eq!(fleet.remote_ref("refs/runner/leases/001-a"), None, "{err}");
}

/// A lease written by a host whose clock runs a year ahead (or pushed by a hostile remote):
/// `renewed_at` a year from now, `expires_at` 60 s after it, `lease_secs` 60. `Lease::problem`
/// checks only that `expires_at` is within `lease_secs` of `renewed_at`, so it is believed:
/// no worker takes the spec over and `merge --remote` is refused for a year, while `status
/// --remote` shows a negative heartbeat ("heartbeat -31535999s ago") and the refusal says
/// "heartbeat was 0s ago" and that the lease "expires after its lease_secs". A lease renewed
/// further in the future than its own length cannot come from clocks that agree (docs/fleet.md,
/// "Clocks"): it should not be believed (a `lease_problem`, no holder).
#[test]
fn a_lease_renewed_a_year_ahead_is_not_believed() {
    let (_a, b, _bare) = two_machines();
    let ahead = chrono::Utc::now() + chrono::TimeDelta::days(365);
    let lease = crate::fleet_support::lease_json("w9", "skewed", 1, ahead, 60);
    crate::fleet_support::push_lease(&b.root, SPEC, &lease);
    let out = b.runner(&["status", "--remote", "origin", "--json"]);
    assert_exit(&out, 0);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let spec = &status["specs"][0];
    assert_eq!(spec["holder"], serde_json::Value::Null, "{status}");
    assert!(spec["lease_problem"].is_string(), "{status}");
}

/// A usage-limit pause on the remote is believed whatever its `until`: one that says the
/// account is limited for a year (a misread reset time, milliseconds read as seconds, a
/// hostile remote) stops every worker of that account for a year. A local pause further ahead
/// than `policy::pause::MAX_BELIEVED` (8 days) is not believed (`store::pause`); the remote's
/// record, which the same numbers produced, should not be either.
#[test]
fn a_remote_pause_a_year_long_is_not_believed() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    let at =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let now = chrono::Utc::now();
    let pause = serde_json::json!({
        "account": "team", "until": at(now + chrono::TimeDelta::days(365)),
        "reason": "usage limit", "set_by": "w1", "set_at": at(now),
    });
    let origin = &fleet.origin;
    let empty = origin.git(&["hash-object", "-t", "tree", "/dev/null"]);
    let id = origin.git(&["commit-tree", empty.trim(), "-m", &pause.to_string()]);
    origin.git(&[
        "push",
        "-q",
        "origin",
        &format!("{}:refs/runner/pauses/team", id.trim()),
    ]);
    let a = fleet.host("host-a", "[fleet]\naccount = \"team\"\n");
    let out = a.runner(&["status", "--remote", "origin", "--json"]);
    assert_exit(&out, 0);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["pauses"][0]["active"], false, "{status}");
    let mut worker = a.start_worker(&["--exit-when-idle"]);
    let code = crate::worker::wait_exit(&mut worker, 60);
    assert_eq!(code.code(), Some(0), "{}", a.worker_stderr());
    assert!(
        fleet.published_complete("001-a"),
        "a year-long pause held the worker: {}{}",
        a.worker_stdout(),
        a.worker_stderr()
    );
}

/// Every other command takes `--remote NAME` only when `git remote` lists it
/// (`ops::remote::remote_name`, exit 2); `runner worker` checks only for an empty name or a
/// leading `-`, so a name that is not a remote reaches git, which reads it as a PATH: a
/// repository folder of that name in the clone (or one `fleet.remote` in a shared config
/// names) becomes the remote the worker takes specs from and pushes work to. It should be
/// refused as the other commands refuse it (exit 2), nothing taken or pushed.
#[test]
fn worker_refuses_a_remote_name_git_does_not_list() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    let a = fleet.host("host-a", "");
    // A repository that is no remote of the clone, in a folder named like one.
    git_in(
        &a.root,
        &["init", "-q", "--bare", "-b", "main", "elsewhere"],
    );
    git_in(
        &fleet.remote,
        &[
            "push",
            "-q",
            a.root.join("elsewhere").to_str().unwrap(),
            "refs/runner/specs/*:refs/runner/specs/*",
            "refs/heads/*:refs/heads/*",
        ],
    );
    let out = a.runner(&["worker", "--remote", "elsewhere", "--exit-when-idle"]);
    let built = git_result(
        &a.root.join("elsewhere"),
        &["rev-parse", "auto-claude/001-a"],
    );
    assert!(
        built.is_err(),
        "the worker built and pushed to a path that is no remote (exit {:?}): {}",
        out.status.code(),
        stderr(&out)
    );
    assert_exit(&out, 2);
}

/// A worker's clone whose main worktree has the spec's branch checked out (a person looked at
/// it there, with a commit of their own): taking the spec, `local::adopt` sets the branch to
/// the remote's tip with `refs::set` under that HEAD (the person's index and files now show
/// their commit as staged changes and nothing of theirs matches HEAD), then checks the SAME
/// branch out in a slot (two worktrees on one branch, which git itself refuses), and only then
/// the run says "branch … is checked out in your main worktree" and ends bad_input, its run
/// record published. The spec should be left alone (not taken, or let go) before anything is
/// moved: HEAD and the main worktree as they were.
#[test]
fn worker_does_not_move_the_branch_checked_out_in_its_clones_main_worktree() {
    let fleet = Fleet::new();
    let branch = "auto-claude/001-a";
    fleet.origin.git(&["branch", branch]);
    fleet.submit("001-a", true);
    let a = fleet.host("host-a", "");
    git_in(&a.root, &["fetch", "-q", "origin", branch]);
    git_in(&a.root, &["checkout", "-q", "-b", branch, "FETCH_HEAD"]);
    std::fs::write(a.root.join("mine.txt"), "mine\n").unwrap();
    git_in(&a.root, &["add", "mine.txt"]);
    git_in(&a.root, &["commit", "-q", "-m", "mine"]);
    let mine = git_in(&a.root, &["rev-parse", "HEAD"]);
    let out = a.runner(&["worker", "--exit-when-idle"]);
    assert_exit(&out, 0);
    let worktrees = git_in(&a.root, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees
            .matches(&format!("branch refs/heads/{branch}"))
            .count(),
        1,
        "{worktrees}"
    );
    assert_eq!(
        git_in(&a.root, &["rev-parse", "HEAD"]),
        mine,
        "{}",
        stderr(&out)
    );
    assert_eq!(git_in(&a.root, &["status", "--porcelain"]), "");
}

/// A remote that accepts the connection and then hangs (pre-receive never answers): every
/// network step's timeout is `max(lease / 3, 10 s)`, so with `lease_secs = 3` one renewal
/// blocks the worker's loop for 10 s, three leases, while the agent goes on building a spec
/// whose lease has expired (another worker may be building the same chunk by then). The
/// docs promise the spec is stopped once as long as the lease has passed since the last
/// accepted push; it should be stopped within the lease (plus a tick), i.e. a network step
/// may not outlast what is left of the lease.
#[test]
fn a_hanging_remote_stops_the_job_within_its_lease() {
    let fleet = Fleet::new();
    fleet.submit("001-a", true);
    let flag = fleet.tmp.path().join("hang");
    let hook = fleet.remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat >/dev/null\nif [ -e '{}' ]; then sleep 60; fi\n",
            flag.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let a = fleet.host("host-a", "[fleet]\nlease_secs = 3\n");
    a.script("core-b * slow 60\n* * done\n");
    let mut worker = a.start_worker(&["--json", "--exit-when-idle"]);
    crate::worker::wait_long("worker A's session of core-b", 60, || {
        a.sessions()
            .iter()
            .any(|(_, _, chunk, _)| chunk == "core-b")
    });
    std::fs::write(&flag, "").unwrap();
    let hung = std::time::Instant::now();
    crate::worker::wait_long("the lease lost", 60, || {
        a.worker_stderr().contains("lease of spec 001-a lost")
    });
    let took = hung.elapsed();
    let _ = crate::worker::wait_exit(&mut worker, 60);
    assert!(
        took < std::time::Duration::from_secs(7),
        "the job of a 3 s lease ran on {took:?} after the remote stopped answering:\n{}",
        a.worker_stderr()
    );
}
