//! A chunk's verification: the command checks both eras write, the kinds that are not checks,
//! and malformed verifications as plan errors.

use super::*;

#[test]
fn command_check_subtasks_style() {
    let c = chunk_with(json!({
        "type": "command",
        "command": "cargo check --all-targets",
        "expected": "No errors"
    }));
    assert_eq!(
        verification::command_check(&c),
        Some(CommandCheck {
            command: "cargo check --all-targets".into(),
            expect_status: 0,
            expect_output: None,
        })
    );
}

#[test]
fn command_check_chunks_style() {
    let c = chunk_with(json!({ "type": "command", "run": "pytest tests/ -v" }));
    assert_eq!(
        verification::command_check(&c),
        Some(CommandCheck {
            command: "pytest tests/ -v".into(),
            expect_status: 0,
            expect_output: None,
        })
    );
}

#[test]
fn command_check_expect_status_and_output() {
    let check = |v: Value| verification::command_check(&chunk_with(v)).expect("a command check");
    assert_eq!(
        check(json!({"type": "command", "run": "false", "expect_status": 1})).expect_status,
        1
    );
    assert_eq!(
        check(json!({"type": "command", "command": "x", "expected_status": 2})).expect_status,
        2
    );
    assert_eq!(
        check(json!({"type": "command", "command": "x", "expected_exit_code": 3})).expect_status,
        3
    );
    assert_eq!(
        check(json!({"command": "x", "expect_output": "ok"}))
            .expect_output
            .as_deref(),
        Some("ok"),
        "a missing type means command"
    );
    assert_eq!(
        check(json!({"type": "Command", "run": "x", "expect_stdout": "passed"}))
            .expect_output
            .as_deref(),
        Some("passed")
    );
    // `command` wins over `run` when both are given.
    assert_eq!(
        check(json!({"type": "command", "command": "a", "run": "b"})).command,
        "a"
    );
}

#[test]
fn non_command_verifications_are_not_checks() {
    for v in [
        json!({"type": "browser", "url": "http://localhost", "checks": ["x"]}),
        json!({"type": "browser", "scenario": "works"}),
        json!({"type": "manual", "instructions": "look", "command": "not run"}),
        json!({"type": "e2e", "steps": ["a"]}),
        json!({"type": "none"}),
        json!({"type": "api", "endpoint": "/health"}),
        json!({"type": "Unknown-Thing", "steps": ["no command: instructions"]}),
        json!("run the tests"),
        Value::Null,
    ] {
        assert_eq!(
            verification::command_check(&chunk_with(v.clone())),
            None,
            "{v}"
        );
    }
    let plan = parse(&one_phase(json!([{ "id": "c", "description": "x" }])));
    assert_eq!(verification::command_check(&plan.phases[0].chunks[0]), None);
    assert_eq!(verification::describe(&plan.phases[0].chunks[0]), None);
}

/// A command verification is never silently skipped: the type is read trimmed and in any case,
/// an empty `command` does not hide `run`, and what cannot be run is a plan error.
#[test]
fn command_verifications_are_never_silently_skipped() {
    let exit7 = |v: Value| verification::command_check(&chunk_with(v)).map(|c| c.command);
    assert_eq!(
        exit7(json!({"type": "command ", "command": "exit 7"})).as_deref(),
        Some("exit 7")
    );
    assert_eq!(
        exit7(json!({"type": " COMMAND", "command": "exit 7"})).as_deref(),
        Some("exit 7")
    );
    assert_eq!(
        exit7(json!({"type": "command", "command": "", "run": "exit 7"})).as_deref(),
        Some("exit 7")
    );
    assert_eq!(
        exit7(json!({"command": "  ", "run": "exit 7"})).as_deref(),
        Some("exit 7")
    );
    for (v, wanted) in [
        (
            json!({"type": "command"}),
            "verification: a command verification without a command",
        ),
        (
            json!({"type": "Command", "command": "   ", "run": ""}),
            "verification: a command verification without a command",
        ),
        (
            json!({"type": "shell", "command": "exit 7"}),
            "verification.type: unknown verification type \"shell\" with a command",
        ),
        (
            json!({"type": "cmd", "run": "exit 7"}),
            "verification.type: unknown verification type \"cmd\" with a command",
        ),
    ] {
        let err = parse_err(&one_phase(json!([
            { "id": "c1", "description": "x", "verification": v }
        ])));
        assert_problem(&err, &["phases[0].chunks[0] (c1).", wanted]);
    }
}

#[test]
fn describe_shows_the_verification() {
    let c = chunk_with(json!("run the tests"));
    assert_eq!(verification::describe(&c).as_deref(), Some("run the tests"));
    let v = json!({"type": "manual", "instructions": "look"});
    let c = chunk_with(v.clone());
    let shown = verification::describe(&c).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&shown).unwrap(), v);
    assert!(shown.contains('\n'), "pretty: {shown}");
}

