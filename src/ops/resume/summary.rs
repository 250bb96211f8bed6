//! The resume summary: what the run was doing and what to do next, as one object (the text and
//! the JSON show the same content). Built from the reconstruction (`engine::resume`), the plan
//! (descriptions, phases, attempts), git (`git::status`) and the journal's last events.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::engine::resume::{Reconstruction, Source};
use crate::plan::{Plan, Status};
use crate::policy::resolve::Candidate;
use crate::store::checkpoint::{LastVerification, Trigger};
use crate::store::event::Event;
use crate::store::workspace::{SpecPaths, Workspace};

/// Below this confidence the summary says to verify by hand.
pub const LOW_CONFIDENCE: u8 = 80;

/// The words said below [`LOW_CONFIDENCE`].
pub const LOW_CONFIDENCE_WARNING: &str = "Low confidence recovery. Verify manually.";

/// How many of the journal's last events are told.
const RECENT: usize = 8;

/// The JSON object (`schema` is added in front when printed).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ResumeSummary {
    pub success: bool,
    /// The run being resumed (null for a spec with no run record); the new run's id is
    /// reported when it continues.
    pub run_id: Option<String>,
    pub spec: String,
    pub summary: Summary,
    pub confidence_score: u8,
    pub confidence_reason: String,
    pub source: Source,
    /// What the reconstruction fell back from, and the low-confidence warning.
    pub warnings: Vec<String>,
    /// The handoff document written (`--handoff`), else null.
    pub handoff_document: Option<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Summary {
    pub current_chunk: Option<CurrentChunk>,
    pub progress: Progress,
    pub verification: Option<LastVerification>,
    pub git_status: crate::git::status::WorkStatus,
    pub checkpoint: CheckpointSummary,
    pub recent_actions: Vec<String>,
    pub next_steps: Vec<NextStep>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CurrentChunk {
    pub id: String,
    pub description: String,
    pub status: String,
    /// Attempts recorded in the plan.
    pub attempts: usize,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub by_phase: Vec<PhaseProgress>,
    pub seconds_spent: u64,
    pub cost_usd: f64,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PhaseProgress {
    pub phase: String,
    pub done: usize,
    pub total: usize,
}

/// Where the state was rebuilt from, and the checkpoint's identity and age when it was one.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CheckpointSummary {
    #[serde(rename = "type")]
    pub source: Source,
    pub id: Option<String>,
    pub time: Option<DateTime<Utc>>,
    pub trigger: Option<Trigger>,
    /// Seconds since the checkpoint was written; below zero when it is dated in the future
    /// (clock skew, or an edited file: not believed, see `policy::age`).
    pub age_secs: Option<i64>,
}

/// One thing to do next: what, and the exact command (null when it is not a command).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct NextStep {
    pub text: String,
    pub command: Option<String>,
}

