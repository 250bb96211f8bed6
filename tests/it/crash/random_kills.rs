//! 200 random SIGKILLs in a row: a run killed at any instant and run again loses nothing.

use super::*;

const RANDOM_CHUNKS: usize = 25;
const KILLS: usize = 200;

/// Two phases of chunks doing stepwise work; every third has a verification command.
fn random_plan() -> Value {
    let chunk = |i: usize| {
        let id = format!("c{i:02}");
        let mut c = json!({"id": id, "description": format!("Chunk {i}"), "status": "pending"});
        if i.is_multiple_of(3) {
            c["verification"] =
                json!({"type": "command", "command": format!("test -f work/{id}/4.txt")});
        }
        c
    };
    let half = RANDOM_CHUNKS / 2;
    json!({
        "feature": "Random crashes",
        "phases": [
            {"id": "phase-1", "name": "First", "depends_on": [],
             "subtasks": (1..=half).map(chunk).collect::<Vec<_>>()},
            {"id": "phase-2", "name": "Second", "depends_on": ["phase-1"],
             "subtasks": (half + 1..=RANDOM_CHUNKS).map(chunk).collect::<Vec<_>>()}
        ]
    })
}

/// The state of one spec of the random test across its kills.
struct Tracked {
    name: String,
    facts: Facts,
    completed: BTreeSet<String>,
    kills: usize,
    finished: bool,
}

#[test]
fn two_hundred_random_kills_lose_nothing() {
    let started = Instant::now();
    let seed = Rng::seed_from("RUNNER_CRASH_SEED");
    eprintln!("random kills: seed {seed} (rerun with RUNNER_CRASH_SEED={seed})");
    let mut rng = Rng(seed);
    let plan = random_plan();
    let plan_text = serde_json::to_string_pretty(&plan).unwrap();

    // Kept on disk if the test fails (a panic does not drop it), removed at the end otherwise.
    let repo = std::mem::ManuallyDrop::new(TestRepo::new());
    repo.script("");
    let cfg = Agent {
        plan_file: repo.tmp.path().join("unused-plan.json"),
        default: "steps",
        default_args: "4 0.02",
    };
    let log_path = repo.tmp.path().join("runs.log");
    let new_spec = |n: usize| -> Tracked {
        let name = format!("{:03}-random", n + 1);
        repo.add_spec(&name);
        repo.write_plan(&name, &plan_text);
        Tracked {
            name,
            facts: Facts::default(),
            completed: BTreeSet::new(),
            kills: 0,
            finished: false,
        }
    };
    let fail = |msg: String, repo: &TestRepo| -> ! {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(40).collect::<Vec<_>>();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        panic!(
            "seed {seed}: {msg}\nrepository kept at {}\nlast lines of the runs' output:\n{}",
            repo.tmp.path().display(),
            tail.join("\n")
        );
    };

    let mut specs = vec![new_spec(0)];
    let mut kills = 0;
    let mut delays_ms = 0u64;
    while kills < KILLS {
        let spec = specs.last_mut().unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap();
        let mut cmd = run_cmd(&repo, &cfg, &spec.name, None);
        cmd.stdout(Stdio::null()).stderr(Stdio::from(log));
        let mut child = cmd.spawn().unwrap();
        let delay = rng.below(251);
        delays_ms += delay;
        std::thread::sleep(Duration::from_millis(delay));
        if child.try_wait().unwrap().is_none() {
            // SAFETY: the pid is our child's and has not been reaped (try_wait saw it running).
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        }
        let status = child.wait().unwrap();
        match (status.code(), status.signal()) {
            (_, Some(libc::SIGKILL)) => {}
            (Some(0), _) => {
                // The spec is finished before the next kill: the next one gets a fresh spec.
                spec.finished = true;
                let s = statuses(&repo, &spec.name).unwrap_or_else(|e| fail(e, &repo));
                if !s.iter().all(|(_, st)| st == "completed") {
                    fail(
                        format!("{} exited 0 but is not complete: {s:?}", spec.name),
                        &repo,
                    );
                }
                let n = specs.len();
                specs.push(new_spec(n));
                continue;
            }
            _ => fail(
                format!(
                    "runner run --spec {} ended with {} instead of being killed or finishing",
                    spec.name,
                    describe_status(&status)
                ),
                &repo,
            ),
        }
        kills += 1;
        spec.kills += 1;

        // At the crash.
        let name = spec.name.clone();
        let before = statuses(&repo, &name)
            .map(|s| completed_of(&s))
            .unwrap_or_else(|e| fail(format!("kill {kills}: at the crash: {e}"), &repo));
        if !before.is_superset(&spec.completed) {
            fail(
                format!(
                    "kill {kills}: completed chunks shrank from {:?} to {before:?}",
                    spec.completed
                ),
                &repo,
            );
        }
        let crash = spec
            .facts
            .record(&repo, &name)
            .unwrap_or_else(|e| fail(format!("kill {kills}: {e}"), &repo));

        // Recovery.
        let out = recover_cmd(&repo, &cfg, &name, None).output().unwrap();
        if out.status.code() != Some(0) {
            fail(
                format!(
                    "kill {kills}: runner recover --spec {name}: {}",
                    output_text(&out)
                ),
                &repo,
            );
        }
        match check_after_recover(&repo, &name, &spec.facts.completed) {
            Ok(completed) => spec.completed = completed,
            Err(p) => fail(
                format!(
                    "kill {kills} (delay {delay} ms): after recover --spec {name}:\n  - {}\nrecover said:\n{}",
                    p.join("\n  - "),
                    stdout(&out)
                ),
                &repo,
            ),
        }
        let mut lost = spec.facts.check_commits(&repo, &name);
        lost.extend(check_dirty_kept(&repo, &name, &crash));
        if !lost.is_empty() {
            fail(format!("kill {kills}: {}", lost.join("\n")), &repo);
        }
    }
    let kill_phase = started.elapsed();

    // Every spec to the end, compared with an uninterrupted run of the same plan.
    let reference = reference_run(&plan, "", "steps", "4 0.02");
    let mut problems = Vec::new();
    for spec in &specs {
        problems.extend(
            finish_and_compare(&repo, &cfg, &spec.name, &spec.facts, &reference)
                .into_iter()
                .map(|p| format!("{}: {p}", spec.name)),
        );
    }
    eprintln!(
        "random kills: {kills} kills over {} specs ({}), mean delay {} ms; kill loop {:.1?}, total {:.1?}",
        specs.len(),
        specs
            .iter()
            .map(|s| format!(
                "{}: {} kills{}",
                s.name,
                s.kills,
                if s.finished { ", finished" } else { "" }
            ))
            .collect::<Vec<_>>()
            .join("; "),
        delays_ms / kills.max(1) as u64,
        kill_phase,
        started.elapsed()
    );
    if !problems.is_empty() {
        fail(problems.join("\n"), &repo);
    }
    drop(std::mem::ManuallyDrop::into_inner(repo));
}
