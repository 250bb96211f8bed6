//! Crash tests: the real binary SIGKILLed at every failpoint (debug builds only, see
//! src/failpoint.rs), and 200 random `kill -9`s in a row. After every crash `runner recover`
//! must put things right and `runner run` must finish the spec with exactly the tree an
//! uninterrupted run makes; nothing that existed at the crash — completed chunks, commits,
//! uncommitted changes — may be lost (it is on the branch, or in a `refs/auto-claude/recovery/*`
//! ref).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Helpers: commands, git facts, the plan read leniently.
// ---------------------------------------------------------------------------------------------

fn agent() -> String {
    fixture("fake-agent").display().to_string()
}

fn branch(spec: &str) -> String {
    format!("auto-claude/{spec}")
}

/// `git ARGS` in `dir`; `None` if git fails (a ref or path that does not exist).
fn git_try(dir: &Path, args: &[&str]) -> Option<String> {
    git_result(dir, args).ok()
}

fn describe_status(status: &ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "unknown end".into(),
    }
}

fn output_text(out: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        describe_status(&out.status),
        stdout(out),
        stderr(out)
    )
}

/// How the fake agent behaves in a repository: the plan the planner copies, the default coder
/// action, per-chunk rules.
struct Agent {
    plan_file: PathBuf,
    default: &'static str,
    default_args: &'static str,
}

/// `runner run --auto-continue --spec SPEC` with the fake agent, and `failpoint` if given.
/// (`--auto-continue`: without a terminal runner must not ask whether to continue a spec that
/// has work; it continues.)
fn run_cmd(repo: &TestRepo, agent_cfg: &Agent, spec: &str, failpoint: Option<&str>) -> Command {
    let agent = agent();
    let mut cmd = repo.cmd(&[
        "run",
        "--auto-continue",
        "--spec",
        spec,
        "--agent-command",
        agent.as_str(),
    ]);
    configure(&mut cmd, agent_cfg, failpoint);
    cmd
}

fn recover_cmd(repo: &TestRepo, agent_cfg: &Agent, spec: &str, failpoint: Option<&str>) -> Command {
    let mut cmd = repo.cmd(&["recover", "--spec", spec]);
    configure(&mut cmd, agent_cfg, failpoint);
    cmd
}

fn configure(cmd: &mut Command, agent_cfg: &Agent, failpoint: Option<&str>) {
    cmd.env("FAKE_AGENT_PLAN", &agent_cfg.plan_file)
        .env("FAKE_AGENT_DEFAULT", agent_cfg.default)
        .env("FAKE_AGENT_DEFAULT_ARGS", agent_cfg.default_args)
        .env_remove("RUNNER_FAILPOINTS");
    if let Some(fp) = failpoint {
        cmd.env("RUNNER_FAILPOINTS", fp);
    }
}

/// The plan's chunks as (id, status), or why it cannot be read.
fn statuses(repo: &TestRepo, spec: &str) -> Result<Vec<(String, String)>, String> {
    let path = repo.plan_path(spec);
    let bytes = std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let plan: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{} does not parse: {e}", path.display()))?;
    let mut out = Vec::new();
    for phase in plan["phases"].as_array().ok_or("no phases array")? {
        let chunks = phase.get("subtasks").or_else(|| phase.get("chunks"));
        for c in chunks.and_then(Value::as_array).into_iter().flatten() {
            out.push((
                c["id"].as_str().unwrap_or("?").to_string(),
                c["status"].as_str().unwrap_or("pending").to_string(),
            ));
        }
    }
    Ok(out)
}

fn completed_of(statuses: &[(String, String)]) -> BTreeSet<String> {
    statuses
        .iter()
        .filter(|(_, s)| s == "completed")
        .map(|(id, _)| id.clone())
        .collect()
}

fn branch_commits(repo: &TestRepo, spec: &str) -> Vec<String> {
    git_try(&repo.root, &["rev-list", &branch(spec), "--"])
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

fn recovery_refs(repo: &TestRepo) -> Vec<String> {
    repo.git(&[
        "for-each-ref",
        "--format=%(refname)",
        "refs/auto-claude/recovery/",
    ])
    .lines()
    .map(str::to_string)
    .collect()
}

/// Every commit reachable from the spec's branch or any recovery ref.
fn reachable(repo: &TestRepo, spec: &str) -> HashSet<String> {
    let mut args = vec!["rev-list".to_string()];
    if git_try(&repo.root, &["rev-parse", "--verify", "-q", &branch(spec)]).is_some() {
        args.push(branch(spec));
    }
    args.extend(recovery_refs(repo));
    if args.len() == 1 {
        return HashSet::new();
    }
    args.push("--".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    repo.git(&args).lines().map(str::to_string).collect()
}

/// The worktree that has the spec's branch checked out, if any.
fn worktree_of(repo: &TestRepo, spec: &str) -> Option<PathBuf> {
    let list = repo.git(&["worktree", "list", "--porcelain"]);
    let want = format!("branch refs/heads/{}", branch(spec));
    let mut current = None;
    for line in list.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            current = Some(PathBuf::from(p));
        } else if line == want {
            return current.filter(|p| p.is_dir());
        }
    }
    None
}

