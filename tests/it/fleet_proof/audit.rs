//! What the remote holds at the end, read from the bare repository itself: each spec's
//! published plan, the chunk commits on its branch (one per chunk: none lost, none duplicated),
//! and from the hook's log of accepted updates, the takeovers of leases and any rewrite of a
//! branch or a published folder.

use std::collections::BTreeMap;

use serde_json::Value;

use super::harness::{Remote, Update};

const COMMIT_PREFIX: &str = "auto-claude: ";

#[derive(Debug, Default)]
pub struct SpecAudit {
    pub spec: String,
    /// The published plan's chunk ids in file order, with their status.
    pub chunks: Vec<(String, String)>,
    /// Commits on the remote branch (after main) per chunk id.
    pub commits: BTreeMap<String, usize>,
    /// Subjects of commits on the branch that name no chunk of the plan.
    pub strangers: Vec<String>,
    /// Why the spec could not be read (no published folder, no plan).
    pub unreadable: Option<String>,
}

impl SpecAudit {
    pub fn lost(&self) -> usize {
        self.chunks
            .iter()
            .filter(|(id, _)| self.commits.get(id).copied().unwrap_or(0) == 0)
            .count()
    }

    pub fn duplicated(&self) -> usize {
        self.commits.values().map(|n| n.saturating_sub(1)).sum()
    }

    pub fn complete(&self) -> bool {
        self.unreadable.is_none()
            && !self.chunks.is_empty()
            && self.chunks.iter().all(|(_, s)| s == "completed")
    }
}

/// The remote's own account of a fleet's work.
#[derive(Debug, Default)]
pub struct Audit {
    pub specs: Vec<SpecAudit>,
    /// Accepted updates that were not fast-forwards of a branch or a published folder (or
    /// deleted one): work lost on the remote.
    pub rewrites: Vec<String>,
    /// A lease taken from a holder that had not released it (another worker's lease replaced).
    pub takeovers: usize,
    /// A lease taken where there was none.
    pub takes: usize,
    /// Lease renewals (the same worker's lease replaced by its next).
    pub renewals: usize,
}

impl Audit {
    pub fn lost(&self) -> usize {
        self.specs.iter().map(SpecAudit::lost).sum()
    }

    pub fn duplicated(&self) -> usize {
        self.specs.iter().map(SpecAudit::duplicated).sum()
    }

    pub fn strangers(&self) -> usize {
        self.specs.iter().map(|s| s.strangers.len()).sum()
    }

    pub fn all_complete(&self) -> bool {
        self.specs.iter().all(SpecAudit::complete)
    }

    /// Each spec in a line: progress, commits per chunk, what is wrong.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for s in &self.specs {
            let done = s.chunks.iter().filter(|(_, st)| st == "completed").count();
            out.push_str(&format!(
                "{}: {done}/{} completed, commits {:?}, lost {}, duplicated {}, strangers {:?}{}\n",
                s.spec,
                s.chunks.len(),
                s.commits,
                s.lost(),
                s.duplicated(),
                s.strangers,
                s.unreadable
                    .as_ref()
                    .map(|e| format!(", unreadable: {e}"))
                    .unwrap_or_default()
            ));
        }
        if !self.rewrites.is_empty() {
            out.push_str(&format!("rewrites: {:?}\n", self.rewrites));
        }
        out
    }
}

pub fn audit(remote: &Remote, specs: &[String]) -> Audit {
    let mut audit = Audit {
        specs: specs.iter().map(|s| audit_spec(remote, s)).collect(),
        ..Audit::default()
    };
    let updates = remote.updates();
    audit.rewrites = rewrites(remote, &updates);
    for u in updates
        .iter()
        .filter(|u| u.reference.starts_with("refs/runner/leases/"))
    {
        match (&u.old, &u.new) {
            (None, Some(_)) => audit.takes += 1,
            (Some(old), Some(new)) => {
                if lease_worker(remote, old) == lease_worker(remote, new) {
                    audit.renewals += 1;
                } else {
                    audit.takeovers += 1;
                }
            }
            _ => {}
        }
    }
    audit
}

