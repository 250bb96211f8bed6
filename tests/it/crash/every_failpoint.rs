//! A crash at every failpoint of the source (listed here, checked against `src/failpoint.rs`'s
//! callers) loses nothing: the kill, then `recover`, then the run finishes as a run never killed.

use super::*;

fn crash_reference() -> &'static Reference {
    static REF: OnceLock<Reference> = OnceLock::new();
    REF.get_or_init(|| reference_run(&crash_plan(), CRASH_SCRIPT, "idem", ""))
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Run,
    Recover,
}

/// A crash case: commands, each run with a failpoint and each expected to die by SIGKILL. The
/// last step's spec is the one recovered and finished first; the others after it.
struct Case {
    name: &'static str,
    crashes: &'static [(&'static str, Step, &'static str)],
}

// The hits in an uninterrupted run of `crash_plan` (planner first; atomic writes: #1 is the
// accepted plan (.git/info/exclude is appended to, not replaced), #2 a1's take, then each
// completion in one write with the next chunk's take (#3 a1's and a2's take, #4 a2's and a3's,
// #5 a3's and b1's; a failed attempt is a write of its own, its retry's take another); the agent's `runner chunk done` inherits RUNNER_FAILPOINTS but makes one write, so
// its `@1` only fires in a run that got past runner's own `@1`, which none does):
//   after_spawn: 1 planner, 2 a1, 3 a2, 4 a2's check, 5 a3, 6 a3's check, 7 b1 (attempt 1),
//                8 b1 (attempt 2), 9 b2, 10 b2's check, 11 b3/1, 12 b3/2, 13 b3's check
//   after_take: 1 a1, 2 a2, 3 a3, 4 b1/1, 5 b1/2 (its first attempt's work in the worktree),
//               6 b2, 7 b3/1, 8 b3/2
//   after_coder_session: 1 a1, 2 a2, 3 a3, 4 b1/1, 5 b1/2, 6 b2, 7 b3/1, 8 b3/2
//   after_fail: 1 b1/1, 2 b3/1
//   after_commit / after_complete: 1 a1, 2 a2, 3 a3, 4 b1, 5 b2, 6 b3
//   advisory_before_rename / advisory_after_rename (the run record and the checkpoint, durable
//   writes of their own): 1 the run's record as it holds its locks, 2 the run_start checkpoint,
//   3 a1's chunk_done checkpoint, 4 a2's, …
const CASES: &[Case] = &[
    Case {
        name: "advisory write: before the rename of the run's first record",
        crashes: &[(A, Step::Run, "advisory_before_rename@1")],
    },
    Case {
        name: "advisory write: after the rename of a1's checkpoint",
        crashes: &[(A, Step::Run, "advisory_after_rename@3")],
    },
    Case {
        name: "atomic write: before the rename of the accepted plan",
        crashes: &[(A, Step::Run, "atomic_before_rename@1")],
    },
    Case {
        name: "before runner's lines are appended to .git/info/exclude",
        crashes: &[(A, Step::Run, "exclude_before_append")],
    },
    Case {
        name: "atomic write: before the rename of a1's completion (with a2's take)",
        crashes: &[(A, Step::Run, "atomic_before_rename@3")],
    },
    Case {
        name: "atomic write: after the rename of a1's take",
        crashes: &[(A, Step::Run, "atomic_after_rename@2")],
    },
    Case {
        name: "atomic write: after the rename of a3's completion (with b1's take)",
        crashes: &[(A, Step::Run, "atomic_after_rename@5")],
    },
    Case {
        name: "slot prepared",
        crashes: &[(A, Step::Run, "after_prepare_slot@1")],
    },
    Case {
        name: "slot creation marked, nothing made yet",
        crashes: &[(A, Step::Run, "slot_create_marked@1")],
    },
    Case {
        name: "slot registered, nothing checked out",
        crashes: &[(A, Step::Run, "slot_registered@1")],
    },
    Case {
        name: "slot checkout cut off before its first file",
        crashes: &[(A, Step::Run, "slot_checkout_file@1")],
    },
    Case {
        name: "slot checkout cut off after its first file, before the index",
        crashes: &[(A, Step::Run, "slot_checkout_file@2")],
    },
    Case {
        name: "slot checked out, its creation marker not yet removed",
        crashes: &[(A, Step::Run, "slot_checked_out@1")],
    },
    Case {
        name: "slot creation cut off twice in a row",
        crashes: &[
            (A, Step::Run, "slot_checkout_file@1"),
            (A, Step::Run, "slot_registered@1"),
        ],
    },
    Case {
        name: "planner spawned",
        crashes: &[(A, Step::Run, "after_spawn@1")],
    },
    Case {
        name: "plan accepted",
        crashes: &[(A, Step::Run, "after_plan_accepted@1")],
    },
    Case {
        name: "a1 taken",
        crashes: &[(A, Step::Run, "after_take@1")],
    },
    Case {
        name: "a1's agent spawned",
        crashes: &[(A, Step::Run, "after_spawn@2")],
    },
    Case {
        name: "a1's session ended (reported done, no check)",
        crashes: &[(A, Step::Run, "after_coder_session@1")],
    },
    Case {
        name: "a1 committed",
        crashes: &[(A, Step::Run, "after_commit@1")],
    },
    Case {
        name: "a2's verification spawned",
        crashes: &[(A, Step::Run, "after_spawn@4")],
    },
    Case {
        name: "a2 completed",
        crashes: &[(A, Step::Run, "after_complete@2")],
    },
    Case {
        name: "a3's session ended (steps, check)",
        crashes: &[(A, Step::Run, "after_coder_session@3")],
    },
    Case {
        name: "b1's failed attempt recorded",
        crashes: &[(A, Step::Run, "after_fail@1")],
    },
    Case {
        name: "b1 taken again over its leftovers",
        crashes: &[(A, Step::Run, "after_take@5")],
    },
    Case {
        name: "b1 committed",
        crashes: &[(A, Step::Run, "after_commit@4")],
    },
    Case {
        name: "b2's agent spawned (steps)",
        crashes: &[(A, Step::Run, "after_spawn@9")],
    },
    Case {
        name: "b2 completed",
        crashes: &[(A, Step::Run, "after_complete@5")],
    },
    Case {
        name: "b3's first session ended without a report (its check passes on the leftovers)",
        crashes: &[(A, Step::Run, "after_coder_session@7")],
    },
    Case {
        name: "b3's failed attempt recorded",
        crashes: &[(A, Step::Run, "after_fail@2")],
    },
    Case {
        name: "b3 completed: the last chunk",
        crashes: &[(A, Step::Run, "after_complete@6")],
    },
    Case {
        name: "recover: partial work saved to a ref, plan not yet updated",
        crashes: &[
            (A, Step::Run, "after_take@5"),
            (A, Step::Recover, "after_recovery_ref@1"),
        ],
    },
    Case {
        name: "run's own recovery: partial work saved, plan not yet updated",
        crashes: &[
            (A, Step::Run, "after_take@5"),
            (A, Step::Run, "after_recovery_ref@1"),
        ],
    },
    Case {
        name: "recover: a reported chunk committed by recovery, plan not yet updated",
        crashes: &[
            (A, Step::Run, "after_coder_session@1"),
            (A, Step::Recover, "after_recovery_ref@1"),
        ],
    },
    Case {
        name: "recover: decision written",
        crashes: &[
            (A, Step::Run, "after_take@5"),
            (A, Step::Recover, "after_recovery_decision@1"),
        ],
    },
    Case {
        name: "run's own recovery: decision written",
        crashes: &[
            (A, Step::Run, "after_coder_session@2"),
            (A, Step::Run, "after_recovery_decision@1"),
        ],
    },
    Case {
        name: "slot switched from a crashed spec: its changes snapshotted, slot not yet cleaned",
        // b1's first attempt leaves its work uncommitted and unreported: recovery keeps it as
        // partial work (continue), so the slot still has changes to save before it switches.
        crashes: &[
            (A, Step::Run, "after_coder_session@4"),
            (B, Step::Run, "after_slot_snapshot@1"),
        ],
    },
    Case {
        name: "slot switched from a crashed spec, the other spec crashes later",
        crashes: &[
            (A, Step::Run, "after_coder_session@1"),
            (B, Step::Run, "after_take@1"),
        ],
    },
    Case {
        name: "slot switch killed after its marker, before the checkout",
        crashes: &[
            (A, Step::Run, "after_coder_session@4"),
            (B, Step::Run, "slot_switch_marked@1"),
        ],
    },
    Case {
        name: "slot switch killed between the checkout and moving HEAD",
        // The slot holds B's files under A's HEAD: A's next run must not commit them.
        crashes: &[
            (A, Step::Run, "after_coder_session@4"),
            (B, Step::Run, "slot_switch_checked_out@1"),
        ],
    },
    Case {
        name: "slot switched from a crashed spec (its reported chunk has a check)",
        // a2 reported done: recovery completes it in its worktree before the slot switches,
        // so nothing is left to snapshot; B then crashes taking its first chunk.
        crashes: &[
            (A, Step::Run, "after_coder_session@2"),
            (B, Step::Run, "after_take@1"),
        ],
    },
];

