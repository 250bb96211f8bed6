use std::cell::RefCell;
use std::collections::BTreeMap;

use super::*;

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
}

/// Facts in memory; counts what was asked, to prove the lazy readings stay lazy.
#[derive(Default)]
struct World {
    specs: BTreeMap<String, SpecFacts>,
    runs: BTreeMap<String, RunFacts>,
    /// Record files that are not usable (id → spec).
    broken: Vec<(String, String)>,
    spec_reads: RefCell<Vec<String>>,
    run_reads: RefCell<Vec<String>>,
}

impl World {
    fn spec(mut self, name: &str, state: SpecState, current: Option<&str>, last: i64) -> Self {
        self.specs.insert(
            name.into(),
            SpecFacts {
                state,
                current_chunk: current.map(str::to_string),
                last_chunk: None,
                last_active: (last >= 0).then(|| at(last)),
                newest_run: None,
                active: None,
            },
        );
        self
    }

    fn last_chunk(mut self, name: &str, chunk: &str) -> Self {
        self.specs.get_mut(name).unwrap().last_chunk = Some(chunk.into());
        self
    }

    fn run(mut self, id: &str, spec: &str, heartbeat: i64, active: bool) -> Self {
        self.runs.insert(
            id.into(),
            RunFacts {
                spec: spec.into(),
                active,
                heartbeat: at(heartbeat),
                pid: 42,
                host: "box".into(),
                chunk: Some(format!("chunk-of-{id}")),
            },
        );
        let s = self.specs.get_mut(spec).unwrap();
        let newer = s
            .newest_run
            .as_ref()
            .is_none_or(|n| self.runs[n].heartbeat < at(heartbeat));
        if newer {
            s.newest_run = Some(id.into());
        }
        if active {
            s.active = Some(Active {
                run_id: Some(id.into()),
                spec: spec.into(),
                heartbeat: Some(at(heartbeat)),
                pid: Some(42),
                host: Some("box".into()),
            });
        }
        self
    }
}

impl Facts for World {
    fn run_ids(&self) -> std::borrow::Cow<'_, [(String, String)]> {
        self.runs
            .iter()
            .map(|(id, r)| (id.clone(), r.spec.clone()))
            .chain(self.broken.iter().cloned())
            .collect::<Vec<_>>()
            .into()
    }
    fn specs_by_recent_runs(&self) -> Vec<(String, DateTime<Utc>)> {
        let mut specs: Vec<(String, DateTime<Utc>)> = self
            .specs
            .keys()
            .filter_map(|name| Some((name.clone(), self.runs_of(name).first()?.1)))
            .collect();
        specs.sort_by_key(|s| std::cmp::Reverse(s.1));
        specs
    }
    fn runs_of(&self, spec: &str) -> Vec<(String, DateTime<Utc>)> {
        // A broken record's file is the newest (written last).
        let mut ids: Vec<(String, DateTime<Utc>)> = self
            .runs
            .iter()
            .filter(|(_, r)| r.spec == spec)
            .map(|(id, r)| (id.clone(), r.heartbeat))
            .chain(
                self.broken
                    .iter()
                    .filter(|(_, s)| s == spec)
                    .map(|(id, _)| (id.clone(), at(10_000))),
            )
            .collect();
        ids.sort_by_key(|r| std::cmp::Reverse(r.1));
        ids
    }
    fn worked_chunks(&self, name: &str) -> (Option<String>, Option<String>) {
        let s = self.specs.get(name).cloned().unwrap_or_default();
        (s.current_chunk, s.last_chunk)
    }
    fn spec_names(&self) -> Vec<String> {
        self.specs.keys().cloned().collect()
    }
    fn spec(&self, name: &str) -> SpecFacts {
        self.spec_reads.borrow_mut().push(name.into());
        self.specs.get(name).cloned().unwrap_or_default()
    }
    fn run(&self, id: &str) -> Option<RunFacts> {
        self.run_reads.borrow_mut().push(id.into());
        self.runs.get(id).cloned()
    }
}

const R1: &str = "r3f9a0c41b2d7";
const R2: &str = "r3f9a0c4ffff0";
const R3: &str = "rabcdef012345";
const R4: &str = "r0000000000aa";

