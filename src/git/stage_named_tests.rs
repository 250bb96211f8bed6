//! Named cases of a watched commit against the full pass (see `stage_tests.rs`).

use super::*;

/// Named cases: the worktree before the run (committed), what the agent does in the chunk
/// after the first commit; each watched commit must be the full pass's.
///
/// Each commit must equal the full pass; at least one of three tries must be a watched commit.
/// (A file this test wrote before the watch began can still give an event after: a process
/// another test thread is starting holds a copy of its descriptor until it execs, and the
/// last close is then. The watch rightly says "unknown" and the commit is a full pass.)
fn watched_equals_full(before: &[(&str, &str)], during: &[(&str, &str)]) {
    let mut passes = Vec::new();
    for _ in 0..3 {
        let dir = new_repo();
        let root = dir.path();
        for (path, text) in before {
            clear_for(root, Path::new(path));
            std::fs::write(root.join(path), text).unwrap();
        }
        let mut stager = Stager::new(root);
        let repo = Repository::open(root).unwrap();
        stager.commit(&repo, "first", false).unwrap();
        for (path, text) in during {
            clear_for(root, Path::new(path));
            std::fs::write(root.join(path), text).unwrap();
        }
        stager.commit(&repo, "watched", false).unwrap();
        assert_eq!(
            head_tree(root),
            full_tree(root),
            "{during:?}: the watched commit differs from the full pass"
        );
        passes.push(stager.passes());
        if stager.passes() == (2, 1) {
            return;
        }
    }
    panic!("{during:?}: not a watched commit in three tries: {passes:?}");
}

/// Names the pathspec parser reads as patterns (a newline ends one, trailing blanks are cut,
/// a backslash escapes, a leading `!` negates, `#` starts nothing, `*?[` are wildcards that
/// stop a folder standing for what is under it): each is staged exactly.
#[test]
fn names_a_pathspec_would_read_as_patterns_are_staged_exactly() {
    let names = "new\nline|trail |tab\t|cr\r|back\\slash|!bang|#hash|star*|q?|br[1]|sp ace|\u{b}vt|caf\u{e9}";
    for name in names.split('|') {
        for path in [
            name.to_string(),
            format!("a/{name}"),
            format!("{name}/in/f"),
        ] {
            watched_equals_full(&[], &[(&path, "x\n")]);
        }
        // The file existed and is changed.
        watched_equals_full(&[(name, "one\n")], &[(name, "two\n")]);
    }
}

/// Ignore rules that a path's own check and a walk from the root read differently: a folder
/// ignored with a file in it re-included (git never re-includes under an ignored folder), a
/// whitelist of everything, a folder-only rule.
#[test]
fn ignore_rules_on_folders_are_read_as_the_full_pass_reads_them() {
    for rules in [
        "ign/\n!ign/keep\n",
        "ign\n!ign/keep\n",
        "/*\n!/a\n!ign/keep\n",
        "*\n!*/\n!keep\n",
        "ign/*\n!ign/keep\n",
        "**/ign/**\n!keep\n",
        "x/\n!x/keep\n",
        "x\n!x/keep\n",
        "x/*\n!x/keep\n",
    ] {
        for path in [
            "ign/keep",
            "ign/new/keep",
            "a/ign/keep",
            "x/keep",
            "x/y/keep",
        ] {
            watched_equals_full(&[(".gitignore", rules)], &[(path, "x\n")]);
            // The folder was there (untracked) before the first commit.
            watched_equals_full(&[(".gitignore", rules), ("x/old", "o\n")], &[(path, "x\n")]);
        }
    }
}

/// Two names of one file, both in the worktree: a write through one is an event of that name
/// only, yet both files changed; the watched commit takes both (the full pass does).
#[test]
fn a_change_through_a_hard_link_inside_the_worktree_is_committed_at_once() {
    for (one, other) in [("a/x", "b/y"), ("a/x", "a/y"), ("x", "c/d/e/y")] {
        let dir = new_repo();
        let root = dir.path();
        clear_for(root, Path::new(one));
        clear_for(root, Path::new(other));
        std::fs::write(root.join(one), "one\n").unwrap();
        std::fs::hard_link(root.join(one), root.join(other)).unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        std::fs::hard_link(root.join(one), root.join("a/hidden.log")).unwrap();
        let mut stager = Stager::new(root);
        let repo = Repository::open(root).unwrap();
        stager.commit(&repo, "first", false).unwrap().unwrap();
        std::fs::write(root.join(one), "two\n").unwrap();
        stager.commit(&repo, "watched", false).unwrap().unwrap();
        assert_eq!(head_tree(root), full_tree(root), "{one} and {other}");
        // A new name in a new folder, written through.
        std::fs::create_dir_all(root.join("new/deeper")).unwrap();
        std::fs::hard_link(root.join(other), root.join("new/deeper/z")).unwrap();
        std::fs::write(root.join("new/deeper/z"), "three\n").unwrap();
        stager.commit(&repo, "watched", false).unwrap().unwrap();
        assert_eq!(head_tree(root), full_tree(root), "new/deeper/z and {other}");
        // Through a name the ignore rules hide: it stages nothing of its own.
        std::fs::write(root.join("a/hidden.log"), "four\n").unwrap();
        stager.commit(&repo, "watched", false).unwrap();
        assert_eq!(head_tree(root), full_tree(root), "a/hidden.log and {one}");
    }
}

