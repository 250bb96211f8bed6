//! Which run `runner resume [HINT]` is about: the one rule, over facts the mechanism gathers
//! (`ops::resume::facts`) and hands in through [`Facts`], asked for lazily so that a run id
//! prefix costs only the runs folders' file names, and a spec name only that spec's facts.
//!
//! The readings of a hint, in order; the first one with matches wins (the order): an
//! exact run id (1); a run id prefix of 4 characters or more (2, `policy::runs::matching`); an
//! exact spec name (3); a spec number, `003` → `003-…` (4); the spec whose in-progress or
//! last-worked chunk has this id (5); a part of a spec's name (6). `--run` forces 1–2, `--spec`
//! 3, 4 and 6, `--chunk` 5. No hint: the most recent resumable run, else the most recently
//! active resumable spec.
//!
//! Only resumable candidates count: not a spec that is complete, merged or discarded, not a
//! run that is active (or whose spec another run holds), not a file named like a run id whose
//! record does not read (`Facts::run` is `None`: `runner runs` and `show` leave it aside too). When the reading that matched found
//! only active ones, that is said (exit 4); when it found only finished ones, the hint matched
//! nothing resumable and the reason is given.

use chrono::{DateTime, Utc};

/// Which readings of the hint to try (`--run`, `--spec`, `--chunk` force one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    Any,
    Run,
    Spec,
    Chunk,
}

/// The readings, in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    RunId,
    RunIdPrefix,
    SpecName,
    SpecNumber,
    Chunk,
    SpecSubstring,
    /// No hint: the most recent resumable run, else spec.
    MostRecent,
}

impl Step {
    fn in_reading(self, reading: Reading) -> bool {
        match reading {
            Reading::Any => true,
            Reading::Run => matches!(self, Step::RunId | Step::RunIdPrefix),
            Reading::Spec => matches!(
                self,
                Step::SpecName | Step::SpecNumber | Step::SpecSubstring
            ),
            Reading::Chunk => self == Step::Chunk,
        }
    }
}

const STEPS: [Step; 6] = [
    Step::RunId,
    Step::RunIdPrefix,
    Step::SpecName,
    Step::SpecNumber,
    Step::Chunk,
    Step::SpecSubstring,
];

/// What a spec is, for resuming.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpecState {
    #[default]
    Resumable,
    Complete,
    Merged,
    Discarded,
}

impl SpecState {
    fn word(self) -> &'static str {
        match self {
            SpecState::Resumable => "resumable",
            SpecState::Complete => "complete",
            SpecState::Merged => "merged",
            SpecState::Discarded => "discarded",
        }
    }
}

/// A run that is alive: what the "active run" refusal says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Active {
    pub run_id: Option<String>,
    pub spec: String,
    pub heartbeat: Option<DateTime<Utc>>,
    pub pid: Option<u32>,
    pub host: Option<String>,
}

/// One spec's facts (the default: resumable, nothing known).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpecFacts {
    pub state: SpecState,
    /// The first chunk in progress.
    pub current_chunk: Option<String>,
    /// The chunk worked on last (the newest attempt's, or the newest run's).
    pub last_chunk: Option<String>,
    /// When anything last happened to it (`None`: nothing ever did: never run).
    pub last_active: Option<DateTime<Utc>>,
    /// Its most recent run (by last activity).
    pub newest_run: Option<String>,
    /// The run holding it now, if any.
    pub active: Option<Active>,
}

/// One run's facts (from its record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFacts {
    pub spec: String,
    /// `policy::runs::state` said it is active (its lock held, or a recent heartbeat from a
    /// process runner cannot prove gone).
    pub active: bool,
    pub heartbeat: DateTime<Utc>,
    pub pid: u32,
    pub host: String,
    pub chunk: Option<String>,
}

/// The facts, asked for lazily. The mechanism reads (and remembers) what is asked.
pub trait Facts {
    /// Every run id that has a record, with its spec: from the runs folders' file names.
    fn run_ids(&self) -> std::borrow::Cow<'_, [(String, String)]>;
    /// The specs that have run records, with when one was last written, newest first.
    fn specs_by_recent_runs(&self) -> Vec<(String, DateTime<Utc>)>;
    /// The runs of `spec`, with when each record was last written, newest first.
    fn runs_of(&self, spec: &str) -> Vec<(String, DateTime<Utc>)>;
    fn spec_names(&self) -> Vec<String>;
    /// The chunk in progress and the chunk worked on last (the plan alone: cheaper than
    /// [`Facts::spec`], for the chunk reading, which looks at every spec).
    fn worked_chunks(&self, name: &str) -> (Option<String>, Option<String>);
    fn spec(&self, name: &str) -> SpecFacts;
    /// `None`: the record is missing or not usable.
    fn run(&self, id: &str) -> Option<RunFacts>;
}

