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
        let progress = progress_context(plan, plan.find_chunk(&chunk.id));
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
}

/// A plan with more chunks than this shows, in the prompt, only the chunks around the one being
/// built (in its phase) and counts for the rest: listing every chunk made each prompt, and the
/// work of writing it, grow with the plan.
const LIST_ALL_UP_TO: usize = 50;
/// How many chunks on each side of the current one a long plan's prompt lists.
const AROUND: usize = 10;

/// The plan's progress as the coder prompt shows it: done and total, and per phase its label,
/// name, done and total, the chunks listed (`id`, `status`) and how many were left out before
/// and after them.
fn progress_context(plan: &Plan, current: Option<crate::plan::ChunkPos>) -> Value {
    let list_all = plan.total() <= LIST_ALL_UP_TO;
    let phases: Vec<Value> = plan
        .phases
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let shown = if list_all {
                0..p.chunks.len()
            } else {
                match current.filter(|c| c.phase == i) {
                    Some(c) => {
                        c.chunk.saturating_sub(AROUND)..(c.chunk + AROUND + 1).min(p.chunks.len())
                    }
                    None => 0..0,
                }
            };
            let listed: Vec<Value> = p.chunks[shown.clone()]
                .iter()
                .map(|c| json!({"id": c.id, "status": c.status.as_str()}))
                .collect();
            json!({
                "label": p.label(i),
                "name": p.name(),
                "completed": p.chunks.iter().filter(|c| c.status == Status::Completed).count(),
                "total": p.chunks.len(),
                "chunks": listed,
                "more_before": if listed.is_empty() { 0 } else { shown.start },
                "more_after": if listed.is_empty() { 0 } else { p.chunks.len() - shown.end },
            })
        })
        .collect();
    json!({
        "completed": plan.count(Status::Completed),
        "total": plan.total(),
        "phases": phases,
    })
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
mod tests {
    use super::*;

    fn plan_of(phases: &[usize]) -> Plan {
        let phases: Vec<Value> = phases
            .iter()
            .enumerate()
            .map(|(p, &n)| {
                let chunks: Vec<Value> = (0..n)
                    .map(|c| {
                        json!({"id": format!("c{p}-{c}"), "description": "d",
                                    "status": if c < 3 { "completed" } else { "pending" }})
                    })
                    .collect();
                json!({"id": format!("p{p}"), "name": format!("P{p}"), "subtasks": chunks})
            })
            .collect();
        let text = serde_json::to_vec(&json!({ "phases": phases })).unwrap();
        crate::plan::parse_plan(std::path::Path::new("p.json"), &text).unwrap()
    }

    fn listed(progress: &Value, phase: usize) -> Vec<String> {
        progress["phases"][phase]["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn a_short_plan_lists_every_chunk() {
        let plan = plan_of(&[4, 5]);
        let progress = progress_context(&plan, plan.find_chunk("c1-3"));
        assert_eq!(progress["completed"], 6);
        assert_eq!(progress["total"], 9);
        assert_eq!(listed(&progress, 0).len(), 4);
        assert_eq!(listed(&progress, 1).len(), 5);
        assert_eq!(progress["phases"][1]["more_before"], 0);
        assert_eq!(progress["phases"][1]["more_after"], 0);
    }

    #[test]
    fn a_long_plan_lists_the_chunks_around_this_one_and_counts_the_rest() {
        let plan = plan_of(&[30, 100, 30]);
        let progress = progress_context(&plan, plan.find_chunk("c1-50"));
        let around: Vec<String> = (40..=60).map(|c| format!("c1-{c}")).collect();
        assert_eq!(listed(&progress, 1), around);
        assert_eq!(progress["phases"][1]["more_before"], 40);
        assert_eq!(progress["phases"][1]["more_after"], 39);
        assert_eq!(progress["phases"][1]["completed"], 3);
        assert_eq!(progress["phases"][1]["total"], 100);
        // Other phases: counts only.
        assert!(listed(&progress, 0).is_empty());
        assert_eq!(progress["phases"][0]["completed"], 3);
        assert_eq!(progress["phases"][2]["total"], 30);
        // At the ends of a phase the window stops there.
        let first = progress_context(&plan, plan.find_chunk("c1-0"));
        assert_eq!(listed(&first, 1).len(), 11);
        assert_eq!(first["phases"][1]["more_before"], 0);
        let last = progress_context(&plan, plan.find_chunk("c1-99"));
        assert_eq!(listed(&last, 1).len(), 11);
        assert_eq!(last["phases"][1]["more_after"], 0);
    }

    #[test]
    fn the_prompt_of_a_long_plan_does_not_grow_with_it() {
        let prompts = crate::agent::prompt::Prompts::new(std::path::Path::new("/nonexistent"));
        let render = |n: usize| {
            let plan = plan_of(&[n]);
            let progress = progress_context(&plan, plan.find_chunk("c0-40"));
            let chunk = json!({"id": "c0-40", "description": "d"});
            prompts
                .render(
                    crate::agent::prompt::CODER,
                    json!({"spec_name": "s", "spec_text": "t", "attempt": 1,
                           "chunk": chunk, "progress": progress}),
                )
                .unwrap()
        };
        let (short, long) = (render(100), render(5000));
        // The same lines: only the counts have more digits ("5000", "4949").
        assert_eq!(short.len() + 3, long.len(), "{long}");
        assert!(long.contains("… 30 more, c0-30 [pending]"), "{long}");
        assert!(long.contains("c0-50 [pending], … 4949 more"), "{long}");
    }
}
