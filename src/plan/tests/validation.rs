//! The errors a user can meet in a plan: where they are, what they name, every one at once,
//! and refusals of ids and dependencies that cannot be trusted (kept short and linear in size).

use super::*;

#[test]
fn invalid_json_reports_line_and_column() {
    // The stray comma is on line 3, column 6 (the 6th character of `    {,`).
    let err = parse_err("{\n  \"phases\": [\n    {,\n  ]\n}\n");
    assert_eq!(err.path, Path::new(PATH));
    assert_eq!(err.line, Some(3));
    assert_eq!(err.column, Some(6));
    assert_eq!(err.problems.len(), 1);
    assert!(err.problems[0].starts_with("not valid JSON"), "{err:?}");
    let shown = err.to_string();
    assert!(
        shown.starts_with(&format!("invalid plan {PATH}:3:6")),
        "{shown}"
    );
    assert!(shown.contains("left untouched"), "{shown}");

    // A truncated file (an interrupted write) is reported too.
    let err = parse_err("{\n  \"phases\": [\n");
    assert_eq!(err.line, Some(3));
    assert!(err.problems[0].contains("EOF"), "{err:?}");
}

#[test]
fn shape_errors_carry_the_path_but_no_position() {
    let err = parse_err(r#"{"feature": "x"}"#);
    assert_eq!((err.line, err.column), (None, None));
    assert_problem(&err, &["phases: missing"]);
    let shown = err.to_string();
    assert!(
        shown.starts_with(&format!("invalid plan {PATH}\n")),
        "{shown}"
    );
    assert!(shown.contains("\n  - phases: missing"), "{shown}");

    assert_problem(
        &parse_err(r#"{"phases": {}}"#),
        &["phases: expected a list, found an object"],
    );
    assert_problem(
        &parse_err(r#"[]"#),
        &["must be a JSON object", "found a list"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [3]}"#),
        &["phases[0]: expected an object, found a number"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [{"phase": 1, "chunks": {}}]}"#),
        &["phases[0].chunks: expected a list, found an object"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [{"phase": 1, "chunks": ["x"]}]}"#),
        &["phases[0].chunks[0]: expected an object, found a string"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [{"id": true}]}"#),
        &["phases[0].id: expected a string, found a boolean"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [{"phase": 1.5}]}"#),
        &["phases[0].phase: expected a whole number"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [{"phase": 1}, {"phase": 2, "depends_on": [1, {"x": 1}]}]}"#),
        &["phases[1].depends_on[1]: expected a phase id or number, found an object"],
    );
    assert_problem(
        &parse_err(r#"{"phases": [{"phase": 1, "depends_on": {"a": 1}}]}"#),
        &["phases[0].depends_on: expected a list of phase ids, found an object"],
    );
}

/// A phase number past what runner holds (a 64-bit integer) is refused as too large (or too
/// small), naming the field and the limit — not as "not a whole number", which it is.
#[test]
fn phase_numbers_out_of_range_say_so_with_the_limit() {
    let huge = "100000000000000000000";
    let max = i64::MAX.to_string();
    let min = i64::MIN.to_string();
    for (text, wanted) in [
        (
            format!(r#"{{"phases": [{{"phase": {huge}}}]}}"#),
            vec!["phases[0].phase: ", huge, "too large", &max],
        ),
        (
            format!(r#"{{"phases": [{{"phase": "{huge}"}}]}}"#),
            vec!["phases[0].phase: ", huge, "too large", &max],
        ),
        (
            format!(r#"{{"phases": [{{"phase": -{huge}}}]}}"#),
            vec!["phases[0].phase: ", "too small", &min],
        ),
        (
            format!(r#"{{"phases": [{{"phase": 1}}, {{"phase": 2, "depends_on": [{huge}]}}]}}"#),
            vec!["phases[1].depends_on[0]: ", huge, "too large", &max],
        ),
        (
            format!(r#"{{"phases": [{{"phase": 1}}, {{"phase": 2, "depends_on": {huge}}}]}}"#),
            vec!["phases[1].depends_on: ", huge, "too large", &max],
        ),
    ] {
        let err = parse_err(&text);
        assert_problem(&err, &wanted);
        assert!(
            err.problems.iter().all(|p| !p.contains("found a number")),
            "{text}: {:?}",
            err.problems
        );
    }
    // The largest number still reads; a fraction is still not a whole number.
    let at_limit = format!(
        r#"{{"phases": [{{"phase": {max}, "chunks": [{{"id": "a", "description": "x"}}]}}]}}"#
    );
    assert!(parse_plan(Path::new(PATH), at_limit.as_bytes()).is_ok());
    assert_problem(
        &parse_err(r#"{"phases": [{"phase": 1.5}]}"#),
        &["phases[0].phase: expected a whole number, found 1.5"],
    );
}

#[test]
fn chunk_without_id_is_an_error() {
    let err = parse_err(
        r#"{"phases": [{"id": "p", "subtasks": [
        {"id": "ok", "description": "x"},
        {"description": "who am I"}
    ]}]}"#,
    );
    assert_problem(&err, &["phases[0].subtasks[1].id: missing"]);
    for bad in [json!(""), json!("  "), json!(null), json!(["a"])] {
        let err = parse_err(&one_phase(json!([{ "id": bad, "description": "x" }])));
        assert_problem(
            &err,
            &["phases[0].chunks[0].id: expected a non-empty string"],
        );
    }
}

#[test]
fn chunk_without_description_or_title_is_an_error() {
    let err = parse_err(&one_phase(json!([{ "id": "bare", "status": "pending" }])));
    assert_problem(&err, &["phases[0].chunks[0] (bare)", "description"]);
    let err = parse_err(&one_phase(
        json!([{ "id": "blank", "description": " ", "title": "" }]),
    ));
    assert_problem(&err, &["(blank)", "description"]);
}

#[test]
fn duplicate_chunk_ids_are_an_error() {
    let err = parse_err(
        r#"{"phases": [
        {"id": "a", "chunks": [{"id": "same", "description": "x"}]},
        {"id": "b", "subtasks": [{"id": "same", "description": "y"}]}
    ]}"#,
    );
    assert_problem(&err, &["chunk id \"same\" is used more than once"]);
    // Within one phase, and a number and a string that read the same.
    let err = parse_err(&one_phase(json!([
        { "id": 7, "description": "x" },
        { "id": "7", "description": "y" }
    ])));
    assert_problem(&err, &["chunk id \"7\" is used more than once"]);
}

#[test]
fn duplicate_phase_keys_are_an_error() {
    let err = parse_err(r#"{"phases": [{"id": "a"}, {"id": "a"}]}"#);
    assert_problem(&err, &["phases[1]: phase id \"a\" is used more than once"]);
    let err = parse_err(r#"{"phases": [{"phase": 2}, {"phase": 2}]}"#);
    assert_problem(&err, &["phases[1]: phase number 2 is used more than once"]);
}

#[test]
fn depends_on_naming_no_phase_is_an_error() {
    let err = parse_err(
        r#"{"phases": [
        {"id": "a", "chunks": [{"id": "c1", "description": "x"}]},
        {"id": "b", "depends_on": ["a", "nope"], "chunks": [{"id": "c2", "description": "x"}]}
    ]}"#,
    );
    assert_problem(
        &err,
        &["phases[1] (b).depends_on: \"nope\" names no phase in this plan"],
    );
    let err = parse_err(r#"{"phases": [{"phase": 1}, {"phase": 2, "depends_on": [9]}]}"#);
    assert_problem(&err, &["phases[1] (phase 2).depends_on: 9 names no phase"]);
    // "1" cannot name a phase whose id is "phase-1".
    let err = parse_err(r#"{"phases": [{"id": "phase-1"}, {"id": "x", "depends_on": [1]}]}"#);
    assert_problem(&err, &["(x).depends_on: 1 names no phase"]);
}

#[test]
fn dependency_cycles_are_an_error() {
    let err = parse_err(
        r#"{"phases": [
        {"id": "a", "depends_on": ["b"], "chunks": [{"id": "c1", "description": "x"}]},
        {"id": "b", "depends_on": ["a"], "chunks": [{"id": "c2", "description": "x"}]}
    ]}"#,
    );
    assert_problem(&err, &["phase dependencies form a cycle: a -> b -> a"]);

    let err = parse_err(r#"{"phases": [{"phase": 1, "depends_on": [1]}]}"#);
    assert_problem(&err, &["cycle: phase 1 -> phase 1"]);

    // A longer cycle not starting at the first phase.
    let err = parse_err(
        r#"{"phases": [
        {"id": "root"},
        {"id": "x", "depends_on": ["root", "z"]},
        {"id": "y", "depends_on": ["x"]},
        {"id": "z", "depends_on": ["y"]}
    ]}"#,
    );
    assert_problem(&err, &["cycle: x -> z -> y -> x"]);

    // A diamond is not a cycle.
    parse(
        r#"{"phases": [
        {"id": "a"},
        {"id": "b", "depends_on": ["a"]},
        {"id": "c", "depends_on": ["a"]},
        {"id": "d", "depends_on": ["b", "c"]}
    ]}"#,
    );
}

#[test]
fn bad_attempt_records_are_an_error() {
    let err = parse_err(&one_phase(json!([
        { "id": "c", "description": "x", "attempts": [{ "outcome": "failed" }] }
    ])));
    assert_problem(&err, &["(c).attempts"]);
    let err = parse_err(&one_phase(json!([
        { "id": "c", "description": "x", "attempts": "twice" }
    ])));
    assert_problem(&err, &["(c).attempts"]);
}

#[test]
fn every_problem_is_reported_at_once() {
    let err = parse_err(
        r#"{"phases": [
        {"id": "a", "chunks": [
            {"id": "dup", "description": "x", "status": "maybe"},
            {"description": "no id"},
            {"id": "dup", "description": "x"},
            {"id": "dup", "description": "x"}
        ]},
        {"id": "b", "depends_on": ["ghost"]}
    ]}"#,
    );
    assert_problem(&err, &["\"maybe\""]);
    assert_problem(&err, &["chunks[1].id: missing"]);
    assert_problem(&err, &["\"dup\" is used more than once"]);
    assert_problem(&err, &["\"ghost\" names no phase"]);
    let shown = err.to_string();
    assert_eq!(
        shown.matches("\n  - ").count(),
        err.problems.len(),
        "one line per problem:\n{shown}"
    );
}

