//! Shell completion (clap_complete's dynamic completion, `COMPLETE=<shell> runner`): spec
//! names and run ids from the repository (honouring `-C`), through the binary and through the
//! scripts a shell sources.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Output;

use crate::common::*;

/// What `runner` offers for the last word of `words` (a command line, starting with `runner`),
/// asked as bash's script asks: `COMPLETE=bash`, the index of the word, the words after `--`.
fn candidates_in(dir: &Path, words: &[&str]) -> Vec<String> {
    let out = complete_in(dir, words);
    assert_exit(&out, 0);
    assert_eq!(stderr(&out), "", "completion says nothing on stderr");
    let text = stdout(&out);
    text.split('\n')
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

fn complete_in(dir: &Path, words: &[&str]) -> Output {
    runner_command()
        .env("COMPLETE", "bash")
        .env("_CLAP_COMPLETE_INDEX", (words.len() - 1).to_string())
        .env("_CLAP_IFS", "\n")
        .arg("--")
        .args(words)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn repo_with_specs() -> TestRepo {
    let repo = TestRepo::new();
    for spec in ["001-add-login", "002-fix-bug", "010-other"] {
        repo.add_spec(spec);
    }
    repo
}

#[test]
fn spec_flags_complete_to_the_repositorys_spec_names() {
    let repo = repo_with_specs();
    let two = ["001-add-login", "002-fix-bug"];
    assert_eq!(
        candidates_in(&repo.root, &["runner", "run", "--spec", "00"]),
        two
    );
    assert_eq!(
        candidates_in(&repo.root, &["runner", "status", "--spec", ""]),
        ["001-add-login", "002-fix-bug", "010-other"]
    );
    for command in [
        "review", "merge", "discard", "undo", "recover", "runs", "pr",
    ] {
        assert_eq!(
            candidates_in(&repo.root, &["runner", command, "--spec", "0"]).len(),
            3,
            "{command}"
        );
    }
    assert_eq!(
        candidates_in(&repo.root, &["runner", "chunk", "done", "--spec", "01"]),
        ["010-other"]
    );
    assert_eq!(
        candidates_in(&repo.root, &["runner", "resume", "--spec", "002"]),
        ["002-fix-bug"]
    );
    assert_eq!(
        candidates_in(&repo.root, &["runner", "run", "--spec=00"]),
        ["--spec=001-add-login", "--spec=002-fix-bug"]
    );
    // From a folder inside the repository too.
    std::fs::create_dir_all(repo.path("src/deep")).unwrap();
    assert_eq!(
        candidates_in(&repo.path("src/deep"), &["runner", "run", "--spec", "00"]),
        two
    );
}

/// `-C DIR` names the repository, as it does for the command itself: relative to the
/// current folder, or starting with `~/`.
#[test]
fn completion_honours_dash_c() {
    let repo = repo_with_specs();
    let elsewhere = tempfile::tempdir().unwrap();
    let root = repo.root.display().to_string();
    let two = ["001-add-login", "002-fix-bug"];
    for words in [
        vec!["runner", "-C", &root, "run", "--spec", "00"],
        vec!["runner", "run", "-C", &root, "--spec", "00"],
        vec!["runner", &format!("-C{root}"), "run", "--spec", "00"],
    ] {
        assert_eq!(candidates_in(elsewhere.path(), &words), two, "{words:?}");
    }
    // Relative to where the shell is.
    let parent = repo.root.parent().unwrap();
    let name = repo.root.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        candidates_in(parent, &["runner", "-C", name, "run", "--spec", "00"]),
        two
    );
    let out = runner_command()
        .env("COMPLETE", "bash")
        .env("_CLAP_COMPLETE_INDEX", "5")
        .env("HOME", parent)
        .args([
            "--",
            "runner",
            "-C",
            &format!("~/{name}"),
            "run",
            "--spec",
            "00",
        ])
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), two);
    // Outside any repository: nothing to offer, and no error.
    assert!(candidates_in(elsewhere.path(), &["runner", "run", "--spec", ""]).is_empty());
}

