//! The quick check from a remembered tip gives the whole check's answer, or none at all.

use std::path::Path;
use std::process::Command;

use super::checked::HistoryMemo;
use super::*;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Commit `file` with `text` on the current branch; the new commit's id.
fn commit(dir: &Path, file: &str, text: &str) -> String {
    std::fs::write(dir.join(file), text).unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", file]);
    git(dir, &["rev-parse", "HEAD"])
}

/// A plan whose chunks `c0…` are completed with the given recorded commits.
fn plan_with(commits: &[&str]) -> Plan {
    let statuses: Vec<(String, &str)> = (0..commits.len())
        .map(|i| (format!("c{i}"), "completed"))
        .collect();
    let statuses: Vec<(&str, &str)> = statuses.iter().map(|(i, s)| (i.as_str(), *s)).collect();
    let mut p = super::tests::plan(&statuses);
    for (i, oid) in commits.iter().enumerate() {
        let pos = p.find_chunk(&format!("c{i}")).unwrap();
        p.chunk_mut(pos).set_attempts(&[crate::plan::Attempt {
            n: 1,
            outcome: Some("completed".into()),
            commit: Some(oid.to_string()),
            ..Default::default()
        }]);
    }
    p
}

struct Repo {
    _tmp: tempfile::TempDir,
    dir: std::path::PathBuf,
    main: MainRepo,
}

fn repo() -> Repo {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    git(&dir, &["init", "-q", "-b", "auto-claude/001-x"]);
    commit(&dir, "base", "base");
    let main = MainRepo::discover(&dir).unwrap();
    Repo {
        _tmp: tmp,
        dir,
        main,
    }
}

fn tip(r: &Repo) -> Oid {
    r.main.branch_tip(&branch_for("001-x")).unwrap()
}

/// What the memo says now, checked against the whole check.
fn quick(r: &Repo, memo: &HistoryMemo, plan: &Plan) -> Option<HistoryFacts> {
    let facts = memo.facts(&r.main, tip(r), plan, None);
    if let Some(f) = &facts {
        assert_eq!(f, &history_facts(&r.main, "001-x", plan, None));
    }
    facts
}

#[test]
fn a_line_of_commits_after_the_checked_tip_is_judged_from_it() {
    let r = repo();
    let a = commit(&r.dir, "a", "a");
    let memo = HistoryMemo::default();
    let p = plan_with(&[&a]);
    assert_eq!(quick(&r, &memo, &p), None, "nothing remembered yet");
    memo.remember(tip(&r), &history_facts(&r.main, "001-x", &p, None));
    let b = commit(&r.dir, "b", "b");
    let c = commit(&r.dir, "c", "c");
    let p = plan_with(&[&a, &b, &c]);
    let facts = quick(&r, &memo, &p).expect("a plain line is judged quickly");
    assert!(judge_history(&facts).is_none());
    // An ordinary commit that undoes a chunk's change is visible work, not a breach.
    commit(&r.dir, "b", "undone");
    assert!(judge_history(&quick(&r, &memo, &p).unwrap()).is_none());
}

