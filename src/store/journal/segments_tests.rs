use super::*;
use crate::store::event::{Event, RunEnd, RunStart};
use crate::store::journal::{self, Journal};
use std::io::Write;

fn run_start(spec: &str) -> Event {
    Event::RunStart(RunStart {
        spec: spec.into(),
        ..RunStart::default()
    })
}

fn run_end(sessions: u32) -> Event {
    Event::RunEnd(RunEnd {
        outcome: "complete".into(),
        sessions,
    })
}

/// `n` events alternating run_start/run_end, each numbered, written through `journal`.
fn write_events(journal: &Journal, n: u32) -> Vec<Event> {
    (0..n)
        .map(|i| {
            let e = if i % 2 == 0 {
                run_start(&format!("spec-{i}"))
            } else {
                run_end(i)
            };
            journal.write(&e).unwrap();
            e
        })
        .collect()
}

fn append_raw(path: &Path, bytes: &[u8]) {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

#[test]
fn only_exact_segment_names_count() {
    assert_eq!(segment_number("events.1.jsonl"), Some(1));
    assert_eq!(segment_number("events.0.jsonl"), Some(0));
    assert_eq!(segment_number("events.120.jsonl"), Some(120));
    for name in [
        "events.jsonl",
        "events.01.jsonl",
        "events.+1.jsonl",
        "events.-1.jsonl",
        "events.1.jsonl.tmp",
        "events..jsonl",
        "events.99999999999999999999999.jsonl",
        "events.1.json",
    ] {
        assert_eq!(segment_number(name), None, "{name}");
    }
    assert_eq!(parse_segment_bytes(Some("4096")), 4096);
    assert_eq!(parse_segment_bytes(Some("0")), DEFAULT_SEGMENT_BYTES);
    assert_eq!(parse_segment_bytes(Some("lots")), DEFAULT_SEGMENT_BYTES);
    assert_eq!(parse_segment_bytes(None), DEFAULT_SEGMENT_BYTES);
}

#[test]
fn a_rotated_journal_reads_exactly_as_one_file() {
    let (split, whole) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let small = Journal::new(split.path(), "run-1").with_segment_bytes(300);
    let big = Journal::new(whole.path(), "run-1");
    let written = write_events(&small, 60);
    write_events(&big, 60);
    let segments = list(split.path());
    assert!(segments.len() >= 5, "{segments:?}");
    let numbers: Vec<u64> = segments.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, (1..=segments.len() as u64).collect::<Vec<_>>());
    for (_, path) in &segments {
        let len = std::fs::metadata(path).unwrap().len();
        // Rotated once past the limit: at most the limit plus one line.
        assert!(
            (300..600).contains(&len),
            "{} is {len} bytes",
            path.display()
        );
    }
    assert!(list(whole.path()).is_empty());
    assert_eq!(journal::read_typed(split.path()), written);
    assert_eq!(
        journal::read_typed(split.path()),
        journal::read_typed(whole.path())
    );
    let lines = |dir: &Path| {
        journal::read_text(dir)
            .unwrap()
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v.as_object_mut().unwrap().remove("time");
                v
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(lines(split.path()), lines(whole.path()));
    let needle = "\"event\":\"run_end\"";
    assert_eq!(
        journal::read_entries_containing(split.path(), needle).len(),
        30
    );
}

#[test]
fn the_recent_readers_answer_as_the_full_ones() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::new(dir.path(), "run-1").with_segment_bytes(250);
    let is_run = |e: &Event| matches!(e, Event::RunStart(_) | Event::RunEnd(_));
    let needle = "\"event\":\"run_";
    let last_full = |dir: &Path| {
        journal::read_typed_containing(dir, needle)
            .into_iter()
            .rfind(|e| is_run(e))
    };
    let last_time_full = |dir: &Path| {
        journal::read_text(dir)?
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .and_then(|v| v["time"].as_str().map(str::to_string))
    };
    assert_eq!(
        journal::last_event_containing(dir.path(), needle, is_run),
        None
    );
    assert_eq!(journal::last_time(dir.path()), None);
    for i in 0..40u32 {
        let event = match i % 3 {
            0 => run_start("s"),
            1 => run_end(i),
            _ => Event::PlanReset(crate::store::event::Empty {}),
        };
        journal.write(&event).unwrap();
        assert_eq!(
            journal::last_event_containing(dir.path(), needle, is_run),
            last_full(dir.path()),
            "after {i}"
        );
        assert_eq!(journal::last_time(dir.path()), last_time_full(dir.path()));
    }
    // A live file with no run line (a run's other events only): the answer is in a segment.
    let live = dir.path().join(JOURNAL_FILE);
    std::fs::rename(&live, dir.path().join(segment_name(99))).unwrap();
    append_raw(&live, b"{\"event\":\"plan_reset\"}\n{\"torn");
    let got = journal::last_event_containing(dir.path(), needle, is_run);
    assert!(got.is_some());
    assert_eq!(got, last_full(dir.path()));
    assert_eq!(journal::last_time(dir.path()), last_time_full(dir.path()));
}

