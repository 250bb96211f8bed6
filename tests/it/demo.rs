//! `runner demo`: the README's first command must keep working, show every stage it promises
//! (planning, a commit per chunk, a failed verification and its retry, a kill in the middle of a
//! chunk and the recovery that keeps its partial work, review, merge, undo), and print only
//! commands that work as printed.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::common::*;
use serde_json::Value;

const SPEC: &str = "001-greeting-tool";
const BRANCH: &str = "auto-claude/001-greeting-tool";
/// What the scripted agent's killed attempt writes (`ops::demo::agent::PARTIAL_TEXT`).
const PARTIAL: &str = "`sh greet.sh NAME` prints a greeting.";
const SAVED_REF: &str = "refs/auto-claude/recovery/001-greeting-tool/document-greet/1";

fn demo(runner: &Path, dir: &Path, extra: &[&str]) -> Output {
    crate::common::isolated(runner)
        .arg("demo")
        .args(extra)
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The runner binary hard-linked (else copied) into a folder whose name has a space and a
/// quote, as a `cargo run` build in an odd place would be: not on PATH, not named plainly.
fn runner_in_odd_place(tmp: &Path) -> PathBuf {
    let dir = tmp.join("build dir 'x'");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("runner");
    if std::fs::hard_link(RUNNER, &exe).is_err() {
        std::fs::copy(RUNNER, &exe).unwrap();
    }
    exe
}

/// The lines the demo offers to run: the indented lines after the heading that says they work.
fn suggested_commands(out: &str) -> Vec<String> {
    let (_, list) = out
        .split_once("Each command below works as shown, from any folder:\n")
        .unwrap_or_else(|| panic!("no list of commands in:\n{out}"));
    list.lines()
        .filter_map(|l| l.strip_prefix("    "))
        .map(str::to_string)
        .collect()
}

#[test]
fn demo_shows_every_stage_and_keeps_the_partial_work_of_the_killed_chunk() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let runner = runner_in_odd_place(tmp.path());
    let dir = tmp.path().join("demo folder 'y'");
    let out = demo(&runner, &dir, &[]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    // Each stage, in order.
    let mut at = 0;
    for stage in [
        "Planning 001-greeting-tool",
        "Plan ready",
        "✓ add-greet-script completed, committed",
        "add-greet-test attempt 1 of 3 failed: the agent reported the chunk done, but its verification `sh test_greet.sh` failed",
        "add-greet-test: Add a test script for greet.sh (attempt 2 of 3)",
        "✓ add-greet-test completed, committed",
        "document-greet: Document greet.sh in the README, with an example (attempt 1 of 3)",
        "the demo killed runner (SIGKILL) in the middle of document-greet",
        "interrupted at: document-greet",
        "chunk document-greet: continue — partial work is there",
        SAVED_REF,
        "document-greet: Document greet.sh in the README, with an example (attempt 1 of 3; 1 interrupted, not counted)",
        "✓ document-greet completed, committed",
        "It merges cleanly into main.",
        "+`sh greet.sh NAME` prints a greeting.",
        "Merged 001-greeting-tool into main",
        "Undid the merge of 001-greeting-tool.",
    ] {
        let Some(found) = err[at..].find(stage) else {
            panic!("the demo does not show {stage:?} after byte {at}:\n{err}");
        };
        at += found + stage.len();
    }
    // Every step names the binary it ran by its real, quoted path.
    let quoted_exe = runner::sh(runner.to_str().unwrap());
    assert!(quoted_exe.starts_with('\''), "{quoted_exe}");
    assert_eq!(err.matches(&format!("$ {quoted_exe} ")).count(), 7, "{err}");

    // The folder is left in place and named.
    let dir = dir.canonicalize().unwrap();
    let text = stdout(&out);
    assert!(
        text.contains(&format!("The demo's folder stays: {}", dir.display())),
        "{text}"
    );
    assert!(
        text.contains(&format!("saved by recover at {SAVED_REF}")),
        "{text}"
    );
    // After undo, main is as it was and the branch holds one commit per chunk.
    assert_eq!(
        git_in(&dir, &["log", "--format=%s", "main"]),
        "initial commit\n"
    );
    let log = git_in(&dir, &["log", "--format=%H %s", &format!("main..{BRANCH}")]);
    let chunks: Vec<&str> = log
        .lines()
        .map(|l| l.split(' ').nth(2).unwrap().trim_end_matches(" -"))
        .collect();
    assert_eq!(
        chunks,
        ["document-greet", "add-greet-test", "add-greet-script"],
        "{log}"
    );
    // The killed attempt's half of the section, as recover saved it (and nothing of the
    // attempt after it) ...
    let saved = git_in(&dir, &["show", &format!("{SAVED_REF}:README.md")]);
    assert!(
        saved.contains(PARTIAL) && !saved.contains("Example:"),
        "{saved}"
    );
    // ... is in the commit of the attempt that continued, with that attempt's half.
    let doc_commit = log.lines().next().unwrap().split(' ').next().unwrap();
    let diff = git_in(&dir, &["show", doc_commit, "--", "README.md"]);
    assert!(
        diff.contains(&format!("+{PARTIAL}")) && diff.contains("+Example:"),
        "{diff}"
    );
    let plan: Value = serde_json::from_slice(
        &std::fs::read(dir.join(format!(
            ".auto-claude/specs/{SPEC}/implementation_plan.json"
        )))
        .unwrap(),
    )
    .unwrap();
    let doc = &plan["phases"][1]["subtasks"][0];
    assert_eq!(
        doc["attempts"][0]["recovery"]["decision"], "continue",
        "{doc}"
    );
    assert_eq!(doc["attempts"][1]["commit"].as_str().unwrap(), doc_commit);

    // Every suggested command works exactly as printed: from another folder, through sh, with
    // no runner on PATH. The last one removes the folder.
    let commands = suggested_commands(&text);
    assert!(commands.len() >= 5, "{commands:?}");
    assert!(
        commands
            .iter()
            .any(|c| c.contains(&format!("{quoted_exe} status"))),
        "{commands:?}"
    );
    let elsewhere = tempfile::tempdir().unwrap();
    for command in &commands {
        let out = crate::common::isolated("sh")
            .args(["-c", command])
            .current_dir(elsewhere.path())
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_exit(&out, 0);
        assert!(
            !stdout(&out).is_empty() || command.starts_with("rm "),
            "{command}"
        );
    }
    assert_eq!(
        commands.last().unwrap(),
        &format!("rm -rf {}", runner::sh(dir.to_str().unwrap()))
    );
    assert!(!dir.exists(), "the last command removes the demo's folder");
}

#[test]
fn demo_json_is_one_object_with_the_steps_commits_and_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let out = demo(Path::new(RUNNER), &dir, &["--json"]);
    assert_exit(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["schema"], 1);
    assert_eq!(v["spec"], SPEC);
    assert_eq!(v["branch"], BRANCH);
    assert_eq!(v["dir"], dir.canonicalize().unwrap().to_str().unwrap());
    let stages: Vec<&str> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(
        stages,
        [
            "build", "status", "recover", "resume", "review", "merge", "undo"
        ]
    );
    assert_eq!(v["steps"][0]["killed_with"], "SIGKILL");
    assert_eq!(v["steps"][0]["exit_code"], Value::Null);
    assert!(
        v["steps"].as_array().unwrap()[1..]
            .iter()
            .all(|s| s["exit_code"] == 0),
        "{v}"
    );
    let chunks: Vec<&str> = v["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert!(c["commit"].as_str().unwrap().len() >= 7 && c["summary"].is_string());
            c["chunk"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        chunks,
        ["document-greet", "add-greet-test", "add-greet-script"]
    );
    assert_eq!(v["partial_work"]["chunk"], "document-greet");
    assert_eq!(v["partial_work"]["text"], PARTIAL);
    assert_eq!(v["partial_work"]["saved_ref"], SAVED_REF);
    assert_eq!(v["partial_work"]["commit"], v["commits"][0]["commit"]);
    let commands = v["commands"].as_array().unwrap();
    assert!(commands.iter().all(|c| c["purpose"].is_string()));
    assert!(
        commands.last().unwrap()["command"]
            .as_str()
            .unwrap()
            .starts_with("rm -rf ")
    );
    // The steps still show on stderr.
    assert!(stderr(&out).contains("Plan ready"), "{}", stderr(&out));

    // A second demo into the same folder refuses instead of mixing.
    let again = demo(Path::new(RUNNER), &dir, &[]);
    assert_exit(&again, 2);
    assert!(
        stderr(&again).contains("is not empty"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn a_demo_folder_that_is_not_utf8_is_refused_before_anything_is_made() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(std::ffi::OsStr::from_bytes(b"demo-\xff"));
    let out = demo(Path::new(RUNNER), &dir, &[]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("is not UTF-8"), "{}", stderr(&out));
    assert!(!dir.exists());
}

/// A demo whose step fails (here every `sh` fails, so no verification passes) still ends with
/// where its folder is and the command that removes it, working as printed.
#[test]
fn a_demo_that_fails_midway_says_how_to_remove_its_folder() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("sh"), "#!/bin/bash\nexit 1\n").unwrap();
    std::fs::set_permissions(bin.join("sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let dir = tmp.path().join("the demo 'x'");
    let out = crate::common::runner_command()
        .args(["demo", "--dir"])
        .arg(&dir)
        .env("PATH", &path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(dir.join(".git").exists(), "the demo's repository was made");
    let remove = stderr(&out)
        .lines()
        .find_map(|l| {
            l.trim_start()
                .strip_prefix("remove it with: ")
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no command to remove the folder:\n{}", stderr(&out)));
    let words = shell_words::split(&remove).unwrap();
    assert_eq!(words[..2], ["rm", "-rf"], "{remove}");
    let status = crate::common::isolated("/bin/sh")
        .args(["-c", &remove])
        .current_dir("/")
        .status()
        .unwrap();
    assert!(status.success());
    assert!(!dir.exists(), "{remove} did not remove {}", dir.display());
}

/// `runner …` started in a folder that was removed since (a shell left in a deleted temp
/// folder): the demo needs no current folder and works; a command that does says what is
/// wrong and what to do (it said only "No such file or directory").
#[test]
fn a_removed_current_folder_does_not_stop_the_demo_and_is_explained_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let gone = tmp.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let in_removed_folder = |args: &str| {
        crate::common::isolated("/bin/sh")
            .arg("-c")
            .arg(format!("cd \"$1\" && rmdir \"$1\" && exec \"$2\" {args}"))
            .args(["sh", gone.to_str().unwrap(), RUNNER])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let demo_dir = tmp.path().join("demo");
    let out = in_removed_folder(&format!("demo --dir '{}'", demo_dir.display()));
    assert_exit(&out, 0);
    std::fs::create_dir(&gone).unwrap();
    let out = in_removed_folder("status");
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("current folder"), "{err}");
    assert!(err.contains("hint: "), "{err}");
}

/// `demo --dir` naming a file or a dangling link is bad input (exit 2) that says so, not an
/// OS error ("File exists" for a dangling link) with exit 1; nothing is made.
#[test]
fn a_demo_dir_that_is_a_file_or_a_dangling_link_is_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a file");
    std::fs::write(&file, "x").unwrap();
    let link = tmp.path().join("a link");
    std::os::unix::fs::symlink(tmp.path().join("nowhere"), &link).unwrap();
    for dir in [&file, &link] {
        let out = crate::common::runner_command()
            .args(["demo", "--dir"])
            .arg(dir)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_exit(&out, 2);
        assert!(stderr(&out).contains("is not a folder"), "{}", stderr(&out));
    }
    assert!(!tmp.path().join("nowhere").exists());
}