#[test]
fn planner_output_needs_at_least_one_chunk() {
    let empty = parse(r#"{"phases": []}"#);
    assert_eq!(check_planner_output(&empty).len(), 1);
    let no_chunks = parse(r#"{"phases": [{"id": "a"}, {"id": "b", "chunks": []}]}"#);
    assert_eq!(check_planner_output(&no_chunks).len(), 1);
    assert!(check_planner_output(&parse(CHUNKS_ERA)).is_empty());
}

#[test]
fn a_phase_that_cannot_be_read_does_not_shift_the_positions_of_the_others() {
    let err = parse_err(r#"{"phases":[7,{"id":"b","depends_on":["nope"]},{"id":"b"}]}"#);
    assert_problem(&err, &["phases[0]: expected an object, found a number"]);
    // Validation, which names phases by position, waits until every phase reads.
    assert!(
        err.problems.iter().all(|p| !p.contains("phases[1]")),
        "{:#?}",
        err.problems
    );
}

#[test]
fn a_dependency_that_could_mean_two_phases_is_an_error() {
    let err = parse_err(
        r#"{"phases": [
            {"id": "2", "chunks": [{"id": "a", "description": "x"}]},
            {"phase": 2, "chunks": [{"id": "b", "description": "x"}]},
            {"id": "c", "depends_on": [2], "chunks": [{"id": "c1", "description": "x"}]}
        ]}"#,
    );
    assert_problem(&err, &["depends_on: 2 could mean any of"]);
}

/// A key used by thousands of phases, each depending on it: each problem names a few of the
/// phases and only the first problems are listed (every match for every reference was
/// quadratic: 10 s and a 96 MB message for 4,000 phases).
#[test]
fn a_key_shared_by_thousands_of_phases_gives_a_short_message() {
    let n = 4000;
    let phases: Vec<Value> = (0..n)
        .map(|_| json!({"id": "same", "depends_on": ["same"], "chunks": []}))
        .collect();
    let err = parse_err(&json!({ "phases": phases }).to_string());
    let could_mean: Vec<&String> = err
        .problems
        .iter()
        .filter(|p| p.contains("could mean any of"))
        .collect();
    assert_eq!(could_mean.len(), 20, "{:#?}", &err.problems[..30]);
    assert!(
        could_mean[0].contains("could mean any of same, same, same, same, same, …;"),
        "{}",
        could_mean[0]
    );
    assert_problem(
        &err,
        &["… and 3980 more depends_on entries that name no phase, or several"],
    );
    let dependency_text: usize = err
        .problems
        .iter()
        .filter(|p| p.contains("depends_on"))
        .map(String::len)
        .sum();
    assert!(dependency_text < 10_000, "{dependency_text} bytes");
}

#[test]
fn chunk_ids_must_be_printable_and_short() {
    let bad = [
        ("nul\u{0}byte", "U+0000"),
        ("bell\u{7}", "U+0007"),
        ("two\nlines", "U+000A"),
        ("tab\there", "U+0009"),
        ("\u{1b}[31mred", "U+001B"),
        ("del\u{7f}", "U+007F"),
        ("c1\u{85}next", "U+0085"),
        ("evil\u{202e}txt", "U+202E"),
        ("zero\u{200b}width", "U+200B"),
        ("line\u{2028}sep", "U+2028"),
    ];
    for (id, code) in bad {
        let err = parse_err(&one_phase(json!([{ "id": id, "description": "x" }])));
        assert_problem(&err, &["phases[0].chunks[0].id: chunk id", code]);
        // The message itself is printable: the id is shown escaped.
        assert!(
            err.problems
                .iter()
                .all(|p| p.chars().all(|c| !c.is_control())),
            "{:#?}",
            err.problems
        );
        let err = parse_err(&one_phase(
            json!([{ "subtask_id": id, "description": "x" }]),
        ));
        assert_problem(&err, &["phases[0].chunks[0].subtask_id: chunk id", code]);
    }
    // Length is counted in bytes.
    let at_limit = "x".repeat(MAX_ID_BYTES);
    parse(&one_phase(json!([{ "id": at_limit, "description": "x" }])));
    let over = "x".repeat(MAX_ID_BYTES + 1);
    let err = parse_err(&one_phase(json!([{ "id": over, "description": "x" }])));
    assert_problem(
        &err,
        &["phases[0].chunks[0].id", "201 bytes long", "at most 200"],
    );
    let wide = "é".repeat(101); // 202 bytes, 101 characters
    let err = parse_err(&one_phase(json!([{ "id": wide, "description": "x" }])));
    assert_problem(&err, &["202 bytes long"]);
    // Printable ids of any alphabet, with characters git refuses in refs, are fine: refs are
    // built from an escaped form (`git::refs::ref_component`).
    let fine = [
        "subtask-1-1",
        "with space",
        "a~b^c:d",
        "dots..here",
        "ünïcødé-日本",
        "x/../y",
    ];
    for id in fine {
        let plan = parse(&one_phase(json!([{ "id": id, "description": "x" }])));
        assert_eq!(plan.chunks().next().unwrap().id, id);
    }
}

#[test]
fn phase_ids_must_be_printable_and_short() {
    let err = parse_err(r#"{"phases": [{"id": "p\u0000", "chunks": []}]}"#);
    assert_problem(&err, &["phases[0].id: phase id", "U+0000"]);
    let long = "p".repeat(MAX_ID_BYTES + 1);
    let err = parse_err(&json!({"phases": [{"id": long}]}).to_string());
    assert_problem(&err, &["phases[0].id: phase id", "201 bytes long"]);
}

/// `n` one-chunk phases, each depending on the one before (by id), as JSON text; `extra` adds
/// one more dependency to one phase.
fn chain(n: usize, extra: Option<(usize, &str)>) -> String {
    let phases: Vec<Value> = (0..n)
        .map(|i| {
            let mut deps: Vec<String> =
                (i > 0).then(|| format!("p{}", i - 1)).into_iter().collect();
            if let Some((at, dep)) = extra
                && at == i
            {
                deps.push(dep.to_string());
            }
            json!({"id": format!("p{i}"), "depends_on": deps,
                   "chunks": [{"id": format!("c{i}"), "description": "x"}]})
        })
        .collect();
    json!({ "phases": phases }).to_string()
}

#[test]
fn a_long_dependency_chain_loads_and_a_cycle_through_it_is_found() {
    // Deep enough to overflow the stack of a test thread with a recursive search.
    let n = 50_000;
    let plan = parse(&chain(n, None));
    assert_eq!(plan.total(), n);
    assert_eq!(next_id(&plan), Some("c0"));
    let last = format!("p{}", n - 1);
    let err = parse_err(&chain(n, Some((3, &last))));
    assert_problem(
        &err,
        &[&format!(
            "phase dependencies form a cycle: p3 -> {last} -> p{} -> ",
            n - 2
        )],
    );
    let cycle = err.problems.iter().find(|p| p.contains("cycle")).unwrap();
    assert!(
        cycle.ends_with("p5 -> p4 -> p3"),
        "{}",
        &cycle[cycle.len() - 40..]
    );
    let err = parse_err(&chain(n, Some((n - 1, "ghost"))));
    assert_problem(
        &err,
        &[&format!(
            "phases[{}] ({last}).depends_on: \"ghost\" names no phase",
            n - 1
        )],
    );
}

/// Every Default_Ignorable_Code_Point and bidi control is refused in an id, not only the
/// common zero-width and direction characters.
#[test]
fn ids_with_any_invisible_or_direction_changing_character_are_refused() {
    let bad = [
        '\u{34F}',
        '\u{61C}',
        '\u{115F}',
        '\u{1160}',
        '\u{17B4}',
        '\u{180E}',
        '\u{2065}',
        '\u{206A}',
        '\u{206F}',
        '\u{2800}',
        '\u{3164}',
        '\u{FE00}',
        '\u{FE0F}',
        '\u{FFA0}',
        '\u{1BCA0}',
        '\u{1D173}',
        '\u{E0001}',
        '\u{E007F}',
        '\u{E0100}',
        '\u{E01EF}',
    ];
    for c in bad {
        let id = format!("a{c}b");
        let err = parse_err(&one_phase(json!([{ "id": id, "description": "x" }])));
        assert_problem(
            &err,
            &[
                "an invisible or direction-changing character",
                &format!("U+{:04X}", c as u32),
            ],
        );
        let err = parse_err(&json!({"phases": [{"id": id, "chunks": []}]}).to_string());
        assert_problem(&err, &["phases[0].id: phase id"]);
    }
    // Printable neighbours stay allowed.
    for ok in ["a\u{2801}b", "日本語", "a b", "é", "a\u{3000}b"] {
        parse(&one_phase(json!([{ "id": ok, "description": "x" }])));
    }
}
