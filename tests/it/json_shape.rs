//! One JSON shape (docs/json.md): every `--json` output is exactly one object on stdout with
//! `"schema": 1`, an error is `{"schema":1,"error":{code, kind, message, hints}}` with the exit
//! code unchanged, and the text error shows its hints on lines of their own.

use std::process::Output;

use crate::common::*;
use serde_json::Value;

const SPEC: &str = "001-feature";

/// stdout holds one JSON object and nothing else (serde_json's stream reader would accept two
/// objects, or an object followed by text: both are refused here), with `"schema": 1` first.
#[track_caller]
fn one_object(out: &Output) -> serde_json::Map<String, Value> {
    let text = stdout(out);
    let mut stream = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
    let first = stream
        .next()
        .unwrap_or_else(|| panic!("no JSON on stdout; stderr:\n{}", stderr(out)))
        .unwrap_or_else(|e| panic!("{e}: stdout:\n{text}"));
    assert!(
        stream.next().is_none(),
        "more than one value on stdout:\n{text}"
    );
    let Value::Object(map) = first else {
        panic!("not an object:\n{text}");
    };
    assert_eq!(
        map.keys().next().map(String::as_str),
        Some("schema"),
        "{text}"
    );
    assert_eq!(map["schema"], 1, "{text}");
    map
}

/// The error object of a failed `--json` command, its code checked against the exit code.
#[track_caller]
fn error_object(out: &Output, code: i32, kind: &str) -> serde_json::Map<String, Value> {
    assert_exit(out, code);
    let map = one_object(out);
    assert_eq!(map.len(), 2, "{map:?}");
    let Some(Value::Object(error)) = map.get("error") else {
        panic!("no error object: {map:?}");
    };
    assert_eq!(error["code"], code, "{error:?}");
    assert_eq!(error["kind"], kind, "{error:?}");
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert!(error["hints"].is_array(), "{error:?}");
    error.clone()
}