fn audit_spec(remote: &Remote, spec: &str) -> SpecAudit {
    let mut out = SpecAudit {
        spec: spec.to_string(),
        ..SpecAudit::default()
    };
    let plan = crate::common::git_result(
        &remote.bare,
        &[
            "show",
            &format!("refs/runner/specs/{spec}:implementation_plan.json"),
        ],
    );
    let plan: Value = match plan.map(|t| serde_json::from_str(&t)) {
        Ok(Ok(plan)) => plan,
        Ok(Err(e)) => {
            out.unreadable = Some(format!("published plan: {e}"));
            return out;
        }
        Err(e) => {
            out.unreadable = Some(e.trim().to_string());
            return out;
        }
    };
    for phase in plan["phases"].as_array().into_iter().flatten() {
        let chunks = phase.get("subtasks").or_else(|| phase.get("chunks"));
        for c in chunks.and_then(Value::as_array).into_iter().flatten() {
            let id = c["id"].as_str().unwrap_or_default().to_string();
            let status = c["status"].as_str().unwrap_or_default().to_string();
            out.chunks.push((id, status));
        }
    }
    let branch = format!("refs/heads/auto-claude/{spec}");
    let log = crate::common::git_result(
        &remote.bare,
        &["log", "--format=%s", &format!("main..{branch}")],
    )
    .unwrap_or_default();
    for subject in log.lines() {
        match chunk_of(&out.chunks, subject) {
            Some(id) => *out.commits.entry(id).or_default() += 1,
            None => out.strangers.push(subject.to_string()),
        }
    }
    out
}

/// The plan's chunk a commit subject names (`auto-claude: <id> - <description>`).
fn chunk_of(chunks: &[(String, String)], subject: &str) -> Option<String> {
    let rest = subject.strip_prefix(COMMIT_PREFIX)?;
    chunks
        .iter()
        .map(|(id, _)| id)
        .filter(|id| {
            rest.strip_prefix(id.as_str())
                .is_some_and(|after| after.starts_with(" - "))
        })
        .max_by_key(|id| id.len())
        .cloned()
}

/// Accepted updates of a branch or a published folder that were not fast-forwards.
fn rewrites(remote: &Remote, updates: &[Update]) -> Vec<String> {
    let mut out = Vec::new();
    for u in updates {
        let kept = u.reference.starts_with("refs/heads/auto-claude/")
            || u.reference.starts_with("refs/runner/specs/");
        if !kept {
            continue;
        }
        match (&u.old, &u.new) {
            (Some(old), Some(new)) => {
                let ff = crate::common::git_result(
                    &remote.bare,
                    &["merge-base", "--is-ancestor", old, new],
                )
                .is_ok();
                if !ff {
                    out.push(format!("{} {old} -> {new} (from {})", u.reference, u.from));
                }
            }
            (Some(old), None) => out.push(format!("{} {old} deleted", u.reference)),
            _ => {}
        }
    }
    out
}

/// The `worker` of the lease commit `oid` (its message is the lease as JSON).
pub fn lease_worker(remote: &Remote, oid: &str) -> Option<String> {
    lease(remote, oid).and_then(|l| l["worker"].as_str().map(str::to_string))
}

/// The lease commit `oid` as JSON.
pub fn lease(remote: &Remote, oid: &str) -> Option<Value> {
    let text = crate::common::git_result(&remote.bare, &["log", "-1", "--format=%B", oid]).ok()?;
    serde_json::from_str(text.trim()).ok()
}

/// The lease the remote holds now for `spec`, if any.
pub fn current_lease(remote: &Remote, spec: &str) -> Option<Value> {
    let oid = crate::common::git_result(
        &remote.bare,
        &[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/runner/leases/{spec}"),
        ],
    )
    .ok()?;
    lease(remote, oid.trim())
}