/// Every failpoint in src/ must appear in some case.
const ALL_POINTS: &[&str] = &[
    "after_spawn",
    "after_coder_session",
    "after_prepare_slot",
    "after_slot_snapshot",
    "atomic_before_rename",
    "atomic_after_rename",
    "advisory_before_rename",
    "advisory_after_rename",
    "exclude_before_append",
    "after_take",
    "after_commit",
    "after_complete",
    "after_fail",
    "after_plan_accepted",
    "after_recovery_ref",
    "after_recovery_decision",
    "slot_switch_marked",
    "slot_switch_checked_out",
    "slot_create_marked",
    "slot_registered",
    "slot_checkout_file",
    "slot_checked_out",
];

/// Failpoints of merge, discard and undo, exercised in tests/lifecycle.rs and
/// tests/lifecycle_safety.rs.
const LIFECYCLE_POINTS: &[&str] = &[
    // Recovery's own saving steps: tests/lifecycle_safety.rs,
    // recovery_killed_while_saving_changes_loses_nothing.
    "lifecycle_late_changes_saved",
    "merge_rollback_saved",
    "backup_refs_written",
    "merge_intent_recorded",
    "merge_after_backup",
    "merge_files_written",
    "merge_after_ref",
    "merge_worktree_removed",
    "merge_branch_deleted",
    "worktree_folder_removed",
    "discard_intent_recorded",
    "discard_after_backup",
    "discard_worktree_removed",
    "discard_branch_deleted",
    "discard_plan_reset",
    "undo_intent_recorded",
    "undo_target_files_reset",
    "undo_target_reset",
    "undo_branch_restored",
    "undo_slot_created",
    "undo_worktree_restored",
    "undo_plan_restored",
    "undo_ref_moved",
];

