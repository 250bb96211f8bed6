//! The rules that make a parsed plan runnable: unique ids, dependencies that name real phases,
//! no dependency cycles.

use std::collections::{HashMap, HashSet};

use super::model::{PhaseRef, Plan};

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

/// Every phase by the names a `depends_on` entry can use: built once, so that resolving all
/// dependencies is linear in the size of the plan (a scan per reference was quadratic).
struct PhaseIndex<'a> {
    by_id: Positions<&'a str>,
    by_number: Positions<i64>,
}

/// Where each key occurs: the first place in a plain map (no allocation per key), any further
/// places (a broken plan) aside.
struct Positions<K> {
    first: HashMap<K, usize>,
    more: HashMap<K, Vec<usize>>,
}

impl<K: std::hash::Hash + Eq + Copy> Positions<K> {
    fn with_capacity(n: usize) -> Self {
        Positions {
            first: HashMap::with_capacity(n),
            more: HashMap::new(),
        }
    }

    fn add(&mut self, key: K, at: usize) {
        if self.first.try_insert_or_keep(key, at) {
            return;
        }
        self.more.entry(key).or_default().push(at);
    }

    fn get<Q>(&self, key: &Q) -> impl Iterator<Item = usize> + Clone + use<'_, K, Q>
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized,
    {
        let more = self.more.get(key).map(Vec::as_slice).unwrap_or_default();
        self.first
            .get(key)
            .copied()
            .into_iter()
            .chain(more.iter().copied())
    }
}

/// `HashMap::try_insert` (unstable) in stable words: insert unless present; true if inserted.
trait InsertNew<K, V> {
    fn try_insert_or_keep(&mut self, key: K, value: V) -> bool;
}

impl<K: std::hash::Hash + Eq, V> InsertNew<K, V> for HashMap<K, V> {
    fn try_insert_or_keep(&mut self, key: K, value: V) -> bool {
        match self.entry(key) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(value);
                true
            }
            std::collections::hash_map::Entry::Occupied(_) => false,
        }
    }
}

impl<'a> PhaseIndex<'a> {
    fn new(plan: &'a Plan) -> Self {
        let mut by_id = Positions::with_capacity(plan.phases.len());
        let mut by_number = Positions::with_capacity(plan.phases.len());
        for (i, phase) in plan.phases.iter().enumerate() {
            if let Some(id) = &phase.key.id {
                by_id.add(id.as_str(), i);
            }
            if let Some(n) = phase.key.number {
                by_number.add(n, i);
            }
        }
        PhaseIndex { by_id, by_number }
    }

    /// The one phase `dep` names, or else the phases it names (none, or several: the first
    /// `MAX_NAMED` of them in file order, enough to say what is wrong), exactly those for which
    /// `PhaseRef::matches` holds (a unit test checks that the two agree). The usual case
    /// allocates nothing, and no case costs more than `MAX_NAMED` steps per key (every
    /// reference listing every phase of a key used thousands of times was quadratic).
    fn target(&self, dep: &PhaseRef) -> Result<usize, Vec<usize>> {
        let mut buf = [0u8; 24];
        let (id, number) = match dep {
            PhaseRef::Name(s) => (s.as_str(), canonical_integer(s)),
            PhaseRef::Number(n) => (decimal(*n, &mut buf), Some(*n)),
        };
        // Each key's positions are in file order; a few of each are enough.
        let by_id = self.by_id.get(id).take(MAX_NAMED + 1);
        let by_number = number
            .into_iter()
            .flat_map(|n| self.by_number.get(&n))
            .take(MAX_NAMED + 1);
        let all = by_id.chain(by_number);
        let mut rest = all.clone();
        if let Some(first) = rest.next()
            && rest.all(|j| j == first)
        {
            return Ok(first);
        }
        let mut some: Vec<usize> = all.collect();
        some.sort_unstable();
        some.dedup();
        some.truncate(MAX_NAMED);
        Err(some)
    }
}

/// How many phases a "could mean any of" problem names.
const MAX_NAMED: usize = 5;

/// How many broken `depends_on` entries are listed; the rest are counted.
const MAX_LISTED: usize = 20;

