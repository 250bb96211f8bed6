//! `recover --dry-run` predicts what `recover` does, and says "would" for everything it did not
//! do.

use super::*;

fn recover_report(repo: &TestRepo, args: &[&str]) -> (Option<i32>, Value) {
    let mut all = vec!["recover", "--json"];
    all.extend_from_slice(args);
    let out = repo.runner(&all);
    let report = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(&out), stderr(&out)));
    (out.status.code(), report)
}

/// The dry run's report, then the real one: the same actions, kinds, chunks and decisions;
/// where the dry run names two outcomes, the real decision is the one for `verification`.
#[track_caller]
fn assert_dry_run_predicts(repo: &TestRepo, args: &[&str], verification: Option<bool>) {
    let mut dry_args = args.to_vec();
    dry_args.push("--dry-run");
    let (dry_code, dry) = recover_report(repo, &dry_args);
    let (real_code, real) = recover_report(repo, args);
    assert_eq!(
        dry_code, real_code,
        "exit codes\ndry: {dry:#}\nreal: {real:#}"
    );
    let dry_specs = dry["specs"].as_array().unwrap();
    let real_specs = real["specs"].as_array().unwrap();
    assert_eq!(dry_specs.len(), real_specs.len());
    for (d, r) in dry_specs.iter().zip(real_specs) {
        assert_eq!(d["outcome"], r["outcome"], "dry: {d:#}\nreal: {r:#}");
        let (da, ra) = (
            d["actions"].as_array().unwrap(),
            r["actions"].as_array().unwrap(),
        );
        assert_eq!(da.len(), ra.len(), "dry: {d:#}\nreal: {r:#}");
        for (d, r) in da.iter().zip(ra) {
            assert_eq!(d["kind"], r["kind"], "dry: {d:#}\nreal: {r:#}");
            assert_eq!(d["chunk"], r["chunk"], "dry: {d:#}\nreal: {r:#}");
            let predicted = match &d["if_verification"] {
                Value::Null => d["decision"].clone(),
                both => {
                    assert_eq!(d["decision"], Value::Null, "{d:#}");
                    let key = match verification {
                        Some(true) => "passes",
                        Some(false) => "fails",
                        None => {
                            panic!("a dry run named two outcomes where none was expected: {d:#}")
                        }
                    };
                    both[key].clone()
                }
            };
            assert_eq!(predicted, r["decision"], "dry: {d:#}\nreal: {r:#}");
        }
    }
}

/// One test over every state: the states whose prediction was already right guard the rest.
#[test]
fn dry_run_predicts_what_recover_does_for_each_interrupted_state() {
    states_without_a_check();
    states_where_the_verification_decides();
    human_review_and_retry_failed();
}

fn states_without_a_check() {
    for (rules, expected) in [
        ("core-a * uncommitted\n", "continue"),
        ("core-a * done\n", "next"),
        ("core-a * noop\n", "restart"),
    ] {
        let repo = interrupted("001-dry", rules, Some("after_coder_session"));
        let dead_temp = repo
            .spec_dir("001-dry")
            .join(".implementation_plan.json.tmp-999999999-0");
        std::fs::write(&dead_temp, "half").unwrap();
        assert_dry_run_predicts(&repo, &[], None);
        let real = &repo.events("001-dry");
        assert!(
            real.iter()
                .any(|e| e["event"] == "recovery_decision" && e["decision"] == expected),
            "{rules}"
        );
    }
}

fn states_where_the_verification_decides() {
    // core-b reported done and its check (test -f work/core-b.txt) passes: next.
    let repo = interrupted("001-dry", "", Some("after_coder_session@2"));
    let (_, dry) = recover_report(&repo, &["--dry-run"]);
    let action = &dry["specs"][0]["actions"][0];
    assert_eq!(
        action["if_verification"],
        serde_json::json!({"passes": "next", "fails": "continue"}),
        "{action:#}"
    );
    let text = stdout(&repo.runner(&["recover", "--dry-run"]));
    assert!(
        text.contains("chunk core-b: next if its verification passes, continue if it fails"),
        "{text}"
    );
    assert_dry_run_predicts(&repo, &[], Some(true));

    // core-b reported done, but its file is gone: the check fails and nothing is left: restart.
    let repo = interrupted("001-dry", "", Some("after_coder_session@2"));
    std::fs::remove_file(repo.worktree().join("work/core-b.txt")).unwrap();
    assert_dry_run_predicts(&repo, &[], Some(false));
    assert_eq!(repo.chunk("001-dry", "core-b")["status"], "pending");
}

