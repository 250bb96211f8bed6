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
        let progress = json!({
            "completed": plan.count(Status::Completed),
            "total": plan.total(),
            "phases": plan.phases.iter().enumerate().map(|(i, p)| json!({
                "label": p.label(i),
                "name": p.name(),
                "chunks": p.chunks.iter().map(|c| json!({"id": c.id, "status": c.status.as_str()})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
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
            "progress": progress,
            "failures": failures,
            "leftovers": leftovers,
            "partial": partial,
        });
        let template = if failures.is_empty() && partial.is_none() {
            crate::agent::prompt::CODER
        } else {
            crate::agent::prompt::CODER_RETRY
        };
        self.prompts.render(template, context)
    }

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
