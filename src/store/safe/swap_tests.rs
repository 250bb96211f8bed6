use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::*;

fn write(path: &Path, bytes: &[u8]) {
    write_atomic_swapping(path, bytes, OsStr::new(".plan.json.tmp-test")).unwrap();
}

fn ino(path: &Path) -> u64 {
    std::fs::symlink_metadata(path).unwrap().ino()
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.json");
    let swap = dir.path().join(swap_name(OsStr::new("plan.json")));
    (dir, path, swap)
}

#[test]
fn the_replaced_file_is_kept_as_the_swap_and_written_over_by_the_next_write() {
    let (dir, path, swap) = setup();
    write(&path, b"one");
    let first = ino(&path);
    write(&path, b"two, longer");
    assert_eq!(std::fs::read(&swap).unwrap(), b"one");
    assert_eq!(ino(&swap), first, "the replaced file is the swap");
    write(&path, b"3");
    // The swap (the first file) was written over and took the name: no file made or freed.
    assert_eq!(ino(&path), first);
    assert_eq!(std::fs::read(&path).unwrap(), b"3", "cut to its new length");
    assert_eq!(std::fs::read(&swap).unwrap(), b"two, longer");
    assert_eq!(names(dir.path()), [".plan.json.swap", "plan.json"]);
    assert!(is_swap_file(".plan.json.swap"));
    assert!(!crate::store::is_temp_file(".plan.json.swap"));
}

#[test]
fn a_reader_of_the_file_before_the_last_write_keeps_reading_its_bytes_whole() {
    let (dir, path, swap) = setup();
    write(&path, b"one");
    write(&path, b"two");
    // A reader opens the plan ("two"); the next write makes that file the swap.
    let mut reader = std::fs::File::open(&path).unwrap();
    let held = ino(&path);
    write(&path, b"three");
    assert_eq!(ino(&swap), held);
    // The write after would overwrite the swap in place: the reader holds it, so it must not.
    write(&path, b"four");
    write(&path, b"five");
    let mut seen = Vec::new();
    reader.read_to_end(&mut seen).unwrap();
    assert_eq!(seen, b"two", "the reader's file was written over");
    assert_eq!(std::fs::read(&path).unwrap(), b"five");
    drop(reader);
    // Once it is closed, the swap is used again.
    let swap_before = ino(&swap);
    write(&path, b"six");
    assert_eq!(ino(&path), swap_before);
    assert_eq!(names(dir.path()), [".plan.json.swap", "plan.json"]);
}

#[test]
fn a_link_at_the_swap_is_never_written_through() {
    let (dir, path, swap) = setup();
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "precious").unwrap();
    write(&path, b"one");
    std::os::unix::fs::symlink(&outside, &swap).unwrap();
    write(&path, b"two");
    assert_eq!(std::fs::read(&path).unwrap(), b"two");
    assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
    assert!(
        std::fs::symlink_metadata(&swap).is_err(),
        "the link is removed"
    );
    write(&path, b"three");
    assert_eq!(std::fs::read(&path).unwrap(), b"three");
    assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
}

#[test]
fn a_hard_link_at_the_swap_is_never_written_through() {
    let (dir, path, swap) = setup();
    write(&path, b"one");
    write(&path, b"two");
    let other = dir.path().join("other-name");
    std::fs::hard_link(&swap, &other).unwrap();
    write(&path, b"three");
    assert_eq!(std::fs::read(&path).unwrap(), b"three");
    assert_eq!(
        std::fs::read(&other).unwrap(),
        b"one",
        "written through a hard link"
    );
    // The same when the plan itself had a second name: it becomes the swap at the next write.
    std::fs::hard_link(&path, dir.path().join("plan-copy")).unwrap();
    write(&path, b"four");
    write(&path, b"five");
    assert_eq!(std::fs::read(&path).unwrap(), b"five");
    assert_eq!(
        std::fs::read(dir.path().join("plan-copy")).unwrap(),
        b"three"
    );
}

#[test]
fn a_folder_or_a_fifo_at_the_swap_leaves_the_plain_replace() {
    let (dir, path, swap) = setup();
    write(&path, b"one");
    std::fs::create_dir(&swap).unwrap();
    std::fs::write(swap.join("inside"), "kept").unwrap();
    write(&path, b"two");
    write(&path, b"three");
    assert_eq!(std::fs::read(&path).unwrap(), b"three");
    assert_eq!(std::fs::read(swap.join("inside")).unwrap(), b"kept");
    std::fs::remove_dir_all(&swap).unwrap();
    let fifo = std::ffi::CString::new(swap.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid path string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    write(&path, b"four");
    assert_eq!(std::fs::read(&path).unwrap(), b"four");
    assert!(
        !names(dir.path()).iter().any(|n| n.contains(".tmp-")),
        "no temp file left"
    );
}