#[test]
fn verification_is_read_from_the_fixtures() {
    let plan = parse(SUBTASKS_ERA);
    let c = |id: &str| plan.chunk(plan.find_chunk(id).unwrap());
    assert_eq!(
        verification::command_check(c("subtask-1-1")).map(|c| c.command),
        Some("cargo check --all-targets".into())
    );
    assert_eq!(verification::command_check(c("subtask-2-1")), None);
    assert_eq!(verification::command_check(c("subtask-2-2")), None);

    let plan = parse(CHUNKS_ERA);
    let c = |id: &str| plan.chunk(plan.find_chunk(id).unwrap());
    assert_eq!(
        verification::command_check(c("migrate")),
        Some(CommandCheck {
            command: "./check.sh".into(),
            expect_status: 3,
            expect_output: None
        })
    );
    assert_eq!(verification::command_check(c("verify")), None);
}

#[test]
fn malformed_verifications_are_errors_with_their_path() {
    let cases = [
        (
            json!({"type": "command", "command": ["make", "test"]}),
            "verification.command: expected the command as one string",
            "a list",
        ),
        (
            json!({"type": "command", "run": 42}),
            "verification.run: expected the command as one string",
            "a number",
        ),
        (
            json!({"type": "command", "command": "x", "expect_status": "1"}),
            "verification.expect_status: expected the exit status as a whole number",
            "a string",
        ),
        (
            json!({"type": "command", "command": "x", "expect_status": 1.5}),
            "verification.expect_status",
            "1.5",
        ),
        (
            json!({"type": "command", "command": "x", "expected_status": 4294967296_u64}),
            "verification.expected_status",
            "4294967296",
        ),
        (
            json!({"type": "command", "command": "x", "expected_exit_code": true}),
            "verification.expected_exit_code",
            "a boolean",
        ),
        (
            json!({"type": "command", "command": "x", "expect_output": {"contains": "ok"}}),
            "verification.expect_output: expected a string",
            "an object",
        ),
        (
            json!({"type": "command", "command": "x", "expect_stdout": 1}),
            "verification.expect_stdout",
            "a number",
        ),
        (
            json!({"type": 1, "command": "x"}),
            "verification.type: expected a string",
            "a number",
        ),
        (
            json!(["make test"]),
            "verification: expected an object",
            "a list",
        ),
        (json!(3), "verification: expected an object", "a number"),
    ];
    for (v, path, found) in cases {
        let text = json!({"phases": [{"id": "p", "subtasks": [
            {"id": "ok", "description": "x"},
            {"id": "c", "description": "x", "verification": v}
        ]}]})
        .to_string();
        let err = parse_err(&text);
        assert_problem(&err, &[&format!("phases[0].subtasks[1] (c).{path}"), found]);
    }
    // Also in a type runner does not run: the field is still malformed.
    let err = parse_err(&one_phase(json!([
        { "id": "c", "description": "x", "verification": {"type": "api", "expect_status": "200"} }
    ])));
    assert_problem(&err, &["(c).verification.expect_status"]);
}

#[test]
fn null_verification_fields_count_as_absent() {
    let check = verification::command_check(&chunk_with(json!({
        "type": null, "command": null, "run": "make test",
        "expect_status": null, "expected_status": 2, "expect_output": null
    })))
    .expect("a command check");
    assert_eq!(
        check,
        CommandCheck {
            command: "make test".into(),
            expect_status: 2,
            expect_output: None
        }
    );
    // Prose and null verifications are fine.
    chunk_with(json!("run the tests by hand"));
    chunk_with(Value::Null);
}

#[test]
fn a_brief_says_what_is_run_and_what_is_only_asked() {
    let brief = |v: Value| verification::brief(&chunk_with(v)).expect("a brief");
    let run = brief(
        json!({"type": "Command ", "command": "cargo test", "expected": "No errors",
                           "expect_status": 2, "expect_output": "ok"}),
    );
    assert_eq!(
        run,
        verification::Brief {
            kind: "command".into(),
            runs: true,
            command: Some("cargo test".into()),
            expect: Some("exit status 2, output holds \"ok\"".into()),
            note: Some("No errors".into()),
        }
    );
    let manual = brief(json!({"type": "manual", "instructions": "Open the page"}));
    assert!(!manual.runs);
    assert_eq!(manual.kind, "manual");
    assert_eq!(manual.command, None);
    assert_eq!(manual.note.as_deref(), Some("Open the page"));
    let e2e = brief(json!({"type": "e2e", "steps": ["Open the app", "Paste an image"]}));
    assert_eq!(e2e.note.as_deref(), Some("Open the app (and 1 more)"));
    let prose = brief(json!("Tests pass"));
    assert_eq!(
        (prose.kind.as_str(), prose.note.as_deref()),
        ("text", Some("Tests pass"))
    );
    assert_eq!(verification::brief(&chunk_with(json!(null))), None);
}