/// One thing to resume: a spec, and the run it continues (none when the spec has no record).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Candidate {
    pub run_id: Option<String>,
    pub spec: String,
    pub chunk: Option<String>,
    pub last_activity: Option<DateTime<Utc>>,
}

/// The rule's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    One(Candidate),
    /// Several resumable candidates matched at `step` (most recently active first).
    Several {
        step: Step,
        candidates: Vec<Candidate>,
    },
    /// What the hint named is being run now.
    Active(Active),
    /// Nothing resumable matched the hint; `finished` lists what it matched that is not
    /// resumable (name, why).
    NoMatch {
        hint: String,
        finished: Vec<(String, String)>,
    },
    /// No hint, and no run or spec is left to resume.
    Nothing,
}

/// What to do with one thing a reading matched.
enum Verdict {
    Resumable(Candidate),
    Active(Active),
    Finished(String, String),
}

/// Resolve `hint` under `reading`.
pub fn resolve(hint: Option<&str>, reading: Reading, facts: &dyn Facts) -> Resolved {
    let Some(hint) = hint.map(str::trim).filter(|h| !h.is_empty()) else {
        return most_recent(facts);
    };
    for step in STEPS.into_iter().filter(|s| s.in_reading(reading)) {
        let verdicts = matches(step, hint, facts);
        if verdicts.is_empty() {
            continue;
        }
        return decide(step, hint, verdicts);
    }
    Resolved::NoMatch {
        hint: hint.to_string(),
        finished: Vec::new(),
    }
}

fn decide(step: Step, hint: &str, verdicts: Vec<Verdict>) -> Resolved {
    let mut found = Vec::new();
    let mut active = None;
    let mut finished = Vec::new();
    for v in verdicts {
        match v {
            Verdict::Resumable(c) => found.push(c),
            Verdict::Active(a) => {
                active.get_or_insert(a);
            }
            Verdict::Finished(what, why) => finished.push((what, why)),
        }
    }
    // Most recently active first; the same spec reached twice (a run and its spec) once.
    found.sort_by_key(|c| std::cmp::Reverse(c.last_activity));
    let mut seen = std::collections::HashSet::new();
    found.retain(|c| seen.insert((c.run_id.clone(), c.spec.clone())));
    match (found.len(), active) {
        (1, _) => Resolved::One(found.remove(0)),
        (0, Some(a)) => Resolved::Active(a),
        (0, None) => Resolved::NoMatch {
            hint: hint.to_string(),
            finished,
        },
        _ => Resolved::Several {
            step,
            candidates: found,
        },
    }
}

/// What one reading of `hint` matches, judged.
fn matches(step: Step, hint: &str, facts: &dyn Facts) -> Vec<Verdict> {
    match step {
        Step::RunId | Step::RunIdPrefix => {
            // Not a run id's form: the runs folders are not even listed.
            if !super::runs::is_run_id_prefix(hint) {
                return Vec::new();
            }
            let ids = facts.run_ids();
            let names: Vec<&str> = ids.iter().map(|(id, _)| id.as_str()).collect();
            let found = super::runs::matching(&names, hint);
            let exact = found.len() == 1 && found[0] == hint;
            if exact != (step == Step::RunId) {
                return Vec::new();
            }
            found
                .into_iter()
                .map(|id| {
                    let spec = ids.iter().find(|(i, _)| i == id).map(|(_, s)| s.as_str());
                    judge_run(id, spec.unwrap_or_default(), facts)
                })
                .collect()
        }
        Step::Chunk => facts
            .spec_names()
            .into_iter()
            .filter(|name| {
                let (current, last) = facts.worked_chunks(name);
                [current, last]
                    .into_iter()
                    .any(|c| c.as_deref() == Some(hint))
            })
            .map(|name| judge_spec(&name, facts.spec(&name), Some(hint)))
            .collect(),
        _ => facts
            .spec_names()
            .into_iter()
            .filter(|name| spec_matches(step, name, hint))
            .map(|name| {
                let spec = facts.spec(&name);
                judge_spec(&name, spec, None)
            })
            .collect(),
    }
}