/// Uncommitted files (modified or untracked) in the spec's worktree, with their blob ids.
fn dirty_files(repo: &TestRepo, spec: &str) -> Vec<(String, String)> {
    let Some(wt) = worktree_of(repo, spec) else {
        return Vec::new();
    };
    let Some(list) = git_try(&wt, &["ls-files", "-m", "-o", "--exclude-standard"]) else {
        return Vec::new();
    };
    let paths: Vec<String> = list
        .lines()
        .filter(|p| wt.join(p).is_file())
        .map(str::to_string)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if paths.is_empty() {
        return Vec::new();
    }
    let mut args = vec!["hash-object", "--"];
    args.extend(paths.iter().map(String::as_str));
    let blobs = git_in(&wt, &args);
    paths
        .into_iter()
        .zip(blobs.lines().map(str::to_string))
        .collect()
}

fn blob_at(repo: &TestRepo, rev: &str, path: &str) -> Option<String> {
    git_try(
        &repo.root,
        &["rev-parse", "-q", "--verify", &format!("{rev}:{path}")],
    )
    .map(|s| s.trim().to_string())
}

fn tree_of(repo: &TestRepo, spec: &str) -> String {
    repo.git(&["rev-parse", &format!("{}^{{tree}}", branch(spec))])
        .trim()
        .to_string()
}

/// Leftover temp files of atomic writes in the spec's folder.
fn temp_files(repo: &TestRepo, spec: &str) -> Vec<String> {
    std::fs::read_dir(repo.spec_dir(spec))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| n.starts_with('.') && n.contains(".tmp-"))
                .collect()
        })
        .unwrap_or_default()
}

/// What existed at a crash and must not be lost.
#[derive(Default, Debug)]
struct Facts {
    completed: BTreeSet<String>,
    commits: BTreeSet<String>,
    /// (path, blob) of uncommitted files in the spec's worktree at a crash that cut a chunk
    /// short (a chunk was `in_progress`): they must end up in the final tree or a recovery ref.
    dirty: BTreeSet<(String, String)>,
}

/// One crash's uncommitted files, and whether a chunk was in progress. With none in
/// progress, uncommitted files are the leftovers of a failed attempt, which runner hands to the
/// next attempt on purpose (an uninterrupted run does the same): recovery must keep them, but
/// the next attempt may change them.
struct Crash {
    dirty: Vec<(String, String)>,
    in_progress: bool,
}

impl Facts {
    fn record(&mut self, repo: &TestRepo, spec: &str) -> Result<Crash, String> {
        let mut in_progress = false;
        if repo.plan_path(spec).exists() {
            let s = statuses(repo, spec).map_err(|e| format!("at the crash: {e}"))?;
            self.completed.extend(completed_of(&s));
            in_progress = s.iter().any(|(_, st)| st == "in_progress");
        }
        self.commits.extend(branch_commits(repo, spec));
        // A kill while runner was still checking out a new slot leaves half-written files of
        // the branch's own tree: not work, and recovery removes the half-made slot.
        let creating = std::fs::read_dir(repo.root.join(".auto-claude/slots")).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".creating"))
        });
        let dirty = if creating {
            Vec::new()
        } else {
            dirty_files(repo, spec)
        };
        if in_progress {
            self.dirty.extend(dirty.iter().cloned());
        }
        Ok(Crash { dirty, in_progress })
    }

    /// Every commit seen is still reachable from the branch or a recovery ref.
    fn check_commits(&self, repo: &TestRepo, spec: &str) -> Vec<String> {
        let reach = reachable(repo, spec);
        self.commits
            .iter()
            .filter(|c| !reach.contains(*c))
            .map(|c| {
                let subject = git_try(&repo.root, &["log", "-1", "--format=%s", c])
                    .unwrap_or_default();
                format!(
                    "commit {c} ({}) was on {} at a crash and is now reachable from neither the branch nor a recovery ref",
                    subject.trim(),
                    branch(spec)
                )
            })
            .collect()
    }

    /// Every uncommitted file seen at a crash is in the final tree or in a recovery ref.
    fn check_dirty(&self, repo: &TestRepo, spec: &str) -> Vec<String> {
        let refs = recovery_refs(repo);
        let mut problems = Vec::new();
        for (path, blob) in &self.dirty {
            let in_branch = blob_at(repo, &branch(spec), path).as_deref() == Some(blob.as_str());
            let in_ref = || {
                refs.iter()
                    .any(|r| blob_at(repo, r, path).as_deref() == Some(blob.as_str()))
            };
            if !in_branch && !in_ref() {
                problems.push(format!(
                    "the uncommitted {path} (blob {blob}) that was in the worktree at a crash is neither in the final tree of {} nor in any recovery ref ({refs:?})",
                    branch(spec)
                ));
            }
        }
        problems
    }
}

