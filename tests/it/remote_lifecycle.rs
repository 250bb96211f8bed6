//! `review`, `merge` and `undo` with `--remote` on a spec built on another machine (a clone
//! sharing a bare remote, file://): fetched, what was here kept on a backup ref, merged here,
//! published back as merged; a held spec refused; a hostile folder refused end to end.

use crate::common::*;
use serde_json::Value;

const SPEC: &str = "001-feature";

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

fn two_machines() -> (TestRepo, TestRepo, std::path::PathBuf) {
    crate::fleet_support::two_machines(SPEC)
}

fn remote_plan(bare: &std::path::Path) -> Value {
    let text = git_in(
        bare,
        &[
            "show",
            &format!("refs/runner/specs/{SPEC}:implementation_plan.json"),
        ],
    );
    serde_json::from_str(&text).unwrap()
}

#[test]
fn review_remote_brings_the_spec_here_and_keeps_what_differed_on_backup_refs() {
    let (a, b, _bare) = two_machines();
    let tip = a.git(&["rev-parse", &format!("auto-claude/{SPEC}")]);
    let out = b.runner(&["review", "--spec", SPEC, "--remote", "origin", "--json"]);
    assert_exit(&out, 0);
    let r = json(&out);
    assert_eq!(r["fetched"]["backups"], Value::Array(vec![]));
    assert_eq!(r["spec"], SPEC);
    assert_eq!(b.git(&["rev-parse", &format!("auto-claude/{SPEC}")]), tip);
    assert_eq!(
        b.read(&format!(
            ".auto-claude/specs/{SPEC}/implementation_plan.json"
        )),
        a.read(&format!(
            ".auto-claude/specs/{SPEC}/implementation_plan.json"
        ))
    );
    assert!(
        !b.spec_dir(SPEC).join("sessions").exists(),
        "sessions were published"
    );

    // Something of B's own, in the folder and on the branch: kept, then replaced.
    b.write(
        &format!(".auto-claude/specs/{SPEC}/spec.md"),
        "# mine\n\nLocal edit.\n",
    );
    b.write(
        &format!(".auto-claude/specs/{SPEC}/sessions/s1/output.log"),
        "my log",
    );
    b.git(&["branch", "-f", &format!("auto-claude/{SPEC}"), "main"]);
    let out = b.runner(&["review", "--spec", SPEC, "--remote", "origin"]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(err.contains("kept on refs/auto-claude/backup/"), "{err}");
    let kept = b.git(&[
        "for-each-ref",
        "--format=%(refname)",
        "refs/auto-claude/backup/",
    ]);
    let folder_ref = kept.lines().find(|l| l.ends_with("/local-folder")).unwrap();
    let branch_ref = kept.lines().find(|l| l.ends_with("/local-branch")).unwrap();
    assert_eq!(
        b.git(&["show", &format!("{folder_ref}:spec.md")]),
        "# mine\n\nLocal edit.\n"
    );
    assert_eq!(
        b.git(&["rev-parse", branch_ref]),
        b.git(&["rev-parse", "main"])
    );
    assert_eq!(b.git(&["rev-parse", &format!("auto-claude/{SPEC}")]), tip);
    assert_ne!(
        b.read(&format!(".auto-claude/specs/{SPEC}/spec.md")),
        "# mine\n\nLocal edit.\n"
    );
    assert_eq!(
        b.read(&format!(".auto-claude/specs/{SPEC}/sessions/s1/output.log")),
        "my log"
    );
    assert!(stdout(&out).contains(SPEC), "{}", stdout(&out));
}

#[test]
fn merge_remote_merges_here_publishes_merged_and_undo_remote_publishes_it_back() {
    let (a, b, bare) = two_machines();
    let remote_main = git_in(&bare, &["rev-parse", "refs/heads/main"]);
    let out = b.runner(&[
        "merge", "--spec", SPEC, "--remote", "origin", "--yes", "--json",
    ]);
    assert_exit(&out, 0);
    let r = json(&out);
    assert_eq!(r["target"], "main");
    let published = r["published"].as_str().unwrap();
    assert_eq!(
        git_in(&bare, &["rev-parse", &format!("refs/runner/specs/{SPEC}")]).trim(),
        published
    );
    assert!(
        remote_plan(&bare).get("merged").is_some(),
        "not published as merged"
    );
    assert_eq!(
        git_in(&bare, &["rev-parse", "refs/heads/main"]),
        remote_main,
        "main pushed"
    );
    let merged_main = b.git(&["log", "-1", "--format=%s", "main"]);
    assert_eq!(merged_main.trim(), format!("auto-claude: merge {SPEC}"));
    let status = json(&a.runner(&["status", "--remote", "origin", "--json"]));
    assert_eq!(status["specs"][0]["status"], "merged");

    let out = b.runner(&["undo", "--spec", SPEC, "--remote", "origin", "--json"]);
    assert_exit(&out, 0);
    assert_eq!(json(&out)["kind"], "merge");
    assert!(
        remote_plan(&bare).get("merged").is_none(),
        "still merged on the remote"
    );
    let status = json(&a.runner(&["status", "--remote", "origin", "--json"]));
    assert_eq!(status["specs"][0]["status"], "complete");
}

#[test]
fn merge_remote_of_a_spec_a_worker_holds_is_refused_and_changes_nothing() {
    let (a, b, bare) = two_machines();
    let lease = crate::fleet_support::lease_json("w2", "h2", 9, chrono::Utc::now(), 60);
    crate::fleet_support::push_lease(&a.root, SPEC, &lease);
    let before = git_in(&bare, &["for-each-ref"]);
    let main_before = b.git(&["rev-parse", "main"]);
    let out = b.runner(&["merge", "--spec", SPEC, "--remote", "origin", "--yes"]);
    assert_exit(&out, 4);
    assert!(stderr(&out).contains("worker w2 on h2"), "{}", stderr(&out));
    assert_eq!(git_in(&bare, &["for-each-ref"]), before);
    assert_eq!(b.git(&["rev-parse", "main"]), main_before);
    assert!(!b.spec_dir(SPEC).exists());
    // --remote needs the spec named.
    let out = b.runner(&["merge", "--remote", "origin", "--yes"]);
    assert_exit(&out, 2);
}

#[test]
fn review_remote_of_a_hostile_folder_is_refused_and_writes_nothing() {
    let b = TestRepo::new();
    let bare = b.tmp.path().join("remote.git");
    git_in(
        b.tmp.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    b.git(&[
        "remote",
        "add",
        "origin",
        &format!("file://{}", bare.display()),
    ]);
    // A plan that is fine beside `spec.md` as a link to a file outside, and `../escape`'s
    // cousin: a name that is no published file's.
    let write = |text: &str| {
        let path = b.tmp.path().join("blob-input");
        std::fs::write(&path, text).unwrap();
        b.git(&["hash-object", "-w", path.to_str().unwrap()])
            .trim()
            .to_string()
    };
    let plan = write("{\"phases\": []}");
    let link = write("../../../outside.txt");
    let tree_input =
        format!("100644 blob {plan}\timplementation_plan.json\n120000 blob {link}\tspec.md\n");
    std::fs::write(b.tmp.path().join("tree-input"), tree_input).unwrap();
    let tree = std::process::Command::new("git")
        .args(["mktree"])
        .current_dir(&b.root)
        .stdin(std::fs::File::open(b.tmp.path().join("tree-input")).unwrap())
        .output()
        .unwrap();
    let tree = String::from_utf8(tree.stdout).unwrap();
    let commit = b.git(&["commit-tree", tree.trim(), "-m", "evil"]);
    b.git(&[
        "push",
        "-q",
        "origin",
        &format!("{}:refs/runner/specs/001-evil", commit.trim()),
    ]);
    let out = b.runner(&[
        "review", "--spec", "001-evil", "--remote", "origin", "--json",
    ]);
    assert_exit(&out, 7);
    let err = json(&out);
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains("refs/runner/specs/001-evil"), "{message}");
    assert!(message.contains("symbolic link"), "{message}");
    assert!(!b.spec_dir("001-evil").exists());
    assert!(!b.tmp.path().join("outside.txt").exists());
    let out = b.runner(&["review", "--spec", "../x", "--remote", "origin"]);
    assert_exit(&out, 2);
}