fn spec_matches(step: Step, name: &str, hint: &str) -> bool {
    match step {
        Step::SpecName => name == hint,
        Step::SpecNumber => {
            hint.bytes().all(|b| b.is_ascii_digit())
                && name.len() > hint.len()
                && name.starts_with(hint)
                && name.as_bytes()[hint.len()] == b'-'
        }
        Step::SpecSubstring => name.contains(hint),
        _ => false,
    }
}

/// A run: set aside (its record does not read: `runner runs` and `show` do not list it
/// either), active (itself, or another run on its spec), finished (its spec is), or resumable.
fn judge_run(id: &str, spec_name: &str, facts: &dyn Facts) -> Verdict {
    let Some(run) = facts.run(id) else {
        return Verdict::Finished(
            id.to_string(),
            format!(
                "its record cannot be read (left aside); `runner resume --spec {}` resumes its spec",
                crate::sh(spec_name)
            ),
        );
    };
    let spec = facts.spec(&run.spec);
    if run.active {
        return Verdict::Active(Active {
            run_id: Some(id.to_string()),
            spec: run.spec,
            heartbeat: Some(run.heartbeat),
            pid: Some(run.pid),
            host: Some(run.host),
        });
    }
    if let Some(a) = spec.active {
        return Verdict::Active(a);
    }
    if spec.state != SpecState::Resumable {
        return Verdict::Finished(
            format!("{id} (spec {})", run.spec),
            format!("spec {} is {}", run.spec, spec.state.word()),
        );
    }
    Verdict::Resumable(Candidate {
        run_id: Some(id.to_string()),
        chunk: run.chunk.or(spec.current_chunk).or(spec.last_chunk),
        last_activity: Some(run.heartbeat),
        spec: run.spec,
    })
}

/// A spec: through its most recent run.
fn judge_spec(name: &str, spec: SpecFacts, chunk: Option<&str>) -> Verdict {
    if let Some(a) = spec.active {
        return Verdict::Active(a);
    }
    if spec.state != SpecState::Resumable {
        return Verdict::Finished(
            format!("spec {name}"),
            format!("it is {}", spec.state.word()),
        );
    }
    Verdict::Resumable(Candidate {
        run_id: spec.newest_run,
        spec: name.to_string(),
        chunk: chunk
            .map(str::to_string)
            .or(spec.current_chunk)
            .or(spec.last_chunk),
        last_activity: spec.last_active,
    })
}

/// No hint: the most recent resumable run; else the most recently active resumable spec that
/// ever did anything.
///
/// The runs are looked at spec by spec, most recent first, each spec's newest resumable run
/// kept: a spec whose newest record is older than the best run found so far cannot hold a
/// more recent one, so the search stops there (most often after the first spec).
fn most_recent(facts: &dyn Facts) -> Resolved {
    let mut best: Option<(DateTime<Utc>, Candidate)> = None;
    for (name, newest) in facts.specs_by_recent_runs() {
        if best.as_ref().is_some_and(|(t, _)| *t >= newest) {
            break;
        }
        let spec = facts.spec(&name);
        if spec.state != SpecState::Resumable || spec.active.is_some() {
            continue;
        }
        for (id, time) in facts.runs_of(&name) {
            if let Verdict::Resumable(c) = judge_run(&id, &name, facts) {
                if best.as_ref().is_none_or(|(t, _)| time > *t) {
                    best = Some((time, c));
                }
                break;
            }
        }
    }
    if let Some((_, c)) = best {
        return Resolved::One(c);
    }
    let mut specs: Vec<Candidate> = facts
        .spec_names()
        .into_iter()
        .filter_map(|name| {
            let spec = facts.spec(&name);
            spec.last_active?;
            match judge_spec(&name, spec, None) {
                Verdict::Resumable(c) => Some(c),
                _ => None,
            }
        })
        .collect();
    specs.sort_by_key(|c| std::cmp::Reverse(c.last_activity));
    match specs.into_iter().next() {
        Some(c) => Resolved::One(c),
        None => Resolved::Nothing,
    }
}

/// `--choice N` (1-based) among `candidates`; `None` when out of range.
pub fn pick(candidates: &[Candidate], choice: usize) -> Option<&Candidate> {
    choice.checked_sub(1).and_then(|i| candidates.get(i))
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