/// Failpoints of the checks against a misbehaving agent, exercised in tests/hostile.rs.
const HOSTILE_POINTS: &[&str] = &["after_history_ref", "after_unopenable_saved"];
/// Failpoints exercised in tests/it/output/errors.rs (re-pinning a deleted base branch).
const OUTPUT_POINTS: &[&str] = &["after_base_repin"];
/// Failpoints exercised in tests/it/fast_path_equals_slow_status.rs (`recover --all` between its look and its
/// report).
const STATUS_POINTS: &[&str] = &["recover_all_looked"];
/// Failpoints exercised in tests/usage_limits.rs (a crash between the pause and the attempt's
/// record).
const LIMIT_POINTS: &[&str] = &["after_limit_paused"];
/// Failpoints exercised in tests/jobs.rs (`run --jobs` between a spec's check and its job's
/// start: another runner takes the spec there).
const JOBS_POINTS: &[&str] = &["jobs_job_checked"];
/// Failpoints counted in tests/it/worker.rs (how often an idle worker looks at its remote: a
/// spec whose run failed is not taken again at each look).
const WORKER_POINTS: &[&str] = &["worker_view_fetched"];
/// Failpoints exercised in tests/it/new.rs (`runner new` killed with its spec staged, and just
/// after its rename into place; detection slowed past its bound).
const NEW_POINTS: &[&str] = &[
    "new_spec_staged",
    "new_spec_renamed",
    "detect_read",
    "detect_judge",
];

#[test]
fn every_failpoint_in_the_source_is_exercised() {
    fn scan(dir: &std::path::Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                scan(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                for part in text.split("failpoint::hit(\"").skip(1) {
                    out.push(part.split('"').next().unwrap().to_string());
                }
            }
        }
    }
    let mut found = Vec::new();
    scan(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut found,
    );
    assert!(!found.is_empty());
    for point in found {
        assert!(
            ALL_POINTS.contains(&point.as_str())
                || LIFECYCLE_POINTS.contains(&point.as_str())
                || HOSTILE_POINTS.contains(&point.as_str())
                || OUTPUT_POINTS.contains(&point.as_str())
                || STATUS_POINTS.contains(&point.as_str())
                || LIMIT_POINTS.contains(&point.as_str())
                || JOBS_POINTS.contains(&point.as_str())
                || WORKER_POINTS.contains(&point.as_str())
                || NEW_POINTS.contains(&point.as_str()),
            "the failpoint {point} in src/ is exercised by no crash test"
        );
    }
}

