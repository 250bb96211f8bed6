//! Reconstruction (`runner::engine::resume::reconstruct`) against the truth. Real runs of the
//! real binary with the fake agent make the state; the test saves the plan's chunk statuses at
//! the moment the run stopped (the truth), damages the sources, and compares what
//! reconstruction rebuilds: accuracy is the share of chunks whose rebuilt status is the truth.
//!
//! Required, per source used: 100 % from a valid checkpoint that neither the plan nor git
//! contradicts, ≥ 95 % from the events (mean), and the mean stated confidence within 10 points
//! of the mean measured accuracy. Where a damage changes the truth, the truth follows it
//! (`truth_after`): a chunk whose commit left the branch is not done, and a person's edit of the
//! plan stands; an agent's edit or a damaged source changes nothing.
//!
//! Measured on this suite (3 runs × 23 sets of damages = 69 scenarios; the whole table is
//! printed by `cargo test --test it calibration -- --nocapture`), 2026-11-29:
//!
//! | source     | scenarios | mean accuracy | mean confidence |
//! |------------|-----------|---------------|-----------------|
//! | checkpoint | 30        | 100.0 %       | 90.4            |
//! | events     | 30        | 100.0 %       | 91.0            |
//! | commits    | 9         | 100.0 %       | 91.9            |
//!
//! The truth is what the continued run does: it reads the plan after its recovery, so a chunk
//! set back in the plan (by a person or by an agent between runs: nothing tells them apart) is
//! done again, unless the set-back was made while a killed run's session was unsettled, which
//! that recovery undoes. Judged so (issue 27 review), every chunk is right; before, a set-back
//! chunk with its commit on the branch was kept completed (87.5 %), and the commits source's cap
//! of 90 then stated it 10.9 points under its accuracy, so it is 95. Rules changed by this suite: newer events are replayed on a checkpoint only where
//! they continue its statuses (the same-second events from before it undid a failure when the
//! journal's tail was cut); the commits source is no longer a fixed 50 (it stated 46 points
//! under its measured accuracy) but the share of chunks git confirms, at most 90, always marked
//! low confidence; and (issue 27) the statuses are checked against the plan and git
//! (`policy::agreement`), each kind of disagreement costing the doubt measured here: a status
//! kept against the plan with git's backing was right for 26 of 29 chunks (10 %), and a fixed
//! cap below 80 for a rewritten history stated 25 points under its accuracy (statuses git
//! decided were all right), so it went.

use std::path::{Path, PathBuf};

use chrono::Utc;
use runner::engine::resume::{Reconstruction, Source, reconstruct};
use runner::store::Workspace;
use serde_json::{Value, json};

use crate::common::*;

const SPEC: &str = "001-calib";
const CHUNKS: usize = 8;

fn rebuilt(repo: &TestRepo, spec: &str) -> Option<Reconstruction> {
    let ws = Workspace::open(&repo.root).unwrap();
    let paths = ws.spec(spec).unwrap();
    reconstruct(&ws, &paths, Utc::now()).unwrap()
}

fn statuses(r: &Reconstruction) -> Vec<(String, String)> {
    r.chunks
        .iter()
        .map(|c| (c.id.clone(), c.status.clone()))
        .collect()
}

/// How a run ends.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stop {
    /// SIGKILL once the 4th chunk's agent started (3 chunks done, the 4th in progress).
    Killed,
    /// The 3rd chunk fails for good (one attempt allowed); the run goes on or stops as runner
    /// decides.
    Failed,
    Completed,
}

/// What is done to the state after the run, before reconstruction.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Damage {
    CheckpointRemoved,
    CheckpointCorrupted,
    /// Its time moved 3 hours back (a clock that moved).
    CheckpointStale,
    /// The live journal cut in the middle of a line, a third from its end.
    TailCut,
    /// The older half of the journal's segments deleted.
    SegmentsRemoved,
    /// Every event's time moved 5 hours back.
    TimesBack,
    JournalRemoved,
    /// The files of the first two chunks deleted from the worktree.
    FilesDeleted,
    BranchDeleted,
    /// A hostile agent set every chunk back to `pending` in the plan file.
    PlanReset,
    /// The branch reset by two commits (history rewritten): the chunks whose commits went are
    /// not done (the truth changes with it).
    HistoryRewritten,
    /// The checkpoint forged: every chunk `completed`, with no commit where it had none.
    CheckpointForged,
    /// The checkpoint's time moved 3 hours ahead (a clock ahead, or an edited file).
    CheckpointFuture,
    /// Every event's time moved 5 hours ahead.
    TimesAhead,
    /// A person set the last completed chunk back to `pending` in the plan, its commit left on
    /// the branch (to have it done again: the truth changes with it).
    PlanSetBack,
    /// A person set every completed chunk whose commit left the branch back to `pending`, as
    /// the docs say to accept the loss (after `HistoryRewritten`).
    LossAccepted,
    /// A person added a chunk to the plan's last phase (pending: the truth has it too).
    ChunkAdded,
}

