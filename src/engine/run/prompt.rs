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
    /// The memo's progress renders the very prompt the whole progress does, as chunks change
    /// status (in place and through a re-read plan), the current chunk moves, phases are
    /// renamed, added and dropped, and a plan falls under and over the length that lists all.
    #[test]
    fn the_kept_progress_renders_the_same_prompt_as_the_whole_one() {
        let prompts = crate::agent::prompt::Prompts::new(std::path::Path::new("/nonexistent"));
        let memo = ProgressMemo::default();
        let mut seed: u64 = 5;
        let mut roll = |n: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as usize % n
        };
        let mut plan = plan_of(&[20, 20, 7, 8]);
        let statuses = [
            Status::Pending,
            Status::Completed,
            Status::InProgress,
            Status::Failed,
        ];
        let (mut cached, mut listed_all) = (0, 0);
        for step in 0..300 {
            match roll(6) {
                0 | 1 => {
                    let pos = plan.positions().nth(roll(plan.total())).unwrap();
                    plan.chunk_mut(pos)
                        .set_status(statuses[roll(statuses.len())]);
                }
                2 => {
                    plan = crate::plan::parse_plan(
                        std::path::Path::new("p.json"),
                        &crate::plan::plan_to_bytes(&plan),
                    )
                    .unwrap()
                }
                3 => {
                    let mut value = plan.to_value();
                    let phases = value["phases"].as_array_mut().unwrap();
                    let at = roll(phases.len());
                    match roll(4) {
                        3 => phases.truncate(2),
                        0 => phases[at]["name"] = json!(format!("renamed {}", roll(3))),
                        1 if phases.len() > 1 => {
                            phases.remove(at);
                        }
                        _ => {
                            let (n, k) = (1 + roll(30), step);
                            let chunks: Vec<Value> = (0..n)
                                .map(|c| json!({"id": format!("n{k}-{c}"), "description": "d", "status": "pending"}))
                                .collect();
                            phases.push(
                                json!({"id": format!("q{k}"), "name": "New", "subtasks": chunks}),
                            );
                        }
                    }
                    let text = serde_json::to_vec(&value).unwrap();
                    plan = crate::plan::parse_plan(std::path::Path::new("p.json"), &text).unwrap();
                }
                4 => {
                    // Renamed in place: the same chunk list, another name or id.
                    let at = roll(plan.phases.len());
                    let name = json!(format!("in place {}", roll(3)));
                    plan.phases[at].raw.insert("name".into(), name);
                    if roll(2) == 0 {
                        plan.phases[at].key.id = Some(format!("r{step}"));
                    }
                }
                _ => {}
            }
            let current = plan.positions().nth(roll(plan.total()));
            let chunk = json!({"id": "c", "description": "d"});
            let context = json!({"spec_name": "s", "spec_text": "t", "attempt": 1, "chunk": chunk});
            let mut whole = context.clone();
            whole["progress"] = progress_context(&plan, current);
            let expected = prompts.render(crate::agent::prompt::CODER, whole).unwrap();
            let kept = memo.of(&plan, current);
            let got = prompts
                .render_with(
                    crate::agent::prompt::CODER,
                    context,
                    vec![("progress".into(), kept)],
                )
                .unwrap();
            assert_eq!(got, expected);
            if plan.total() <= LIST_ALL_UP_TO {
                listed_all += 1;
            } else {
                cached += memo.0.borrow().iter().flatten().count();
            }
        }
        assert!(
            cached > 100 && listed_all > 0,
            "{cached} kept, {listed_all} short"
        );
    }
}
