//! `commit_folder` and `materialize` on real repositories, and every hostile tree a remote
//! could hold, built with git2 (and raw objects) directly.

use std::io::Write;
use std::path::Path;

use super::*;
use crate::fleet::test_util::local_repo;

const RUN: &str = "runs/r0123456789ab.json";

/// A spec folder with every kind of published file, and files that are never published.
fn spec_folder(dir: &Path) {
    std::fs::create_dir_all(dir.join("runs")).unwrap();
    std::fs::create_dir_all(dir.join("sessions/s1")).unwrap();
    for (name, text) in [
        ("spec.md", "# Add login\n"),
        ("requirements.json", "{}"),
        ("implementation_plan.json", "{\"phases\":[]}"),
        ("events.jsonl", "{\"e\":2}\n"),
        ("events.1.jsonl", "{\"e\":1}\n"),
        ("checkpoint.json", "{}"),
        ("planner_ledger.json", "{}"),
        ("failures.jsonl", ""),
        (RUN, "{\"run\":1}"),
        ("sessions/s1/output.log", "secret log"),
        ("runs/notes.txt", "not a record"),
        (".lock", ""),
        ("handoff.md", "local"),
        ("events.01.jsonl", "not a segment"),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// The files under `dir` (relative paths, sorted) with their text.
fn files_of(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                dirs.push(e.path());
            } else {
                let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read_to_string(e.path()).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

fn tree_names(repo: &Repository, commit: Oid) -> Vec<String> {
    let tree = repo.find_commit(commit).unwrap().tree().unwrap();
    let mut names = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |root, e| {
        if e.kind() == Some(git2::ObjectType::Blob) {
            names.push(format!("{root}{}", e.name().unwrap()));
        }
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    names.sort();
    names
}

#[test]
fn only_the_published_files_are_committed_and_they_come_back_as_they_were() {
    let (dir, repo) = local_repo();
    let spec = dir.path().join("specs/001-a");
    spec_folder(&spec);
    let c1 = commit_folder(&repo, &spec, None, "publish 001-a").unwrap();
    assert_eq!(
        tree_names(&repo, c1),
        [
            "checkpoint.json",
            "events.1.jsonl",
            "events.jsonl",
            "failures.jsonl",
            "implementation_plan.json",
            "planner_ledger.json",
            "requirements.json",
            RUN,
            "spec.md",
        ]
    );
    let c2 = commit_folder(&repo, &spec, Some(c1), "again").unwrap();
    assert_eq!(repo.find_commit(c2).unwrap().parent_id(0).unwrap(), c1);

    // Into a folder that has older and extra published files, and files never published.
    let other = dir.path().join("elsewhere/001-a");
    std::fs::create_dir_all(other.join("sessions/x")).unwrap();
    std::fs::create_dir_all(other.join("runs")).unwrap();
    std::fs::write(other.join("implementation_plan.json"), "old").unwrap();
    std::fs::write(other.join("events.7.jsonl"), "stale segment").unwrap();
    std::fs::write(other.join("runs/r00000000000a.json"), "stale run").unwrap();
    std::fs::write(other.join("sessions/x/output.log"), "kept").unwrap();
    std::fs::write(other.join(".lock"), "kept").unwrap();
    std::fs::write(other.join("notes.md"), "kept").unwrap();
    materialize(&repo, c2, &other).unwrap();
    let published: Vec<_> = files_of(&spec)
        .into_iter()
        .filter(|(rel, _)| !rel.starts_with("sessions/") && rel != "runs/notes.txt")
        .filter(|(rel, _)| ![".lock", "handoff.md", "events.01.jsonl"].contains(&rel.as_str()))
        .collect();
    let mut expected = published.clone();
    expected.push(("sessions/x/output.log".into(), "kept".into()));
    expected.push((".lock".into(), "kept".into()));
    expected.push(("notes.md".into(), "kept".into()));
    expected.sort();
    assert_eq!(files_of(&other), expected);
    // Again: nothing changes (and nothing is rewritten that is the same).
    materialize(&repo, c2, &other).unwrap();
    assert_eq!(files_of(&other), expected);
}

#[test]
fn a_link_or_an_oversized_file_is_not_published() {
    let (dir, repo) = local_repo();
    let spec = dir.path().join("s");
    spec_folder(&spec);
    std::fs::remove_file(spec.join("spec.md")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", spec.join("spec.md")).unwrap();
    let err = commit_folder(&repo, &spec, None, "m").unwrap_err();
    assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
    std::fs::remove_file(spec.join("spec.md")).unwrap();
    let big = std::fs::File::create(spec.join("spec.md")).unwrap();
    big.set_len(MAX_FILE_BYTES + 1).unwrap();
    let err = commit_folder(&repo, &spec, None, "m").unwrap_err();
    assert!(format!("{err:#}").contains("larger than 64 MiB"), "{err:#}");
}

/// A tree entry as written raw: mode, name bytes, id.
type Entry<'a> = (&'a str, &'a [u8], Oid);

/// A raw tree object with `entries` (mode, name bytes, id), written as a hostile remote could.
fn raw_tree(repo: &Repository, entries: &[Entry]) -> Oid {
    let mut bytes = Vec::new();
    for (mode, name, id) in entries {
        bytes.extend_from_slice(mode.as_bytes());
        bytes.push(b' ');
        bytes.extend_from_slice(name);
        bytes.push(0);
        bytes.extend_from_slice(id.as_bytes());
    }
    repo.odb()
        .unwrap()
        .write(git2::ObjectType::Tree, &bytes)
        .unwrap()
}

fn commit_of_tree(repo: &Repository, tree: Oid) -> Oid {
    let sig = git2::Signature::now("evil", "evil@example.com").unwrap();
    let tree = repo.find_tree(tree).unwrap();
    repo.commit(None, &sig, &sig, "evil", &tree, &[]).unwrap()
}

/// A loose object whose header claims `size` bytes of a blob, with only a few bytes behind it:
/// what a remote may send to make a reader inflate gigabytes. zlib with one stored block.
fn claimed_blob(repo: &Repository, size: u64) -> Oid {
    let mut raw = format!("blob {size}\0").into_bytes();
    raw.extend_from_slice(b"tiny");
    let mut z = vec![0x78, 0x01, 0x01];
    let len = raw.len() as u16;
    z.extend_from_slice(&len.to_le_bytes());
    z.extend_from_slice(&(!len).to_le_bytes());
    z.extend_from_slice(&raw);
    let (mut a, mut b) = (1u32, 0u32);
    for byte in &raw {
        a = (a + *byte as u32) % 65521;
        b = (b + a) % 65521;
    }
    z.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let id = Oid::from_str("1234567890abcdef1234567890abcdef12345678").unwrap();
    let hex = id.to_string();
    let dir = repo.path().join("objects").join(&hex[..2]);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::File::create(dir.join(&hex[2..]))
        .unwrap()
        .write_all(&z)
        .unwrap();
    id
}

#[test]
fn every_hostile_tree_is_refused_whole_and_nothing_is_written() {
    let (dir, repo) = local_repo();
    let blob = repo.blob(b"{}").unwrap();
    let huge = claimed_blob(&repo, 2 << 30);
    assert_eq!(repo.odb().unwrap().read_header(huge).unwrap().0, 2 << 30);
    let good_runs = raw_tree(&repo, &[("100644", b"r0123456789ab.json", blob)]);
    let nested = raw_tree(&repo, &[("40000", b"r0123456789ab.json", good_runs)]);
    let deeper = raw_tree(&repo, &[("40000", b"deeper", good_runs)]);
    let bad_run_name = raw_tree(&repo, &[("100644", b"notes.json", blob)]);
    let plan: &[u8] = b"implementation_plan.json";
    let ok = ("100644", plan, blob);
    let cases: Vec<(&str, Vec<Entry>, &str)> = vec![
        (
            "dotdot",
            vec![ok, ("100644", b"../x", blob)],
            "not one plain file name",
        ),
        (
            "path",
            vec![ok, ("100644", b"a/../../b", blob)],
            "not one plain file name",
        ),
        ("link", vec![("120000", plan, blob)], "symbolic link"),
        (
            "gitlink",
            vec![ok, ("160000", b"spec.md", blob)],
            "submodule",
        ),
        ("huge", vec![("100644", plan, huge)], "more than 67108864"),
        ("nul", vec![ok, ("100644", b"spec.md\0x", blob)], ""),
        (
            "newline",
            vec![ok, ("100644", b"spec\n.md", blob)],
            "not one plain file name",
        ),
        (
            "non-utf8",
            vec![ok, ("100644", b"spec\xff.md", blob)],
            "not UTF-8",
        ),
        (
            "unknown",
            vec![ok, ("100644", b"config.toml", blob)],
            "not a published file",
        ),
        (
            "sessions",
            vec![ok, ("40000", b"sessions", good_runs)],
            "not a published file",
        ),
        (
            "nested",
            vec![ok, ("40000", b"runs", nested)],
            "as a folder",
        ),
        (
            "deeper",
            vec![ok, ("40000", b"runs", deeper)],
            "not a run record",
        ),
        (
            "run name",
            vec![ok, ("40000", b"runs", bad_run_name)],
            "not a run record",
        ),
        (
            "runs file",
            vec![ok, ("100644", b"runs", blob)],
            "something else than a folder",
        ),
        ("twice", vec![ok, ok], "twice"),
        (
            "plan folder",
            vec![("40000", plan, good_runs)],
            "as a folder",
        ),
    ];
    for (what, entries, said) in cases {
        let spec = dir.path().join(format!("spec-{}", what.replace(' ', "-")));
        std::fs::create_dir_all(&spec).unwrap();
        std::fs::write(spec.join("implementation_plan.json"), "mine").unwrap();
        let tree = raw_tree(&repo, &entries);
        // (libgit2 may already refuse to read a tree this broken: refused all the same.)
        let Ok(tree) = repo.find_tree(tree).map(|t| t.id()) else {
            continue;
        };
        let commit = commit_of_tree(&repo, tree);
        let err = materialize(&repo, commit, &spec).unwrap_err();
        let report = crate::error::ErrorReport::of(&err);
        assert_eq!(report.kind, "remote", "{what}: {report:?}");
        assert!(report.message.contains(said), "{what}: {}", report.message);
        assert!(report.message.contains("nothing was written"), "{what}");
        assert_eq!(
            files_of(&spec),
            vec![("implementation_plan.json".into(), "mine".into())],
            "{what}"
        );
        assert!(!dir.path().join("x").exists() && !dir.path().join("b").exists());
    }
    // Not a commit at all.
    let err = materialize(&repo, blob, &dir.path().join("s")).unwrap_err();
    assert!(format!("{err:#}").contains("not a commit"), "{err:#}");
}

#[test]
fn a_link_or_folder_where_a_file_goes_is_an_error_and_not_followed() {
    let (dir, repo) = local_repo();
    let spec = dir.path().join("specs/001-a");
    spec_folder(&spec);
    let commit = commit_folder(&repo, &spec, None, "m").unwrap();
    let outside = dir.path().join("outside.json");
    std::fs::write(&outside, "outside").unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir_all(target.join("runs")).unwrap();
    std::os::unix::fs::symlink(&outside, target.join("checkpoint.json")).unwrap();
    let err = materialize(&repo, commit, &target).unwrap_err();
    assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside");
    assert!(
        !target.join("spec.md").exists(),
        "written before the refusal"
    );
    // A folder where a file goes.
    std::fs::remove_file(target.join("checkpoint.json")).unwrap();
    std::fs::create_dir(target.join("checkpoint.json")).unwrap();
    let err = materialize(&repo, commit, &target).unwrap_err();
    assert!(format!("{err:#}").contains("not a regular file"), "{err:#}");
    // runs/ as a link to a folder elsewhere.
    std::fs::remove_dir(target.join("checkpoint.json")).unwrap();
    std::fs::remove_dir(target.join("runs")).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, target.join("runs")).unwrap();
    let err = materialize(&repo, commit, &target).unwrap_err();
    assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}