/// A name that is not UTF-8, new and then changed, in a new folder and in an old one.
#[test]
fn a_name_that_is_not_utf8_is_staged_exactly() {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9 \xff\n");
    let dir = new_repo();
    let root = dir.path();
    let mut stager = Stager::new(root);
    let repo = Repository::open(root).unwrap();
    stager.commit(&repo, "first", false).unwrap();
    for (round, at) in [
        root.join(name),
        root.join("a").join(name),
        root.join(name).join("in"),
    ]
    .iter()
    .enumerate()
    {
        if round == 2 {
            std::fs::remove_file(root.join(name)).unwrap();
            std::fs::create_dir(root.join(name)).unwrap();
        }
        for text in ["one\n", "two\n"] {
            std::fs::write(at, text).unwrap();
            stager.commit(&repo, "watched", false).unwrap();
            assert_eq!(head_tree(root), full_tree(root), "{}", at.display());
        }
    }
    assert_eq!(stager.passes(), (7, 1));
}

/// A `.gitignore` that is a link to a file elsewhere (in the worktree or out of it): a write
/// to that file changes what is ignored everywhere, though no event names a `.gitignore`.
#[test]
fn a_gitignore_that_links_elsewhere_is_read_as_the_full_pass_reads_it() {
    let outside = tempfile::tempdir().unwrap();
    for (link, target) in [
        (".gitignore", "rules.txt"),
        ("a/.gitignore", "../rules.txt"),
        (".gitignore", "OUT"),
    ] {
        let dir = new_repo();
        let root = dir.path();
        let rules = match target {
            "OUT" => outside.path().join("rules"),
            _ => root.join(link).parent().unwrap().join(target),
        };
        std::fs::write(&rules, "*.log\n").unwrap();
        std::os::unix::fs::symlink(&rules, root.join(link)).unwrap();
        std::fs::write(root.join("a/old.log"), "ignored\n").unwrap();
        let mut stager = Stager::new(root);
        let repo = Repository::open(root).unwrap();
        stager.commit(&repo, "first", false).unwrap();
        std::fs::write(&rules, "*.tmp\n").unwrap();
        std::fs::write(root.join("f1"), "seen\n").unwrap();
        stager.commit(&repo, "watched", false).unwrap();
        assert_eq!(head_tree(root), full_tree(root), "{link} -> {target}");
    }
}

/// Paths that sort around a folder's name (`p-y`, `p.x` before `p/`, `p0` after it): each is
/// staged, whether `p` is a new folder, an old one, or a file that became a folder.
#[test]
fn names_that_sort_around_a_folder_are_all_staged() {
    let around = [
        ("p-y/f", "1\n"),
        ("p.x", "1\n"),
        ("p0", "1\n"),
        ("p-", "1\n"),
        ("p/q", "1\n"),
    ];
    let changed = [
        ("p-y/f", "2\n"),
        ("p.x", "2\n"),
        ("p0", "2\n"),
        ("p-", "2\n"),
    ];
    let mut during = changed.to_vec();
    during.extend([("p/new/f", "n\n"), ("p/q", "2\n"), ("p/r", "2\n")]);
    watched_equals_full(&around, &during);
    watched_equals_full(&around[..4], &during);
    watched_equals_full(&[("p", "file\n"), ("p-", "x\n")], &during);
    let mut new_only = vec![("p/new/f", "n\n"), ("pp", "2\n")];
    new_only.extend(changed);
    watched_equals_full(&around, &new_only);
}