/// The summary of `target`'s spec, rebuilt by `recon`.
pub fn build(
    ws: &Workspace,
    paths: &SpecPaths,
    target: &Candidate,
    recon: Reconstruction,
) -> ResumeSummary {
    let plan = paths.plan.load().ok().flatten();
    let status_of = |id: &str| {
        recon
            .chunks
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.status.clone())
    };
    let current_id = recon
        .current_chunk
        .clone()
        .or_else(|| target.chunk.clone())
        .or_else(|| {
            plan.as_ref()
                .and_then(|p| crate::plan::next_chunk_id(p).map(str::to_string))
        });
    let current_chunk = current_id.map(|id| {
        let chunk = plan
            .as_ref()
            .and_then(|p| p.find_chunk(&id).map(|pos| p.chunk(pos)));
        CurrentChunk {
            description: chunk
                .map(|c| c.description().to_string())
                .unwrap_or_default(),
            status: status_of(&id)
                .or_else(|| chunk.map(|c| c.status.as_str().to_string()))
                .unwrap_or_else(|| "unknown".into()),
            attempts: chunk.map_or(0, |c| c.attempts().len()),
            id,
        }
    });
    let done = |status: &str| status == Status::Completed.as_str();
    let progress = Progress {
        done: recon.chunks.iter().filter(|c| done(&c.status)).count(),
        total: recon.chunks.len(),
        by_phase: plan
            .as_ref()
            .map(|p| by_phase(p, &|id| status_of(id).is_some_and(|s| done(&s))))
            .unwrap_or_default(),
        seconds_spent: recon.seconds_spent,
        cost_usd: recon.cost_usd,
    };
    let base = plan
        .as_ref()
        .and_then(|p| p.str_field("base_branch").map(str::to_string));
    let git_status = crate::git::status::work_status(&ws.main, &paths.name, base.as_deref());
    let failed: Vec<String> = recon
        .chunks
        .iter()
        .filter(|c| c.status == Status::Failed.as_str())
        .map(|c| c.id.clone())
        .collect();
    let mut warnings = recon.warnings.clone();
    if recon.confidence < LOW_CONFIDENCE {
        warnings.push(LOW_CONFIDENCE_WARNING.to_string());
    }
    // The chunk to look at next: the current one, unless it is done (the last one worked on),
    // then the first the run has still to do.
    let to_do = match current_chunk.as_ref() {
        Some(c) if !done(&c.status) => Some(c.id.as_str()),
        _ => recon
            .chunks
            .iter()
            .find(|c| !done(&c.status) && c.status != Status::Failed.as_str())
            .map(|c| c.id.as_str()),
    };
    let next_steps = next_steps(&Facts {
        spec: &paths.name,
        current: to_do,
        failed: &failed,
        all_done: progress.total > 0 && progress.done == progress.total,
        low_confidence: recon.confidence < LOW_CONFIDENCE,
        branch_exists: git_status.branch_exists,
        commit_gone: recon.commit_gone,
    });
    ResumeSummary {
        success: true,
        run_id: target.run_id.clone(),
        spec: paths.name.clone(),
        summary: Summary {
            current_chunk,
            progress,
            verification: recon.verification.clone(),
            git_status,
            checkpoint: CheckpointSummary {
                source: recon.source,
                id: recon.checkpoint.as_ref().map(|c| c.id.clone()),
                time: recon.checkpoint.as_ref().map(|c| c.time),
                trigger: recon.checkpoint.as_ref().map(|c| c.trigger),
                age_secs: recon.checkpoint.as_ref().map(|c| c.age_secs),
            },
            recent_actions: recent_actions(&paths.dir),
            next_steps,
        },
        confidence_score: recon.confidence,
        confidence_reason: recon.confidence_reason,
        source: recon.source,
        warnings,
        handoff_document: None,
    }
}

fn by_phase(plan: &Plan, done: &dyn Fn(&str) -> bool) -> Vec<PhaseProgress> {
    plan.phases
        .iter()
        .enumerate()
        .map(|(i, phase)| PhaseProgress {
            phase: phase.name().map_or_else(|| phase.label(i), str::to_string),
            done: phase.chunks.iter().filter(|c| done(&c.id)).count(),
            total: phase.chunks.len(),
        })
        .collect()
}

/// What the next steps are decided from.
pub struct Facts<'a> {
    pub spec: &'a str,
    pub current: Option<&'a str>,
    pub failed: &'a [String],
    pub all_done: bool,
    pub low_confidence: bool,
    pub branch_exists: bool,
    /// A completed chunk's commit is gone from the branch (`Reconstruction::commit_gone`):
    /// a continued run's recovery would stop for a person at once.
    pub commit_gone: bool,
}

/// The next steps, each with its exact command.
pub fn next_steps(f: &Facts) -> Vec<NextStep> {
    let spec = crate::sh(f.spec);
    let step = |text: String, command: String| NextStep {
        text,
        command: Some(command),
    };
    let mut steps = Vec::new();
    if f.commit_gone {
        // The command the run's own refusal names (`engine::run::start`'s hint): it keeps the
        // last tip runner knew and prints the way back; a continue would stop at once (exit 3).
        steps.push(step(
            "The branch's history was rewritten: keep the last tip runner knew and see the way \
             back before going on"
                .into(),
            format!("runner recover --spec {spec}"),
        ));
    }
    if f.low_confidence {
        steps.push(step(
            "Check the reconstructed state against the branch before going on".into(),
            format!("runner review --spec {spec}"),
        ));
    }
    for chunk in f.failed {
        steps.push(step(
            format!("Chunk {chunk} failed for good: fix the cause, then set it back to pending"),
            format!("runner recover --spec {spec} --retry-failed"),
        ));
    }
    if f.all_done {
        steps.push(step(
            "Every chunk is done: look at the work, then merge it".into(),
            format!("runner review --spec {spec}"),
        ));
        steps.push(step(
            "Land the work on its base branch".into(),
            format!("runner merge --spec {spec}"),
        ));
        return steps;
    }
    steps.push(step(
        "Continue the spec where it stopped".into(),
        crate::policy::next_command::continue_command(f.spec, None),
    ));
    if let Some(chunk) = f.current {
        steps.push(step(
            format!("See what chunk {chunk} asks for"),
            format!("runner chunk show {} --spec {spec}", crate::sh(chunk)),
        ));
    }
    if f.branch_exists && !f.low_confidence {
        steps.push(step(
            "Look at the work done so far".into(),
            format!("runner review --spec {spec}"),
        ));
    }
    steps
}