use Damage::*;

fn plan() -> String {
    let chunk = |i: usize| {
        json!({"id": format!("calib-{i}"), "description": format!("Step {i}"),
                                  "status": "pending"})
    };
    let phase = |p: usize, range: std::ops::RangeInclusive<usize>| {
        json!({"id": format!("phase-{p}"), "name": format!("Phase {p}"),
               "depends_on": if p == 1 { json!([]) } else { json!(["phase-1"]) },
               "subtasks": range.map(chunk).collect::<Vec<_>>()})
    };
    json!({"feature": "Calibration", "workflow_type": "feature",
           "phases": [phase(1, 1..=4), phase(2, 5..=CHUNKS)]})
    .to_string()
}

/// A repository where spec `SPEC` was run until `stop`; the plan's statuses then.
fn run(stop: Stop) -> (TestRepo, Vec<(String, String)>) {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    repo.write_plan(SPEC, &plan());
    if stop == Stop::Failed {
        repo.write_config("[run]\nmax_attempts = 1\n");
        repo.script("calib-3 * fail broken on purpose\n");
    }
    let agent = fixture("fake-agent").display().to_string();
    let mut cmd = repo.cmd(&["run", "--spec", SPEC, "--agent-command", &agent]);
    // Small segments: the journal has several files.
    cmd.env("RUNNER_JOURNAL_SEGMENT_BYTES", "3000");
    if stop == Stop::Killed {
        cmd.env("RUNNER_FAILPOINTS", "after_spawn@4");
    }
    let out = cmd.output().unwrap();
    if stop == Stop::Killed {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{}", stderr(&out));
    }
    if stop == Stop::Completed {
        assert_exit(&out, 0);
    }
    let truth = repo.statuses(SPEC);
    (repo, truth)
}

fn spec_dir(repo: &TestRepo) -> PathBuf {
    repo.spec_dir(SPEC)
}

fn journal_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name.strip_prefix("events.")?.strip_suffix(".jsonl")?;
            Some((n.parse().ok()?, e.path()))
        })
        .collect();
    files.sort();
    let mut out: Vec<PathBuf> = files.into_iter().map(|(_, p)| p).collect();
    if dir.join("events.jsonl").exists() {
        out.push(dir.join("events.jsonl"));
    }
    out
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

fn moved_back(time: &Value, hours: i64) -> Value {
    let t = chrono::DateTime::parse_from_rfc3339(time.as_str().unwrap()).unwrap();
    json!(
        (t - chrono::Duration::hours(hours))
            .with_timezone(&Utc)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )
}

