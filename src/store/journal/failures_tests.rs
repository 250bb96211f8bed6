use super::*;
use crate::store::journal::{JOURNAL_FILE, Journal};

fn failed(chunk: &str, session: &str, attempt: u32) -> Event {
    Event::AttemptFailed(AttemptFailed {
        chunk: chunk.into(),
        attempt,
        session_id: session.into(),
        reason: format!("{chunk} broke in {session}"),
        log: format!("/logs/{session}/output.log").into(),
        failed_attempts: attempt,
    })
}

fn attempt(session: &str, failed: bool) -> AttemptRef {
    AttemptRef {
        session_id: session.into(),
        failed,
    }
}

/// A spec folder whose journal holds failures of chunks c1 and c2 in sessions s1..s4 (c1: s1,
/// s3; c2: s2, s4), spread over segments, each with its record.
fn spec_with_failures() -> (tempfile::TempDir, Journal) {
    let dir = tempfile::tempdir().unwrap();
    for s in ["s1", "s2", "s3", "s4"] {
        std::fs::create_dir_all(dir.path().join("sessions").join(s)).unwrap();
    }
    let journal = Journal::new(dir.path(), "run-1").with_segment_bytes(300);
    for (chunk, session, n) in [
        ("c1", "s1", 1),
        ("c2", "s2", 1),
        ("c1", "s3", 2),
        ("c2", "s4", 2),
    ] {
        journal
            .write(&Event::PlanReset(crate::store::event::Empty {}))
            .unwrap();
        journal.write(&failed(chunk, session, n)).unwrap();
    }
    assert!(!crate::store::segments::list(dir.path()).is_empty());
    (dir, journal)
}

fn c1_attempts() -> Vec<AttemptRef> {
    vec![attempt("s1", true), attempt("s3", true)]
}

fn slow(dir: &Path, chunk: &str, attempts: &[AttemptRef]) -> Vec<AttemptFailed> {
    let sessions: Vec<&str> = attempts.iter().map(|a| a.session_id.as_str()).collect();
    scanned(dir, chunk, &sessions)
}

#[test]
fn the_records_answer_as_the_whole_journal() {
    let (dir, _) = spec_with_failures();
    let fast = from_records(dir.path(), "c1", &c1_attempts()).expect("records used");
    assert_eq!(fast.len(), 2);
    assert_eq!(fast, slow(dir.path(), "c1", &c1_attempts()));
    assert_eq!(fast[0].reason, "c1 broke in s1");
    assert_eq!(fast[1].log, Path::new("/logs/s3/output.log"));
    // Only this plan's sessions: s1 alone (s3 belonged to a discarded build).
    let one = [attempt("s1", true)];
    assert_eq!(from_records(dir.path(), "c1", &one).unwrap().len(), 1);
    // A session of another chunk: its record is of another chunk, not trusted.
    assert_eq!(from_records(dir.path(), "c1", &[attempt("s2", true)]), None);
    assert_eq!(previous(dir.path(), "c1", &[attempt("s2", true)]), vec![]);
    // An attempt still running (no record, not failed) adds nothing.
    let running = [attempt("s1", true), attempt("s9", false)];
    assert_eq!(
        from_records(dir.path(), "c1", &running).unwrap(),
        slow(dir.path(), "c1", &running)
    );
    assert_eq!(from_records(dir.path(), "c1", &[]), Some(vec![]));
}

fn record(dir: &Path, s: &str) -> PathBuf {
    dir.join("sessions").join(s).join(RECORD_FILE)
}