/// The agent deletes the worktree's root and puts a copy back (or moves it away and back);
/// then it changes a file in a folder the old watch watched.
#[test]
fn a_worktree_root_replaced_by_a_copy_is_looked_at_whole() {
    for how in ["copy", "move"] {
        let dir = new_repo();
        let root = dir.path();
        let mut stager = Stager::new(root);
        let repo = Repository::open(root).unwrap();
        stager.commit(&repo, "first", false).unwrap();
        drop(repo);
        let aside = root.with_extension("aside");
        match how {
            "copy" => {
                assert!(
                    Command::new("cp")
                        .arg("-a")
                        .arg(root)
                        .arg(&aside)
                        .status()
                        .unwrap()
                        .success()
                );
                std::fs::remove_dir_all(root).unwrap();
            }
            _ => std::fs::rename(root, &aside).unwrap(),
        }
        std::fs::write(aside.join("a/b/g.sh"), "changed while away\n").unwrap();
        std::fs::rename(&aside, root).unwrap();
        std::fs::write(root.join("c/d/e/f1"), "changed\n").unwrap();
        let repo = Repository::open(root).unwrap();
        stager.commit(&repo, "after", false).unwrap();
        assert_eq!(head_tree(root), full_tree(root), "{how}");
        std::fs::write(root.join("a/f2"), "watched again\n").unwrap();
        stager.commit(&repo, "watched", false).unwrap();
        assert_eq!(head_tree(root), full_tree(root), "{how}");
        assert_eq!(stager.passes(), (3, 2), "{how}");
    }
}

/// A worktree the watch cannot cover (a nested repository): every commit is the full pass, and
/// the watch, which lists every folder to start, is tried again only at the periodic pass.
#[test]
fn a_watch_that_cannot_start_is_tried_again_only_at_the_periodic_pass() {
    let dir = new_repo();
    let root = dir.path();
    assert!(git(&root.join("a"), &["init", "-q", "nested"]));
    let mut stager = Stager::new(root);
    let repo = Repository::open(root).unwrap();
    for round in 0..FULL_EVERY + 2 {
        std::fs::write(root.join("f1"), format!("{round}\n")).unwrap();
        stager.commit(&repo, "chunk", false).unwrap();
        assert_eq!(head_tree(root), full_tree(root));
    }
    assert_eq!(stager.passes(), (FULL_EVERY + 2, FULL_EVERY + 2));
    assert_eq!(
        stager.watch_starts(),
        2,
        "tried at commits 0 and {FULL_EVERY} only"
    );
}

/// More events than inotify's queue holds (`max_queued_events`, 16384 by default): the watch
/// says "unknown", the commit looks at every file, and the next one is watched again.
#[test]
fn an_overflowing_event_queue_makes_the_full_pass() {
    let dir = new_repo();
    let root = dir.path();
    let mut stager = Stager::new(root);
    let repo = Repository::open(root).unwrap();
    stager.commit(&repo, "first", false).unwrap();
    std::fs::create_dir(root.join("many")).unwrap();
    stager.commit(&repo, "watched", false).unwrap();
    let queued: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .map_or(16384, |s| s.trim().parse().unwrap());
    for i in 0..queued / 3 + 100 {
        std::fs::write(root.join(format!("many/{i}")), "x").unwrap();
    }
    stager.commit(&repo, "overflowed", false).unwrap();
    assert_eq!(head_tree(root), full_tree(root));
    assert_eq!(stager.passes(), (3, 2));
    std::fs::write(root.join("many/0"), "y").unwrap();
    stager.commit(&repo, "watched", false).unwrap();
    assert_eq!(head_tree(root), full_tree(root));
    assert_eq!(stager.passes(), (4, 2));
}

/// A setting that changes what is staged (`core.fileMode` here), changed in a file the git
/// config includes (`include.path`): the commit after it looks at every file.
#[test]
fn a_staging_setting_changed_in_an_included_config_file_makes_the_full_pass() {
    let dir = new_repo();
    let root = dir.path();
    let extra = root.join(".git/extra-config");
    std::fs::write(&extra, "[core]\n\tfileMode = false\n").unwrap();
    assert!(git(
        root,
        &["config", "include.path", extra.to_str().unwrap()]
    ));
    let mode = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(root.join("a/f2"), mode).unwrap();
    let mut stager = Stager::new(root);
    let repo = Repository::open(root).unwrap();
    stager.commit(&repo, "first", false).unwrap();
    std::fs::write(&extra, "[core]\n\tfileMode = true\n").unwrap();
    std::fs::write(root.join("f1"), "seen\n").unwrap();
    let repo = Repository::open(root).unwrap();
    stager.commit(&repo, "after", false).unwrap();
    assert_eq!(head_tree(root), full_tree(root));
}
