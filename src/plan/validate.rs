//! The rules that make a parsed plan runnable: unique ids, dependencies that name real phases,
//! no dependency cycles.

use std::collections::HashSet;

use super::model::Plan;

/// Appends one line per broken rule to `problems`.
pub fn check(plan: &Plan, problems: &mut Vec<String>) {
    check_unique_ids(plan, problems);
    if let Some(edges) = resolve_dependencies(plan, problems) {
        check_cycles(plan, &edges, problems);
    }
}

/// A plan a planner session hands over must also have something to do.
pub fn check_planner_output(plan: &Plan) -> Vec<String> {
    let mut problems = Vec::new();
    if plan.total() == 0 {
        problems.push("the plan has no chunks: add at least one phase with chunks".into());
    }
    problems
}

fn check_unique_ids(plan: &Plan, problems: &mut Vec<String>) {
    let mut seen = HashSet::new();
    for chunk in plan.chunks() {
        if !seen.insert(chunk.id.as_str()) {
            problems.push(format!(
                "chunk id {:?} is used more than once; chunk ids must be unique in the plan",
                chunk.id
            ));
        }
    }
    let mut phase_ids = HashSet::new();
    let mut phase_numbers = HashSet::new();
    for (i, phase) in plan.phases.iter().enumerate() {
        if let Some(id) = &phase.key.id
            && !phase_ids.insert(id.as_str())
        {
            problems.push(format!(
                "phases[{i}]: phase id {id:?} is used more than once"
            ));
        }
        if let Some(n) = phase.key.number
            && !phase_numbers.insert(n)
        {
            problems.push(format!(
                "phases[{i}]: phase number {n} is used more than once"
            ));
        }
    }
}

/// For each phase, the indexes of the phases it depends on; `None` if a reference is broken.
pub fn resolve_dependencies(plan: &Plan, problems: &mut Vec<String>) -> Option<Vec<Vec<usize>>> {
    let mut ok = true;
    let edges = plan
        .phases
        .iter()
        .enumerate()
        .map(|(i, phase)| {
            phase
                .depends_on
                .iter()
                .filter_map(|dep| {
                    let targets: Vec<usize> = (0..plan.phases.len())
                        .filter(|&j| dep.matches(&plan.phases[j].key))
                        .collect();
                    match targets.as_slice() {
                        [one] => Some(*one),
                        [] => {
                            ok = false;
                            problems.push(format!(
                                "phases[{i}] ({}).depends_on: {dep} names no phase in this plan",
                                phase.label(i)
                            ));
                            None
                        }
                        several => {
                            ok = false;
                            let names: Vec<String> =
                                several.iter().map(|&j| plan.phases[j].label(j)).collect();
                            problems.push(format!(
                                "phases[{i}] ({}).depends_on: {dep} could mean any of {}; give those phases distinct ids and numbers",
                                phase.label(i),
                                names.join(", ")
                            ));
                            None
                        }
                    }
                })
                .collect()
        })
        .collect();
    ok.then_some(edges)
}

fn check_cycles(plan: &Plan, edges: &[Vec<usize>], problems: &mut Vec<String>) {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(n: usize, edges: &[Vec<usize>], marks: &mut [Mark], stack: &mut Vec<usize>) -> bool {
        match marks[n] {
            Mark::Done => return false,
            Mark::Open => {
                stack.push(n);
                return true;
            }
            Mark::New => {}
        }
        marks[n] = Mark::Open;
        stack.push(n);
        for &m in &edges[n] {
            if visit(m, edges, marks, stack) {
                return true;
            }
        }
        stack.pop();
        marks[n] = Mark::Done;
        false
    }
    let mut marks = vec![Mark::New; edges.len()];
    for start in 0..edges.len() {
        let mut stack = Vec::new();
        if visit(start, edges, &mut marks, &mut stack) {
            // The cycle is the part of the stack from the first visit of the repeated phase.
            let last = *stack.last().unwrap_or(&start);
            let from = stack.iter().position(|&n| n == last).unwrap_or(0);
            let names: Vec<String> = stack[from..]
                .iter()
                .map(|&n| plan.phases[n].label(n))
                .collect();
            problems.push(format!(
                "phase dependencies form a cycle: {}",
                names.join(" -> ")
            ));
            return;
        }
    }
}