fn location(dir: &Path, s: &str) -> LineAt {
    let text = std::fs::read_to_string(record(dir, s)).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

#[test]
fn a_missing_torn_or_forged_record_falls_back_to_the_scan() {
    // Missing (a crash between the journal's line and the record's, an older runner).
    let (dir, _) = spec_with_failures();
    std::fs::remove_file(record(dir.path(), "s3")).unwrap();
    assert_eq!(from_records(dir.path(), "c1", &c1_attempts()), None);
    assert_eq!(previous(dir.path(), "c1", &c1_attempts()).len(), 2);
    let (dir, _) = spec_with_failures();
    let real = location(dir.path(), "s3");
    let other_chunk = location(dir.path(), "s2");
    let same_chunk_other_session = location(dir.path(), "s1");
    let forgeries: Vec<String> = [
        // Torn, empty, not a location, an old-style copy of the line itself.
        String::from("{\"ino\":1,\"offs"),
        String::new(),
        "ignore the above\n".into(),
        "{\"event\":\"attempt_failed\",\"chunk\":\"c1\",\"attempt\":1,\"session_id\":\"s3\",\"reason\":\"forged\",\"log\":\"/x\",\"failed_attempts\":1}\n".into(),
    ]
    .into_iter()
    .chain(
        [
            // Another chunk's line, another session's, a line of no file, mid-line, too
            // long (two lines), too short, absurdly long.
            other_chunk,
            same_chunk_other_session,
            LineAt { ino: 1, ..real },
            LineAt { offset: real.offset + 1, len: real.len - 1, ..real },
            LineAt { len: real.len + 5, ..real },
            LineAt { len: real.len - 1, ..real },
            LineAt { len: u64::MAX, ..real },
            LineAt { offset: u64::MAX - 3, ..real },
        ]
        .iter()
        .map(|at| serde_json::to_string(at).unwrap() + "\n"),
    )
    .collect();
    for forged in forgeries {
        std::fs::write(record(dir.path(), "s3"), &forged).unwrap();
        assert_eq!(
            from_records(dir.path(), "c1", &c1_attempts()),
            None,
            "{forged}"
        );
        let got = previous(dir.path(), "c1", &c1_attempts());
        assert_eq!(got, slow(dir.path(), "c1", &c1_attempts()));
        assert_eq!(got[1].reason, "c1 broke in s3");
    }
    // The same location twice is one line.
    let twice = serde_json::to_string(&real).unwrap() + "\n";
    std::fs::write(record(dir.path(), "s3"), twice.repeat(2)).unwrap();
    assert_eq!(
        from_records(dir.path(), "c1", &c1_attempts()).unwrap(),
        slow(dir.path(), "c1", &c1_attempts())
    );
    // A link or a FIFO where the record goes.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::write(&elsewhere, &twice).unwrap();
    std::fs::remove_file(record(dir.path(), "s3")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, record(dir.path(), "s3")).unwrap();
    assert_eq!(from_records(dir.path(), "c1", &c1_attempts()), None);
    std::fs::remove_file(record(dir.path(), "s3")).unwrap();
    let fifo = std::ffi::CString::new(
        record(dir.path(), "s3")
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
    assert_eq!(from_records(dir.path(), "c1", &c1_attempts()), None);
    assert_eq!(previous(dir.path(), "c1", &c1_attempts()).len(), 2);
    // A session id that cannot name a folder (a hand-edited plan).
    assert_eq!(
        from_records(dir.path(), "c1", &[attempt("../s1", true)]),
        None
    );
}

#[test]
fn a_line_edited_by_hand_reads_as_the_scan_reads_it() {
    let (dir, _) = spec_with_failures();
    let at = location(dir.path(), "s1");
    // Find the file holding it, and change its reason in place, same length.
    let file = crate::store::segments::list(dir.path())
        .into_iter()
        .map(|(_, p)| p)
        .chain([dir.path().join(JOURNAL_FILE)])
        .find(|p| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(p).unwrap().ino() == at.ino
        })
        .unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("c1 broke in s1", "c1 BROKE in s1")).unwrap();
    let fast = from_records(dir.path(), "c1", &c1_attempts()).unwrap();
    assert_eq!(fast[0].reason, "c1 BROKE in s1");
    assert_eq!(fast, slow(dir.path(), "c1", &c1_attempts()));
    // A longer edit moves the lines after it: those records no longer match, and the scan
    // answers (identically).
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace("c1 BROKE in s1", "c1 broke badly in s1"),
    )
    .unwrap();
    assert_eq!(
        previous(dir.path(), "c1", &c1_attempts()),
        slow(dir.path(), "c1", &c1_attempts())
    );
    assert_eq!(
        previous(dir.path(), "c1", &c1_attempts())[0].reason,
        "c1 broke badly in s1"
    );
}

#[test]
fn no_journal_means_no_failures_from_the_records_either() {
    let (dir, _) = spec_with_failures();
    for (_, path) in crate::store::segments::list(dir.path()) {
        std::fs::remove_file(path).unwrap();
    }
    let _ = std::fs::remove_file(dir.path().join(JOURNAL_FILE));
    assert_eq!(from_records(dir.path(), "c1", &c1_attempts()), None);
    assert_eq!(previous(dir.path(), "c1", &c1_attempts()), vec![]);
}

#[test]
fn a_failure_not_in_the_journal_gets_no_record() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sessions").join("s1")).unwrap();
    // The journal cannot be written (a folder in its way): the record is not written either.
    std::fs::create_dir(dir.path().join(JOURNAL_FILE)).unwrap();
    let journal = Journal::new(dir.path(), "run-1");
    assert!(journal.write(&failed("c1", "s1", 1)).is_err());
    assert!(!record(dir.path(), "s1").exists());
    // A session folder that is missing: the journal takes the line, the record is skipped.
    std::fs::remove_dir(dir.path().join(JOURNAL_FILE)).unwrap();
    journal.write(&failed("c1", "s2", 1)).unwrap();
    let attempts = [attempt("s2", true)];
    assert_eq!(from_records(dir.path(), "c1", &attempts), None);
    assert_eq!(previous(dir.path(), "c1", &attempts).len(), 1);
}

#[test]
fn a_failure_line_runner_did_not_write_reaches_only_the_scan() {
    // An agent appends an attempt_failed of an earlier session to the journal itself: it has
    // no record, so the records' answer (which docs/state.md documents) leaves it out; the scan,
    // used when the records cannot answer, reads it as any line.
    let (dir, _) = spec_with_failures();
    let mut forged = serde_json::to_vec(&failed("c1", "s1", 1)).unwrap();
    forged.push(b'\n');
    crate::store::safe::append(&dir.path().join(JOURNAL_FILE), &forged, false).unwrap();
    let fast = from_records(dir.path(), "c1", &c1_attempts()).expect("records used");
    assert_eq!(fast.len(), 2);
    assert_eq!(slow(dir.path(), "c1", &c1_attempts()).len(), 3);
}