#[test]
fn a_merge_a_rewrite_or_an_unknown_commit_falls_back_to_the_whole_check() {
    let r = repo();
    let a = commit(&r.dir, "a", "a");
    let memo = HistoryMemo::default();
    let p = plan_with(&[&a]);
    memo.remember(tip(&r), &history_facts(&r.main, "001-x", &p, None));
    // A merge that drops the chunk's change (`-s ours`) after removing it on another branch.
    git(&r.dir, &["checkout", "-q", "-b", "side", "HEAD~1"]);
    commit(&r.dir, "side", "side");
    git(&r.dir, &["checkout", "-q", "auto-claude/001-x"]);
    git(&r.dir, &["rm", "-q", "a"]);
    git(&r.dir, &["commit", "-q", "-m", "drop a"]);
    git(&r.dir, &["reset", "-q", "--hard", "HEAD~1"]);
    git(
        &r.dir,
        &["merge", "-q", "-s", "ours", "side", "-m", "merge"],
    );
    assert_eq!(
        quick(&r, &memo, &p),
        None,
        "a merge is never judged quickly"
    );
    // A rewritten history: the checked tip is no longer an ancestor.
    git(&r.dir, &["reset", "-q", "--hard", "HEAD~1"]);
    git(&r.dir, &["commit", "-q", "--amend", "-m", "amended"]);
    assert_eq!(quick(&r, &memo, &p), None);
    let full = history_facts(&r.main, "001-x", &p, None);
    assert!(
        judge_history(&full).is_some(),
        "the whole check sees the loss"
    );
    // A recorded commit the check never saw, off the line: the whole check decides.
    let r = repo();
    let a = commit(&r.dir, "a", "a");
    let memo = HistoryMemo::default();
    memo.remember(
        tip(&r),
        &history_facts(&r.main, "001-x", &plan_with(&[&a]), None),
    );
    let base = git(&r.dir, &["rev-parse", "HEAD~1"]);
    assert_eq!(quick(&r, &memo, &plan_with(&[&a, &base])), None);
}

#[test]
fn a_long_line_past_the_limit_falls_back() {
    let r = repo();
    let memo = HistoryMemo::default();
    let p = plan_with(&[]);
    memo.remember(tip(&r), &history_facts(&r.main, "001-x", &p, None));
    for i in 0..super::checked::LINE_LIMIT + 1 {
        git(
            &r.dir,
            &["commit", "-q", "--allow-empty", "-m", &format!("e{i}")],
        );
    }
    assert_eq!(quick(&r, &memo, &p), None);
}

/// The plan as read from its file: chunks kept as text, shared by the plan's copies.
fn as_read(plan: &Plan) -> Plan {
    let bytes = crate::plan::plan_to_bytes(plan);
    crate::plan::parse_plan(Path::new("p.json"), &bytes).unwrap()
}

#[test]
fn a_recorded_commit_changed_between_checks_is_read_again() {
    let r = repo();
    let a = commit(&r.dir, "a", "a");
    let b = commit(&r.dir, "b", "b");
    let memo = HistoryMemo::default();
    let p = as_read(&plan_with(&[&a, &b]));
    memo.remember(tip(&r), &history_facts(&r.main, "001-x", &p, None));
    let c = commit(&r.dir, "c", "c");
    // A copy of the same plan (its chunks' texts shared) with one more chunk: c0 and c1 are
    // read from what the memo kept.
    let p2 = as_read(&plan_with(&[&a, &b, &c]));
    assert!(quick(&r, &memo, &p2).is_some());
    assert!(quick(&r, &memo, &p2.clone()).is_some());
    // c1's record now names another commit (a new text, as after an agent's edit): the memo
    // must not answer with the commit it read before. An unknown id proves nothing, either way.
    let mut p3 = p2.clone();
    let pos = p3.find_chunk("c1").unwrap();
    p3.chunk_mut(pos).set_attempts(&[crate::plan::Attempt {
        n: 1,
        outcome: Some("completed".into()),
        commit: Some(c.clone()),
        ..Default::default()
    }]);
    let p3 = as_read(&p3);
    let facts = quick(&r, &memo, &p3).expect("still a plain line");
    let c1 = facts.recorded.iter().find(|(id, _, _)| id == "c1").unwrap();
    assert_eq!(c1.1, c);
    // Named to a commit that is not in the history (the base of an orphan branch): the whole
    // check is needed, and the memo says so rather than answering from the old record.
    git(&r.dir, &["checkout", "-q", "--orphan", "elsewhere"]);
    let stray = commit(&r.dir, "s", "s");
    git(&r.dir, &["checkout", "-q", "auto-claude/001-x"]);
    let mut p4 = p3.clone();
    let pos = p4.find_chunk("c0").unwrap();
    p4.chunk_mut(pos).set_attempts(&[crate::plan::Attempt {
        n: 1,
        outcome: Some("completed".into()),
        commit: Some(stray),
        ..Default::default()
    }]);
    assert_eq!(quick(&r, &memo, &as_read(&p4)), None);
}