#[test]
fn run_ids_complete_for_show_and_resume() {
    let repo = repo_with_specs();
    assert_exit(&repo.run_spec("001-add-login", &[]), 0);
    let ids: Vec<String> = std::fs::read_dir(repo.spec_dir("001-add-login").join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
        .collect();
    assert!(!ids.is_empty());
    let mut shown = candidates_in(&repo.root, &["runner", "show", "r"]);
    shown.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(shown, want);
    let one = &ids[0];
    assert_eq!(
        candidates_in(&repo.root, &["runner", "show", &one[..6]]),
        [one.as_str()]
    );
    assert_eq!(
        candidates_in(&repo.root, &["runner", "resume", "--run", &one[..6]]),
        [one.as_str()]
    );
    // resume's hint is a run id or a spec.
    let hint = candidates_in(&repo.root, &["runner", "resume", ""]);
    assert!(hint.contains(one), "{hint:?}");
    assert!(hint.iter().any(|c| c == "002-fix-bug"), "{hint:?}");
}

/// Folders that are no spec name — not UTF-8, a newline, a vertical tab (bash's separator
/// between candidates), a leading dot — are left out, and the others still come through whole.
#[test]
fn hostile_spec_folder_names_do_not_break_completion() {
    let repo = repo_with_specs();
    let specs = repo.path(".auto-claude/specs");
    for name in [
        OsStr::from_bytes(b"003-bad-\xff-utf8"),
        OsStr::new("004-new\nline"),
        OsStr::new("005-vertical\u{b}tab"),
        OsStr::new(".006-hidden"),
    ] {
        std::fs::create_dir_all(specs.join(name).join("runs")).unwrap();
        std::fs::write(specs.join(name).join("spec.md"), "# x\n").unwrap();
        // A run of a folder that is no spec is no candidate either.
        std::fs::write(specs.join(name).join("runs/r0123456789ab.json"), "{}").unwrap();
    }
    // A run record's name that is no run id is left out as well.
    std::fs::create_dir_all(specs.join("002-fix-bug/runs")).unwrap();
    std::fs::write(specs.join("002-fix-bug/runs/r00000000000\n.json"), "{}").unwrap();
    assert_eq!(
        candidates_in(&repo.root, &["runner", "run", "--spec", ""]),
        ["001-add-login", "002-fix-bug", "010-other"]
    );
    assert!(candidates_in(&repo.root, &["runner", "show", "r"]).is_empty());
}

/// The script a shell sources (`runner completions bash`, the same as `COMPLETE=bash runner`)
/// asks the binary, and bash ends up with the spec names.
#[test]
fn bash_sourcing_the_script_completes_spec_names() {
    let repo = repo_with_specs();
    let bin = Path::new(RUNNER).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for source in [
        "source <(runner completions bash)",
        "source <(COMPLETE=bash runner)",
    ] {
        let script = format!(
            "{source}\n\
             COMP_WORDS=(runner run --spec 00); COMP_CWORD=3; COMP_TYPE=9\n\
             _clap_complete_runner runner 00 --spec\n\
             printf '%s\\n' \"${{COMPREPLY[@]}}\""
        );
        let out = isolated("bash")
            .args(["-c", &script])
            .env("PATH", &path)
            .current_dir(&repo.root)
            .output()
            .unwrap();
        assert_exit(&out, 0);
        assert_eq!(
            stdout(&out).lines().collect::<Vec<_>>(),
            ["001-add-login", "002-fix-bug"],
            "{source}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_complete_variable_that_names_no_shell_is_ignored() {
    // `COMPLETE` is a common word: another tool's `COMPLETE=1` left in the environment must not
    // turn every runner command into a failed completion ("unknown shell", exit 2).
    let repo = repo_with_specs();
    for value in ["1", "yes", "true"] {
        let out = runner_command()
            .env("COMPLETE", value)
            .args(["status", "--json"])
            .current_dir(&repo.root)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_exit(&out, 0);
        assert!(stdout(&out).contains("001-add-login"), "{}", stdout(&out));
    }
}

/// A candidate is put on the command line unquoted, so a spec folder a repository ships named
/// `001-$(cmd)` would run `cmd` when the completed line is entered: a name a shell would not
/// read as it is is not offered (it can still be typed, quoted), and the others still are.
#[test]
fn spec_names_a_shell_would_expand_are_not_offered() {
    let repo = repo_with_specs();
    let pwned = repo.root.join("pwned");
    for name in [
        "003-$(>pwned)",
        "004-$(id)",
        "005-`id`",
        "006-a;id",
        "007-a|id",
        "008-it's",
        "009-a&b",
        "011-a>b",
    ] {
        repo.add_spec(name);
    }
    // Through bash's own script, the completed line entered as it stands runs nothing.
    let bin = Path::new(RUNNER).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let script = "source <(runner completions bash)\n\
         COMP_WORDS=(runner status --spec 00); COMP_CWORD=3; COMP_TYPE=9\n\
         _clap_complete_runner runner 00 --spec\n\
         for c in \"${COMPREPLY[@]}\"; do eval \"echo runner status --spec $c\"; done";
    let out = isolated("bash")
        .args(["-c", script])
        .env("PATH", &path)
        .current_dir(&repo.root)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert!(!pwned.exists(), "{}", stdout(&out));
    assert_eq!(
        candidates_in(&repo.root, &["runner", "run", "--spec", ""]),
        ["001-add-login", "002-fix-bug", "010-other"]
    );
}