fn hints(error: &serde_json::Map<String, Value>) -> Vec<String> {
    error["hints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().to_string())
        .collect()
}

/// A repository whose spec is built completely on its branch.
fn built() -> TestRepo {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    let out = repo.run_spec(SPEC, &["--json"]);
    let run = one_object(&out);
    assert_exit(&out, 0);
    assert_eq!(run["spec"], SPEC);
    assert_eq!(run["outcome"], "complete");
    repo
}

#[test]
fn every_command_prints_one_object_with_the_schema() {
    let repo = built();

    let status = one_object(&repo.runner(&["status", "--json"]));
    assert_eq!(status["specs"][0]["spec"], SPEC);
    assert!(status["specs"][0].get("name").is_none(), "{status:?}");

    let recover = one_object(&repo.runner(&["recover", "--json"]));
    assert_eq!(recover["specs"][0]["spec"], SPEC);

    let show = one_object(&repo.runner(&["chunk", "show", "--spec", SPEC, "--json"]));
    assert_eq!(show["spec"], SPEC);

    let review = one_object(&repo.runner(&["review", "--spec", SPEC, "--diff", "--json"]));
    assert_eq!(review["spec"], SPEC);
    assert!(review["diff"].is_string());
    let commits = review["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 3, "{review:?}");
    for c in commits {
        assert_commit(c);
    }
    assert!(
        commits.iter().all(|c| c["chunk"].is_string()),
        "{commits:?}"
    );

    let merge = one_object(&repo.runner(&["merge", "--spec", SPEC, "--yes", "--json"]));
    assert_eq!(merge["spec"], SPEC);
    assert_eq!(
        &merge["commits"],
        &Value::Array(commits.clone()),
        "merge lists what review did"
    );

    let list = one_object(&repo.runner(&["undo", "--list", "--json"]));
    let backups = list["backups"].as_array().unwrap();
    assert_eq!(backups.len(), 1, "{list:?}");
    assert_eq!(backups[0]["spec"], SPEC);
    assert_eq!(backups[0]["kind"], "merge");

    let undo = one_object(&repo.runner(&["undo", "--spec", SPEC, "--json"]));
    assert_eq!(undo["spec"], SPEC);
    assert_eq!(undo["kind"], "merge");

    let discard = one_object(&repo.runner(&["discard", "--spec", SPEC, "--yes", "--json"]));
    assert_eq!(discard["spec"], SPEC);

    let gc = one_object(&repo.runner(&["gc", "--older-than", "0", "--dry-run", "--json"]));
    assert!(gc["removed"].is_array() && gc["kept"].is_number(), "{gc:?}");
}

#[track_caller]
fn assert_commit(c: &Value) {
    let Value::Object(c) = c else {
        panic!("a commit is an object: {c}");
    };
    let keys: Vec<&str> = c.keys().map(String::as_str).collect();
    assert_eq!(keys, ["commit", "summary", "chunk"]);
    assert!(c["commit"].as_str().is_some_and(|id| id.len() == 40));
    assert!(c["summary"].is_string());
}

#[test]
fn resuming_every_interrupted_spec_lists_the_runs_under_runs() {
    let repo = TestRepo::new();
    let out = repo.runner(&["run", "--auto-continue", "--json"]);
    assert_exit(&out, 0);
    let runs = one_object(&out);
    assert_eq!(runs["runs"], Value::Array(vec![]), "{runs:?}");
}

#[test]
fn a_bad_spec_name_is_an_error_object_with_exit_2() {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    let out = repo.runner(&["review", "--spec", "../x", "--json"]);
    let error = error_object(&out, 2, "bad_input");
    // The text error still reaches stderr, for the person watching.
    assert!(stderr(&out).starts_with("runner: "), "{}", stderr(&out));
    assert!(
        error["message"].as_str().unwrap().contains("../x"),
        "{error:?}"
    );
}

#[test]
fn an_unknown_spec_is_an_error_object_with_its_hint() {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    for args in [
        &["review", "--spec", "042", "--json"][..],
        &["recover", "--spec", "042", "--json"][..],
        &["undo", "--list", "--spec", "042", "--json"][..],
    ] {
        let error = error_object(&repo.runner(args), 2, "bad_input");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .starts_with("no spec matches \"042\""),
            "{args:?}: {error:?}"
        );
        assert_eq!(
            hints(&error),
            ["name one of them with --spec (its number, or a unique part of its name)"],
            "{args:?}"
        );
    }
}

#[test]
fn a_busy_spec_is_an_error_object_with_exit_4_and_advice() {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    let lock = repo.spec_dir(SPEC).join("run.lock");
    let mut holder = hold_lock(&lock);
    let run = repo.run_spec(SPEC, &["--json"]);
    let recover = repo.runner(&["recover", "--spec", SPEC, "--json"]);
    holder.kill().unwrap();
    holder.wait().unwrap();
    for out in [run, recover] {
        let error = error_object(&out, 4, "busy");
        assert_eq!(
            hints(&error),
            ["runner does not wait: run this again once it has finished, or stop it first"]
        );
        assert!(
            stderr(&out).contains("\n  hint: runner does not wait"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn an_invalid_plan_is_an_error_object_with_exit_2_and_advice() {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    let garbage = "{\n  \"phases\": [\n    {\"id\": \"p1\",, }\n  ]\n}\n";
    repo.write_plan(SPEC, garbage);
    let out = repo.runner(&["chunk", "show", "--spec", SPEC, "--json"]);
    let error = error_object(&out, 2, "invalid_plan");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("implementation_plan.json:3:"), "{message}");
    assert_eq!(
        hints(&error),
        ["fix it by hand, or move it away to have the planner write a new one"]
    );
    assert_eq!(
        repo.read(&format!(
            ".auto-claude/specs/{SPEC}/implementation_plan.json"
        )),
        garbage
    );
}

#[test]
fn a_text_error_shows_its_hints_on_lines_of_their_own_and_nothing_on_stdout() {
    let repo = TestRepo::new();
    repo.add_spec(SPEC);
    let out = repo.runner(&["review", "--spec", SPEC]);
    assert_exit(&out, 2);
    assert_eq!(stdout(&out), "", "without --json, stdout stays empty");
    assert_eq!(
        stderr(&out),
        format!(
            "runner: spec {SPEC} has no branch auto-claude/{SPEC}: nothing has been built yet\n  \
             hint: build it with `runner run --spec {SPEC}`\n"
        )
    );
    // Without a terminal, a question becomes an error whose hint names the flag.
    let built = built();
    let out = built.runner(&["merge", "--spec", SPEC]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).ends_with("\n  hint: pass --yes to merge without a question\n"),
        "{}",
        stderr(&out)
    );
}

/// An ambiguous name hints one command per match, each quoted to run as printed.
#[test]
fn an_ambiguous_spec_hints_each_command_quoted_for_the_shell() {
    let repo = TestRepo::new();
    repo.add_spec("001-$(id)");
    repo.add_spec("001-c");
    let out = repo.runner(&["review", "--spec", "001", "--json"]);
    let error = error_object(&out, 2, "bad_input");
    assert_eq!(
        hints(&error),
        [
            "runner review --json --spec '001-$(id)'",
            "runner review --json --spec 001-c"
        ]
    );
}

#[test]
fn a_command_line_clap_refuses_is_an_error_object_too() {
    let repo = TestRepo::new();
    let out = repo.runner(&["status", "--json", "--bogus"]);
    let error = error_object(&out, 2, "bad_input");
    assert_eq!(error["message"], "unexpected argument '--bogus' found");
    assert!(stderr(&out).contains("--bogus"), "{}", stderr(&out));
    // Help is still help, not an error.
    let help = repo.runner(&["status", "--json", "--help"]);
    assert_exit(&help, 0);
    assert!(stdout(&help).contains("Usage"), "{}", stdout(&help));
}

#[test]
fn an_interrupted_run_hints_the_command_that_resumes_it() {
    let repo = repo_with_fixture_plan(SPEC);
    repo.script("core-a * slow 30\n");
    let agent = fixture("fake-agent").display().to_string();
    let child = repo
        .cmd(&["run", "--spec", SPEC, "--agent-command", &agent])
        .args(["--drain-timeout", "1", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the coder to start", || {
        repo.agent_log().iter().any(|l| l.starts_with("coder"))
    });
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let error = error_object(&out, 130, "interrupted");
    assert_eq!(error["message"], "interrupted");
    let hints = hints(&error);
    assert_eq!(hints.len(), 1, "{hints:?}");
    assert!(
        hints[0].starts_with(&format!(
            "resume where it stopped with: runner run --spec {SPEC} --auto-continue"
        )),
        "{hints:?}"
    );
    assert!(
        stderr(&out).ends_with(&format!("runner: interrupted\n  hint: {}\n", hints[0])),
        "{}",
        stderr(&out)
    );
}