/// `plan` with its chunks split into phases of `per` chunks each, as read from its file.
fn in_phases(plan: &Plan, per: usize) -> Plan {
    let value = plan.to_value();
    let chunks = value["phases"][0]["subtasks"].as_array().unwrap().clone();
    let phases: Vec<serde_json::Value> = chunks
        .chunks(per)
        .enumerate()
        .map(|(i, c)| serde_json::json!({"id": format!("p{i}"), "subtasks": c}))
        .collect();
    let text = serde_json::json!({"phases": phases}).to_string();
    as_read(&crate::plan::parse_plan(Path::new("t.json"), text.as_bytes()).unwrap())
}

#[test]
fn a_phase_shared_with_the_plan_checked_before_is_not_read_again_and_a_changed_one_is() {
    let r = repo();
    let a = commit(&r.dir, "a", "a");
    let b = commit(&r.dir, "b", "b");
    let memo = HistoryMemo::default();
    let p = in_phases(&plan_with(&[&a, &b, &a, &b]), 2);
    memo.remember(tip(&r), &history_facts(&r.main, "001-x", &p, None));
    let c = commit(&r.dir, "c", "c");
    assert!(quick(&r, &memo, &p).is_some());
    // A copy with one chunk of the second phase changed in place (held as fields, not text):
    // the first phase is the very list the memo read, the second is another and is read again.
    let mut p2 = p.clone();
    let pos = p2.find_chunk("c3").unwrap();
    p2.chunk_mut(pos).set_attempts(&[crate::plan::Attempt {
        n: 1,
        outcome: Some("completed".into()),
        commit: Some(c.clone()),
        ..Default::default()
    }]);
    assert!(std::sync::Arc::ptr_eq(
        &p.phases[0].chunks,
        &p2.phases[0].chunks
    ));
    let facts = quick(&r, &memo, &p2).expect("a plain line");
    let c3 = facts.recorded.iter().find(|(id, _, _)| id == "c3").unwrap();
    assert_eq!(c3.1, c);
    // The plan before the change again: its own record, not the one read last.
    let facts = quick(&r, &memo, &p).expect("a plain line");
    let c3 = facts.recorded.iter().find(|(id, _, _)| id == "c3").unwrap();
    assert_eq!(c3.1, b);
    // A phase dropped: the memo's list of phases follows.
    let mut p3 = p.clone();
    p3.phases.truncate(1);
    let facts = quick(&r, &memo, &p3).expect("a plain line");
    assert_eq!(facts.recorded.len(), 2);
}