/// `s` as a number if it is exactly how that number is written (`n.to_string() == s`): "1" and
/// "-1", not "01", "+1" or "-0". A name matches a numbered phase only in that form.
fn canonical_integer(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && !(digits == "0" && s.starts_with('-'));
    if canonical { s.parse().ok() } else { None }
}

/// `n` in decimal, written into `buf` (no allocation).
fn decimal(n: i64, buf: &mut [u8; 24]) -> &str {
    use std::io::Write;
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    // 24 bytes hold any i64 ("-9223372036854775808" is 20).
    let _ = write!(cursor, "{n}");
    let len = cursor.position() as usize;
    std::str::from_utf8(&buf[..len]).unwrap_or_default()
}

/// For each phase, the indexes of the phases it depends on; `None` if a reference is broken.
/// The first `MAX_LISTED` broken references are listed, the rest counted.
pub fn resolve_dependencies(plan: &Plan, problems: &mut Vec<String>) -> Option<Vec<Vec<usize>>> {
    let index = PhaseIndex::new(plan);
    let mut broken = 0usize;
    let mut edges = Vec::with_capacity(plan.phases.len());
    for (i, phase) in plan.phases.iter().enumerate() {
        let mut to = Vec::with_capacity(phase.depends_on.len());
        for dep in &phase.depends_on {
            match index.target(dep) {
                Ok(one) => to.push(one),
                Err(some) => {
                    broken += 1;
                    if broken <= MAX_LISTED {
                        problems.push(broken_dependency(plan, i, dep, &some));
                    }
                }
            }
        }
        edges.push(to);
    }
    if broken > MAX_LISTED {
        problems.push(format!(
            "… and {} more depends_on entries that name no phase, or several",
            broken - MAX_LISTED
        ));
    }
    (broken == 0).then_some(edges)
}

/// Why `dep` in `phases[i]` names no phase (`some` empty) or several (`some`: the first few).
fn broken_dependency(plan: &Plan, i: usize, dep: &PhaseRef, some: &[usize]) -> String {
    let phase = &plan.phases[i];
    if some.is_empty() {
        return format!(
            "phases[{i}] ({}).depends_on: {dep} names no phase in this plan",
            phase.label(i)
        );
    }
    let mut names: Vec<String> = some.iter().map(|&j| plan.phases[j].label(j)).collect();
    if some.len() == MAX_NAMED {
        names.push("…".into());
    }
    format!(
        "phases[{i}] ({}).depends_on: {dep} could mean any of {}; give those phases distinct ids and numbers",
        phase.label(i),
        names.join(", ")
    )
}

/// Reports the first dependency cycle found. Depth-first with an explicit stack: a chain of
/// tens of thousands of phases must not overflow the thread's stack.
fn check_cycles(plan: &Plan, edges: &[Vec<usize>], problems: &mut Vec<String>) {
    if let Some(cycle) = find_cycle(edges) {
        let names: Vec<String> = cycle.iter().map(|&n| plan.phases[n].label(n)).collect();
        problems.push(format!(
            "phase dependencies form a cycle: {}",
            names.join(" -> ")
        ));
    }
}

/// A cycle as the phases along it, the first one repeated at the end (`a -> b -> a`).
fn find_cycle(edges: &[Vec<usize>]) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut marks = vec![Mark::New; edges.len()];
    // The current path: each phase with the index of the next edge to follow from it.
    let mut path: Vec<(usize, usize)> = Vec::new();
    for start in 0..edges.len() {
        if marks[start] != Mark::New {
            continue;
        }
        marks[start] = Mark::Open;
        path.push((start, 0));
        while let Some(top) = path.last_mut() {
            let (node, next) = *top;
            let Some(&to) = edges[node].get(next) else {
                marks[node] = Mark::Done;
                path.pop();
                continue;
            };
            top.1 += 1;
            match marks[to] {
                Mark::Done => {}
                Mark::New => {
                    marks[to] = Mark::Open;
                    path.push((to, 0));
                }
                Mark::Open => {
                    // `to` is on the path: the cycle runs from there to here and back.
                    let from = path.iter().position(|&(n, _)| n == to).unwrap_or(0);
                    let mut cycle: Vec<usize> = path[from..].iter().map(|&(n, _)| n).collect();
                    cycle.push(to);
                    return Some(cycle);
                }
            }
        }
    }
    None
}