fn human_review_and_retry_failed() {
    // The agent left conflict markers: a person must look (exit 3 both times).
    let repo = interrupted(
        "001-dry",
        "core-a * uncommitted\n",
        Some("after_coder_session"),
    );
    std::fs::write(
        repo.worktree().join("work/core-a.txt"),
        "<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n",
    )
    .unwrap();
    assert_dry_run_predicts(&repo, &[], None);
    assert_eq!(repo.chunk("001-dry", "core-a")["status"], "blocked");

    // A chunk failed for good: --retry-failed sets it back.
    let repo = repo_with_fixture_plan("002-dry");
    repo.write_config("[run]\nmax_attempts = 1\n");
    repo.script("core-b * fail broken\n");
    assert_exit(&repo.run_spec("002", &[]), 3);
    assert_dry_run_predicts(&repo, &["--retry-failed"], None);
    assert_eq!(repo.chunk("002-dry", "core-b")["status"], "pending");
}

#[test]
fn dry_run_restores_a_torn_plan_as_recover_does() {
    let repo = interrupted("001-torn", "core-a * done\n", Some("after_coder_session"));
    let plan = repo.plan_path("001-torn");
    let text = std::fs::read(&plan).unwrap();
    std::fs::write(&plan, &text[..text.len() / 2]).unwrap();
    let dry = repo.runner(&["recover", "--dry-run"]);
    assert_exit(&dry, 0);
    assert!(
        stdout(&dry).contains("would restore it from"),
        "{}",
        stdout(&dry)
    );
    assert_dry_run_predicts(&repo, &[], None);
    assert_eq!(repo.chunk("001-torn", "core-a")["status"], "completed");
}

#[test]
fn an_unreadable_worktree_is_named_and_predicted_alike() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let repo = interrupted(
        "001-perm",
        "core-a * uncommitted\n",
        Some("after_coder_session"),
    );
    let wt = repo.worktree();
    // SAFETY: geteuid has no preconditions.
    let as_root = unsafe { libc::geteuid() } == 0;
    const NOBODY: u32 = 65534;
    if as_root {
        // Root is never denied by file modes: runner runs as `nobody`, owning the repository.
        chown_tree(&repo.tmp.path().canonicalize().unwrap(), NOBODY);
    }
    std::fs::set_permissions(&wt, std::fs::Permissions::from_mode(0o000)).unwrap();
    let run = |args: &[&str]| {
        let mut cmd = repo.cmd(args);
        if as_root {
            cmd.uid(NOBODY).gid(NOBODY).env("HOME", repo.tmp.path());
        }
        cmd.output().unwrap()
    };
    let want = format!("{} cannot be read (permission denied)", wt.display());
    let status = run(&["status"]);
    assert!(stdout(&status).contains(&want), "{}", stdout(&status));
    let dry = run(&["recover", "--dry-run"]);
    let real = run(&["recover"]);
    std::fs::set_permissions(&wt, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_exit(&dry, 3);
    assert_exit(&real, 3);
    for out in [&dry, &real] {
        assert!(stdout(out).contains(&want), "{}", stdout(out));
    }
    assert!(
        stdout(&dry).contains("its files cannot be read, so none would be saved"),
        "{}",
        stdout(&dry)
    );
    assert!(
        stdout(&real).contains("Its files cannot be read, so none were saved"),
        "{}",
        stdout(&real)
    );
}

#[test]
fn a_dry_run_says_would_for_everything_it_did_not_do() {
    let repo = interrupted("001-would", "core-a * done\n", Some("after_coder_session"));
    let dir = repo.spec_dir("001-would");
    std::fs::write(
        dir.join(".implementation_plan.json.tmp-999999999-0"),
        "half",
    )
    .unwrap();
    let plan = repo.plan_path("001-would");
    let text = std::fs::read(&plan).unwrap();
    std::fs::write(&plan, &text[..text.len() / 2]).unwrap();
    let dry = stdout(&repo.runner(&["recover", "--dry-run"]));
    for would in [
        "would remove",
        "would restore it from",
        "would keep the broken file",
    ] {
        assert!(dry.contains(would), "{would:?} missing in:\n{dry}");
    }
    for claim in ["removed ", "restored it", "kept the broken"] {
        assert!(!dry.contains(claim), "a dry run claims {claim:?}:\n{dry}");
    }

    // A failed chunk: --retry-failed in a dry run.
    let repo = repo_with_fixture_plan("001-fail");
    repo.write_config("[run]\nmax_attempts = 1\n");
    repo.script("core-b * fail broken\n");
    assert_exit(&repo.run_spec("001", &[]), 3);
    let dry = stdout(&repo.runner(&["recover", "--dry-run", "--retry-failed"]));
    assert!(
        dry.contains("failed chunk would be set back to pending"),
        "{dry}"
    );
}

#[test]
fn a_dry_run_leaves_the_run_lock_record_alone() {
    let repo = interrupted("001-lock", "core-a * done\n", Some("after_coder_session"));
    let lock = repo.spec_dir("001-lock").join("run.lock");
    let before = std::fs::read(&lock).unwrap();
    assert_exit(&repo.runner(&["recover", "--dry-run"]), 0);
    assert_eq!(
        std::fs::read(&lock).unwrap(),
        before,
        "the holder record was rewritten"
    );
}