fn run_case(case: &Case) -> Vec<String> {
    let reference = crash_reference();
    let repo = TestRepo::new();
    repo.script(CRASH_SCRIPT);
    let plan_file = repo.tmp.path().join("planner-plan.json");
    std::fs::write(
        &plan_file,
        serde_json::to_string_pretty(&crash_plan()).unwrap(),
    )
    .unwrap();
    let cfg = Agent {
        plan_file,
        default: "idem",
        default_args: "",
    };
    let mut specs: Vec<&str> = Vec::new();
    for (spec, _, _) in case.crashes.iter().rev() {
        if !specs.contains(spec) {
            specs.push(spec);
            repo.add_spec(spec);
        }
    }
    let mut facts: BTreeMap<&str, Facts> = specs.iter().map(|s| (*s, Facts::default())).collect();
    // The last crash's uncommitted files, per spec.
    let mut last_crash: BTreeMap<&str, Crash> = BTreeMap::new();
    for (spec, step, point) in case.crashes {
        let mut cmd = match step {
            Step::Run => run_cmd(&repo, &cfg, spec, Some(point)),
            Step::Recover => recover_cmd(&repo, &cfg, spec, Some(point)),
        };
        let out = cmd.output().unwrap();
        if out.status.signal() != Some(libc::SIGKILL) {
            return vec![format!(
                "{step:?} --spec {spec} with RUNNER_FAILPOINTS={point} did not die by SIGKILL (the point was not reached?): {}",
                output_text(&out)
            )];
        }
        for s in &specs {
            match facts.get_mut(s).unwrap().record(&repo, s) {
                Ok(crash) => {
                    last_crash.insert(s, crash);
                }
                Err(e) => return vec![e],
            }
        }
    }
    let mut problems = Vec::new();
    for spec in &specs {
        let f = &facts[spec];
        let out = recover_cmd(&repo, &cfg, spec, None).output().unwrap();
        if out.status.code() != Some(0) {
            problems.push(format!(
                "runner recover --spec {spec} failed: {}",
                output_text(&out)
            ));
            continue;
        }
        if let Err(p) = check_after_recover(&repo, spec, &f.completed) {
            problems.extend(p.into_iter().map(|p| format!("{spec}: {p}")));
        }
        problems.extend(
            check_dirty_kept(&repo, spec, &last_crash[spec])
                .into_iter()
                .map(|p| format!("{spec}: {p}")),
        );
        // Commits are checked right after recovery too: a later run might re-create equal
        // content, but never the same commit.
        problems.extend(f.check_commits(&repo, spec));
        problems.extend(
            finish_and_compare(&repo, &cfg, spec, f, reference)
                .into_iter()
                .map(|p| format!("{spec}: {p}")),
        );
    }
    if !problems.is_empty() {
        problems.push(format!(
            "(repository kept at {})",
            repo.tmp.path().display()
        ));
        std::mem::forget(repo);
    }
    problems
}

#[test]
fn a_crash_at_every_failpoint_loses_nothing() {
    let started = Instant::now();
    let listed: HashSet<&str> = CASES
        .iter()
        .flat_map(|c| {
            c.crashes
                .iter()
                .map(|(_, _, p)| p.split('@').next().unwrap())
        })
        .collect();
    for p in ALL_POINTS {
        assert!(listed.contains(p), "no case exercises the failpoint {p}");
    }
    crash_reference();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(case) = CASES.get(i) else { break };
                    let t = Instant::now();
                    let problems = run_case(case);
                    eprintln!(
                        "crash case {:>2} {:?}: {} in {:.1?}",
                        i,
                        case.name,
                        if problems.is_empty() { "ok" } else { "FAILED" },
                        t.elapsed()
                    );
                    results.lock().unwrap().push((i, problems));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    let failures: Vec<String> = results
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(i, p)| {
            let case = &CASES[*i];
            format!(
                "case {:?} ({:?}):\n  - {}",
                case.name,
                case.crashes,
                p.join("\n  - ")
            )
        })
        .collect();
    eprintln!("{} crash cases in {:.1?}", CASES.len(), started.elapsed());
    assert!(
        failures.is_empty(),
        "{} of {} crash cases lost something:\n\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n\n")
    );
}