/// Three resumable specs, one complete, one merged, one discarded; runs on several.
fn world() -> World {
    World::default()
        .spec(
            "001-add-login",
            SpecState::Resumable,
            Some("subtask-1-2"),
            100,
        )
        .spec("002-add-logout", SpecState::Resumable, None, 300)
        .last_chunk("002-add-logout", "subtask-2-1")
        .spec("010-login-page", SpecState::Resumable, None, 50)
        .spec("003-done", SpecState::Complete, None, 10)
        .spec("004-landed", SpecState::Merged, None, 20)
        .spec("005-thrown", SpecState::Discarded, None, 30)
        .run(R1, "001-add-login", 100, false)
        .run(R2, "002-add-logout", 300, false)
        .run(R3, "003-done", 400, false)
        .run(R4, "001-add-login", 90, false)
}

fn one(r: Resolved) -> Candidate {
    match r {
        Resolved::One(c) => c,
        other => panic!("expected one, got {other:?}"),
    }
}

fn several(r: Resolved) -> (Step, Vec<(Option<String>, String)>) {
    match r {
        Resolved::Several { step, candidates } => (
            step,
            candidates.into_iter().map(|c| (c.run_id, c.spec)).collect(),
        ),
        other => panic!("expected several, got {other:?}"),
    }
}

#[test]
fn step_one_an_exact_run_id_wins_and_reads_one_record() {
    let w = world();
    let c = one(resolve(Some(R1), Reading::Any, &w));
    assert_eq!(c.run_id.as_deref(), Some(R1));
    assert_eq!(c.spec, "001-add-login");
    assert_eq!(c.chunk.as_deref(), Some("chunk-of-r3f9a0c41b2d7"));
    assert_eq!(c.last_activity, Some(at(100)));
    assert_eq!(*w.run_reads.borrow(), vec![R1.to_string()]);
    assert_eq!(*w.spec_reads.borrow(), vec!["001-add-login".to_string()]);
}

#[test]
fn step_two_a_prefix_of_four_or_more_reads_only_the_matching_records() {
    let w = world();
    let (step, found) = several(resolve(Some("r3f9"), Reading::Any, &w));
    assert_eq!(step, Step::RunIdPrefix);
    // Most recently active first.
    assert_eq!(
        found,
        vec![
            (Some(R2.to_string()), "002-add-logout".to_string()),
            (Some(R1.to_string()), "001-add-login".to_string())
        ]
    );
    let mut read = w.run_reads.borrow().clone();
    read.sort();
    assert_eq!(read, vec![R1.to_string(), R2.to_string()]);
    assert_eq!(
        one(resolve(Some("r3f9a0c41"), Reading::Any, &world()))
            .run_id
            .as_deref(),
        Some(R1)
    );
    // Three characters are not a prefix: read as a spec part, which matches nothing.
    assert!(matches!(
        resolve(Some("r3f"), Reading::Any, &world()),
        Resolved::NoMatch { .. }
    ));
}

#[test]
fn step_three_exact_spec_name_beats_substring() {
    let w = world();
    // "001-add-login" is also a substring of nothing else, but "login" would match two.
    let c = one(resolve(Some("001-add-login"), Reading::Any, &w));
    assert_eq!(c.spec, "001-add-login");
    // The spec's newest run is the one continued, its in-progress chunk shown.
    assert_eq!(c.run_id.as_deref(), Some(R1));
    assert_eq!(c.chunk.as_deref(), Some("subtask-1-2"));
}

#[test]
fn step_four_a_spec_number() {
    let c = one(resolve(Some("002"), Reading::Any, &world()));
    assert_eq!(c.spec, "002-add-logout");
    // "01" is no number of a spec ("010-" starts with "010"): read as a part, it matches
    // 001-add-login and 010-login-page.
    let (step, found) = several(resolve(Some("01"), Reading::Any, &world()));
    assert_eq!(step, Step::SpecSubstring);
    assert_eq!(found.len(), 2);
}

#[test]
fn step_five_the_spec_whose_current_or_last_chunk_has_this_id() {
    let c = one(resolve(Some("subtask-1-2"), Reading::Any, &world()));
    assert_eq!(
        (c.spec.as_str(), c.chunk.as_deref()),
        ("001-add-login", Some("subtask-1-2"))
    );
    let c = one(resolve(Some("subtask-2-1"), Reading::Any, &world()));
    assert_eq!(
        (c.spec.as_str(), c.chunk.as_deref()),
        ("002-add-logout", Some("subtask-2-1"))
    );
    // Two specs at the same chunk id: ambiguous.
    let w = world().last_chunk("010-login-page", "subtask-1-2");
    let (step, found) = several(resolve(Some("subtask-1-2"), Reading::Any, &w));
    assert_eq!(step, Step::Chunk);
    assert_eq!(found.len(), 2);
}