/// The journal's last events, in words, oldest first.
fn recent_actions(spec_dir: &std::path::Path) -> Vec<String> {
    crate::store::journal::last_entries(spec_dir, RECENT * 3)
        .into_iter()
        .filter_map(|e| in_words(&e.event).map(|w| (e.time, w)))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .take(RECENT)
        .rev()
        .map(|(time, words)| match time {
            Some(t) => format!("{t} {words}"),
            None => words,
        })
        .collect()
}

/// One event in words (the ones worth telling a person).
pub fn in_words(e: &Event) -> Option<String> {
    Some(match e {
        Event::RunStart(r) => format!("run started in slot {}", r.slot),
        Event::RunEnd(r) => format!(
            "run ended: {} ({})",
            r.outcome,
            crate::text::count(r.sessions, "session")
        ),
        Event::SessionStart(s) => match &s.chunk {
            Some(c) => format!("{} session started on {c} (attempt {})", s.role, s.attempt),
            None => format!("{} session started", s.role),
        },
        Event::ChunkStatus(c) => format!(
            "chunk {} {} → {}",
            c.chunk,
            c.change.from.as_str(),
            c.change.to.as_str()
        ),
        Event::ChunkReport(r) => format!("chunk {} reported {}", r.chunk, r.report),
        Event::AttemptFailed(a) => format!(
            "attempt {} at {} failed: {}",
            a.attempt,
            a.chunk,
            a.reason.chars().take(120).collect::<String>()
        ),
        Event::Commit(c) => format!(
            "committed {} ({})",
            c.chunk,
            crate::git::short_id(&c.commit)
        ),
        Event::Verification(v) => format!(
            "verification of {} {}: {}",
            v.chunk,
            if v.passed { "passed" } else { "failed" },
            v.command
        ),
        Event::RecoveryDecision(d) => format!("recovery: {} {}", d.chunk, d.decision),
        Event::Recovered(_) => "recovered interrupted state".into(),
        Event::Merged(_) => "merged".into(),
        Event::Discarded(_) => "discarded".into(),
        Event::Undone(_) => "undone".into(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts<'a>(failed: &'a [String]) -> Facts<'a> {
        Facts {
            spec: "001-a b",
            current: Some("subtask-1-2"),
            failed,
            all_done: false,
            low_confidence: false,
            branch_exists: true,
            commit_gone: false,
        }
    }

    fn commands(steps: &[NextStep]) -> Vec<&str> {
        steps.iter().filter_map(|s| s.command.as_deref()).collect()
    }

    #[test]
    fn next_steps_are_exact_commands_for_each_situation() {
        assert_eq!(
            commands(&next_steps(&facts(&[]))),
            vec![
                "runner run --spec '001-a b' --auto-continue",
                "runner chunk show subtask-1-2 --spec '001-a b'",
                "runner review --spec '001-a b'"
            ]
        );
        let failed = ["subtask-2-1".to_string()];
        let steps = next_steps(&facts(&failed));
        assert_eq!(
            steps[0].command.as_deref(),
            Some("runner recover --spec '001-a b' --retry-failed")
        );
        assert!(steps[0].text.contains("subtask-2-1"));
        let done = next_steps(&Facts {
            all_done: true,
            ..facts(&[])
        });
        assert_eq!(
            commands(&done),
            vec![
                "runner review --spec '001-a b'",
                "runner merge --spec '001-a b'"
            ]
        );
        // A completed chunk's commit gone: the way back first (a continue stops for a person).
        let gone = next_steps(&Facts {
            commit_gone: true,
            low_confidence: true,
            ..facts(&[])
        });
        assert_eq!(
            commands(&gone)[..3],
            [
                "runner recover --spec '001-a b'",
                "runner review --spec '001-a b'",
                "runner run --spec '001-a b' --auto-continue"
            ]
        );
        let low = next_steps(&Facts {
            low_confidence: true,
            ..facts(&[])
        });
        assert_eq!(
            commands(&low),
            vec![
                "runner review --spec '001-a b'",
                "runner run --spec '001-a b' --auto-continue",
                "runner chunk show subtask-1-2 --spec '001-a b'"
            ]
        );
    }
}
