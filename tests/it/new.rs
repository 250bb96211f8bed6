//! `runner new`: creating a spec (files, numbering, slugs, refusals that change nothing, two at
//! once, a crash at any step), and what detection shows the person before it (a terminal's
//! questions through a pty, the list and exit 2 without one, `--choice`, `--new-spec`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::*;

fn new(repo: &TestRepo, args: &[&str]) -> Output {
    let mut all = vec!["new"];
    all.extend_from_slice(args);
    repo.runner(&all)
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("not one JSON object ({e}):\n{}", stdout(out)))
}

/// The spec folders (hidden names too), sorted.
fn spec_folders(repo: &TestRepo) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo.path(".auto-claude/specs"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn requirements(repo: &TestRepo, spec: &str) -> Value {
    serde_json::from_str(&repo.read(&format!(".auto-claude/specs/{spec}/requirements.json")))
        .unwrap()
}

/// Every file and folder below the repository but `.git/`, with its bytes: what a refusal
/// must leave as it was.
fn tree(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if rel == ".git" {
                continue;
            }
            let kind = e.file_type().unwrap();
            if kind.is_dir() {
                out.insert(rel, None);
                walk(root, &p, out);
            } else {
                out.insert(rel, Some(std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

#[test]
fn new_creates_a_numbered_spec_with_spec_md_and_requirements_json() {
    let repo = TestRepo::new();
    let out = new(&repo, &["Add a login page (JWT)!", "--json"]);
    assert_exit(&out, 0);
    let v = json(&out);
    assert_eq!(v["schema"], 1);
    assert_eq!(v["created"], "001-add-a-login-page-jwt");
    assert_eq!(v["resumed"], Value::Null);
    assert_eq!(v["candidates"], serde_json::json!([]));
    assert_eq!(
        v["next_command"],
        "runner run --spec 001-add-a-login-page-jwt --auto-continue"
    );
    // No agent given, configured or remembered: the printed command needs one.
    assert_eq!(v["needs_agent"], true);
    let spec = "001-add-a-login-page-jwt";
    assert_eq!(
        repo.read(&format!(".auto-claude/specs/{spec}/spec.md")),
        "Add a login page (JWT)!\n"
    );
    let req = requirements(&repo, spec);
    assert_eq!(req["task_description"], "Add a login page (JWT)!");
    assert_eq!(req["workflow_type"], "feature");
    assert_eq!(req["services_involved"], serde_json::json!([]));
    let created = req["created_at"].as_str().unwrap();
    assert!(
        chrono::DateTime::parse_from_rfc3339(created).is_ok() && created.ends_with('Z'),
        "{created}"
    );
    let keywords: Vec<&str> = req["runner_keywords"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert!(
        keywords.contains(&"login") && keywords.contains(&"jwt"),
        "{keywords:?}"
    );
    let mut sorted = keywords.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(keywords, sorted, "sorted and deduplicated");
    // runner's folders are kept out of git, as a run would.
    assert!(repo.git(&["status", "--porcelain"]).is_empty());

    // Text: what was made, and the next command (with an agent configured, it needs no flag).
    repo.write_config("[agent]\ncommand = \"my-agent\"\n");
    let out = new(&repo, &["Fix the logout bug", "-N"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        "Created spec 002-fix-the-logout-bug in .auto-claude/specs/002-fix-the-logout-bug\n\
         Next: runner run --spec 002-fix-the-logout-bug --auto-continue\n"
    );
    std::fs::remove_file(repo.path(".auto-claude/config.toml")).unwrap();
    assert_eq!(
        spec_folders(&repo),
        [spec, "002-fix-the-logout-bug"],
        "no lock or staging folder among the specs"
    );
}

#[test]
fn the_number_follows_every_spec_in_the_folder_in_a_slot_and_on_a_branch() {
    let repo = TestRepo::new();
    repo.add_spec("005-a");
    // A spec only in a slot's own .auto-claude (Auto-Claude makes them there).
    std::fs::create_dir_all(repo.path(".worktrees/auto-claude-x/.auto-claude/specs/007-b"))
        .unwrap();
    let out = new(&repo, &["one", "-N", "--json"]);
    assert_eq!(json(&out)["created"], "008-one");
    // A spec only as a branch.
    repo.git(&["branch", "auto-claude/012-c"]);
    let out = new(&repo, &["two", "-N", "--json"]);
    assert_eq!(json(&out)["created"], "013-two");
    // More than three digits when needed.
    repo.add_spec("999-z");
    let out = new(&repo, &["three", "-N", "--json"]);
    assert_eq!(json(&out)["created"], "1000-three");
}

#[test]
fn slugs_are_short_ascii_and_always_valid() {
    let repo = TestRepo::new();
    let long = "Implement the user authentication flow with refresh tokens and key rotation";
    let out = new(&repo, &[long, "-N", "--json"]);
    let name = json(&out)["created"].as_str().unwrap().to_string();
    assert_eq!(name, "001-implement-the-user-authentication-flow-with");
    let out = new(&repo, &["🚀🔥 日本語", "-N", "--json"]);
    assert_eq!(json(&out)["created"], "002-spec");
    // Newlines, quotes and control characters: kept exactly in the files, never on the
    // terminal.
    let odd = "Line one\nsay \"hi\"\t\u{1b}[31mred\u{7}";
    let out = new(&repo, &[odd, "-N"]);
    assert_exit(&out, 0);
    assert!(!stdout(&out).contains('\u{1b}'), "{}", stdout(&out));
    let spec = "003-line-one-say-hi-31mred";
    assert_eq!(spec_folders(&repo)[2], spec);
    assert_eq!(requirements(&repo, spec)["task_description"], odd);
    assert_eq!(
        repo.read(&format!(".auto-claude/specs/{spec}/spec.md")),
        format!("{odd}\n")
    );
}

#[test]
fn name_and_spec_file_are_used_as_given() {
    let repo = TestRepo::new();
    repo.write("docs/feature.md", "# Login\n\nA page with a form.\n");
    let out = new(
        &repo,
        &[
            "Add login",
            "--name",
            "login-form",
            "--spec-file",
            "docs/feature.md",
            "-N",
            "--json",
        ],
    );
    assert_exit(&out, 0);
    assert_eq!(json(&out)["created"], "001-login-form");
    assert_eq!(
        repo.read(".auto-claude/specs/001-login-form/spec.md"),
        "# Login\n\nA page with a form.\n"
    );
    assert_eq!(
        requirements(&repo, "001-login-form")["task_description"],
        "Add login"
    );
    // -C: the file is read from where runner is told to run.
    let sub = repo.path("docs");
    let out = repo
        .cmd(&[
            "-C",
            sub.to_str().unwrap(),
            "new",
            "Other",
            "--spec-file",
            "feature.md",
            "-N",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(
        repo.read(".auto-claude/specs/002-other/spec.md"),
        "# Login\n\nA page with a form.\n"
    );
}

#[test]
fn every_refusal_is_exit_2_and_leaves_the_tree_untouched() {
    let repo = TestRepo::new();
    assert_exit(&new(&repo, &["First", "--name", "taken", "-N"]), 0);
    repo.write("bad.md", "");
    std::fs::write(repo.path("latin1.md"), b"caf\xe9\n").unwrap();
    repo.write("blank.md", " \n\u{200B}\n");
    std::os::unix::fs::symlink("/etc/hostname", repo.path("out.md")).unwrap();
    let huge = repo.path("huge.md");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(10 * 1024 * 1024 + 1)
        .unwrap();
    std::fs::create_dir(repo.path("folder.md")).unwrap();
    let before = tree(&repo.root);
    let cases: &[(&[&str], &str)] = &[
        (&[""], "description is empty"),
        (&[" \n\t "], "description is empty"),
        (&["x", "--name", "Bad Name"], "--name"),
        (&["x", "--name", "a--b"], "two dashes"),
        (&["x", "--name=-x"], "--name"),
        (&["x", "--name", &"a".repeat(51)], "longer than 50"),
        (&["x", "--name", "taken"], "001-taken has that name already"),
        (&["x", "--spec-file", "missing.md"], "no such file"),
        (&["x", "--spec-file", "bad.md"], "empty"),
        (&["x", "--spec-file", "blank.md"], "empty"),
        (&["x", "--spec-file", "latin1.md"], "not UTF-8"),
        (&["x", "--spec-file", "out.md"], "outside the repository"),
        (&["x", "--spec-file", "huge.md"], "bigger than 10 MB"),
        (&["x", "--spec-file", "folder.md"], "--spec-file folder.md"),
        (&["x", "--choice", "0"], "numbered from 1"),
        (&["x", "--choice", "1"], "0 unfinished specs"),
        (&["x", "--slot", "../x"], "--slot"),
    ];
    for (args, says) in cases {
        for with_json in [false, true] {
            let mut all = args.to_vec();
            all.extend(with_json.then_some("--json"));
            let out = new(&repo, &all);
            assert_exit(&out, 2);
            let text = if with_json {
                json(&out)["error"]["message"].as_str().unwrap().to_string()
            } else {
                stderr(&out)
            };
            assert!(text.contains(says), "{args:?}: {text}");
            assert_eq!(tree(&repo.root), before, "{args:?} changed the tree");
        }
    }
    // Not in a git repository: as every other command.
    let plain = tempfile::tempdir().unwrap();
    let out = crate::common::runner_command()
        .args(["new", "x"])
        .current_dir(plain.path())
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("not inside a git repository"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_dir(plain.path()).unwrap().count(), 0);
}

#[test]
fn two_news_at_once_never_take_the_same_number() {
    let repo = TestRepo::new();
    let mut all = Vec::new();
    for round in 0..4 {
        // A pause between choosing the number and the rename: without the lock, the others
        // would choose the same one in it.
        let children: Vec<_> = (0..3)
            .map(|i| {
                repo.cmd(&["new", &format!("same feature {round} {i}"), "-N", "--json"])
                    .env("RUNNER_FAILPOINTS", "new_spec_staged~150")
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert_exit(&out, 0);
            all.push(json(&out)["created"].as_str().unwrap().to_string());
        }
    }
    let mut numbers: Vec<String> = all.iter().map(|n| n[..3].to_string()).collect();
    numbers.sort();
    let expected: Vec<String> = (1..=12).map(|n| format!("{n:03}")).collect();
    assert_eq!(numbers, expected, "{all:?}");
    assert_eq!(spec_folders(&repo).len(), 12);
}

/// Two `runner new` of one description at the same instant: the second's detection ran
/// before the first's spec was in place, so it is checked again under the lock — exit 4 and
/// nothing created, not a duplicate.
#[test]
fn the_same_description_twice_at_once_makes_one_spec() {
    let repo = TestRepo::new();
    let first = repo
        .cmd(&["new", "Add a login page", "--json"])
        .env("RUNNER_FAILPOINTS", "new_spec_staged~1500")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first holds the lock, its detection done and its folder staged (hidden).
    let staged = std::time::Instant::now();
    while !spec_folders(&repo)
        .iter()
        .any(|n| n.starts_with(".runner-new-"))
    {
        assert!(
            staged.elapsed().as_secs() < 30,
            "the first never staged its spec"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let second = repo.runner(&["new", "add a login page ", "--json"]);
    let first = first.wait_with_output().unwrap();
    assert_exit(&first, 0);
    assert_eq!(json(&first)["created"], "001-add-a-login-page");
    assert_exit(&second, 4);
    let report = json(&second);
    assert_eq!(report["created"], serde_json::Value::Null, "{report}");
    assert!(
        report["error"]["message"]
            .as_str()
            .unwrap()
            .contains("just created by another `runner new`"),
        "{report}"
    );
    assert_eq!(spec_folders(&repo), ["001-add-a-login-page"]);
    // `-N` still creates.
    assert_exit(&repo.runner(&["new", "Add a login page", "-N"]), 0);
    assert_eq!(spec_folders(&repo).len(), 2);
}

/// The points of a creation, in order: the two files' renames inside the hidden folder, the
/// folder complete, renamed into place.
const CRASH_POINTS: &[&str] = &[
    "atomic_before_rename@1",
    "atomic_after_rename@1",
    "atomic_before_rename@2",
    "atomic_after_rename@2",
    "new_spec_staged",
    "new_spec_renamed",
];

#[test]
fn a_crash_at_any_step_leaves_no_spec_or_a_whole_one() {
    use std::os::unix::process::ExitStatusExt;
    for point in CRASH_POINTS {
        let repo = TestRepo::new();
        let out = repo
            .cmd(&["new", "Add login", "-N"])
            .env("RUNNER_FAILPOINTS", point)
            .output()
            .unwrap();
        assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{point}");
        let visible: Vec<String> = spec_folders(&repo)
            .into_iter()
            .filter(|n| !n.starts_with('.'))
            .collect();
        match visible.as_slice() {
            [] => assert_ne!(*point, "new_spec_renamed"),
            [one] => {
                assert_eq!(one, "001-add-login", "{point}");
                assert_eq!(requirements(&repo, one)["task_description"], "Add login");
                assert_eq!(
                    repo.read(&format!(".auto-claude/specs/{one}/spec.md")),
                    "Add login\n"
                );
            }
            more => panic!("{point}: {more:?}"),
        }
        // Runner sees no half spec, and the next `new` clears what the dead one left.
        let status = repo.runner(&["status", "--json"]);
        assert_exit(&status, 0);
        let out = new(&repo, &["Other", "-N", "--json"]);
        assert_exit(&out, 0);
        let expected = format!("{:03}-other", visible.len() + 1);
        assert_eq!(json(&out)["created"], expected.as_str(), "{point}");
        assert!(
            spec_folders(&repo).iter().all(|n| !n.starts_with('.')),
            "{point}: {:?}",
            spec_folders(&repo)
        );
    }
}

const DESC: &str = "Add a login page with JWT";
const SPEC: &str = "001-add-a-login-page-with-jwt";

/// A repository with spec `SPEC` made by `runner new`, planned and interrupted after its first
/// chunk's commit (so `runner resume` has a run to continue).
fn interrupted_spec() -> TestRepo {
    let repo = TestRepo::new();
    assert_exit(&new(&repo, &[DESC]), 0);
    run_killed_at(&repo, SPEC, "after_complete@1");
    repo
}

#[test]
fn the_same_description_again_reports_the_spec_and_creates_nothing() {
    let repo = TestRepo::new();
    assert_exit(&new(&repo, &[DESC]), 0);
    for again in [DESC, "  add a LOGIN page with jwt \n"] {
        let out = new(&repo, &[again]);
        assert_exit(&out, 0);
        assert_eq!(
            stdout(&out),
            format!(
                "Identical spec found: {SPEC}; nothing was started (pass --new-spec to start fresh)\n\
                 Continue it with: runner run --spec {SPEC} --auto-continue\n  \
                 (no agent is configured: add --agent-command \"CMD\" or --agent NAME to it, or set [agent] in .auto-claude/config.toml)\n"
            )
        );
        let v = json(&new(&repo, &[again, "--json"]));
        assert_eq!(v["created"], Value::Null);
        assert_eq!(v["resumed"], SPEC);
        assert_eq!(v["identical"]["spec"], SPEC);
        assert_eq!(
            v["next_command"],
            format!("runner run --spec {SPEC} --auto-continue").as_str()
        );
    }
    assert_eq!(spec_folders(&repo), [SPEC]);
    // -N: no detection, a new spec.
    let out = new(&repo, &[DESC, "-N", "--json"]);
    assert_exit(&out, 0);
    assert_eq!(json(&out)["created"], "002-add-a-login-page-with-jwt");
    assert_eq!(json(&out)["candidates"], serde_json::json!([]));
}

#[test]
fn run_on_an_identical_interrupted_spec_resumes_it_to_completion() {
    let repo = interrupted_spec();
    let agent = fixture("fake-agent").display().to_string();
    let out = new(
        &repo,
        &[
            "add a login page WITH jwt",
            "--run",
            "--agent-command",
            &agent,
        ],
    );
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!(
            "Identical spec found: continuing {SPEC} (pass --new-spec to start fresh)\n"
        )),
        "{text}"
    );
    // The resume summary, then the run's line, as `runner resume` prints them.
    assert!(text.contains("Resuming r"), "{text}");
    assert!(text.contains(&format!("{SPEC}: complete")), "{text}");
    assert!(
        repo.statuses(SPEC).iter().all(|(_, s)| s == "completed"),
        "{:?}",
        repo.statuses(SPEC)
    );
    assert_eq!(spec_folders(&repo), [SPEC]);
    // The continued run is a resume of the killed one.
    let runs = json(&repo.runner(&["runs", "--json"]));
    let resumed_from: Vec<&Value> = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["resumed_from"])
        .filter(|r| r.is_string())
        .collect();
    assert_eq!(resumed_from.len(), 1, "{runs}");
}

#[test]
fn run_on_a_created_spec_builds_it_at_once() {
    let repo = TestRepo::new();
    let agent = fixture("fake-agent").display().to_string();
    let out = new(&repo, &[DESC, "--run", "--agent-command", &agent, "--json"]);
    assert_exit(&out, 0);
    let v = json(&out);
    assert_eq!(v["created"], SPEC);
    assert_eq!(v["run"]["spec"], SPEC);
    assert_eq!(v["run"]["outcome"], "complete");
    assert!(repo.statuses(SPEC).iter().all(|(_, s)| s == "completed"));
}

#[test]
fn without_a_terminal_candidates_are_listed_with_each_command_and_exit_2() {
    let repo = interrupted_spec();
    let before = tree(&repo.root);
    let out = new(&repo, &["JWT login page"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("found 1 unfinished spec like this one"),
        "{err}"
    );
    assert!(
        err.contains(&format!("1. {SPEC} (interrupted, 1/")),
        "{err}"
    );
    assert!(
        err.contains("runner new 'JWT login page' --choice 1"),
        "{err}"
    );
    assert!(
        err.contains("runner new 'JWT login page' --new-spec"),
        "{err}"
    );
    assert_eq!(tree(&repo.root), before, "nothing created");

    let out = new(&repo, &["JWT login page", "--json"]);
    assert_exit(&out, 2);
    let v = json(&out);
    assert_eq!(v["schema"], 1);
    assert_eq!(v["created"], Value::Null);
    assert_eq!(v["resumed"], Value::Null);
    let c = &v["candidates"][0];
    assert_eq!(c["spec"], SPEC);
    assert_eq!(c["status"], "interrupted");
    assert_eq!(c["chunks"]["completed"], 1);
    assert!(c["score"].as_f64().unwrap() >= 0.35, "{c}");
    assert_eq!(
        c["continue_command"],
        format!("runner run --spec {SPEC} --auto-continue").as_str()
    );
    assert_eq!(v["error"]["code"], 2);
    assert_eq!(
        v["error"]["hints"].as_array().unwrap().len(),
        2,
        "one command per choice and --new-spec"
    );
    assert_eq!(tree(&repo.root), before, "nothing created");

    // --choice picks without asking: the command that continues it.
    let out = new(&repo, &["JWT login page", "--choice", "1"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        format!(
            "Chose {SPEC}; nothing was started\nContinue it with: runner run --spec {SPEC} --auto-continue\n"
        )
    );
    let out = new(&repo, &["JWT login page", "--choice", "2"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("--choice 2: 1 unfinished spec"),
        "{}",
        stderr(&out)
    );
    assert_eq!(tree(&repo.root), before, "nothing created");
    // --new-spec: a new one.
    let out = new(&repo, &["JWT login page", "--new-spec", "--json"]);
    assert_eq!(json(&out)["created"], "002-jwt-login-page");
}

/// `runner new ARGS` on a terminal (a pty), colour off.
fn on_a_terminal(repo: &TestRepo, args: &[&str]) -> expectrl::session::OsSession {
    let mut cmd = crate::common::runner_command();
    cmd.arg("new")
        .args(args)
        .current_dir(&repo.root)
        .env("TERM", "xterm")
        .env("NO_COLOR", "1");
    let mut s = expectrl::session::OsSession::spawn(cmd).unwrap();
    s.set_expect_timeout(Some(std::time::Duration::from_secs(30)));
    s
}

#[test]
fn on_a_terminal_one_match_is_shown_and_asked_about() {
    use expectrl::Expect;
    let repo = interrupted_spec();
    // Answered with Enter (yes): the choice and the command that continues it.
    let mut s = on_a_terminal(&repo, &["JWT login page"]);
    s.expect("An unfinished spec looks like this one").unwrap();
    s.expect(SPEC).unwrap();
    s.expect("interrupted").unwrap();
    s.expect("1/").unwrap();
    s.expect("$0.00").unwrap();
    s.expect("last activity  just now").unwrap();
    s.expect(DESC).unwrap();
    s.expect("Continue it? [Y/n]").unwrap();
    s.send("\r").unwrap();
    s.expect(format!("Chose {SPEC}; nothing was started").as_str())
        .unwrap();
    s.expect(format!("Continue it with: runner run --spec {SPEC} --auto-continue").as_str())
        .unwrap();
    s.expect(expectrl::Eof).unwrap();
    assert_eq!(spec_folders(&repo), [SPEC]);
    // Answered n: a new spec.
    let mut s = on_a_terminal(&repo, &["JWT login page"]);
    s.expect("Continue it? [Y/n]").unwrap();
    s.send("n\r").unwrap();
    s.expect("Created spec 002-jwt-login-page").unwrap();
    s.expect(expectrl::Eof).unwrap();
    assert_eq!(spec_folders(&repo), [SPEC, "002-jwt-login-page"]);
}

#[test]
fn on_a_terminal_several_matches_are_a_numbered_list() {
    use expectrl::Expect;
    let repo = interrupted_spec();
    assert_exit(&new(&repo, &["JWT login page form", "-N"]), 0);
    let mut s = on_a_terminal(&repo, &["login page with jwt tokens"]);
    s.expect("Unfinished specs look like this one").unwrap();
    s.expect("1. ").unwrap();
    s.expect("[").unwrap();
    s.expect("2. ").unwrap();
    s.expect("Continue which? [1/2/n — start fresh]").unwrap();
    // Not a choice: asked again; then the second.
    s.send("7\r").unwrap();
    let shown = s.expect("choices in brackets");
    assert!(shown.is_ok(), "{:?}", shown.err());
    // Rub the 7 out, then the second.
    s.send("\x7f").unwrap();
    s.send("2\r").unwrap();
    s.expect("Chose ").unwrap();
    s.expect("Continue it with: runner run --spec ").unwrap();
    s.expect(expectrl::Eof).unwrap();
    assert_eq!(spec_folders(&repo), [SPEC, "002-jwt-login-page-form"]);
    // n: start fresh.
    let mut s = on_a_terminal(&repo, &["login page with jwt tokens"]);
    s.expect("Continue which?").unwrap();
    s.send("n\r").unwrap();
    s.expect("Created spec 003-login-page-with-jwt-tokens")
        .unwrap();
    s.expect(expectrl::Eof).unwrap();
}

#[test]
fn on_a_terminal_yes_with_run_resumes_it() {
    use expectrl::Expect;
    let repo = interrupted_spec();
    let agent = fixture("fake-agent").display().to_string();
    let mut cmd = crate::common::runner_command();
    cmd.args(["new", "JWT login page", "--run", "--agent-command", &agent])
        .current_dir(&repo.root)
        .env("TERM", "xterm")
        .env("NO_COLOR", "1")
        .env("FAKE_AGENT_SCRIPT", repo.tmp.path().join("agent-script"))
        .env("FAKE_AGENT_LOG", repo.tmp.path().join("agent-log"))
        .env("FAKE_AGENT_PLAN", fixture("plans/two-phases.json"));
    let mut s = expectrl::session::OsSession::spawn(cmd).unwrap();
    s.set_expect_timeout(Some(std::time::Duration::from_secs(60)));
    s.expect("Continue it? [Y/n]").unwrap();
    s.send("y\r").unwrap();
    s.expect(format!("{SPEC}: complete").as_str()).unwrap();
    s.expect(expectrl::Eof).unwrap();
    assert!(repo.statuses(SPEC).iter().all(|(_, s)| s == "completed"));
}

#[test]
fn a_detection_past_its_bound_creates_as_if_nothing_matched_and_says_so_with_v() {
    let repo = TestRepo::new();
    assert_exit(&new(&repo, &[DESC]), 0);
    let slow = |args: &[&str]| {
        let mut all = vec!["new"];
        all.extend_from_slice(args);
        repo.cmd(&all)
            .env("RUNNER_FAILPOINTS", "detect_read~400")
            .env_remove("RUST_LOG")
            .output()
            .unwrap()
    };
    let out = slow(&["-v", DESC, "--json"]);
    assert_exit(&out, 0);
    let v = json(&out);
    assert_eq!(v["created"], "002-add-a-login-page-with-jwt", "{v}");
    assert_eq!(v["timed_out"], true);
    assert_eq!(v["identical"], Value::Null);
    assert!(
        stderr(&out).contains("took over 200 ms"),
        "{}",
        stderr(&out)
    );
    // Without -v, nothing is said.
    let out = slow(&[DESC]);
    assert_exit(&out, 0);
    assert!(!stderr(&out).contains("200 ms"), "{}", stderr(&out));
}

#[test]
fn the_same_description_as_a_spec_being_run_is_busy_and_creates_nothing() {
    let repo = TestRepo::new();
    assert_exit(&new(&repo, &[DESC]), 0);
    repo.write_plan(
        SPEC,
        &std::fs::read_to_string(fixture("plans/two-phases.json")).unwrap(),
    );
    let mut held = hold_lock(&repo.spec_dir(SPEC).join("run.lock"));
    let before = tree(&repo.root);
    let out = new(&repo, &["  add a login page with JWT"]);
    assert_exit(&out, 4);
    assert!(
        stderr(&out).contains(&format!("{SPEC} has this description and is being run")),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("--new-spec"), "{}", stderr(&out));
    assert_eq!(tree(&repo.root), before, "nothing created");
    let out = new(&repo, &[DESC, "--json", "--run"]);
    assert_exit(&out, 4);
    let v = json(&out);
    assert_eq!(v["created"], Value::Null);
    assert_eq!(v["resumed"], Value::Null);
    assert_eq!(v["identical"]["spec"], SPEC);
    assert_eq!(v["identical"]["status"], "running");
    assert_eq!(v["error"]["code"], 4);
    assert_eq!(v["error"]["kind"], "busy");
    assert_eq!(tree(&repo.root), before, "nothing created");
    // -N still creates one.
    let out = new(&repo, &[DESC, "-N", "--json"]);
    assert_exit(&out, 0);
    assert_eq!(json(&out)["created"], "002-add-a-login-page-with-jwt");
    held.kill().unwrap();
    held.wait().unwrap();
}

#[test]
fn run_on_an_identical_spec_never_run_runs_it_to_completion() {
    let repo = TestRepo::new();
    assert_exit(&new(&repo, &[DESC]), 0);
    let agent = fixture("fake-agent").display().to_string();
    let out = new(&repo, &[DESC, "--run", "--agent-command", &agent, "--json"]);
    assert_exit(&out, 0);
    let v = json(&out);
    assert_eq!(v["created"], Value::Null);
    assert_eq!(v["resumed"], SPEC);
    assert_eq!(v["identical"]["continue_with"], "run");
    assert_eq!(v["run"]["spec"], SPEC);
    assert_eq!(v["run"]["outcome"], "complete");
    assert!(repo.statuses(SPEC).iter().all(|(_, s)| s == "completed"));
    assert_eq!(spec_folders(&repo), [SPEC]);
}

#[test]
fn the_bound_holds_when_the_status_of_a_match_is_slow_to_read() {
    // The identical spec is found at once, but judging its status (a huge plan to parse, a
    // slow disk) takes 10 s: detection answers at its bound, as if nothing matched.
    let repo = TestRepo::new();
    assert_exit(&new(&repo, &[DESC]), 0);
    let started = std::time::Instant::now();
    let out = repo
        .cmd(&["-v", "new", DESC, "--json"])
        .env("RUNNER_FAILPOINTS", "detect_judge~10000")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_exit(&out, 0);
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
    let v = json(&out);
    assert_eq!(v["timed_out"], true, "{v}");
    assert_eq!(v["created"], "002-add-a-login-page-with-jwt", "{v}");
    assert!(
        stderr(&out).contains("took over 200 ms (1 scanned)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_failed_run_still_reports_the_spec_created_or_continued_in_json() {
    let repo = TestRepo::new();
    repo.write_config("[run]\nmax_attempts = 1\n");
    repo.script("core-b * fail the database is down\n");
    let agent = fixture("fake-agent").display().to_string();
    // Created, then its run needs a person (exit 3): the JSON still names the spec.
    let out = new(&repo, &[DESC, "--run", "--agent-command", &agent, "--json"]);
    assert_exit(&out, 3);
    let v = json(&out);
    assert_eq!(v["created"], SPEC, "{v}");
    assert_eq!(v["resumed"], Value::Null);
    assert_eq!(
        v["next_command"],
        format!(
            "runner run --spec {SPEC} --auto-continue --agent-command {}",
            shell_words::quote(&agent)
        )
        .as_str()
    );
    assert_eq!(v["error"]["code"], 3);
    assert_eq!(v["error"]["kind"], "needs_human");
    assert!(
        stderr(&out).contains("chunk core-b failed"),
        "{}",
        stderr(&out)
    );
    // Continued (identical), and it stops again: the JSON names the spec continued.
    let out = new(&repo, &[DESC, "--run", "--agent-command", &agent, "--json"]);
    assert_exit(&out, 3);
    let v = json(&out);
    assert_eq!(v["created"], Value::Null, "{v}");
    assert_eq!(v["resumed"], SPEC);
    assert_eq!(v["identical"]["spec"], SPEC);
    assert_eq!(v["error"]["code"], 3);
}

#[test]
fn with_c_the_json_hints_carry_the_directory_as_the_text_ones_do() {
    let repo = interrupted_spec();
    let dir = repo.root.display().to_string();
    let elsewhere = tempfile::tempdir().unwrap();
    let run = |json: bool| {
        let mut cmd = repo.cmd(&["-C", &dir, "new", "JWT login page"]);
        if json {
            cmd.arg("--json");
        }
        cmd.current_dir(elsewhere.path()).output().unwrap()
    };
    let expected = format!(
        "runner -C {} new 'JWT login page' --choice 1",
        runner::sh(&dir)
    );
    let out = run(false);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    let out = run(true);
    assert_exit(&out, 2);
    let hints = json(&out)["error"]["hints"].to_string();
    assert!(hints.contains(&expected), "{hints}");
}

#[test]
fn with_c_the_next_command_and_each_candidates_command_carry_the_directory() {
    let repo = interrupted_spec();
    let dir = repo.root.display().to_string();
    let flag = format!("runner -C {} ", runner::sh(&dir));
    let elsewhere = tempfile::tempdir().unwrap();
    let new_in = |args: &[&str]| {
        let mut all = vec!["-C", dir.as_str(), "new"];
        all.extend_from_slice(args);
        repo.cmd(&all)
            .current_dir(elsewhere.path())
            .output()
            .unwrap()
    };
    // The candidates' commands, in the JSON of the refusal without a terminal.
    let v = json(&new_in(&["JWT login page", "--json"]));
    let candidates = v["candidates"].as_array().unwrap();
    assert!(!candidates.is_empty(), "{v}");
    for c in candidates {
        let command = c["continue_command"].as_str().unwrap();
        assert!(command.starts_with(&flag), "{command}");
    }
    // A new spec: "Next:" and the JSON's next_command.
    let out = new_in(&["Something else entirely", "-N"]);
    assert_exit(&out, 0);
    let next = stdout(&out)
        .lines()
        .find_map(|l| l.strip_prefix("Next: ").map(str::to_string))
        .unwrap_or_else(|| panic!("{}", stdout(&out)));
    assert!(next.starts_with(&flag), "{next}");
    let v = json(&new_in(&["Yet another thing", "-N", "--json"]));
    assert!(
        v["next_command"].as_str().unwrap().starts_with(&flag),
        "{v}"
    );
    // A candidate continued: "Continue it with:".
    let out = new_in(&["JWT login page", "--choice", "1"]);
    assert_exit(&out, 0);
    let line = stdout(&out)
        .lines()
        .find_map(|l| l.strip_prefix("Continue it with: ").map(str::to_string))
        .unwrap_or_else(|| panic!("{}", stdout(&out)));
    assert!(line.starts_with(&flag), "{line}");
}

/// `--choice N` picks the Nth candidate even when one of them has the very description: it
/// was ignored, and the identical spec continued.
#[test]
fn choice_wins_over_an_identical_spec() {
    let repo = interrupted_spec();
    assert_exit(&new(&repo, &["Add a login page form with JWT", "-N"]), 0);
    let other = "002-add-a-login-page-form-with-jwt";
    let v = json(&new(&repo, &[DESC, "--choice", "1", "--json"]));
    let listed: Vec<&str> = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["spec"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [SPEC, other], "{v}");
    assert_eq!(v["resumed"], SPEC, "{v}");
    let v = json(&new(&repo, &[DESC, "--choice", "2", "--json"]));
    assert_eq!(v["resumed"], other, "{v}");
    assert_eq!(v["identical"]["spec"], SPEC, "{v}");
    let out = new(&repo, &[DESC, "--choice", "2"]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).starts_with(&format!("Chose {other}; nothing was started\n")),
        "{}",
        stdout(&out)
    );
    // Without --choice, the identical one, as before.
    assert_eq!(json(&new(&repo, &[DESC, "--json"]))["resumed"], SPEC);
}