#[test]
fn step_six_a_part_of_a_name_and_only_resumable_specs_count() {
    let (step, found) = several(resolve(Some("login"), Reading::Any, &world()));
    assert_eq!(step, Step::SpecSubstring);
    assert_eq!(
        found.iter().map(|f| f.1.as_str()).collect::<Vec<_>>(),
        vec!["001-add-login", "010-login-page"]
    );
    assert_eq!(
        one(resolve(Some("logout"), Reading::Any, &world())).spec,
        "002-add-logout"
    );
    // "00" matches six names; the three finished ones are not candidates.
    let (_, found) = several(resolve(Some("00"), Reading::Any, &world()));
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found
            .iter()
            .all(|f| f.1.starts_with("001") || f.1.starts_with("002"))
    );
}

#[test]
fn the_first_step_with_matches_wins_even_over_later_better_ones() {
    // A spec named like a chunk id of another spec: the exact name (step 3) wins.
    let w = world().spec("subtask-1-2", SpecState::Resumable, None, 5);
    assert_eq!(
        one(resolve(Some("subtask-1-2"), Reading::Any, &w)).spec,
        "subtask-1-2"
    );
    // A number that is also part of a name: the number wins.
    let w = world().spec("777-x", SpecState::Resumable, None, 5).spec(
        "001-777",
        SpecState::Resumable,
        None,
        5,
    );
    assert_eq!(one(resolve(Some("777"), Reading::Any, &w)).spec, "777-x");
}

