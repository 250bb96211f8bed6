//! The coder's prompt context: the spec, the chunk, progress, what went wrong before.

use super::*;

impl Run {
    pub(super) fn coder_prompt(&self, plan: &Plan, taken: &Taken) -> anyhow::Result<String> {
        let chunk = &taken.chunk;
        let spec_text = crate::store::spec::read_text(&self.paths.spec_md)?;
        let failures = self.previous_failures(chunk);
        let partial = crate::engine::recovery::partial_work_note(chunk);
        let leftovers = if taken.attempt > 1 {
            dirty_paths(&self.open_worktree()?)?
        } else {
            Vec::new()
        };
        let progress = self.progress.of(plan, plan.find_chunk(&chunk.id));
        let context = json!({
            "spec_name": self.paths.name,
            "spec_text": spec_text,
            "attempt": taken.attempt,
            "chunk": {
                "id": chunk.id,
                "description": chunk.description(),
                "phase_name": taken.phase_name,
                "service": chunk.str_field("service"),
                "files_to_modify": chunk.list_field("files_to_modify"),
                "files_to_create": chunk.list_field("files_to_create"),
                "patterns_from": chunk.list_field("patterns_from"),
                "verification": verification::describe(chunk),
                "check_command": verification::command_check(chunk).map(|c| c.command),
            },
            "failures": failures,
            "leftovers": leftovers,
            "partial": partial,
        });
        let template = if failures.is_empty() && partial.is_none() {
            crate::agent::prompt::CODER
        } else {
            crate::agent::prompt::CODER_RETRY
        };
        self.prompts
            .render_with(template, context, vec![("progress".to_string(), progress)])
    }
}

/// A plan with more chunks than this shows, in the prompt, only the chunks around the one being
/// built (in its phase) and counts for the rest: listing every chunk made each prompt, and the
/// work of writing it, grow with the plan.
const LIST_ALL_UP_TO: usize = 50;
/// How many chunks on each side of the current one a long plan's prompt lists.
const AROUND: usize = 10;

/// The chunks of phase `i` a prompt lists.
fn shown(
    list_all: bool,
    current: Option<crate::plan::ChunkPos>,
    i: usize,
    len: usize,
) -> std::ops::Range<usize> {
    if list_all {
        return 0..len;
    }
    match current.filter(|c| c.phase == i) {
        Some(c) => c.chunk.saturating_sub(AROUND)..(c.chunk + AROUND + 1).min(len),
        None => 0..0,
    }
}

/// Phase `i`'s progress: its label, name, done and total, the chunks `shown` (`id`, `status`)
/// and how many were left out before and after them.
fn phase_progress(p: &crate::plan::Phase, i: usize, shown: std::ops::Range<usize>) -> Value {
    let listed: Vec<Value> = p.chunks[shown.clone()]
        .iter()
        .map(|c| json!({"id": c.id, "status": c.status.as_str()}))
        .collect();
    json!({
        "label": p.label(i),
        "name": p.name(),
        "completed": completed_in(p),
        "total": p.chunks.len(),
        "chunks": listed,
        "more_before": if listed.is_empty() { 0 } else { shown.start },
        "more_after": if listed.is_empty() { 0 } else { p.chunks.len() - shown.end },
    })
}

fn completed_in(p: &crate::plan::Phase) -> usize {
    p.chunks
        .iter()
        .filter(|c| c.status == Status::Completed)
        .count()
}

/// The plan's progress as the coder prompt shows it: done and total, and per phase its
/// [`phase_progress`].
fn progress_context(plan: &Plan, current: Option<crate::plan::ChunkPos>) -> Value {
    let list_all = plan.total() <= LIST_ALL_UP_TO;
    let phases: Vec<Value> = plan
        .phases
        .iter()
        .enumerate()
        .map(|(i, p)| phase_progress(p, i, shown(list_all, current, i, p.chunks.len())))
        .collect();
    json!({
        "completed": plan.count(Status::Completed),
        "total": plan.total(),
        "phases": phases,
    })
}

