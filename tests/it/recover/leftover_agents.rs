//! Agents that outlived their runner are stopped first, and two recoveries at once recover a
//! chunk exactly once.

use super::*;

/// A run of `spec` whose agent hangs with a background child, killed (SIGKILL): the agent and
/// its child outlive it. Returns the child's pid.
fn killed_run_leaving_an_agent(repo: &TestRepo, spec: &str) -> i32 {
    repo.script("core-a * hang\n");
    let mut run = repo
        .cmd(&["run", "--spec", spec, "--agent-command", &agent()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid_file = repo.spec_dir(spec).join("fake-agent-child.pid");
    wait_for("the agent's background child", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n'))
    });
    let child: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    unsafe { libc::kill(run.id() as i32, libc::SIGKILL) };
    run.wait().unwrap();
    child
}

#[test]
fn an_agent_that_outlived_its_runner_is_stopped_first() {
    let spec = "050-leftover";
    let repo = repo_with_fixture_plan(spec);
    let child = killed_run_leaving_an_agent(&repo, spec);
    // The runner is gone; the agent's background child is not.
    std::thread::sleep(Duration::from_millis(100));
    assert!(alive(child), "the leftover {child} should still run");
    // A dry run says so and stops nothing.
    let dry = recover_json(&repo, &["--dry-run"], 0);
    assert_eq!(
        dry["specs"][0]["actions"][0]["kind"], "stopped_agent",
        "{dry}"
    );
    assert!(alive(child), "a dry run stopped {child}");

    let report = recover_json(&repo, &[], 0);
    assert!(
        !alive(child),
        "recovery left the agent's child {child} running"
    );
    let actions = report["specs"][0]["actions"].as_array().unwrap();
    assert_eq!(actions[0]["kind"], "stopped_agent", "{report}");
    assert!(
        actions[0]["detail"]
            .as_str()
            .unwrap()
            .contains("still running after its runner died")
    );
    // Stopped before the chunk was judged; the work it wrote is partial work.
    assert_eq!(actions[1]["kind"], "chunk");
    assert_eq!(actions[1]["decision"], "continue");
    let ended: Vec<Value> = events_of(&repo, spec, "process_ended")
        .into_iter()
        .filter(|e| e["why"] == "stopped by recovery")
        .collect();
    assert_eq!(ended.len(), 1);
    // Once stopped it is not reported again.
    let again = recover_json(&repo, &[], 0);
    assert_eq!(again["specs"][0]["outcome"], "clean", "{again}");
}

/// `recover` over every spec looks for live agents once through /proc instead of reading every
/// spec's journal: an agent left running by a dead run is still found when nothing else in the
/// spec needs recovering (no chunk in progress), and not found once it is gone.
#[test]
fn a_leftover_agent_of_a_spec_with_nothing_in_progress_is_still_found() {
    let spec = "051-leftover-quiet";
    let repo = repo_with_fixture_plan(spec);
    let child = killed_run_leaving_an_agent(&repo, spec);
    // Nothing in progress any more: only the journal and the live process tell.
    let mut plan = repo.plan(spec);
    for phase in plan["phases"].as_array_mut().unwrap() {
        for c in phase["subtasks"].as_array_mut().unwrap() {
            if c["status"] == "in_progress" {
                c["status"] = "pending".into();
            }
        }
    }
    repo.write_plan(spec, &serde_json::to_string_pretty(&plan).unwrap());
    let dry = recover_json(&repo, &["--dry-run"], 0);
    assert_eq!(
        dry["specs"][0]["actions"][0]["kind"], "stopped_agent",
        "{dry}"
    );
    // The whole group goes (the agent and its child).
    let group = unsafe { libc::getpgid(child) };
    assert!(group > 0);
    unsafe { libc::kill(-group, libc::SIGKILL) };
    wait_for("the leftover group to go", || unsafe {
        libc::kill(-group, 0) != 0
    });
    let dry = recover_json(&repo, &["--dry-run"], 0);
    assert_eq!(dry["specs"][0]["outcome"], "clean", "{dry}");
}

#[test]
fn racing_recoveries_recover_a_chunk_exactly_once() {
    for round in 0..4 {
        let spec = format!("06{round}-race");
        let repo = interrupted_core_a(&spec, "uncommitted");
        let with_spec = round % 2 == 0;
        let args: Vec<&str> = if with_spec {
            vec!["recover", "--spec", &spec]
        } else {
            vec!["recover"]
        };
        let a = repo.cmd(&args).spawn_piped();
        let b = repo.cmd(&args).spawn_piped();
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let mut codes = [a.status.code(), b.status.code()];
        codes.sort();
        let ok = codes == [Some(0), Some(0)] || (with_spec && codes == [Some(0), Some(4)]);
        assert!(
            ok,
            "round {round}: exits {codes:?}\n{}\n{}\n{}\n{}",
            stdout(&a),
            stderr(&a),
            stdout(&b),
            stderr(&b)
        );
        let decisions = events_of(&repo, &spec, "recovery_decision");
        assert_eq!(decisions.len(), 1, "round {round}: {decisions:?}");
        assert_eq!(decisions[0]["chunk"], "core-a");
        assert_eq!(
            recovery_refs(&repo),
            vec![format!("refs/auto-claude/recovery/{spec}/core-a/1")],
            "round {round}"
        );
        let a = repo.chunk(&spec, "core-a");
        assert_eq!(a["status"], "pending");
        assert_eq!(a["attempts"].as_array().unwrap().len(), 1);
        assert!(repo.worktree().join("work/core-a.txt").is_file());
    }
}

trait SpawnPiped {
    fn spawn_piped(&mut self) -> std::process::Child;
}

impl SpawnPiped for std::process::Command {
    fn spawn_piped(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}
