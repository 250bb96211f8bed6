use super::*;

const ID: &str = "20261129T100000Z-0001-coder-subtask-1-1-a1";

fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(ID)).unwrap();
    let log = crate::store::sessions::log_of(dir.path(), ID);
    (dir, log)
}

fn append(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

fn said(f: &Follow) -> Vec<String> {
    f.activities().iter().map(Activity::one_line).collect()
}

#[test]
fn appended_lines_are_read_as_they_come_and_a_partial_line_waits_for_its_end() {
    let (dir, log) = setup();
    let mut f = Follow::new(dir.path(), ID);
    assert!(!f.poll(), "no log yet");
    append(&log, b"first line\nsecond ha");
    assert!(f.poll());
    assert_eq!(said(&f), ["first line"]);
    assert!(!f.poll(), "nothing new");
    append(&log, b"lf\n");
    assert!(f.poll());
    assert_eq!(said(&f), ["first line", "second half"]);
}

#[test]
fn a_log_cut_back_or_replaced_is_read_again_from_its_start() {
    let (dir, log) = setup();
    let mut f = Follow::new(dir.path(), ID);
    append(&log, b"one\ntwo\nthree\n");
    f.poll();
    // The capture's cut at the end of a session: head, marker, tail — a shorter file.
    std::fs::write(&log, b"one\n[cut]\n").unwrap();
    assert!(f.poll());
    assert_eq!(said(&f), ["one", "[cut]"]);
    let other = log.with_file_name("new");
    std::fs::write(&other, b"another session's words\nmore words\nand more\n").unwrap();
    std::fs::rename(&other, &log).unwrap();
    assert!(f.poll());
    assert_eq!(
        said(&f),
        ["another session's words", "more words", "and more"]
    );
}

#[test]
fn a_link_or_a_fifo_in_the_logs_place_is_refused_and_never_blocks() {
    let (dir, log) = setup();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "not the agent's\n").unwrap();
    std::os::unix::fs::symlink(&secret, &log).unwrap();
    let mut f = Follow::new(dir.path(), ID);
    assert!(f.poll());
    assert!(
        f.refused().unwrap().contains("is a link"),
        "{:?}",
        f.refused()
    );
    assert!(f.activities().is_empty());
    std::fs::remove_file(&log).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &log,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    f.poll();
    assert!(
        f.refused().unwrap().contains("not a regular file"),
        "{:?}",
        f.refused()
    );
}

#[test]
fn a_huge_log_is_read_from_its_tail_and_a_line_without_end_is_bounded() {
    let (dir, log) = setup();
    let mut big = Vec::new();
    for n in 0..100_000 {
        big.extend_from_slice(format!("line {n}\n").as_bytes());
    }
    append(&log, &big);
    let mut f = Follow::new(dir.path(), ID);
    f.poll();
    let lines = said(&f);
    assert_eq!(lines.last().map(String::as_str), Some("line 99999"));
    assert!(lines.len() < 100_000);
    // The first line kept is whole (the cut one before it is dropped).
    assert!(lines[0].starts_with("line ") && lines[0][5..].parse::<u32>().is_ok());
    // No newline, ever: still shown, and memory stays bounded.
    append(&log, &vec![b'x'; LONGEST_LINE + 10]);
    assert!(f.poll());
    assert!(f.partial.len() <= LONGEST_LINE);
    assert!(f.activities().len() <= KEPT);
}