/// A phase's progress that lists no chunk, as the templates see it, with what it was made from.
struct KeptPhase {
    chunks: Arc<Vec<Chunk>>,
    label: String,
    name: Option<String>,
    completed: usize,
    value: minijinja::Value,
}

/// The progress of each phase that lists no chunk (in a long plan, every phase but the current
/// one's), kept while the phase is the very list of chunks it was made from (a copy of the plan
/// shares the phases it did not change), with the same label and name: a prompt makes again
/// only the current phase's and the changed ones', not one per phase of the plan.
#[derive(Default)]
pub(super) struct ProgressMemo(std::cell::RefCell<Vec<Option<KeptPhase>>>);

impl ProgressMemo {
    /// [`progress_context`] as the templates see it (`template_value`), exactly.
    pub(super) fn of(
        &self,
        plan: &Plan,
        current: Option<crate::plan::ChunkPos>,
    ) -> minijinja::Value {
        use crate::agent::prompt::template_value;
        let list_all = plan.total() <= LIST_ALL_UP_TO;
        if list_all {
            return template_value(&progress_context(plan, current));
        }
        let mut kept = self.0.borrow_mut();
        kept.resize_with(plan.phases.len(), || None);
        let mut completed = 0;
        let mut phases = Vec::with_capacity(plan.phases.len());
        for (i, p) in plan.phases.iter().enumerate() {
            let shown = shown(list_all, current, i, p.chunks.len());
            if !shown.is_empty() {
                completed += completed_in(p);
                phases.push(template_value(&phase_progress(p, i, shown)));
                continue;
            }
            let label = p.label(i);
            let same = |k: &KeptPhase| {
                Arc::ptr_eq(&k.chunks, &p.chunks)
                    && k.label == label
                    && k.name.as_deref() == p.name()
            };
            let phase = match &kept[i] {
                Some(k) if same(k) => k,
                _ => kept[i].insert(KeptPhase {
                    chunks: p.chunks.clone(),
                    completed: completed_in(p),
                    value: template_value(&phase_progress(p, i, shown)),
                    name: p.name().map(str::to_string),
                    label,
                }),
            };
            completed += phase.completed;
            phases.push(phase.value.clone());
        }
        let mut map = std::collections::BTreeMap::new();
        map.insert("completed".to_string(), template_value(&json!(completed)));
        map.insert("total".to_string(), template_value(&json!(plan.total())));
        map.insert("phases".to_string(), phases.into_iter().collect());
        minijinja::Value::from(map)
    }
}

impl Run {
    /// What went wrong before, from the journal (through the records kept beside this chunk's
    /// sessions: the cost does not grow with the run, see `store::failures`); from the plan's
    /// attempt records if the journal (advisory) is gone.
    pub(super) fn previous_failures(&self, chunk: &Chunk) -> Vec<Value> {
        // Only this plan's attempts: a discarded build's failures are not this one's.
        let attempts: Vec<crate::store::failures::AttemptRef> = chunk
            .attempts()
            .into_iter()
            .filter_map(|a| {
                Some(crate::store::failures::AttemptRef {
                    failed: a.outcome.as_deref() == Some("failed"),
                    session_id: a.session_id?,
                })
            })
            .collect();
        let from_journal: Vec<Value> =
            crate::store::failures::previous(&self.paths.dir, &chunk.id, &attempts)
                .into_iter()
                .map(|f| json!({"attempt": f.attempt, "reason": f.reason, "log": f.log}))
                .collect();
        if !from_journal.is_empty() {
            return from_journal;
        }
        chunk
            .attempts()
            .into_iter()
            .filter(|a| a.outcome.as_deref() == Some("failed"))
            .map(|a| json!({"attempt": a.n, "reason": a.reason, "log": Value::Null}))
            .collect()
    }
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;