#[test]
fn finished_specs_are_never_candidates_and_the_reason_is_given() {
    for (hint, why) in [
        ("003-done", "complete"),
        ("004", "merged"),
        ("thrown", "discarded"),
        (R3, "complete"),
    ] {
        match resolve(Some(hint), Reading::Any, &world()) {
            Resolved::NoMatch { hint: h, finished } => {
                assert_eq!(h, hint);
                assert_eq!(finished.len(), 1, "{hint}");
                assert!(finished[0].1.contains(why), "{hint}: {finished:?}");
            }
            other => panic!("{hint}: {other:?}"),
        }
    }
    match resolve(Some("xyz"), Reading::Any, &world()) {
        Resolved::NoMatch { hint, finished } => {
            assert_eq!(hint, "xyz");
            assert!(finished.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_active_run_is_refused_whether_named_by_id_or_by_spec_and_others_still_resolve() {
    let w = world()
        .spec("006-busy", SpecState::Resumable, Some("c"), 500)
        .run("r6666666666aa", "006-busy", 500, true);
    for hint in ["r6666666666aa", "r666", "006-busy", "006", "busy", "c"] {
        match resolve(Some(hint), Reading::Any, &w) {
            Resolved::Active(a) => {
                assert_eq!(a.run_id.as_deref(), Some("r6666666666aa"), "{hint}");
                assert_eq!((a.pid, a.host.as_deref()), (Some(42), Some("box")));
            }
            other => panic!("{hint}: {other:?}"),
        }
    }
    // An old run of a spec another run holds now: that run is named.
    let w = w.run("r6666666666bb", "006-busy", 10, false);
    assert!(matches!(
        resolve(Some("r6666666666bb"), Reading::Any, &w),
        Resolved::Active(a) if a.run_id.as_deref() == Some("r6666666666aa")
    ));
    // Among several matches, the active one is left out: the other is the answer.
    let w = w.spec("007-busy-too", SpecState::Resumable, None, 1);
    assert_eq!(
        one(resolve(Some("busy"), Reading::Any, &w)).spec,
        "007-busy-too"
    );
    // No hint skips the active run (the newest) for the next resumable one.
    assert_eq!(
        one(resolve(None, Reading::Any, &w)).run_id.as_deref(),
        Some(R2)
    );
}

#[test]
fn forced_readings_try_only_their_steps() {
    let w = world().spec("r3f9-spec", SpecState::Resumable, None, 1);
    // As a spec, "r3f9" is a part of a name (not a run prefix).
    assert_eq!(
        one(resolve(Some("r3f9"), Reading::Spec, &w)).spec,
        "r3f9-spec"
    );
    // As a run, it is the run prefix (and never a spec).
    assert_eq!(
        several(resolve(Some("r3f9"), Reading::Run, &w)).0,
        Step::RunIdPrefix
    );
    assert!(matches!(
        resolve(Some("001-add-login"), Reading::Run, &w),
        Resolved::NoMatch { .. }
    ));
    // --chunk: only the chunk reading.
    assert_eq!(
        one(resolve(Some("subtask-2-1"), Reading::Chunk, &w)).spec,
        "002-add-logout"
    );
    assert!(matches!(
        resolve(Some("002"), Reading::Chunk, &w),
        Resolved::NoMatch { .. }
    ));
    assert!(matches!(
        resolve(Some("subtask-2-1"), Reading::Spec, &w),
        Resolved::NoMatch { .. }
    ));
}

#[test]
fn no_hint_takes_the_most_recent_resumable_run_then_the_most_recent_spec() {
    // R3 (400) is the newest but its spec is complete: R2 (300).
    let c = one(resolve(None, Reading::Any, &world()));
    assert_eq!(c.run_id.as_deref(), Some(R2));
    let c = one(resolve(Some("  "), Reading::Any, &world()));
    assert_eq!(c.run_id.as_deref(), Some(R2));
    // No runs at all: the most recently active resumable spec that did anything.
    let w = World::default()
        .spec("001-a", SpecState::Resumable, None, 5)
        .spec("002-b", SpecState::Resumable, None, 50)
        .spec("003-c", SpecState::Complete, None, 500)
        .spec("004-never", SpecState::Resumable, None, -1);
    let c = one(resolve(None, Reading::Any, &w));
    assert_eq!((c.spec.as_str(), c.run_id), ("002-b", None));
    // Nothing: only finished specs and one never run.
    let w = World::default()
        .spec("003-c", SpecState::Complete, None, 500)
        .spec("004-never", SpecState::Resumable, None, -1);
    assert_eq!(resolve(None, Reading::Any, &w), Resolved::Nothing);
    assert_eq!(
        resolve(None, Reading::Any, &World::default()),
        Resolved::Nothing
    );
}

#[test]
fn a_file_named_like_a_run_whose_record_does_not_read_is_no_run() {
    let mut w = world();
    w.broken
        .push(("r9999999999ff".into(), "002-add-logout".into()));
    // Named: nothing to resume by that id, and the way to its spec is said.
    let Resolved::NoMatch { finished, .. } = resolve(Some("r9999"), Reading::Any, &w) else {
        panic!("an unreadable record resolved")
    };
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0].0, "r9999999999ff");
    assert!(
        finished[0]
            .1
            .contains("runner resume --spec 002-add-logout"),
        "{finished:?}"
    );
    // No hint: the newest file is the broken one; the newest run whose record reads is taken.
    let c = one(resolve(None, Reading::Any, &w));
    assert_eq!(c.run_id.as_deref(), Some(R2));
    // With a readable run beside it, the prefix names that one alone.
    let w = w.run("r9999999999aa", "002-add-logout", 10, false);
    let c = one(resolve(Some("r9999"), Reading::Any, &w));
    assert_eq!(c.run_id.as_deref(), Some("r9999999999aa"));
}

#[test]
fn choice_is_one_based_and_bounded() {
    let Resolved::Several { candidates, .. } = resolve(Some("login"), Reading::Any, &world())
    else {
        unreachable!()
    };
    assert_eq!(pick(&candidates, 1).unwrap().spec, "001-add-login");
    assert_eq!(pick(&candidates, 2).unwrap().spec, "010-login-page");
    assert!(pick(&candidates, 0).is_none());
    assert!(pick(&candidates, 3).is_none());
}

#[test]
fn no_hint_compares_runs_across_specs_not_only_the_newest_spec() {
    // 001's newest run is alive on another host (active by its heartbeat, no lock here): its
    // older run (100) is resumable, but 002's run (300) is more recent.
    let mut w = World::default()
        .spec("001-a", SpecState::Resumable, None, 500)
        .spec("002-b", SpecState::Resumable, None, 300)
        .run("r1111111111aa", "001-a", 500, false)
        .run("r1111111111bb", "001-a", 100, false)
        .run("r2222222222aa", "002-b", 300, false);
    w.runs.get_mut("r1111111111aa").unwrap().active = true;
    let c = one(resolve(None, Reading::Any, &w));
    assert_eq!(c.run_id.as_deref(), Some("r2222222222aa"));
    // Without 002's run, 001's older run is the answer.
    w.runs.remove("r2222222222aa");
    let c = one(resolve(None, Reading::Any, &w));
    assert_eq!(c.run_id.as_deref(), Some("r1111111111bb"));
}
