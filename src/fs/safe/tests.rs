//! Unit tests of the safe file access.

use super::*;
use std::os::unix::fs::symlink;

fn outside_and_link() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "precious").unwrap();
    let link = dir.path().join("link");
    symlink(&outside, &link).unwrap();
    (dir, outside, link)
}

fn is_refusal(e: &std::io::Error) -> bool {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<RunnerError>())
        .is_some_and(|r| r.exit_code() == crate::error::exit::BAD_INPUT)
}

#[test]
fn no_write_goes_through_a_link() {
    let (dir, outside, link) = outside_and_link();
    assert!(is_refusal(&create(&link).unwrap_err()));
    assert!(is_refusal(&write(&link, b"x").unwrap_err()));
    assert!(is_refusal(&append(&link, b"x", true).unwrap_err()));
    let dangling = dir.path().join("dangling");
    symlink(dir.path().join("new-outside"), &dangling).unwrap();
    assert!(copy_new(&outside, &dangling).is_err());
    assert!(!dir.path().join("new-outside").exists());
    assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
}

#[test]
fn append_keeps_what_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    append(&path, b"\xffa", true).unwrap();
    append(&path, b"b\n", false).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"\xffab\n");
}

#[test]
fn real_dirs_refuse_links() {
    let dir = tempfile::tempdir().unwrap();
    let made = create_real_dirs(dir.path(), &["a", "b"]).unwrap();
    assert!(made.is_dir());
    create_real_dirs(dir.path(), &["a", "b"]).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    symlink(elsewhere.path(), dir.path().join("l")).unwrap();
    assert!(is_refusal(
        &create_real_dirs(dir.path(), &["l", "x"]).unwrap_err()
    ));
    assert!(!elsewhere.path().join("x").exists());
}

#[test]
fn user_folders_may_link_inside_the_repository_only() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("real")).unwrap();
    symlink(root.join("real"), root.join("inside")).unwrap();
    assert!(check_link_inside(&root, &root.join("inside")).is_ok());
    assert!(check_link_inside(&root, &root.join("real")).is_ok());
    assert!(check_link_inside(&root, &root.join("missing")).is_ok());
    let elsewhere = tempfile::tempdir().unwrap();
    symlink(elsewhere.path(), root.join("out")).unwrap();
    let err = check_link_inside(&root, &root.join("out")).unwrap_err();
    assert_eq!(err.exit_code(), crate::error::exit::BAD_INPUT);
    assert!(err.to_string().contains("out"), "{err}");
}

#[test]
fn a_replaced_file_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.json");
    std::fs::write(&path, "old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    write_atomic(&path, b"new", OsStr::new(".plan.json.tmp")).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o640);
}
