//! `runner review`: everything about a spec's work, read-only: nothing on disk changes.

use serde::Serialize;
use serde_json::Value;

use crate::error::RunnerError;
use crate::git::merge::{FileChange, file_changes, preview};
use crate::git::{branch_for, dirty_paths, log_between, slot_holding};
use crate::plan::{Plan, Status};
use crate::store::workspace::{SpecPaths, Workspace};

#[derive(Debug, Serialize)]
pub struct Review {
    pub spec: String,
    pub branch: String,
    pub base_branch: String,
    /// Commits on the base branch since the spec's branch forked from it.
    pub base_moved: usize,
    pub commits: Vec<CommitLine>,
    pub files: Vec<FileChange>,
    pub progress: Vec<PhaseProgress>,
    pub verifications: Vec<Value>,
    pub merge: MergeCheck,
    pub uncommitted: Vec<String>,
    pub worktree: Option<String>,
    pub last_activity: Option<String>,
    #[serde(skip)]
    pub merge_base: Option<git2::Oid>,
    #[serde(skip)]
    pub tip: git2::Oid,
}

/// A commit as every command lists it (`review`, `merge`): its id, subject, and the chunk it
/// belongs to, if any.
#[derive(Debug, Clone, Serialize)]
pub struct CommitLine {
    pub commit: String,
    pub summary: String,
    pub chunk: Option<String>,
}

/// One line for a person: the short id and the subject.
impl std::fmt::Display for CommitLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = self.commit.get(..10).unwrap_or(&self.commit);
        write!(f, "{short} {}", self.summary)
    }
}

/// The commits on `tip` that `fork` does not have, newest first, each with its chunk.
pub fn commit_lines(
    repo: &git2::Repository,
    plan: Option<&Plan>,
    fork: git2::Oid,
    tip: git2::Oid,
) -> anyhow::Result<Vec<CommitLine>> {
    Ok(log_between(repo, fork, tip)?
        .into_iter()
        .map(|(oid, summary)| CommitLine {
            commit: oid.to_string(),
            chunk: chunk_of(repo, plan, oid, &summary),
            summary,
        })
        .collect())
}

#[derive(Debug, Serialize)]
pub struct PhaseProgress {
    pub phase: String,
    pub name: Option<String>,
    pub completed: usize,
    pub total: usize,
}

#[derive(Debug, Serialize)]
pub struct MergeCheck {
    pub clean: bool,
    pub conflicts: Vec<String>,
}

/// The base branch a spec merges into: pinned in its plan, else the config, else the branch
/// checked out now.
pub fn base_branch(ws: &Workspace, plan: Option<&Plan>) -> anyhow::Result<String> {
    if let Some(b) = plan.and_then(|p| p.str_field("base_branch")) {
        return Ok(b.to_string());
    }
    let config = ws.config()?;
    config
        .git
        .base_branch
        .or_else(|| ws.main.current_branch())
        .ok_or_else(|| {
            // HEAD on a branch with no commit yet is unborn, not detached.
            let unborn = matches!(ws.main.repo.head(), Err(e) if e.code() == git2::ErrorCode::UnbornBranch);
            if unborn {
                RunnerError::bad_input("no base branch is pinned for this spec and this repository has no commits yet: nothing has been built to merge")
                    .with_hint("make a first commit, then `runner run`")
            } else {
                RunnerError::bad_input("no base branch is pinned for this spec and HEAD is detached")
                    .with_hint("check out the branch to merge into (git switch NAME), or set [git] base_branch")
            }
            .into()
        })
}

/// The chunk a commit landed: matched against the plan's ids when there is a plan (an id may
/// hold ` - `), else read from the subject.
fn chunk_of(
    repo: &git2::Repository,
    plan: Option<&Plan>,
    oid: git2::Oid,
    summary: &str,
) -> Option<String> {
    let Some(plan) = plan else {
        return crate::plan::chunk_id_of_commit(summary).map(str::to_string);
    };
    // runner's own record first: an attempt names the commit it made (or the agent made during
    // it). A subject can be forged (`auto-claude: <other chunk> - …`), so it only speaks for a
    // commit no attempt recorded, and only for a chunk that has no recorded commit of its own.
    let recorded = |c: &crate::plan::Chunk| -> Vec<String> {
        c.attempts().into_iter().filter_map(|a| a.commit).collect()
    };
    let id = oid.to_string();
    if let Some(chunk) = plan.chunks().find(|c| recorded(c).contains(&id)) {
        return Some(chunk.id.clone());
    }
    let commit = repo.find_commit(oid).ok()?;
    let pos = plan.chunk_of_commit(commit.message()?)?;
    let chunk = plan.chunk(pos);
    recorded(chunk).is_empty().then(|| chunk.id.clone())
}