/// Right after recovery, every file that was uncommitted at the crash is still in the spec's
/// worktree with the same content, or on the branch, or in a recovery ref.
fn check_dirty_kept(repo: &TestRepo, spec: &str, crash: &Crash) -> Vec<String> {
    if crash.dirty.is_empty() {
        return Vec::new();
    }
    let now: BTreeMap<String, String> = dirty_files(repo, spec).into_iter().collect();
    let wt = worktree_of(repo, spec);
    let refs = recovery_refs(repo);
    let mut problems = Vec::new();
    for (path, blob) in &crash.dirty {
        let in_wt = now.get(path) == Some(blob)
            || wt.as_ref().is_some_and(|wt| {
                wt.join(path).is_file() && git_in(wt, &["hash-object", "--", path]).trim() == blob
            });
        let kept = in_wt
            || blob_at(repo, &branch(spec), path).as_deref() == Some(blob.as_str())
            || refs
                .iter()
                .any(|r| blob_at(repo, r, path).as_deref() == Some(blob.as_str()));
        if !kept {
            problems.push(format!(
                "after recover, the uncommitted {path} (blob {blob}) of the crash{} is neither in the worktree, nor on {}, nor in a recovery ref",
                if crash.in_progress { ", with a chunk in progress," } else { "" },
                branch(spec)
            ));
        }
    }
    problems
}

/// The state right after `runner recover`: the plan parses, nothing is in progress or blocked,
/// no completed chunk was lost, no temp file is left.
fn check_after_recover(
    repo: &TestRepo,
    spec: &str,
    completed_before: &BTreeSet<String>,
) -> Result<BTreeSet<String>, Vec<String>> {
    let mut problems = Vec::new();
    if !repo.plan_path(spec).exists() && completed_before.is_empty() {
        // Crashed before the planner's plan was there: nothing to check but temp files.
        let temps = temp_files(repo, spec);
        return if temps.is_empty() {
            Ok(BTreeSet::new())
        } else {
            Err(vec![format!("temp files left after recover: {temps:?}")])
        };
    }
    let s = statuses(repo, spec).map_err(|e| vec![format!("after recover: {e}")])?;
    for (id, status) in &s {
        if status == "in_progress" || status == "blocked" {
            problems.push(format!("after recover, chunk {id} is {status}"));
        }
    }
    let completed = completed_of(&s);
    let lost: Vec<_> = completed_before.difference(&completed).collect();
    if !lost.is_empty() {
        problems.push(format!(
            "chunks completed before the crash are no longer completed after recover: {lost:?} (statuses {s:?})"
        ));
    }
    let temps = temp_files(repo, spec);
    if !temps.is_empty() {
        problems.push(format!("temp files left after recover: {temps:?}"));
    }
    if problems.is_empty() {
        Ok(completed)
    } else {
        Err(problems)
    }
}