/// A run's checks as `guard_history` makes them, over random histories: an agent's commits,
/// commits undoing or deleting recorded work, amends, resets, a branch force-moved to an older
/// commit, merges that drop work. Every quick answer is the whole check's (`quick` asserts it),
/// and the memo goes on from each tip that passed, as the run's does.
#[test]
fn random_histories_get_the_whole_checks_answer() {
    let r = repo();
    let memo = HistoryMemo::default();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut roll = |n: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    let mut recorded: Vec<String> = Vec::new();
    let mut seen: Vec<String> = vec![git(&r.dir, &["rev-parse", "HEAD"])];
    let (mut answered, mut passed, mut hollowed) = (0, 0, 0);
    for step in 0..120 {
        let has_parent = git(&r.dir, &["rev-list", "--count", "HEAD"]) != "1";
        match roll(10) {
            // A chunk's work, committed by runner (most steps, as in a run).
            0..=3 => recorded.push(commit(&r.dir, &format!("f{step}"), "work")),
            // An agent's ordinary commit, undoing or deleting a chunk's file.
            4 if !recorded.is_empty() => {
                let f = format!("f{}", roll(step + 1));
                if r.dir.join(&f).exists() && roll(2) == 0 {
                    git(&r.dir, &["rm", "-q", &f]);
                    git(&r.dir, &["commit", "-q", "-m", "rm"]);
                } else {
                    commit(&r.dir, &f, "undone");
                }
            }
            5 => {
                commit(&r.dir, &format!("g{step}"), "agent");
            }
            6 => {
                git(&r.dir, &["commit", "-q", "--amend", "-m", "amended"]);
            }
            7 if has_parent => {
                git(&r.dir, &["reset", "-q", "--hard", "HEAD~1"]);
            }
            8 => {
                // The branch force-moved to a commit it had before.
                let to = seen[roll(seen.len() as u64) as usize].clone();
                git(&r.dir, &["reset", "-q", "--hard", &to]);
            }
            9 if has_parent => {
                // The last commit dropped and hidden behind a merge that keeps this side only
                // (`reset --hard HEAD~1; merge -s ours <old tip>`): its changes are gone.
                let old = format!("old{step}");
                git(&r.dir, &["branch", "-f", &old, "HEAD"]);
                git(&r.dir, &["reset", "-q", "--hard", "HEAD~1"]);
                git(&r.dir, &["merge", "-q", "-s", "ours", &old, "-m", "merge"]);
            }
            _ => {}
        }
        seen.push(git(&r.dir, &["rev-parse", "HEAD"]));
        let refs: Vec<&str> = recorded.iter().map(String::as_str).collect();
        let plan = as_read(&plan_with(&refs));
        let facts = match quick(&r, &memo, &plan) {
            Some(f) => {
                answered += 1;
                f
            }
            None => history_facts(&r.main, "001-x", &plan, None),
        };
        hollowed += usize::from(!facts.hollowed.is_empty());
        match judge_history(&facts) {
            None => {
                passed += 1;
                memo.remember(tip(&r), &facts);
            }
            // A person accepts the loss: the chunks lost or hollowed are not completed any more.
            Some(breach) => {
                let lost: Vec<&String> = breach
                    .missing
                    .iter()
                    .map(|(c, _)| c)
                    .chain(breach.hollowed.iter().map(|(c, _)| c))
                    .collect();
                let ids: Vec<String> = (0..recorded.len()).map(|i| format!("c{i}")).collect();
                recorded = recorded
                    .iter()
                    .zip(&ids)
                    .filter(|(_, id)| !lost.contains(id))
                    .map(|(c, _)| c.clone())
                    .collect();
            }
        }
    }
    assert!(
        answered > 20 && passed > 20 && hollowed > 0,
        "{answered} quick, {passed} passed, {hollowed} hollowed"
    );
}

/// A file a chunk added, whose name is not UTF-8, deleted by an agent's ordinary commit: visible
/// work, not work a merge hid — neither check may call it hollowed (the walk looked for the
/// file under its name made UTF-8, found no commit touching that, and kept it as lost).
#[test]
fn a_file_with_a_name_that_is_not_utf8_deleted_by_an_ordinary_commit_is_not_hollowed() {
    use std::os::unix::ffi::OsStrExt;
    let r = repo();
    let name = std::ffi::OsStr::from_bytes(b"f\xffx");
    std::fs::write(r.dir.join(name), "work").unwrap();
    git(&r.dir, &["add", "-A"]);
    git(&r.dir, &["commit", "-q", "-m", "chunk"]);
    let work = git(&r.dir, &["rev-parse", "HEAD"]);
    std::fs::remove_file(r.dir.join(name)).unwrap();
    git(&r.dir, &["add", "-A"]);
    git(&r.dir, &["commit", "-q", "-m", "agent deletes it"]);
    let plan = as_read(&plan_with(&[&work]));
    let facts = history_facts(&r.main, "001-x", &plan, None);
    assert_eq!(facts.hollowed, Vec::new(), "{facts:?}");
}