fn damage(repo: &TestRepo, d: Damage) {
    let dir = spec_dir(repo);
    let checkpoint = dir.join("checkpoint.json");
    match d {
        CheckpointRemoved => std::fs::remove_file(&checkpoint).unwrap(),
        CheckpointCorrupted => {
            std::fs::write(&checkpoint, b"{\"schema\":1,\"id\":\"r1\", gar").unwrap()
        }
        CheckpointStale => edit_json(&checkpoint, |v| v["time"] = moved_back(&v["time"], 3)),
        TailCut => {
            let live = dir.join("events.jsonl");
            let bytes = std::fs::read(&live).unwrap();
            let mut cut = bytes.len() * 2 / 3;
            while bytes[cut - 1] == b'\n' {
                cut -= 1;
            }
            std::fs::write(&live, &bytes[..cut]).unwrap();
        }
        SegmentsRemoved => {
            let files = journal_files(&dir);
            let segments = &files[..files.len() - 1];
            assert!(segments.len() >= 2, "too few segments: {files:?}");
            for s in &segments[..segments.len() / 2] {
                std::fs::remove_file(s).unwrap();
            }
        }
        TimesBack => shift_journal(&dir, 5),
        JournalRemoved => {
            for f in journal_files(&dir) {
                std::fs::remove_file(f).unwrap();
            }
        }
        FilesDeleted => {
            for i in 1..=2 {
                std::fs::remove_file(repo.worktree().join(format!("work/calib-{i}.txt"))).unwrap();
            }
        }
        BranchDeleted => {
            repo.git(&[
                "update-ref",
                "-d",
                &format!("refs/heads/auto-claude/{SPEC}"),
            ]);
        }
        PlanReset => edit_json(&repo.plan_path(SPEC), |plan| {
            for phase in plan["phases"].as_array_mut().unwrap() {
                for c in phase["subtasks"].as_array_mut().unwrap() {
                    c["status"] = json!("pending");
                }
            }
        }),
        HistoryRewritten => {
            git_in(&repo.worktree(), &["reset", "-q", "--hard", "HEAD~2"]);
        }
        CheckpointForged => edit_json(&checkpoint, |v| {
            for c in v["chunks"].as_array_mut().unwrap() {
                c["status"] = json!("completed");
            }
        }),
        CheckpointFuture => edit_json(&checkpoint, |v| v["time"] = moved_back(&v["time"], -3)),
        TimesAhead => shift_journal(&dir, -5),
        PlanSetBack => {
            let last = repo
                .statuses(SPEC)
                .into_iter()
                .rev()
                .find(|(_, s)| s == "completed")
                .map(|(id, _)| id);
            set_status(repo, last.iter().map(String::as_str), "pending");
        }
        LossAccepted => {
            let gone = gone_from_branch(repo);
            set_status(repo, gone.iter().map(String::as_str), "pending");
        }
        ChunkAdded => edit_json(&repo.plan_path(SPEC), |plan| {
            let phases = plan["phases"].as_array_mut().unwrap();
            let last = phases.last_mut().unwrap()["subtasks"]
                .as_array_mut()
                .unwrap();
            last.push(json!({"id": "calib-added", "description": "Added by hand",
                             "status": "pending"}));
        }),
    }
}

/// Every event's time moved `hours` back (ahead when negative).
fn shift_journal(dir: &Path, hours: i64) {
    for f in journal_files(dir) {
        let text = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<String> = text
            .lines()
            .map(|l| match serde_json::from_str::<Value>(l) {
                Ok(mut v) if v["time"].is_string() => {
                    v["time"] = moved_back(&v["time"], hours);
                    v.to_string()
                }
                _ => l.to_string(),
            })
            .collect();
        std::fs::write(&f, lines.join("\n") + "\n").unwrap();
    }
}

/// Set `chunks` to `status` in the plan file, as a person edits it.
fn set_status<'a>(repo: &TestRepo, chunks: impl Iterator<Item = &'a str> + Clone, status: &str) {
    edit_json(&repo.plan_path(SPEC), |plan| {
        for phase in plan["phases"].as_array_mut().unwrap() {
            for c in phase["subtasks"].as_array_mut().unwrap() {
                if chunks.clone().any(|id| c["id"] == id) {
                    c["status"] = json!(status);
                }
            }
        }
    });
}

/// The chunks the plan counts completed whose chunk commit is no longer on the branch.
fn gone_from_branch(repo: &TestRepo) -> Vec<String> {
    let subjects = repo.branch_log(&format!("auto-claude/{SPEC}"));
    repo.statuses(SPEC)
        .into_iter()
        .filter(|(id, s)| {
            s == "completed"
                && !subjects
                    .iter()
                    .any(|sub| sub.starts_with(&format!("auto-claude: {id} - ")))
        })
        .map(|(id, _)| id)
        .collect()
}

/// The truth after `damages`: what the plan said when the run stopped, but for what a damage
/// makes true (a chunk whose commit left the branch is not done; a person's edit of the plan
/// stands, as the continued run reads it); a hostile agent's edit or a damaged source changes
/// nothing. A run killed in a session has its plan settled by the next run's recovery, which
/// undoes an edit made since the session started that the journal does not name as a
/// person's: a chunk set back then is not done again, so the set-back is no truth there.
fn truth_after(
    repo: &TestRepo,
    stop: Stop,
    mut truth: Vec<(String, String)>,
    damages: &[Damage],
) -> Vec<(String, String)> {
    let plan_now = repo.statuses(SPEC);
    for d in damages {
        match d {
            HistoryRewritten => {
                let gone = gone_from_branch(repo);
                for (id, s) in truth.iter_mut() {
                    if gone.contains(id) {
                        *s = "pending".into();
                    }
                }
            }
            PlanSetBack if stop == Stop::Killed => {}
            // A plan reset between runs is the plan the continued run reads (nothing tells it
            // from a person's edit): it does every chunk again.
            PlanReset | PlanSetBack | LossAccepted | ChunkAdded => truth = plan_now.clone(),
            _ => {}
        }
    }
    truth
}