#[test]
fn a_crash_between_the_rename_and_the_next_append_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::new(dir.path(), "run-1").with_segment_bytes(200);
    let mut written = write_events(&journal, 6);
    // The rename alone, as a crash right after it leaves things.
    assert!(rotate_if_full(dir.path(), 1).unwrap());
    assert!(!dir.path().join(JOURNAL_FILE).exists());
    assert!(exists(dir.path()));
    assert!(modified(dir.path()).is_some());
    assert_eq!(journal::read_typed(dir.path()), written);
    assert!(journal::read_text(dir.path()).unwrap().ends_with('\n'));
    written.extend(write_events(&journal, 3));
    assert_eq!(journal::read_typed(dir.path()), written);
    // No journal at all.
    let empty = tempfile::tempdir().unwrap();
    assert!(!exists(empty.path()));
    assert_eq!(modified(empty.path()), None);
    assert_eq!(journal::read_text(empty.path()), None);
    assert!(!rotate_if_full(empty.path(), 1).unwrap());
}

#[test]
fn planted_files_are_never_replaced_nor_read_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "{\"event\":\"run_start\",\"spec\":\"forged\"}\n").unwrap();
    // A link at segment 3's name, and a hard link at segment 4's.
    std::os::unix::fs::symlink(&secret, dir.path().join(segment_name(3))).unwrap();
    let hard = outside.path().join("hard");
    std::fs::write(&hard, "{\"event\":\"plan_reset\"}\n").unwrap();
    std::fs::hard_link(&hard, dir.path().join(segment_name(4))).unwrap();
    let journal = Journal::new(dir.path(), "run-1").with_segment_bytes(100);
    write_events(&journal, 3);
    // Rotated past both: numbering goes on from the highest name, nothing was replaced.
    assert!(dir.path().join(segment_name(5)).is_file());
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "{\"event\":\"run_start\",\"spec\":\"forged\"}\n"
    );
    assert_eq!(
        std::fs::read_to_string(&hard).unwrap(),
        "{\"event\":\"plan_reset\"}\n"
    );
    // The link is not followed; the hard-linked file is a regular file of the folder, read
    // like any line an agent could have appended to the journal itself.
    let events = journal::read_typed(dir.path());
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::RunStart(s) if s.spec == "forged"))
    );
    assert!(matches!(events[0], Event::PlanReset(_)));
    assert_eq!(events.len(), 4);
}

#[test]
fn a_live_file_that_is_a_link_or_hard_linked_is_not_rotated() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other");
    std::fs::write(&other, "x".repeat(500)).unwrap();
    let live = dir.path().join(JOURNAL_FILE);
    std::os::unix::fs::symlink(&other, &live).unwrap();
    assert!(!rotate_if_full(dir.path(), 10).unwrap());
    std::fs::remove_file(&live).unwrap();
    std::fs::hard_link(&other, &live).unwrap();
    assert!(!rotate_if_full(dir.path(), 10).unwrap());
    assert!(list(dir.path()).is_empty());
    // And the append refuses it, as it always did.
    assert!(Journal::new(dir.path(), "r").write(&run_end(1)).is_err());
}

#[test]
fn a_torn_or_non_utf8_segment_spoils_its_own_lines_only() {
    let dir = tempfile::tempdir().unwrap();
    append_raw(
        &dir.path().join(segment_name(1)),
        b"{\"event\":\"run_start\",\"spec\":\"a\"}\n{\"event\":\"run_end\",\"sess",
    );
    append_raw(
        &dir.path().join(segment_name(2)),
        b"{\"event\":\"run_start\",\"spec\":\"b \xff\"}\n",
    );
    append_raw(
        &dir.path().join(JOURNAL_FILE),
        b"{\"event\":\"run_end\",\"outcome\":\"complete\",\"sessions\":1}\n",
    );
    let events = journal::read_typed(dir.path());
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(matches!(&events[1], Event::RunStart(s) if s.spec == "b \u{fffd}"));
    assert!(matches!(&events[2], Event::RunEnd(e) if e.sessions == 1));
    let text = journal::read_text(dir.path()).unwrap();
    assert_eq!(text.lines().count(), 4);
}

