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

mod every_failpoint;
mod half_created_slots;
mod random_kills;

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

const A: &str = "001-crash";
const B: &str = "002-other";