/// One scenario's outcome.
#[derive(Debug)]
struct Measured {
    name: String,
    source: Source,
    confidence: u8,
    accuracy: f64,
    reason: String,
    warnings: Vec<String>,
}

fn scenario(stop: Stop, damages: &[Damage]) -> Measured {
    let (repo, truth) = run(stop);
    assert_eq!(truth.len(), CHUNKS);
    for d in damages {
        damage(&repo, *d);
    }
    let truth = truth_after(&repo, stop, truth, damages);
    let r = rebuilt(&repo, SPEC).expect("something to rebuild from");
    let got = statuses(&r);
    assert_eq!(got.len(), truth.len(), "{r:?}");
    let right = got.iter().zip(&truth).filter(|(a, b)| a == b).count();
    Measured {
        name: format!("{stop:?} {damages:?}"),
        source: r.source,
        confidence: r.confidence,
        accuracy: right as f64 / truth.len() as f64,
        reason: r.confidence_reason,
        warnings: r.warnings,
    }
}

/// Every scenario: each run, undamaged and with each damage (the checkpoint gone first where
/// the damage is to a lower source, so that source is the one used).
fn scenarios() -> Vec<(Stop, Vec<Damage>)> {
    let damages: &[&[Damage]] = &[
        &[],
        &[CheckpointStale],
        &[FilesDeleted],
        &[BranchDeleted],
        &[TailCut],
        &[TimesBack],
        &[PlanReset],
        &[CheckpointRemoved],
        &[CheckpointCorrupted],
        &[CheckpointRemoved, TailCut],
        &[CheckpointRemoved, SegmentsRemoved],
        &[CheckpointCorrupted, TimesBack],
        &[CheckpointRemoved, PlanReset],
        &[CheckpointRemoved, JournalRemoved],
        &[CheckpointRemoved, JournalRemoved, PlanReset],
        // Issue 27: history rewritten, forged and stale checkpoints, hand-edited plans, clocks
        // ahead.
        &[HistoryRewritten],
        &[HistoryRewritten, LossAccepted],
        &[CheckpointRemoved, JournalRemoved, HistoryRewritten],
        &[CheckpointForged],
        &[CheckpointFuture],
        &[CheckpointRemoved, TimesAhead],
        &[PlanSetBack],
        &[ChunkAdded],
    ];
    let mut out = Vec::new();
    for stop in [Stop::Killed, Stop::Failed, Stop::Completed] {
        for d in damages {
            out.push((stop, d.to_vec()));
        }
    }
    out
}

