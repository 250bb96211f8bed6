//! `runner resume` is never confidently wrong (issue 27 §1): a chunk whose commit left the branch
//! is not done, statuses the plan or git contradict lower the confidence and are named, a
//! checkpoint older than the plan is not "corrupted", a file named like a run id that does not
//! read is no run for `resume` as for `runs` and `show`, and a time in the future is said so.

use serde_json::Value;

use crate::common::*;

const SPEC: &str = "001-add-login";

/// Spec `SPEC` (the two-phase fixture plan: core-a, core-b, polish) killed at `failpoint`; its
/// run id.
fn interrupted(repo: &TestRepo, failpoint: &str) -> String {
    add_fixture_spec(repo, SPEC);
    repo.script("* * done\n");
    run_killed_at(repo, SPEC, failpoint);
    let ids = run_ids(repo, SPEC);
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].clone()
}

/// `runner resume ARGS --no-run --json`, exit 0: the summary.
fn summary(repo: &TestRepo, args: &[&str]) -> Value {
    let mut all = vec!["resume"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--no-run", "--json"]);
    let out = repo.runner(&all);
    assert_exit(&out, 0);
    serde_json::from_str(&stdout(&out)).unwrap()
}

fn warnings(v: &Value) -> Vec<String> {
    v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect()
}

fn score(v: &Value) -> u64 {
    v["confidence_score"].as_u64().unwrap()
}

fn edit_json(path: &std::path::Path, edit: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

fn checkpoint_path(repo: &TestRepo) -> std::path::PathBuf {
    repo.spec_dir(SPEC).join("checkpoint.json")
}

fn hours_from_now(hours: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::hours(hours))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[test]
fn a_chunk_whose_commit_left_the_branch_is_not_done_and_confidence_falls() {
    let repo = TestRepo::new();
    // core-a completed and committed, core-b committed but not yet marked.
    let id = interrupted(&repo, "after_commit@2");
    // The branch is reset to its base: core-a's commit is gone (`status` says missing_work).
    git_in(&repo.worktree(), &["reset", "-q", "--hard", "main"]);
    let status = repo.runner(&["status", "--json"]);
    assert!(
        stdout(&status).contains("missing_work"),
        "{}",
        stdout(&status)
    );

    let v = summary(&repo, &[&id]);
    assert_eq!(v["source"], "events", "{v}");
    assert_eq!(v["summary"]["progress"]["done"], 0, "{v}");
    assert!(score(&v) < 100, "{v}");
    assert!(
        v["confidence_reason"]
            .as_str()
            .unwrap()
            .contains("1 chunk status the plan or git contradicts"),
        "{v}"
    );
    let w = warnings(&v);
    assert!(
        w.iter().any(|w| w.starts_with(&format!(
            "Chunk core-a: completed by the journal, but its commit is no longer on auto-claude/{SPEC}"
        )) && w.contains(&format!("`runner recover --spec {SPEC}`"))),
        "{w:?}"
    );
    // The text says the same.
    let out = repo.runner(&["resume", &id, "--no-run"]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("progress 0/3 chunks"),
        "{}",
        stdout(&out)
    );

    // A person sets core-a back to pending while the run that died in core-b's session is
    // unsettled: the continued run's recovery undoes that edit (the journal names no person's),
    // finds core-a's commit gone and stops for a person. The summary says so: not done, the
    // commit gone, and the way back first.
    edit_json(&repo.plan_path(SPEC), |plan| {
        plan["phases"][0]["subtasks"][0]["status"] = "pending".into();
    });
    let v = summary(&repo, &[&id]);
    assert_eq!(v["summary"]["progress"]["done"], 0, "{v}");
    assert!(
        warnings(&v).iter().any(|w| w.starts_with(&format!(
            "Chunk core-a: completed by the journal, but its commit is no longer on auto-claude/{SPEC}"
        ))),
        "{v}"
    );
    assert_eq!(
        v["summary"]["next_steps"][0]["command"],
        format!("runner recover --spec {SPEC}"),
        "{v}"
    );
}

#[test]
fn checkpoint_statuses_the_plan_or_git_contradict_lower_the_confidence_and_are_named() {
    let repo = TestRepo::new();
    // core-a completed, core-b's agent just started.
    let id = interrupted(&repo, "after_spawn@2");
    let cp = checkpoint_path(&repo);
    let honest = std::fs::read(&cp).unwrap();
    assert_eq!(summary(&repo, &[&id])["confidence_score"], 100);
    // Forged ahead of the plan: core-b and polish completed, with no commit.
    edit_json(&cp, |v| {
        for c in v["chunks"].as_array_mut().unwrap() {
            c["status"] = "completed".into();
        }
    });
    let v = summary(&repo, &[&id]);
    assert_eq!(v["source"], "checkpoint", "{v}");
    assert_eq!(v["summary"]["progress"]["done"], 1, "{v}");
    assert!(score(&v) < 100, "{v}");
    assert!(
        v["confidence_reason"]
            .as_str()
            .unwrap()
            .contains("2 chunk statuses the plan or git contradict"),
        "{v}"
    );
    let w = warnings(&v);
    assert!(
        w.iter().any(|w| w.starts_with(
            "Chunks core-b (completed by the checkpoint, in_progress by the plan), polish \
             (completed by the checkpoint, pending by the plan): neither the plan nor git \
             confirms completed"
        )),
        "{w:?}"
    );

    // Core-a set back to pending in the plan, its commit still there, while the run that died
    // in core-b's session is unsettled: the continued run's recovery undoes that edit (the
    // journal names no person's), so core-a is done as the run will read it, and nothing
    // disagrees. (A set-back after a run that ended stands: see
    // the_summary_counts_done_only_what_the_continued_run_does_not_do_again.)
    std::fs::write(&cp, honest).unwrap();
    edit_json(&repo.plan_path(SPEC), |plan| {
        plan["phases"][0]["subtasks"][0]["status"] = "pending".into();
    });
    let v = summary(&repo, &[&id]);
    assert_eq!(v["source"], "checkpoint", "{v}");
    assert_eq!(v["summary"]["progress"]["done"], 1, "{v}");
    assert!(!warnings(&v).iter().any(|w| w.contains("core-a")), "{v}");
}

#[test]
fn a_checkpoint_older_than_the_plan_is_said_so_not_corrupted() {
    let repo = TestRepo::new();
    // Planned by the agent, killed as it took the first chunk: the checkpoint is the run's
    // start, before there was a plan.
    repo.add_spec(SPEC);
    repo.script("* * done\n");
    run_killed_at(&repo, SPEC, "after_take@1");
    let cp: Value =
        serde_json::from_slice(&std::fs::read(checkpoint_path(&repo)).unwrap()).unwrap();
    assert_eq!(cp["chunks"], serde_json::json!([]), "{cp}");
    let v = summary(&repo, &[]);
    let w = warnings(&v);
    assert!(
        w.contains(
            &"Checkpoint older than the plan, rebuilt from the branch's commits".to_string()
        ),
        "{w:?}"
    );
    assert!(!w.iter().any(|w| w.contains("corrupted")), "{w:?}");

    // A person adds a chunk to the plan after a run: older than the plan, from the events.
    let repo = TestRepo::new();
    let id = interrupted(&repo, "after_commit@2");
    edit_json(&repo.plan_path(SPEC), |plan| {
        let chunks = plan["phases"][1]["subtasks"].as_array_mut().unwrap();
        chunks.push(
            serde_json::json!({"id": "docs", "description": "Document it", "status": "pending"}),
        );
    });
    let v = summary(&repo, &[&id]);
    let w = warnings(&v);
    assert_eq!(
        w[0], "Checkpoint older than the plan, rebuilt from events",
        "{w:?}"
    );
    assert_eq!(v["summary"]["progress"]["total"], 4, "{v}");
    // A checkpoint that does not read is still "corrupted".
    std::fs::write(checkpoint_path(&repo), "{ not json").unwrap();
    let w = warnings(&summary(&repo, &[&id]));
    assert_eq!(
        w[0], "Checkpoint corrupted, falling back to events",
        "{w:?}"
    );
}

#[test]
fn a_file_named_like_a_run_that_does_not_read_is_no_run_for_resume_runs_or_show() {
    let repo = TestRepo::new();
    let id = interrupted(&repo, "after_commit@2");
    // Written after the real record: the newest file in the runs folder.
    let garbage = "r0123456789ab";
    std::fs::write(
        repo.spec_dir(SPEC).join(format!("runs/{garbage}.json")),
        "not a record",
    )
    .unwrap();
    let runs = repo.runner(&["runs", "--json"]);
    assert!(!stdout(&runs).contains(garbage), "{}", stdout(&runs));
    assert_exit(&repo.runner(&["show", garbage]), 2);

    let out = repo.runner(&["resume", "--no-run", "--json"]);
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["run_id"], id.as_str(), "{v}");
    assert!(
        stderr(&out).contains(&format!("{garbage}.json")),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("left aside"), "{}", stderr(&out));
    // Named, it is no run either: the way to its spec is said.
    let out = repo.runner(&["resume", &garbage[..6], "--no-run"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains(&format!("runner resume --spec {SPEC}")),
        "{}",
        stderr(&out)
    );
    // Continued, the new run records the real one as the run it resumed.
    let out = repo.runner(&["resume", "--json"]);
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let new = v["run"]["run_id"].as_str().unwrap();
    let record: Value = serde_json::from_slice(
        &std::fs::read(repo.spec_dir(SPEC).join(format!("runs/{new}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(record["resumed_from"], id.as_str(), "{record}");
}

#[test]
fn a_heartbeat_or_checkpoint_in_the_future_is_said_so_and_not_fresh() {
    let repo = TestRepo::new();
    let id = interrupted(&repo, "after_commit@2");
    // The killed run's heartbeat 3 h ahead: stale (no sign of life), said to be in the future.
    let record = repo.spec_dir(SPEC).join(format!("runs/{id}.json"));
    edit_json(&record, |r| r["heartbeat"] = hours_from_now(3).into());
    let out = repo.runner(&["runs"]);
    assert_exit(&out, 0);
    let line = stdout(&out)
        .lines()
        .find(|l| l.starts_with(&id[..8]))
        .unwrap()
        .to_string();
    assert!(line.contains("stale"), "{line}");
    assert!(line.contains("h in the future (clock skew)"), "{line}");
    assert!(!line.contains("0s ago"), "{line}");
    let out = repo.runner(&["runs", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        v["runs"][0]["heartbeat_age_secs"].as_i64().unwrap() < -3600,
        "{v}"
    );
    let out = repo.runner(&["show", &id]);
    assert!(
        stdout(&out).contains("in the future (clock skew)"),
        "{}",
        stdout(&out)
    );

    // The checkpoint 3 h ahead: not believed (70), and said so.
    edit_json(&checkpoint_path(&repo), |c| {
        c["time"] = hours_from_now(3).into()
    });
    let v = summary(&repo, &[&id]);
    assert_eq!(v["source"], "checkpoint", "{v}");
    assert_eq!(score(&v), 70, "{v}");
    let reason = v["confidence_reason"].as_str().unwrap();
    assert!(reason.contains("in the future (clock skew)"), "{reason}");
    assert!(!reason.contains("0 s ago"), "{reason}");
    assert!(
        v["summary"]["checkpoint"]["age_secs"].as_i64().unwrap() < -3600,
        "{v}"
    );
    let out = repo.runner(&["resume", &id, "--no-run"]);
    let text = stdout(&out);
    assert!(
        text.contains("checkpoint: checkpoint, written 2 h 59 min in the future (clock skew)")
            || text.contains("checkpoint: checkpoint, written 3 h in the future (clock skew)"),
        "{text}"
    );
}

/// The summary is the truth of what the run it continues into does: a run that ended (stopped on
/// a failed chunk, no session died, so no recovery undoes an edit), then a person sets core-a,
/// completed with its commit on the branch, back to pending to have it done again. The summary
/// counts core-a completed ("git has the commit, so it is counted as completed"), but `runner
/// resume` reads the plan and does core-a again: progress said 1/3 done, the run did all 3.
#[test]
fn the_summary_counts_done_only_what_the_continued_run_does_not_do_again() {
    let repo = TestRepo::new();
    let dir = repo.add_spec(SPEC);
    std::fs::copy(
        fixture("plans/two-phases.json"),
        dir.join("implementation_plan.json"),
    )
    .unwrap();
    repo.script("core-b * fail broken\n* * done\n");
    let out = repo.run_spec(SPEC, &[]);
    assert_exit(&out, 3);
    let id = run_ids(&repo, SPEC)[0].clone();
    edit_json(&repo.plan_path(SPEC), |plan| {
        plan["phases"][0]["subtasks"][0]["status"] = "pending".into();
        plan["phases"][0]["subtasks"][1]["status"] = "pending".into();
    });
    let v = summary(&repo, &[&id]);
    assert!(
        warnings(&v)
            .iter()
            .any(|w| w.starts_with("Chunk core-a (") && w.contains("the run will do it again")),
        "{v:#}"
    );
    let done = v["summary"]["progress"]["done"].as_u64().unwrap();
    let total = v["summary"]["progress"]["total"].as_u64().unwrap();

    repo.script("* * done\n");
    let before = repo.agent_log().len();
    let agent = fixture("fake-agent").display().to_string();
    let out = repo.runner(&["resume", &id, "--agent-command", &agent]);
    assert_exit(&out, 0);
    let mut worked: Vec<String> = repo.agent_log()[before..]
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap().to_string())
        .collect();
    worked.dedup();
    assert_eq!(
        total - done,
        worked.len() as u64,
        "the summary counted {done} of {total} done, the run then worked on {worked:?}: {v:#}"
    );
}

/// After the branch is reset so a completed chunk's commit is gone, the summary counts it not
/// done, but its first next step is still "Continue the run where it stopped" (`runner resume
/// ID`), and that run's recovery stops at once for a person (exit 3: "the branch's history was
/// rewritten"). A step offered first must work as printed: here it is the way back (`runner
/// recover`), not Continue.
#[test]
fn after_history_is_rewritten_the_first_step_is_not_a_continue_that_stops_for_a_person() {
    let repo = TestRepo::new();
    let id = interrupted(&repo, "after_commit@2");
    git_in(&repo.worktree(), &["reset", "-q", "--hard", "main"]);
    let v = summary(&repo, &[&id]);
    let first = &v["summary"]["next_steps"][0];
    let command = first["command"].as_str().unwrap().to_string();
    repo.script("* * done\n");
    let agent = fixture("fake-agent").display().to_string();
    let out = repo.runner(&["resume", &id, "--agent-command", &agent]);
    assert!(
        !(first["text"].as_str().unwrap().starts_with("Continue") && out.status.code() == Some(3)),
        "the first step offered, {command:?}, stops for a person:\n{}\n{v:#}",
        stderr(&out)
    );
}
