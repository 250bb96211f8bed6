//! The journal rotated into segments (`events.<n>.jsonl`, see `store::segments`): runs with a
//! tiny segment size (RUNNER_JOURNAL_SEGMENT_BYTES) give the same prompts, rebuilt plans,
//! reviews and recoveries as a journal in one file.

use crate::common::*;
use serde_json::Value;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Output;

const SEGMENT_ENV: &str = "RUNNER_JOURNAL_SEGMENT_BYTES";
const TINY: &str = "700";

/// `runner ARGS` with the tiny segment size (inherited by the agent's `runner chunk`).
fn seg(repo: &TestRepo, args: &[&str]) -> Output {
    repo.cmd(args).env(SEGMENT_ENV, TINY).output().unwrap()
}

fn run_seg(repo: &TestRepo, spec: &str) -> Output {
    let agent = fixture("fake-agent").display().to_string();
    seg(repo, &["run", "--spec", spec, "--agent-command", &agent])
}

/// The segments of a spec's journal, oldest first.
fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name
                .strip_prefix("events.")?
                .strip_suffix(".jsonl")?
                .parse()
                .ok()?;
            Some((n, e.path()))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// Every journal line, segments then the live file.
fn all_lines(dir: &Path) -> Vec<String> {
    let mut files = segments(dir);
    files.push(dir.join("events.jsonl"));
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Put the whole journal back into one `events.jsonl`, as it would be without rotation.
fn join_segments(dir: &Path) {
    let lines = all_lines(dir);
    for s in segments(dir) {
        std::fs::remove_file(s).unwrap();
    }
    std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
}

fn prompts(repo: &TestRepo) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo.tmp.path().join("prompts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// The prompt of `chunk`'s attempt `n`.
fn prompt_of(repo: &TestRepo, chunk: &str, n: u32) -> String {
    prompts(repo)
        .into_iter()
        .find(|t| {
            t.contains(&format!("Your step: {chunk}"))
                && t.contains(&format!("This is attempt {n}"))
        })
        .unwrap_or_else(|| panic!("no prompt for {chunk} attempt {n}"))
}

/// That `prompt` lists each earlier failure (attempt, what the agent said).
fn assert_failures(prompt: &str, failures: &[(u32, &str)]) {
    for (n, reason) in failures {
        let line = format!("- attempt {n}: the agent reported failure: {reason}");
        assert!(prompt.contains(&line), "{line} missing from:\n{prompt}");
    }
}

/// A run over the two-phase plan with a tiny segment size: core-b fails once ("the database
/// is down"), polish twice, and everything completes on the retries.
fn run_with_retries(spec: &str) -> TestRepo {
    let repo = TestRepo::new();
    repo.add_spec(spec);
    repo.write_config("[run]\nmax_attempts = 3\n");
    repo.script(
        "core-b 1 fail the database is down\npolish 1 fail polish broke once\npolish 2 fail polish broke twice\n",
    );
    assert_exit(&run_seg(&repo, &spec[..3]), 0);
    repo
}

#[test]
fn a_retried_chunks_prompt_carries_its_earlier_failures_from_a_segmented_journal() {
    let spec = "200-seg-retry";
    let repo = run_with_retries(spec);
    let dir = repo.spec_dir(spec);
    assert!(segments(&dir).len() >= 4, "{:?}", segments(&dir));
    for s in segments(&dir) {
        assert!(std::fs::metadata(&s).unwrap().len() < 2 * 700 + 2000);
    }
    let statuses = repo.statuses(spec);
    assert!(
        statuses.iter().all(|(_, s)| s == "completed"),
        "{statuses:?}"
    );

    let attempts = repo.chunk(spec, "polish")["attempts"].clone();
    let session = |n: usize| attempts[n]["session_id"].as_str().unwrap().to_string();
    let log = |n: usize| {
        dir.join("sessions")
            .join(session(n))
            .join("output.log")
            .display()
            .to_string()
    };
    let polish3 = prompt_of(&repo, "polish", 3);
    assert_failures(
        &polish3,
        &[(1, "polish broke once"), (2, "polish broke twice")],
    );
    assert!(polish3.contains(&format!("(log: {})", log(0))), "{polish3}");
    assert!(polish3.contains(&format!("(log: {})", log(1))), "{polish3}");
    let core_b2 = prompt_of(&repo, "core-b", 2);
    assert_failures(&core_b2, &[(1, "the database is down")]);
    assert!(!core_b2.contains("polish broke"), "{core_b2}");
    // Beside each failed session: where its attempt_failed line is in the journal (the file's
    // inode, which a rotation keeps; the offset; the length), pointing at that very line.
    let lines = all_lines(&dir);
    for n in 0..2 {
        let record =
            std::fs::read_to_string(dir.join("sessions").join(session(n)).join("failures.jsonl"))
                .unwrap();
        let at: Value = serde_json::from_str(record.trim_end()).unwrap();
        let file = segments(&dir)
            .into_iter()
            .chain([dir.join("events.jsonl")])
            .find(|p| std::fs::metadata(p).unwrap().ino() == at["ino"].as_u64().unwrap())
            .expect("the file the record names");
        let bytes = std::fs::read(&file).unwrap();
        let (offset, len) = (
            at["offset"].as_u64().unwrap() as usize,
            at["len"].as_u64().unwrap() as usize,
        );
        let line = std::str::from_utf8(&bytes[offset..offset + len]).unwrap();
        assert!(line.ends_with('\n'));
        let line = line.trim_end();
        assert!(line.contains("\"attempt_failed\""), "{line}");
        assert!(line.contains(&session(n)), "{line}");
        assert!(lines.iter().any(|l| l == line), "{line}");
    }
    // No line was lost or torn by the rotations: every line parses, and the failed attempts
    // are all there.
    let events: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        events
            .iter()
            .filter(|e| e["event"] == "attempt_failed")
            .count(),
        3
    );
}

#[test]
fn a_prompt_whose_failure_records_are_forged_still_says_what_the_journal_says() {
    let spec = "201-seg-records";
    let repo = TestRepo::new();
    repo.add_spec(spec);
    repo.write_config("[run]\nmax_attempts = 3\n");
    // polish's first attempt fails, then its agent forges the record of that failure and
    // fails again: the third prompt must carry the journal's reasons, not the forgery.
    repo.script("polish 1 fail the real reason\npolish 2 forge-failure-records second try\n");
    let out = run_seg(&repo, &spec[..3]);
    assert_exit(&out, 0);
    let polish3 = prompt_of(&repo, "polish", 3);
    assert_failures(&polish3, &[(1, "the real reason"), (2, "second try")]);
    assert!(!polish3.contains("forged"), "{polish3}");
    // The forgery was there when the prompt was made (the scan answered, not the records).
    let record = repo
        .spec_dir(spec)
        .join("sessions")
        .join(
            repo.chunk(spec, "polish")["attempts"][0]["session_id"]
                .as_str()
                .unwrap(),
        )
        .join("failures.jsonl");
    assert!(
        std::fs::read_to_string(record)
            .unwrap()
            .contains("forged reason")
    );
}

#[test]
fn a_plan_rebuilt_from_a_segmented_journal_equals_one_rebuilt_from_a_single_file() {
    let spec = "202-seg-rebuild";
    let repo = run_with_retries(spec);
    let dir = repo.spec_dir(spec);
    // The snapshot the rebuild starts from is in an old segment, not the live file.
    let live = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(!live.contains("\"plan_snapshot\""));
    assert!(segments(&dir).len() >= 4);
    let journal_before = all_lines(&dir);
    let rebuild = |repo: &TestRepo, tiny: bool| {
        let _ = std::fs::remove_file(dir.join("implementation_plan.json.last-good"));
        std::fs::write(repo.plan_path(spec), b"not a plan at all").unwrap();
        let out = if tiny {
            seg(repo, &["recover", "--json"])
        } else {
            repo.runner(&["recover", "--json"])
        };
        assert_exit(&out, 0);
        let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(report["specs"][0]["plan_source"], "journal", "{report}");
        repo.plan(spec)
    };
    let from_segments = rebuild(&repo, true);
    // Back to the journal as it was, in one file.
    for s in segments(&dir) {
        std::fs::remove_file(s).unwrap();
    }
    std::fs::write(dir.join("events.jsonl"), journal_before.join("\n") + "\n").unwrap();
    assert!(segments(&dir).is_empty());
    let from_one_file = rebuild(&repo, false);
    assert_eq!(from_segments, from_one_file);
    let statuses = repo.statuses(spec);
    assert!(
        statuses.iter().all(|(_, s)| s == "completed"),
        "{statuses:?}"
    );
}

#[test]
fn review_and_undo_read_the_whole_segmented_journal() {
    let spec = "203-seg-review";
    let repo = run_with_retries(spec);
    let dir = repo.spec_dir(spec);
    assert!(segments(&dir).len() >= 4);
    let review = |repo: &TestRepo| {
        let out = seg(repo, &["review", "--spec", spec, "--json"]);
        assert_exit(&out, 0);
        serde_json::from_str::<Value>(&stdout(&out)).unwrap()
    };
    let split = review(&repo);
    // core-b's verification is in an old segment; review still finds it.
    let verified: Vec<&str> = split["verifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["chunk"].as_str().unwrap())
        .collect();
    assert_eq!(verified, ["core-b"], "{split}");
    let last: Value = serde_json::from_str(all_lines(&dir).last().unwrap()).unwrap();
    assert_eq!(split["last_activity"], last["time"]);
    join_segments(&dir);
    assert_eq!(review(&repo), split);

    // Merge and undo with the tiny size: the lifecycle's journal lines rotate too.
    let main_before = repo.git(&["rev-parse", "main"]);
    assert_exit(&seg(&repo, &["merge", "--spec", spec, "--yes"]), 0);
    assert_ne!(repo.git(&["rev-parse", "main"]), main_before);
    let out = seg(&repo, &["undo", "--spec", spec, "--json"]);
    assert_exit(&out, 0);
    assert_eq!(repo.git(&["rev-parse", "main"]), main_before);
    let events: Vec<Value> = all_lines(&dir)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(events.iter().any(|e| e["event"] == "merged"));
    assert!(events.iter().any(|e| e["event"] == "undone"));
}

#[test]
fn an_interrupted_run_is_found_and_recovered_across_segments_even_without_a_live_file() {
    use std::os::unix::process::ExitStatusExt;
    let spec = "204-seg-crash";
    let repo = TestRepo::new();
    repo.add_spec(spec);
    repo.script("core-b 1 fail first try fails\n");
    let agent = fixture("fake-agent").display().to_string();
    let out = repo
        .cmd(&["run", "--spec", "204", "--agent-command", &agent])
        .env(SEGMENT_ENV, TINY)
        .env("RUNNER_FAILPOINTS", "after_take@3")
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{}", stderr(&out));
    let dir = repo.spec_dir(spec);
    assert!(segments(&dir).len() >= 2);
    // As if runner had died right after renaming the live file: no live file at all, and the
    // run_start is in a segment.
    let next = segments(&dir).len() + 1;
    std::fs::rename(
        dir.join("events.jsonl"),
        dir.join(format!("events.{next}.jsonl")),
    )
    .unwrap();
    // `runner run` with no spec finds the interrupted spec, recovers and finishes it.
    let out = seg(&repo, &["run", "--agent-command", &agent]);
    assert_exit(&out, 0);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains("Resuming interrupted spec 204-seg-crash"),
        "{said}"
    );
    let statuses = repo.statuses(spec);
    assert!(
        statuses.iter().all(|(_, s)| s == "completed"),
        "{statuses:?}"
    );
    // core-b's prompt after the crash (its only retry prompt: the attempt killed right after
    // it was taken never started its agent) had the failure from before it. Picked by its
    // text, not by the order of the prompt files: they are named by session id, whose time
    // has whole seconds, so two sessions of one second sort at random.
    let retries: Vec<String> = prompts(&repo)
        .into_iter()
        .filter(|t| t.contains("Your step: core-b") && t.contains("This is attempt "))
        .collect();
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert!(retries[0].contains("first try fails"), "{}", retries[0]);
}