#[test]
fn reconstruction_is_right_and_its_confidence_is_calibrated() {
    let all = scenarios();
    // Two at a time: each scenario is a real run.
    let mut measured: Vec<Measured> = Vec::new();
    for pair in all.chunks(2) {
        let got: Vec<Measured> = std::thread::scope(|s| {
            let handles: Vec<_> = pair
                .iter()
                .map(|(stop, d)| s.spawn(move || scenario(*stop, d)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        measured.extend(got);
    }
    let mut report = String::new();
    for m in &measured {
        report.push_str(&format!(
            "{:<58} {:<10} confidence {:>3}  accuracy {:>5.1} %  | {}\n",
            m.name,
            m.source.as_str(),
            m.confidence,
            m.accuracy * 100.0,
            m.reason
        ));
    }
    let mut failures = Vec::new();
    for source in [Source::Checkpoint, Source::Events, Source::Commits] {
        let of: Vec<&Measured> = measured.iter().filter(|m| m.source == source).collect();
        if of.is_empty() {
            failures.push(format!("no scenario used the {source:?} source"));
            continue;
        }
        let n = of.len() as f64;
        let accuracy = of.iter().map(|m| m.accuracy * 100.0).sum::<f64>() / n;
        let confidence = of.iter().map(|m| f64::from(m.confidence)).sum::<f64>() / n;
        report.push_str(&format!(
            "{}: {} scenarios, mean accuracy {accuracy:.1} %, mean confidence {confidence:.1}\n",
            source.as_str(),
            of.len()
        ));
        // A valid checkpoint that neither the plan nor git contradicts is right.
        if source == Source::Checkpoint
            && let Some(m) = of
                .iter()
                .find(|m| m.accuracy < 1.0 && !m.reason.contains(CONTRADICTED))
        {
            failures.push(format!(
                "from a valid checkpoint, {} is not 100 % right",
                m.name
            ));
        }
        if source == Source::Events && accuracy < 95.0 {
            failures.push(format!("from the events, {accuracy:.1} % < 95 %"));
        }
        if (confidence - accuracy).abs() > 10.0 {
            failures.push(format!(
                "{source:?}: confidence {confidence:.1} is more than 10 from accuracy {accuracy:.1}"
            ));
        }
    }
    println!("{report}");
    assert!(failures.is_empty(), "{}\n{report}", failures.join("\n"));
    // What each damage must say.
    for m in &measured {
        if m.name.contains("CheckpointCorrupted") {
            assert!(
                m.warnings
                    .iter()
                    .any(|w| w == "Checkpoint corrupted, falling back to events"),
                "{m:?}"
            );
            assert_ne!(m.source, Source::Checkpoint, "{m:?}");
        }
        let note = "Low confidence recovery. Verify manually.";
        if m.confidence < 80 || m.source == Source::Commits {
            assert!(m.reason.ends_with(note), "{m:?}");
        }
        // Said once: in the warnings when the score does not say it (80 or more).
        let noted = m.warnings.iter().any(|w| w == note);
        assert_eq!(
            noted,
            m.source == Source::Commits && m.confidence >= 80,
            "{m:?}"
        );
        if m.name.ends_with("[]") {
            assert_eq!((m.source, m.confidence), (Source::Checkpoint, 100), "{m:?}");
        }
        // Never confidently wrong: a quarter of the chunks wrong is never stated at 90 or more.
        assert!(m.accuracy >= 0.75 || m.confidence < 90, "{m:?}");
        issue_27_words(m);
    }
}

/// In `confidence_reason` when the plan or git contradicts a rebuilt status.
const CONTRADICTED: &str = "the plan or git contradict";

/// What the issue 27 damages must say.
fn issue_27_words(m: &Measured) {
    let warned = |part: &str| m.warnings.iter().any(|w| w.contains(part));
    if m.name.contains("[HistoryRewritten]") {
        // The checkpoint is set aside for what it is, and the lost work is counted not done.
        assert!(
            warned("Checkpoint from before the branch's history was rewritten"),
            "{m:?}"
        );
        assert!(warned("counted as not done"), "{m:?}");
        assert!(m.reason.contains(CONTRADICTED), "{m:?}");
    }
    if m.name.contains("LossAccepted") {
        assert!(m.confidence >= 90, "{m:?}");
    }
    if m.name.contains("CheckpointForged") && !m.name.starts_with("Completed") {
        assert!(m.reason.contains(CONTRADICTED), "{m:?}");
        assert!(
            warned("neither the plan nor git confirms completed"),
            "{m:?}"
        );
    }
    // A set-back after a run that ended stands, and the run does the chunk again; one made
    // while a killed run's session is unsettled is undone by its recovery: nothing disagrees.
    if m.name.contains("PlanSetBack") && !m.name.starts_with("Killed") {
        assert!(m.reason.contains(CONTRADICTED), "{m:?}");
        assert!(warned("the run will do it again"), "{m:?}");
    }
    if m.name.starts_with("Killed [PlanSetBack]") {
        assert!(!m.reason.contains(CONTRADICTED), "{m:?}");
    }
    if m.name.contains("ChunkAdded") {
        assert!(
            warned("Checkpoint older than the plan, rebuilt from events"),
            "{m:?}"
        );
        assert!(!warned("corrupted"), "{m:?}");
    }
    if m.name.contains("Future") || m.name.contains("TimesAhead") {
        assert!(m.reason.contains("in the future (clock skew)"), "{m:?}");
        assert!(!m.reason.contains("0 s ago"), "{m:?}");
        assert!(m.confidence <= 80, "{m:?}");
    }
}

#[test]
fn nothing_to_rebuild_from_is_none() {
    let repo = repo_with_fixture_plan("001-a");
    assert!(rebuilt(&repo, "001-a").is_none());
}

#[test]
fn a_checkpoint_older_than_the_journal_gets_the_newer_events_replayed_on_top() {
    let (repo, _) = run(Stop::Killed);
    let dir = spec_dir(&repo);
    let old = std::fs::read(dir.join("checkpoint.json")).unwrap();
    // The run goes on to the end; the checkpoint is then put back as it was when it stopped.
    assert_exit(&repo.run_spec(SPEC, &[]), 0);
    let truth = repo.statuses(SPEC);
    assert!(truth.iter().all(|(_, s)| s == "completed"), "{truth:?}");
    std::fs::write(dir.join("checkpoint.json"), old).unwrap();
    let r = rebuilt(&repo, SPEC).unwrap();
    assert_eq!(r.source, Source::Checkpoint, "{r:?}");
    assert_eq!(statuses(&r), truth);
    assert!(
        r.confidence_reason
            .contains("later journal events replayed on top"),
        "{r:?}"
    );
    assert_eq!(r.confidence, 100);
    // Every completed chunk has its commit.
    assert!(r.chunks.iter().all(|c| c.commit.is_some()), "{r:?}");
}

#[test]
fn a_checkpoint_whose_tip_left_the_branch_is_not_believed_and_says_why() {
    let (repo, truth) = run(Stop::Completed);
    // History rewritten: the branch loses its last two commits and gets another.
    let wt = repo.worktree();
    git_in(&wt, &["reset", "-q", "--hard", "HEAD~2"]);
    std::fs::write(wt.join("other.txt"), "x\n").unwrap();
    git_in(&wt, &["add", "-A"]);
    git_in(&wt, &["commit", "-q", "-m", "something else"]);
    let r = rebuilt(&repo, SPEC).unwrap();
    assert_eq!(r.source, Source::Events, "{r:?}");
    assert_eq!(
        r.warnings[0],
        "Checkpoint from before the branch's history was rewritten, set aside; rebuilt from events"
    );
    assert!(
        r.warnings[1]
            .contains("is no longer on auto-claude/001-calib (the branch's history was rewritten)"),
        "{r:?}"
    );
    // The two chunks whose commits went are not done; the journal's word is checked by git.
    let truth = truth_after(&repo, Stop::Completed, truth, &[HistoryRewritten]);
    assert_eq!(
        truth.iter().filter(|(_, s)| s == "pending").count(),
        2,
        "{truth:?}"
    );
    assert_eq!(statuses(&r), truth);
    assert!(r.confidence < 100, "{r:?}");
    assert!(
        r.warnings.iter().any(|w| w.starts_with(
            "Chunks calib-7, calib-8: completed by the journal, but their commits are no longer on"
        )),
        "{r:?}"
    );
}

#[test]
fn a_checkpoint_of_another_plan_or_spec_is_not_believed() {
    let (repo, _) = run(Stop::Completed);
    let dir = spec_dir(&repo);
    edit_json(&dir.join("checkpoint.json"), |v| {
        v["chunks"].as_array_mut().unwrap().pop();
    });
    let r = rebuilt(&repo, SPEC).unwrap();
    assert_eq!(r.source, Source::Events, "{r:?}");
    assert!(
        r.warnings[1].contains("its chunks are not the plan's"),
        "{r:?}"
    );
    edit_json(&dir.join("checkpoint.json"), |v| {
        v["spec"] = json!("002-other")
    });
    let r = rebuilt(&repo, SPEC).unwrap();
    assert!(
        r.warnings[1].contains("spec \"002-other\"'s checkpoint"),
        "{r:?}"
    );
    // No chunks at all.
    edit_json(&dir.join("checkpoint.json"), |v| {
        v["spec"] = json!(SPEC);
        v["chunks"] = json!([]);
    });
    let r = rebuilt(&repo, SPEC).unwrap();
    assert!(r.warnings[1].contains("not the plan's"), "{r:?}");
}

#[test]
fn a_completed_chunks_commit_missing_from_the_branch_voids_the_checkpoint() {
    let (repo, truth) = run(Stop::Completed);
    edit_json(&spec_dir(&repo).join("checkpoint.json"), |v| {
        v["chunks"][0]["commit"] = json!("1".repeat(40));
    });
    let r = rebuilt(&repo, SPEC).unwrap();
    assert_eq!(r.source, Source::Events, "{r:?}");
    assert!(
        r.warnings[1].contains("chunk calib-1's commit 1111111")
            && r.warnings[1].contains("is not on"),
        "{r:?}"
    );
    assert_eq!(statuses(&r), truth);
}