#[test]
fn a_segment_deleted_by_hand_loses_its_lines_only() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::new(dir.path(), "run-1").with_segment_bytes(200);
    let written = write_events(&journal, 20);
    let segments = list(dir.path());
    assert!(segments.len() >= 3);
    assert_eq!(journal::read_typed(dir.path()), written);
    std::fs::remove_file(&segments[1].1).unwrap();
    let left = journal::read_typed(dir.path());
    assert!(left.len() < written.len());
    // What is left is the history in order, without the removed segment's events.
    let mut rest = written.iter();
    assert!(left.iter().all(|e| rest.any(|w| w == e)));
    let highest = segments.last().unwrap().0;
    write_events(&journal, 10);
    assert!(list(dir.path()).last().unwrap().0 > highest);
}

#[test]
fn concurrent_appenders_with_rotation_lose_and_tear_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let path = dir.path().to_path_buf();
            std::thread::spawn(move || {
                let journal = Journal::new(&path, &format!("run-{t}")).with_segment_bytes(400);
                for i in 0..100 {
                    journal.write(&run_end(i)).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(list(dir.path()).len() > 10);
    let entries = journal::read_entries(dir.path());
    assert_eq!(entries.len(), 400);
    for t in 0..4 {
        let run = format!("run-{t}");
        let mine: Vec<u32> = entries
            .iter()
            .filter(|e| e.run_id.as_deref() == Some(run.as_str()))
            .map(|e| match &e.event {
                Event::RunEnd(r) => r.sessions,
                other => panic!("{other:?}"),
            })
            .collect();
        // Each appender's lines, in its own order.
        assert_eq!(mine, (0..100).collect::<Vec<_>>());
    }
}

#[test]
fn a_reader_during_rotations_reads_a_whole_prefix_of_the_journal() {
    // A reader (`runner review`, the look for interrupted runs, `runner chunk`) may read while
    // a run appends and rotates: what it reads must be the journal as it was at one moment,
    // every line up to some point in order, never a segment missing or out of place; and the
    // readers of the recent past never go back to an older answer.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let done = done.clone();
        std::thread::spawn(move || {
            let journal = Journal::new(&path, "run-1").with_segment_bytes(1000);
            for i in 0..1500 {
                journal.write(&run_end(i)).unwrap();
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    while journal::read_typed(dir.path()).is_empty() {
        std::thread::yield_now();
    }
    let (mut reads, mut last_seen) = (0, 0);
    while !done.load(std::sync::atomic::Ordering::SeqCst) {
        let seen: Vec<u32> = journal::read_typed(dir.path())
            .into_iter()
            .map(|e| match e {
                Event::RunEnd(r) => r.sessions,
                other => panic!("{other:?}"),
            })
            .collect();
        if let Some(at) = (0..seen.len()).find(|&i| seen[i] != i as u32) {
            panic!(
                "read {reads}: line {at} is {}, lines around: {:?}",
                seen[at],
                &seen[at.saturating_sub(3)..(at + 3).min(seen.len())]
            );
        }
        let last = journal::last_event_containing(dir.path(), "run_end", |_| true);
        let Some(Event::RunEnd(last)) = last else {
            panic!("read {reads}: {last:?}")
        };
        assert!(
            last.sessions >= last_seen,
            "read {reads}: the last line went back from {last_seen} to {}",
            last.sessions
        );
        last_seen = last.sessions;
        reads += 1;
    }
    writer.join().unwrap();
    assert!(reads > 10, "{reads}");
}

#[test]
fn a_fifo_a_folder_or_a_huge_number_at_a_segments_name_neither_blocks_nor_stops_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = std::ffi::CString::new(
        dir.path()
            .join(segment_name(2))
            .into_os_string()
            .into_encoded_bytes(),
    )
    .unwrap();
    let fifo_mode = rustix::fs::Mode::from_raw_mode(0o600);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        fifo.as_c_str(),
        rustix::fs::FileType::Fifo,
        fifo_mode,
        0,
    )
    .unwrap();
    std::fs::create_dir(dir.path().join(segment_name(3))).unwrap();
    std::fs::write(
        dir.path().join("events.99999999999999999999.jsonl"),
        "{\"event\":\"plan_reset\"}\n",
    )
    .unwrap();
    let journal = Journal::new(dir.path(), "run-1").with_segment_bytes(100);
    let written = write_events(&journal, 6);
    // Rotated past the FIFO and the folder; the name that is no u64 is not a segment.
    assert!(dir.path().join(segment_name(4)).is_file());
    assert_eq!(journal::read_typed(dir.path()), written);
    let last = journal::last_event_containing(dir.path(), "run_", |_| true);
    assert_eq!(last.as_ref(), written.last());
}