/// A run to the end with no failpoint, and its reference: the same tree and statuses.
fn finish_and_compare(
    repo: &TestRepo,
    agent_cfg: &Agent,
    spec: &str,
    facts: &Facts,
    reference: &Reference,
) -> Vec<String> {
    let mut problems = Vec::new();
    let out = run_cmd(repo, agent_cfg, spec, None).output().unwrap();
    if out.status.code() != Some(0) {
        problems.push(format!(
            "runner run --spec {spec} after recovery did not finish: {}",
            output_text(&out)
        ));
        return problems;
    }
    match statuses(repo, spec) {
        Ok(s) => {
            if s != reference.statuses {
                problems.push(format!(
                    "final statuses {s:?} differ from the reference {:?}",
                    reference.statuses
                ));
            }
            let now = completed_of(&s);
            let lost: Vec<_> = facts.completed.difference(&now).collect();
            if !lost.is_empty() {
                problems.push(format!("completed chunks lost: {lost:?}"));
            }
        }
        Err(e) => problems.push(format!("after the final run: {e}")),
    }
    problems.extend(facts.check_commits(repo, spec));
    problems.extend(facts.check_dirty(repo, spec));
    problems.extend(base_files_deleted(repo, spec));
    let tree = tree_of(repo, spec);
    if tree != reference.tree {
        let listing = repo.git(&["ls-tree", "-r", &branch(spec)]);
        let ours: BTreeSet<&str> = listing.lines().collect();
        let theirs: BTreeSet<&str> = reference.listing.lines().collect();
        problems.push(format!(
            "the final tree of {} is {tree}, the reference is {}:\n    only in the final tree: {:?}\n    only in the reference: {:?}",
            branch(spec),
            reference.tree,
            ours.difference(&theirs).collect::<Vec<_>>(),
            theirs.difference(&ours).collect::<Vec<_>>()
        ));
    }
    problems
}

/// Commits of the spec's branch that delete a file of `main` (no agent here deletes any: such
/// a commit took in a checkout a crash cut short).
fn base_files_deleted(repo: &TestRepo, spec: &str) -> Vec<String> {
    let base: BTreeSet<String> = repo
        .git(&["ls-tree", "-r", "--name-only", "main"])
        .lines()
        .map(str::to_string)
        .collect();
    let log = repo.git(&[
        "log",
        "--format=commit %H %s",
        "--diff-filter=D",
        "--name-only",
        &format!("main..{}", branch(spec)),
        "--",
    ]);
    let mut problems = Vec::new();
    let mut commit = String::new();
    for line in log.lines().filter(|l| !l.is_empty()) {
        if let Some(c) = line.strip_prefix("commit ") {
            commit = c.to_string();
        } else if base.contains(line) {
            problems.push(format!(
                "the commit {commit} of {} deletes {line}, a file of main no agent deleted",
                branch(spec)
            ));
        }
    }
    problems
}

/// An uninterrupted run's result.
struct Reference {
    tree: String,
    listing: String,
    statuses: Vec<(String, String)>,
}

fn reference_run(
    plan: &Value,
    script: &str,
    default: &'static str,
    args: &'static str,
) -> Reference {
    let repo = TestRepo::new();
    let spec = "001-reference";
    repo.add_spec(spec);
    repo.script(script);
    let plan_file = repo.tmp.path().join("planner-plan.json");
    std::fs::write(&plan_file, serde_json::to_string_pretty(plan).unwrap()).unwrap();
    let cfg = Agent {
        plan_file,
        default,
        default_args: args,
    };
    let out = run_cmd(&repo, &cfg, spec, None).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "the reference run failed: {}",
        output_text(&out)
    );
    let statuses = statuses(&repo, spec).unwrap();
    assert!(
        statuses.iter().all(|(_, s)| s == "completed"),
        "{statuses:?}"
    );
    Reference {
        tree: tree_of(&repo, spec),
        listing: repo.git(&["ls-tree", "-r", &branch(spec)]),
        statuses,
    }
}

// ---------------------------------------------------------------------------------------------
// 1. A crash at every failpoint.
// ---------------------------------------------------------------------------------------------

/// Two phases, six chunks: `a1` and `b1` have no verification, the others have one; `a3` and
/// `b2` work in steps; the first attempts of `b1` and `b3` leave their work uncommitted without
/// reporting (failed attempts whose leftovers the next attempt finds).
fn crash_plan() -> Value {
    let check = |cmd: &str| json!({"type": "command", "command": cmd, "expected": "exit 0"});
    json!({
        "feature": "Crash test",
        "workflow_type": "feature",
        "phases": [
            {"id": "phase-1", "name": "Core", "depends_on": [], "subtasks": [
                {"id": "a1", "description": "Part a1", "status": "pending"},
                {"id": "a2", "description": "Part a2", "status": "pending",
                 "verification": check("test -f work/a2.txt")},
                {"id": "a3", "description": "Part a3 in steps", "status": "pending",
                 "verification": check("test -f work/a3/3.txt")}
            ]},
            {"id": "phase-2", "name": "More", "depends_on": ["phase-1"], "subtasks": [
                {"id": "b1", "description": "Part b1", "status": "pending"},
                {"id": "b2", "description": "Part b2 in steps", "status": "pending",
                 "verification": check("test -f work/b2/3.txt")},
                {"id": "b3", "description": "Part b3", "status": "pending",
                 "verification": check("test -f work/b3.txt")}
            ]}
        ]
    })
}

