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
    // The swap (the first file) is written over and takes the name: no file made or freed.
    // (A program started meanwhile by another test holds copies of every descriptor for a
    // moment, which sends a write the plain way: one of a few writes is enough.)
    let reused = (0..5).any(|_| {
        write(&path, b"3");
        ino(&path) == first
    });
    assert!(reused, "the swap was not written over");
    assert_eq!(std::fs::read(&path).unwrap(), b"3", "cut to its new length");
    let kept = std::fs::read(&swap).unwrap();
    assert!(kept == b"two, longer" || kept == b"3", "{kept:?}");
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
    // Once it is closed, the swap is used again. (Another test of this process that starts
    // a program holds copies of every descriptor for a moment, which sends a write the plain
    // way: one of a few writes is enough.)
    let reused = (0..5).any(|_| {
        let swap_before = ino(&swap);
        write(&path, b"six");
        ino(&path) == swap_before
    });
    assert!(reused, "the swap is never used again");
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

#[test]
fn someone_opening_the_swap_during_a_write_neither_kills_runner_nor_sees_a_mix() {
    // The lease's break is signalled to the writer; by default that signal (SIGIO) ends the
    // process, which here is this test's.
    let (dir, path, swap) = setup();
    let big = |c: u8| vec![c; 300_000];
    write(&path, &big(b'a'));
    write(&path, &big(b'b'));
    let reader = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            // Bounded, so that it ends even if this process dies.
            "end=$(($(date +%s) + 4)); while [ $(date +%s) -lt $end ]; do cat {} {} | tr -d ab | head -c 1; done",
            swap.display(),
            path.display()
        ))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_millis(1500);
    let mut n = 0u8;
    while std::time::Instant::now() < until {
        write(&path, &big(if n.is_multiple_of(2) { b'a' } else { b'b' }));
        n = n.wrapping_add(1);
    }
    let pid = reader.id() as i32;
    // SAFETY: killing the shell loop started above.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let out = reader.wait_with_output().unwrap();
    // `cat` of either file only ever sees a's or b's whole: any other byte would be a mix
    // with a write (the files are all one letter at a time, of one length).
    assert!(
        out.stdout.is_empty(),
        "a reader saw {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(names(dir.path()), [".plan.json.swap", "plan.json"]);
}

#[test]
fn a_folder_at_the_target_is_refused_as_by_the_plain_replace_not_moved_aside() {
    let (dir, path, swap) = setup();
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("inside"), "kept").unwrap();
    assert!(write_atomic_swapping(&path, b"x", OsStr::new(".plan.json.tmp-test")).is_err());
    assert_eq!(std::fs::read(path.join("inside")).unwrap(), b"kept");
    assert!(std::fs::symlink_metadata(&swap).is_err());
    assert_eq!(names(dir.path()), ["plan.json"]);
}

#[test]
fn the_plan_keeps_its_permissions_across_writes() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, path, _swap) = setup();
    write(&path, b"one");
    write(&path, b"two");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    for text in [b"3", b"4", b"5", b"6"] {
        write(&path, text);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o600);
    }
}
