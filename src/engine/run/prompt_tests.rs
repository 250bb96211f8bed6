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