const CRASH_SCRIPT: &str =
    "a3 * steps 3 0.01\nb1 1 uncommitted\nb2 * steps 3 0.01\nb3 1 uncommitted\n";

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

const A: &str = "001-crash";
const B: &str = "002-other";

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
/// Failpoints exercised in tests/output.rs (re-pinning a deleted base branch).
const OUTPUT_POINTS: &[&str] = &["after_base_repin"];
/// Failpoints exercised in tests/status_speed.rs (`recover --all` between its look and its
/// report).
const STATUS_POINTS: &[&str] = &["recover_all_looked"];
/// Failpoints exercised in tests/usage_limits.rs (a crash between the pause and the attempt's
/// record).
const LIMIT_POINTS: &[&str] = &["after_limit_paused"];
/// Failpoints exercised in tests/jobs.rs (`run --jobs` between a spec's check and its job's
/// start: another runner takes the spec there).
const JOBS_POINTS: &[&str] = &["jobs_job_checked"];
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

// ---------------------------------------------------------------------------------------------
// 2. 200 random SIGKILLs in a row.
// ---------------------------------------------------------------------------------------------

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
    let seed = std::env::var("RUNNER_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
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

// ---------------------------------------------------------------------------------------------
// 3. Slots a crash left half created, by hand (as an older runner or `git worktree add` killed
//    on its way leaves them, with no marker of runner's).
// ---------------------------------------------------------------------------------------------

/// A repository whose `main` has two files, spec A with `crash_plan`, and its branch.
fn repo_for_a_half_created_slot() -> (TestRepo, Agent) {
    let repo = TestRepo::new();
    repo.write("docs/guide.md", "# guide\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "guide"]);
    repo.add_spec(A);
    repo.write_plan(A, &serde_json::to_string_pretty(&crash_plan()).unwrap());
    repo.script(CRASH_SCRIPT);
    repo.git(&["branch", &branch(A), "main"]);
    let cfg = Agent {
        plan_file: repo.tmp.path().join("unused-plan.json"),
        default: "idem",
        default_args: "",
    };
    (repo, cfg)
}

fn finish_and_check_no_base_file_deleted(repo: &TestRepo, cfg: &Agent) {
    let out = run_cmd(repo, cfg, A, None).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let deleted = base_files_deleted(repo, A);
    assert!(deleted.is_empty(), "{deleted:?}\n{}", output_text(&out));
    for file in ["README.md", "docs/guide.md"] {
        assert!(
            blob_at(repo, &branch(A), file).is_some(),
            "{file} is gone from {}",
            branch(A)
        );
    }
}

#[test]
fn a_slot_whose_checkout_was_cut_off_is_finished_not_committed_from() {
    let (repo, cfg) = repo_for_a_half_created_slot();
    repo.git(&[
        "worktree",
        "add",
        "-q",
        ".worktrees/auto-claude",
        &branch(A),
    ]);
    // A checkout killed on its way: one file written, no index yet.
    std::fs::remove_file(repo.root.join(".git/worktrees/auto-claude/index")).unwrap();
    std::fs::remove_file(repo.root.join(".worktrees/auto-claude/README.md")).unwrap();
    finish_and_check_no_base_file_deleted(&repo, &cfg);
}

#[test]
fn an_unfinished_slot_registration_does_not_block_its_creation() {
    let (repo, cfg) = repo_for_a_half_created_slot();
    // `worktree add` killed after making the registration's folder, before its `gitdir`.
    std::fs::create_dir_all(repo.root.join(".git/worktrees/auto-claude")).unwrap();
    std::fs::create_dir_all(repo.root.join(".worktrees/auto-claude")).unwrap();
    finish_and_check_no_base_file_deleted(&repo, &cfg);
}

#[test]
fn a_folder_with_files_beside_an_unfinished_registration_is_moved_aside_not_deleted() {
    let (repo, cfg) = repo_for_a_half_created_slot();
    std::fs::create_dir_all(repo.root.join(".git/worktrees/auto-claude")).unwrap();
    repo.write(".worktrees/auto-claude/notes.txt", "mine\n");
    finish_and_check_no_base_file_deleted(&repo, &cfg);
    let kept: Vec<PathBuf> = std::fs::read_dir(repo.root.join(".worktrees"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("notes.txt"))
        .filter(|p| p.is_file())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(std::fs::read_to_string(&kept[0]).unwrap(), "mine\n");
}
