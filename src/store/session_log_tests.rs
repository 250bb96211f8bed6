//! Reading a log as it grows, is cut by its cap, holds a partial line, or is a link.

use std::io::{Seek, SeekFrom, Write};

use super::*;
use crate::agent::capture::CappedLog;

fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
}

/// Everything read until nothing new comes.
fn drain(log: &mut SessionLog) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let got = log.read_lines();
        if got.is_empty() {
            return out;
        }
        out.extend(got);
    }
}

#[test]
fn whole_lines_are_given_as_they_come_and_the_last_one_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    let mut log = SessionLog::new(&path);
    // Not there yet: nothing, and no error.
    assert!(log.read_lines().is_empty());
    assert_eq!(log.refused(), None);
    append(&path, b"one\ntw");
    assert_eq!(drain(&mut log), b"one\n");
    append(&path, b"o\nthr");
    assert_eq!(drain(&mut log), b"two\n");
    append(&path, b"\xffee");
    assert!(drain(&mut log).is_empty());
    assert_eq!(log.rest(), b"thr\xffee");
    assert!(log.rest().is_empty());
}

#[test]
fn a_burst_is_read_in_pieces_and_a_huge_line_is_kept_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    let mut big = vec![b'x'; MAX_LINE + 3 * READ_BYTES];
    big.push(b'\n');
    big.extend_from_slice(b"after\n");
    std::fs::write(&path, &big).unwrap();
    let mut log = SessionLog::new(&path);
    // One call reads on until a whole line is there; the line is cut to MAX_LINE.
    let all = log.read_lines();
    assert_eq!(all.len(), MAX_LINE + 1 + 6);
    assert!(log.read_lines().is_empty());
    assert!(all.ends_with(b"x\nafter\n"));
}

/// A log written by `agent::capture` (cap `cap`), read while it is written: `read_every`
/// bytes of output between two reads, then the cut at its end.
fn followed_through_a_cut(output: &[u8], cap: u64, read_every: usize) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    let file = std::fs::File::create(&path).unwrap();
    let mut capped = CappedLog::new(file, cap, b"");
    let mut log = SessionLog::new(&path);
    let mut shown = Vec::new();
    for piece in output.chunks(read_every) {
        capped.feed(piece);
        shown.extend(drain(&mut log));
    }
    let (summary, mut file) = capped.finish();
    file.seek(SeekFrom::End(0)).unwrap();
    assert!(summary.cut > 0);
    // The time stamp may not move within the clock's tick: the size did.
    shown.extend(drain(&mut log));
    shown.extend(log.rest());
    shown
}

fn numbered(lines: usize) -> Vec<u8> {
    (0..lines)
        .flat_map(|i| format!("line {i:05}\n").into_bytes())
        .collect()
}

#[test]
fn a_log_cut_at_its_end_goes_on_from_the_marker_without_garbage_or_repeats() {
    // 1000 lines of 11 bytes; cap 4000: head 2000, tail 2000.
    let output = numbered(1000);
    let shown = followed_through_a_cut(&output, 4000, 300);
    let text = String::from_utf8(shown).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Every line is a whole line of the output or the marker, each once, in order.
    let mut last = -1i64;
    let mut markers = 0;
    let mut after_marker = false;
    for line in &lines {
        if line.starts_with("[runner: ") {
            markers += 1;
            after_marker = true;
            continue;
        }
        if std::mem::take(&mut after_marker) {
            // The rest of the line the cut fell in (the activity reader drops it).
            assert!(
                line.len() < 10 && "line 00000".len() > line.len(),
                "{line:?}"
            );
            continue;
        }
        let n: i64 = line
            .strip_prefix("line ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("garbage: {line:?} in {text}"));
        assert!(n > last, "{line} after {last}");
        last = n;
    }
    assert_eq!(markers, 1, "{text}");
    assert_eq!(last, 999);
    // What was read live (to the cap) is kept; the tail follows the marker.
    assert!(text.starts_with("line 00000\n"));
    assert!(text.contains("line 00362\n"), "read live up to the cap");
}

#[test]
fn a_cut_whose_tail_overlaps_what_was_read_goes_on_just_after_it() {
    // 400 lines (4400 bytes), cap 4000: the tail (last 2000) starts at 2400, before what was
    // read live (4000): no gap, no marker shown, each line once.
    let output = numbered(400);
    let shown = followed_through_a_cut(&output, 4000, 500);
    assert_eq!(
        String::from_utf8(shown).unwrap(),
        String::from_utf8(output).unwrap()
    );
}

#[test]
fn a_log_read_only_after_its_cut_is_the_file_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    let mut capped = CappedLog::new(std::fs::File::create(&path).unwrap(), 4000, b"");
    capped.feed(&numbered(1000));
    capped.finish();
    let mut log = SessionLog::new(&path);
    let mut shown = drain(&mut log);
    shown.extend(log.rest());
    assert_eq!(shown, std::fs::read(&path).unwrap());
}

#[test]
fn a_log_written_over_without_a_marker_is_read_on_from_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.log");
    std::fs::write(&path, numbered(100)).unwrap();
    let mut log = SessionLog::new(&path);
    drain(&mut log);
    std::fs::write(&path, b"short\n").unwrap();
    // Looked for once, then given up: no garbage, no endless search.
    let mut seen = Vec::new();
    for _ in 0..5 {
        seen.extend(log.read_lines());
    }
    assert!(seen.is_empty(), "{:?}", String::from_utf8_lossy(&seen));
    append(&path, b"new\n");
    assert_eq!(drain(&mut log), b"new\n");
}

#[test]
fn a_log_that_is_a_link_is_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "secret words\n").unwrap();
    let path = dir.path().join("output.log");
    std::os::unix::fs::symlink(&secret, &path).unwrap();
    let mut log = SessionLog::new(&path);
    assert!(drain(&mut log).is_empty());
    assert!(
        log.refused().unwrap().contains("symbolic link"),
        "{:?}",
        log.refused()
    );
    let mut out = Vec::new();
    assert!(copy_raw(&path, &mut out).is_err());
    assert!(out.is_empty());
}
