//! Run records (`specs/<spec>/runs/<run-id>.json`), the checkpoint (`specs/<spec>/checkpoint.json`),
//! `runner runs` and `runner show`: the real binary, real git repositories, the fake agent.

use crate::common::*;
use serde_json::Value;

/// The run records of `spec`, as JSON, in no particular order.
fn records(repo: &TestRepo, spec: &str) -> Vec<Value> {
    let dir = repo.spec_dir(spec).join("runs");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    // (Not the temp files of a write under way.)
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect()
}

fn checkpoint(repo: &TestRepo, spec: &str) -> Value {
    serde_json::from_slice(&std::fs::read(repo.spec_dir(spec).join("checkpoint.json")).unwrap())
        .unwrap()
}

/// The checkpoint's chunks: (id, status, commit).
fn checkpoint_chunks(c: &Value) -> Vec<(String, String, Option<String>)> {
    c["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
                s["commit"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn checkpoint_statuses(c: &Value) -> Vec<(String, String)> {
    checkpoint_chunks(c)
        .into_iter()
        .map(|(id, status, _)| (id, status))
        .collect()
}

fn checkpoint_commits(c: &Value) -> Vec<(String, Option<String>)> {
    checkpoint_chunks(c)
        .into_iter()
        .map(|(id, _, commit)| (id, commit))
        .collect()
}

/// Each completed chunk's commit as the plan's attempts record it.
fn plan_commits(repo: &TestRepo, spec: &str) -> Vec<(String, Option<String>)> {
    repo.statuses(spec)
        .into_iter()
        .map(|(id, status)| {
            let commit = (status == "completed").then(|| {
                let chunk = repo.chunk(spec, &id);
                let attempts = chunk["attempts"].as_array().unwrap().clone();
                attempts.last().unwrap()["commit"]
                    .as_str()
                    .unwrap()
                    .to_string()
            });
            (id, commit)
        })
        .collect()
}

fn branch_tip(repo: &TestRepo, spec: &str) -> String {
    repo.git(&["rev-parse", &format!("auto-claude/{spec}")])
        .trim()
        .to_string()
}

#[test]
fn a_completed_run_leaves_an_ended_record_and_a_checkpoint_equal_to_the_plan() {
    let repo = TestRepo::new();
    repo.add_spec("001-add-login");
    let out = repo.run_spec("001", &["--json"]);
    assert_exit(&out, 0);
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let recs = records(&repo, "001-add-login");
    assert_eq!(recs.len(), 1, "{recs:?}");
    let r = &recs[0];
    assert_eq!(r["run_id"], summary["run_id"]);
    assert_eq!(r["kind"], "run");
    assert_eq!(r["outcome"], "complete");
    assert!(r["ended"].is_string(), "{r}");
    assert_eq!(r["agent"], "command");
    assert_eq!(r["slot"], "auto-claude");
    assert_eq!(r["chunk"], "polish");
    assert_eq!(r["resumed_from"], Value::Null);
    assert!(r["pid"].as_u64().unwrap() > 0);

    let c = checkpoint(&repo, "001-add-login");
    assert_eq!(c["trigger"], "run_end");
    assert_eq!(c["run_id"], summary["run_id"]);
    assert_eq!(checkpoint_statuses(&c), repo.statuses("001-add-login"));
    assert_eq!(c["tip"], branch_tip(&repo, "001-add-login"));
    assert_eq!(c["branch"], "auto-claude/001-add-login");
    assert_eq!(c["base"], "main");
    assert_eq!(c["slot"], "auto-claude");
    let commits = checkpoint_commits(&c);
    assert_eq!(commits, plan_commits(&repo, "001-add-login"));
    // Each commit is the one whose subject names the chunk, on the branch.
    for (id, commit) in commits {
        let subject = repo.git(&["log", "-1", "--format=%s", &commit.unwrap()]);
        assert!(
            subject.contains(&format!("auto-claude: {id} ")),
            "{subject}"
        );
    }
}

#[test]
fn a_failed_chunk_writes_the_checkpoint_with_the_plans_statuses_and_ends_the_record() {
    let repo = TestRepo::new();
    repo.add_spec("003-fail");
    repo.write_config("[run]\nmax_attempts = 2\n");
    repo.script("core-b * fail the database is down\n");
    let out = repo.run_spec("003", &[]);
    assert_exit(&out, 3);
    let c = checkpoint(&repo, "003-fail");
    assert_eq!(checkpoint_statuses(&c), repo.statuses("003-fail"));
    assert_eq!(
        checkpoint_statuses(&c)[1],
        ("core-b".to_string(), "failed".to_string())
    );
    assert_eq!(c["tip"], branch_tip(&repo, "003-fail"));
    assert_eq!(checkpoint_commits(&c), plan_commits(&repo, "003-fail"));
    assert_eq!(c["current_chunk"], "core-b");
    let recs = records(&repo, "003-fail");
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["outcome"], "needs_human");
    assert_eq!(recs[0]["chunk"], "core-b");
}

/// The records of `spec` of one kind.
fn records_of(repo: &TestRepo, spec: &str, kind: &str) -> Vec<Value> {
    records(repo, spec)
        .into_iter()
        .filter(|r| r["kind"] == kind)
        .collect()
}

fn assert_ended(r: &Value, outcome: &str) {
    assert_eq!(r["outcome"], outcome, "{r}");
    let (started, ended) = (r["started"].as_str().unwrap(), r["ended"].as_str().unwrap());
    assert!(started <= ended, "{r}");
    assert!(r["pid"].as_u64().is_some());
}

#[test]
fn merge_undo_and_discard_each_leave_a_record_of_their_kind() {
    let repo = TestRepo::new();
    repo.add_spec("001-feature");
    assert_exit(&repo.run_spec("001", &[]), 0);
    assert_exit(
        &repo.runner(&["merge", "--spec", "001-feature", "--yes"]),
        0,
    );
    let merges = records_of(&repo, "001-feature", "merge");
    assert_eq!(merges.len(), 1);
    assert_ended(&merges[0], "merged");
    // The merge's id is the one its journal lines carry.
    let id = merges[0]["run_id"].as_str().unwrap();
    assert!(
        repo.events("001-feature")
            .iter()
            .any(|e| e["run_id"] == id && e["event"] == "merged"),
        "no merged event of {id}"
    );
    assert_exit(&repo.runner(&["undo", "--spec", "001-feature"]), 0);
    assert_ended(&records_of(&repo, "001-feature", "undo")[0], "undone");
    assert_exit(
        &repo.runner(&["discard", "--spec", "001-feature", "--yes"]),
        0,
    );
    assert_ended(&records_of(&repo, "001-feature", "discard")[0], "discarded");
    // The run's record is still the run's.
    assert_ended(&records_of(&repo, "001-feature", "run")[0], "complete");
    assert_eq!(records(&repo, "001-feature").len(), 4);

    // A refused merge (nothing to merge) leaves no record.
    let before = records(&repo, "001-feature").len();
    assert_exit(
        &repo.runner(&["merge", "--spec", "001-feature", "--yes"]),
        2,
    );
    assert_eq!(records(&repo, "001-feature").len(), before);
}

#[test]
fn recover_leaves_a_record_only_when_it_changed_something() {
    let repo = TestRepo::new();
    repo.add_spec("001-feature");
    repo.add_spec("002-other");
    assert_exit(&repo.run_spec("002", &[]), 0);
    run_killed_at(&repo, "001-feature", "after_coder_session");
    let before = records(&repo, "001-feature");
    assert_eq!(before.len(), 1, "the killed run's own record");
    assert_eq!(before[0]["ended"], Value::Null);

    // A dry run changes nothing and writes nothing.
    assert_exit(&repo.runner(&["recover", "--all", "--dry-run"]), 0);
    assert_eq!(records(&repo, "001-feature").len(), 1);

    let out = repo.runner(&["recover", "--all"]);
    assert_exit(&out, 0);
    let recovers = records_of(&repo, "001-feature", "recover");
    assert_eq!(recovers.len(), 1, "{}", stderr(&out));
    assert_ended(&recovers[0], "recovered");
    // The spec that was clean has no recover record.
    assert!(records_of(&repo, "002-other", "recover").is_empty());

    // Nothing left to do: no record, no file at all.
    let listing = |spec: &str| {
        let mut names: Vec<String> = std::fs::read_dir(repo.spec_dir(spec).join("runs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let (one, two) = (listing("001-feature"), listing("002-other"));
    assert_exit(&repo.runner(&["recover", "--all"]), 0);
    assert_eq!(listing("001-feature"), one);
    assert_eq!(listing("002-other"), two);
}

// ---- runner runs, runner show ----

/// This machine's name, as runner records it.
fn hostname() -> String {
    std::process::Command::new("hostname")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap()
}

/// Write a record by hand: run `id` of `spec`, its process `pid` on this host, its heartbeat
/// `heartbeat` (RFC 3339), ended or not.
fn write_record(repo: &TestRepo, spec: &str, id: &str, pid: u32, heartbeat: &str, ended: bool) {
    let dir = repo.spec_dir(spec).join("runs");
    std::fs::create_dir_all(&dir).unwrap();
    let record = serde_json::json!({
        "schema": 1, "run_id": id, "spec": spec, "kind": "run",
        "started": "2026-01-01T00:00:00Z",
        "ended": if ended { Value::from("2026-01-01T00:10:00Z") } else { Value::Null },
        "outcome": if ended { Value::from("complete") } else { Value::Null },
        "host": hostname(), "pid": pid, "heartbeat": heartbeat,
        "chunk": "core-a", "agent": "command", "resumed_from": null, "slot": "auto-claude",
    });
    std::fs::write(dir.join(format!("{id}.json")), record.to_string()).unwrap();
}

fn runs_json(repo: &TestRepo, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["runs", "--json"];
    args.extend_from_slice(extra);
    let out = repo.runner(&args);
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["schema"], 1);
    v["runs"].as_array().unwrap().clone()
}

fn state_of(runs: &[Value], id: &str) -> String {
    runs.iter()
        .find(|r| r["run_id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed: {runs:?}"))["state"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_killed_run_is_stale_at_once_and_a_finished_one_ended() {
    let repo = TestRepo::new();
    repo.add_spec("001-feature");
    repo.add_spec("002-other");
    assert_exit(&repo.run_spec("002", &[]), 0);
    run_killed_at(&repo, "001-feature", "after_coder_session");
    let runs = runs_json(&repo, &[]);
    assert_eq!(runs.len(), 2);
    // Newest first: the killed run started last.
    assert_eq!(runs[0]["spec"], "001-feature");
    assert_eq!(runs[0]["state"], "stale", "{runs:?}");
    assert_eq!(runs[0]["outcome"], Value::Null);
    assert_eq!(runs[0]["chunk"], "core-a");
    assert!(runs[0]["heartbeat_age_secs"].as_i64().unwrap() < 60);
    assert_eq!(runs[1]["state"], "ended");
    assert_eq!(runs[1]["outcome"], "complete");
    // The JSON shape, every key.
    let keys: Vec<&str> = runs[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut want = vec![
        "run_id",
        "shown",
        "spec",
        "kind",
        "state",
        "started",
        "ended",
        "outcome",
        "heartbeat",
        "heartbeat_age_secs",
        "chunk",
        "agent",
        "resumed_from",
        "host",
        "pid",
        "slot",
    ];
    want.sort();
    let mut keys = keys;
    keys.sort();
    assert_eq!(keys, want);
    let shown = runs[0]["shown"].as_str().unwrap();
    assert!(shown.len() >= 8 && runs[0]["run_id"].as_str().unwrap().starts_with(shown));

    // --stale and --spec filter; an unknown spec is bad input.
    let stale = runs_json(&repo, &["--stale"]);
    assert_eq!(stale.len(), 1);
    assert_eq!(stale[0]["spec"], "001-feature");
    let other = runs_json(&repo, &["--spec", "002"]);
    assert_eq!(other.len(), 1);
    assert_eq!(other[0]["spec"], "002-other");
    assert_exit(&repo.runner(&["runs", "--spec", "999-nope"]), 2);

    // The table: a header, one line a run, the state and the kind.
    let out = repo.runner(&["runs"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with("ID") && lines[0].contains("HEARTBEAT"),
        "{text}"
    );
    assert!(
        lines[1].starts_with(shown) && lines[1].contains("stale"),
        "{text}"
    );
    assert!(
        lines[1].contains("s ago") && lines[1].contains("core-a"),
        "{text}"
    );
    assert!(
        lines[2].contains("ended") && lines[2].contains("complete"),
        "{text}"
    );

    // The spec taken up again: the killed run is no longer stale work to resume, but ended,
    // `cut_off`, at its last heartbeat; the new run has its own record.
    let killed = runs[0].clone();
    assert_exit(&repo.run_spec("001", &["--auto-continue"]), 0);
    let after = runs_json(&repo, &[]);
    assert_eq!(after.len(), 3, "{after:?}");
    let old = after
        .iter()
        .find(|r| r["run_id"] == killed["run_id"])
        .unwrap();
    assert_eq!(old["state"], "ended", "{old:?}");
    assert_eq!(old["outcome"], "cut_off");
    assert_eq!(old["ended"], killed["heartbeat"]);
    assert!(runs_json(&repo, &["--stale"]).is_empty());
}

#[test]
fn a_live_pid_is_stale_only_once_silent_and_a_held_lock_is_active_whatever_the_heartbeat() {
    let repo = TestRepo::new();
    repo.add_spec("001-feature");
    let mut alive = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let (old_id, fresh_id) = ("r0000000000a1", "r0000000000b2");
    write_record(
        &repo,
        "001-feature",
        old_id,
        alive.id(),
        "2026-01-01T00:00:00Z",
        false,
    );
    write_record(&repo, "001-feature", fresh_id, alive.id(), &now, false);
    let runs = runs_json(&repo, &[]);
    assert_eq!(state_of(&runs, old_id), "stale");
    assert_eq!(state_of(&runs, fresh_id), "active");

    // The spec's run lock held, its holder naming the old run: active, old heartbeat or not.
    let lock = repo.spec_dir("001-feature").join("run.lock");
    let holder = serde_json::json!({
        "run_id": old_id, "pid": alive.id(), "host": hostname(),
        "since": "2026-01-01T00:00:00Z", "heartbeat": "2026-01-01T00:00:00Z",
    });
    std::fs::write(&lock, format!("{holder}\n")).unwrap();
    let mut held = hold_lock(&lock);
    let runs = runs_json(&repo, &[]);
    assert_eq!(state_of(&runs, old_id), "active");
    // The other run's pid holds the lock for another run: that process is not it.
    assert_eq!(state_of(&runs, fresh_id), "stale");
    held.kill().unwrap();
    held.wait().unwrap();
    alive.kill().unwrap();
    alive.wait().unwrap();
    // Its process gone: stale at once, even with a fresh heartbeat.
    let runs = runs_json(&repo, &[]);
    assert_eq!(state_of(&runs, fresh_id), "stale");
}

#[test]
fn show_finds_a_run_by_prefix_and_refuses_an_ambiguous_or_unknown_one() {
    let repo = TestRepo::new();
    repo.add_spec("001-feature");
    let out = repo.run_spec("001", &["--json"]);
    assert_exit(&out, 0);
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let id = summary["run_id"].as_str().unwrap().to_string();

    let out = repo.runner(&["show", &id[..6], "--json"]);
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["run_id"], id);
    assert_eq!(v["state"], "ended");
    assert_eq!(v["outcome"], "complete");
    assert_eq!(v["chunk"], "polish");
    assert_eq!(v["branch"], "auto-claude/001-feature");
    assert_eq!(v["checkpoint"]["by_this_run"], true);
    assert_eq!(v["checkpoint"]["trigger"], "run_end");
    assert_eq!(v["checkpoint"]["run_id"], id);
    let events = v["events"].as_array().unwrap();
    assert!(!events.is_empty() && events.len() <= 20);
    assert!(events.iter().all(|e| e["run_id"] == id));
    assert_eq!(events[0]["event"], "run_end", "newest first: {events:?}");

    let text = stdout(&repo.runner(&["show", &id]));
    for want in [
        id.as_str(),
        "ended",
        "complete",
        "polish",
        "auto-claude/001-feature",
        "written by this run",
        "run_end",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }

    // Two records sharing a prefix: the prefix is ambiguous, each candidate named.
    write_record(
        &repo,
        "001-feature",
        "rabcd00000001",
        1,
        "2026-01-01T00:00:00Z",
        true,
    );
    write_record(
        &repo,
        "001-feature",
        "rabcd00000002",
        1,
        "2026-01-01T00:00:00Z",
        true,
    );
    let out = repo.runner(&["show", "rabcd"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("rabcd00000001") && err.contains("rabcd00000002"),
        "{err}"
    );
    assert_exit(&repo.runner(&["show", "rabcd00000002"]), 0);
    // The ids' shortest unique prefixes are longer than 8 now.
    let runs = runs_json(&repo, &[]);
    let shown: Vec<&str> = runs.iter().map(|r| r["shown"].as_str().unwrap()).collect();
    assert!(
        shown.contains(&"rabcd00000001") && shown.contains(&"rabcd00000002"),
        "{shown:?}"
    );

    let out = repo.runner(&["show", "rffff"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("No run found matching 'rffff'"),
        "{}",
        stderr(&out)
    );
    let out = repo.runner(&["show", "r1", "--json"]);
    assert_exit(&out, 2);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["error"]["code"], 2, "{v}");
}

#[test]
fn a_garbage_oversized_or_linked_record_is_left_aside_with_a_warning() {
    let repo = TestRepo::new();
    repo.add_spec("001-feature");
    let good = "r00000000000c";
    write_record(&repo, "001-feature", good, 1, "2026-01-01T00:00:00Z", true);
    let dir = repo.spec_dir("001-feature").join("runs");
    std::fs::write(dir.join("r00000000000d.json"), b"\xff{not json").unwrap();
    std::fs::write(dir.join("r00000000000e.json"), vec![b' '; 200_000]).unwrap();
    let outside = repo.tmp.path().join("elsewhere.json");
    std::fs::copy(dir.join(format!("{good}.json")), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("r00000000000f.json")).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a record").unwrap();

    let out = repo.runner(&["runs", "--json"]);
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let ids: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![good]);
    let err = stderr(&out);
    for bad in ["r00000000000d", "r00000000000e", "r00000000000f"] {
        assert!(err.contains(bad), "no warning about {bad}:\n{err}");
    }
    assert_exit(&repo.runner(&["show", good]), 0);
    assert_exit(&repo.runner(&["show", "r00000000000d"]), 2);
}

#[test]
fn a_running_run_beats_is_active_while_it_holds_its_lock_and_stale_once_killed() {
    let repo = TestRepo::new();
    repo.add_spec("001-feature");
    repo.script("core-a 1 slow 20\n");
    let agent = fixture("fake-agent").display().to_string();
    let mut run = repo
        .cmd(&["run", "--spec", "001", "--agent-command", &agent])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let record = || {
        records(&repo, "001-feature")
            .into_iter()
            .find(|r| r["chunk"] == "core-a")
    };
    wait_for("the run to take core-a", || record().is_some());
    // While the agent sleeps nothing else writes the record: the heartbeat (every 10 s) does.
    let taken = record().unwrap()["heartbeat"].clone();
    let since = std::time::Instant::now();
    wait_for("a heartbeat", || {
        record().is_some_and(|r| r["heartbeat"] != taken)
    });
    assert!(since.elapsed() > std::time::Duration::from_secs(1));
    let id = record().unwrap()["run_id"].as_str().unwrap().to_string();
    assert_eq!(state_of(&runs_json(&repo, &[]), &id), "active");

    // Its record says it was silent for a year: the lock it holds says it is alive.
    let path = repo.spec_dir("001-feature").join(format!("runs/{id}.json"));
    let mut old: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    old["heartbeat"] = "2025-01-01T00:00:00Z".into();
    std::fs::write(&path, old.to_string()).unwrap();
    let runs = runs_json(&repo, &[]);
    assert_eq!(state_of(&runs, &id), "active");
    let r = runs.iter().find(|r| r["run_id"] == id).unwrap();
    assert!(r["heartbeat_age_secs"].as_i64().unwrap() > 86_400);

    // SIGKILL: the lock dies with the process, and the process is gone: stale at once.
    run.kill().unwrap();
    run.wait().unwrap();
    let runs = runs_json(&repo, &[]);
    assert_eq!(state_of(&runs, &id), "stale");
    assert_eq!(runs_json(&repo, &["--stale"]).len(), 1);
    // (The agent it started may still be sleeping: it is not runner.)
}