pub fn review(ws: &Workspace, paths: &SpecPaths) -> anyhow::Result<Review> {
    let plan = paths.plan.load()?;
    let branch = branch_for(&paths.name);
    let tip = ws.main.branch_tip(&branch).ok_or_else(|| {
        RunnerError::bad_input(format!(
            "spec {} has no branch {branch}: nothing has been built yet",
            paths.name,
        ))
        .with_hint(format!(
            "build it with `runner run --spec {}`",
            crate::sh(&paths.name)
        ))
    })?;
    let base = base_branch(ws, plan.as_ref())?;
    let base_tip = ws.main.branch_tip(&base).ok_or_else(|| {
        RunnerError::bad_input(format!("the base branch {base:?} does not exist"))
    })?;
    let repo = &ws.main.repo;
    let merge_base = repo.merge_base(base_tip, tip).ok();
    let fork = merge_base.unwrap_or(base_tip);
    let commits = commit_lines(repo, plan.as_ref(), fork, tip)?;
    let base_moved = merge_base
        .map(|mb| {
            log_between(repo, mb, base_tip)
                .map(|l| l.len())
                .unwrap_or(0)
        })
        .unwrap_or(0);
    let files = file_changes(repo, fork, tip)?;
    let check = preview(repo, base_tip, tip)?;
    let slot = slot_holding(&ws.main, &branch);
    let uncommitted = match &slot {
        Some(s) => dirty_paths(&s.open(&ws.main)?)?,
        None => Vec::new(),
    };
    let progress = plan
        .as_ref()
        .map(|p| {
            p.phases
                .iter()
                .enumerate()
                .map(|(i, ph)| PhaseProgress {
                    phase: ph.label(i),
                    name: ph.name().map(str::to_string),
                    completed: ph
                        .chunks
                        .iter()
                        .filter(|c| c.status == Status::Completed)
                        .count(),
                    total: ph.chunks.len(),
                })
                .collect()
        })
        .unwrap_or_default();
    let events = crate::store::read_events_containing(&paths.dir, "\"verification\"");
    let mut verifications: Vec<Value> = Vec::new();
    for e in events.into_iter().filter(|e| e["event"] == "verification") {
        verifications.retain(|v| v["chunk"] != e["chunk"]);
        verifications.push(serde_json::json!({
            "chunk": e["chunk"], "command": e["command"], "passed": e["passed"], "time": e["time"],
        }));
    }
    let last_activity = last_activity(paths);
    Ok(Review {
        spec: paths.name.clone(),
        branch,
        base_branch: base,
        base_moved,
        commits,
        files,
        progress,
        verifications,
        merge: MergeCheck {
            clean: check.conflicts.is_empty(),
            conflicts: check.conflicts,
        },
        uncommitted,
        worktree: slot.map(|s| s.path.display().to_string()),
        last_activity,
        merge_base,
        tip,
    })
}

/// The time of the journal's last event.
pub fn last_activity(paths: &SpecPaths) -> Option<String> {
    let text = crate::store::journal::read_text(&paths.dir)?;
    text.lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .and_then(|v| v["time"].as_str().map(str::to_string))
}

/// The human form.
pub fn render(r: &Review) -> String {
    let mut out = format!("Spec {} on {} (base {}", r.spec, r.branch, r.base_branch);
    if r.base_moved > 0 {
        out.push_str(&format!(
            ", which moved {} commit(s) since the spec started",
            r.base_moved
        ));
    }
    out.push_str(")\n");
    out.push_str(&format!(
        "\n{} commit(s) ahead of {}:\n",
        r.commits.len(),
        r.base_branch
    ));
    for c in &r.commits {
        out.push_str(&format!(
            "  {} {}\n",
            crate::git::short_id(&c.commit),
            c.summary
        ));
    }
    let (adds, dels) = r
        .files
        .iter()
        .fold((0, 0), |(a, d), f| (a + f.additions, d + f.deletions));
    out.push_str(&format!(
        "\n{} file(s) changed, +{adds} -{dels}:\n",
        r.files.len()
    ));
    for f in &r.files {
        out.push_str(&format!(
            "  {:<9} {} (+{} -{})\n",
            f.change, f.path, f.additions, f.deletions
        ));
    }
    if !r.progress.is_empty() {
        out.push_str("\nPlan progress:\n");
        for p in &r.progress {
            out.push_str(&format!(
                "  {}{}: {}/{}\n",
                p.phase,
                p.name
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default(),
                p.completed,
                p.total
            ));
        }
    }
    if !r.verifications.is_empty() {
        out.push_str("\nLast verifications:\n");
        for v in &r.verifications {
            out.push_str(&format!(
                "  {} {}: {}\n",
                if v["passed"] == true { "pass" } else { "FAIL" },
                v["chunk"].as_str().unwrap_or("?"),
                v["command"].as_str().unwrap_or("?")
            ));
        }
    }
    if !r.uncommitted.is_empty() {
        out.push_str(&format!(
            "\nUncommitted in {}:\n",
            r.worktree.as_deref().unwrap_or("the worktree")
        ));
        for p in &r.uncommitted {
            out.push_str(&format!("  {p}\n"));
        }
    }
    if r.merge.clean {
        out.push_str(&format!("\nIt merges cleanly into {}.\n", r.base_branch));
    } else {
        out.push_str(&format!(
            "\nIt would NOT merge cleanly into {}: conflicts in {}\n",
            r.base_branch,
            r.merge.conflicts.join(", ")
        ));
    }
    out
}
