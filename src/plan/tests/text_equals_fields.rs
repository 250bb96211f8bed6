//! Chunks kept as the file's text (the fast path) give exactly the answers of chunks read as
//! fields (the slow path): reading, writing, problems, re-reads and the size cut-off.

use super::*;

/// `value` as runner writes it `level` levels down: serde_json's pretty form, indented (every
/// line break in pretty JSON is between tokens: strings escape theirs).
fn pretty_at(value: &Value, level: usize) -> String {
    let text = serde_json::to_string_pretty(value).unwrap();
    text.replace('\n', &format!("\n{}", "  ".repeat(level)))
}

/// Strings with every character serde_json escapes, and some it does not.
fn tricky_strings() -> Vec<String> {
    let mut all: String = (0u8..0x20).map(char::from).collect();
    all.push_str("\"\\/\u{7f}é€😀\u{202e}\u{feff}");
    vec![
        all,
        String::new(),
        "plain".into(),
        "\\n is not a newline".into(),
    ]
}

#[test]
fn canonical_text_is_exactly_what_serde_json_writes() {
    let strings = tricky_strings();
    let values = vec![
        json!({}),
        json!([]),
        json!({"a": {}, "b": [], "c": [[]], "d": [{}], "e": null, "f": true, "g": false}),
        json!({ strings[0].clone(): strings[0].clone(), "list": strings.clone() }),
        value_of(r#"{"n": [1, -0, 1.0e+5, 1E-7, 2e3, 123456789012345678901234567890, 0.1]}"#),
        json!({"deep": [[[[{"x": [1, {"y": "z"}]}]]]]}),
    ];
    for value in &values {
        for level in 0..6 {
            let text = pretty_at(value, level);
            assert!(canonical::is_canonical(&text, level), "{text}");
            // What the scan accepts, serde_json writes back byte for byte.
            let back: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(pretty_at(&back, level), text);
            if text.contains('\n') {
                assert!(!canonical::is_canonical(&text, level + 1), "{text}");
            }
        }
    }
}

#[test]
fn text_serde_json_would_write_otherwise_is_not_canonical() {
    let not = [
        r#"{"a":1}"#,
        "{\n  \"a\": 1 \n}",
        "{\n\t\"a\": 1\n}",
        "{\n  \"a\":1\n}",
        "{\n  \"a\": 1,\n  \"a\": 2\n}",
        "{\n  \"a\": {\n    \"b\": 1,\n    \"b\": 1\n  }\n}",
        "{\n  \"a\": \"\\/\"\n}",
        "{\n  \"a\": \"\\u00e9\"\n}",
        "{\n  \"a\": \"\\u0041\"\n}",
        "{\n  \"a\": \"\\u001F\"\n}",
        "{\n  \"a\": \"\\u000a\"\n}",
        "{\n  \"a\": \"\\ud83d\\ude00\"\n}",
        "[ ]",
        "{ }",
        "[\n  1\n  ]",
        "[\n  1e3\n]",
        "[\n  1E+3\n]",
        "[\n  -1.5E-2\n]",
        "{\n  \"a\": 2e10\n}",
    ];
    for text in not {
        assert!(!canonical::is_canonical(text, 0), "{text}");
        // serde_json agrees: its form of the value is other text.
        let value: Value = serde_json::from_str(text).unwrap();
        assert_ne!(pretty_at(&value, 0), text);
    }
    let deep = format!("{}{}", "[".repeat(120), "]".repeat(120));
    assert!(
        !canonical::is_canonical(&deep, 0),
        "too deep to keep as text"
    );
}

/// A plan with every kind of chunk: canonical text, fields runner checks, attempt records,
/// verification objects, unknown fields, synonyms, tricky strings.
fn varied_plan() -> Value {
    let strings = tricky_strings();
    json!({
        "feature": "speed",
        "x_top": {"keep": [1.50, "x"]},
        "phases": [
            {"id": "p1", "name": "one", "x_phase": 1e3, "subtasks": [
                {"id": "a", "description": strings[0].clone(), "status": "completed",
                 "attempts": [{"n": 1, "session_id": "s", "outcome": "completed", "x_attempt": [1]}],
                 "verification": {"type": "command", "command": "true", "expected": "ok"},
                 "x_chunk": {"nested": [{"deep": null}]}},
                {"id": "b", "title": "t", "status": "done"},
                {"subtask_id": " c ", "description": "c", "status": null},
                {"id": 7, "description": "numeric id", "files_to_modify": "one.rs"}
            ]},
            {"phase": 2, "depends_on": ["p1"], "chunks": [
                {"id": "d", "description": "d", "status": "in_progress",
                 "attempts": [{"n": 1, "started_at": null, "reported": "done"}]}
            ], "subtasks": [
                {"id": "d", "description": "d", "status": "in_progress",
                 "attempts": [{"n": 1, "started_at": null, "reported": "done"}]}
            ]}
        ]
    })
}

/// Every chunk of `plan` turned into fields, as the slow path reads them.
fn all_as_fields(plan: &Plan) -> Plan {
    let mut slow = plan.clone();
    let positions: Vec<ChunkPos> = slow.positions().collect();
    for pos in positions {
        slow.chunk_mut(pos).raw_mut();
    }
    slow
}

#[test]
fn chunks_kept_as_text_read_and_write_exactly_as_fields() {
    let value = varied_plan();
    // As runner writes it, and as another writer might (compact, escapes serde_json would not use).
    let pretty = String::from_utf8(plan_to_bytes(&parse(&value.to_string()))).unwrap();
    let escaped = pretty.replace('é', "\\u00e9");
    for text in [value.to_string(), pretty.clone(), escaped] {
        let plan = parse(&text);
        let slow = all_as_fields(&plan);
        assert_eq!(plan, slow);
        assert_eq!(plan_to_bytes(&plan), plan_to_bytes(&slow), "{text}");
        for (fast, slow) in plan.chunks().zip(slow.chunks()) {
            assert_eq!(fast.raw(), slow.raw());
            assert_eq!(fast.description(), slow.description());
            assert_eq!(fast.attempts(), slow.attempts());
            assert_eq!(
                fast.list_field("files_to_modify"),
                slow.list_field("files_to_modify")
            );
        }
    }
    // A plan runner wrote is read back as text, every chunk whose status needs no new spelling,
    // and written back byte for byte.
    let plan = parse(&pretty);
    assert!(plan.chunks().all(Chunk::is_verbatim));
    assert_eq!(String::from_utf8(plan_to_bytes(&plan)).unwrap(), pretty);
}

#[test]
fn a_change_to_one_chunk_leaves_the_others_as_text() {
    let pretty = String::from_utf8(plan_to_bytes(&parse(&varied_plan().to_string()))).unwrap();
    let mut plan = parse(&pretty);
    let pos = plan.find_chunk("b").unwrap();
    plan.chunk_mut(pos).set_status(Status::Failed);
    let verbatim: Vec<&str> = plan
        .chunks()
        .filter(|c| c.is_verbatim())
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(verbatim, ["a", "c", "7", "d"]);
    let mut slow = all_as_fields(&parse(&pretty));
    slow.chunk_mut(pos).set_status(Status::Failed);
    assert_eq!(plan_to_bytes(&plan), plan_to_bytes(&slow));
}

#[test]
fn chunks_kept_as_text_report_the_same_problems_as_fields() {
    let broken = [
        json!({"id": "x", "description": "d", "attempts": [{"n": "1"}]}),
        json!({"id": "x", "description": "d", "attempts": [{"n": 1, "outcome": 5}]}),
        json!({"id": "x", "description": "d", "attempts": [[1]]}),
        json!({"id": "x", "description": "d", "attempts": {"n": 1}}),
        json!({"id": "x", "description": "d", "attempts": [{"n": 4294967296u64}]}),
        json!({"id": "x", "description": "d", "status": "later"}),
        json!({"id": "x", "description": "d", "status": 3}),
        json!({"id": "x", "description": "  "}),
        json!({"id": "", "description": "d"}),
        json!({"id": "a\u{7}b", "description": "d"}),
        json!({"id": "x", "description": "d", "verification": {"type": "command"}}),
        json!({"id": "x", "description": "d", "verification": 5}),
        json!(["not", "an", "object"]),
    ];
    for chunk in broken {
        let plan = json!({"phases": [{"id": "p", "subtasks": [chunk]}]});
        let compact = parse_err(&plan.to_string());
        let pretty = parse_err(&serde_json::to_string_pretty(&plan).unwrap());
        assert_eq!(compact.problems, pretty.problems, "{chunk}");
        assert!(!pretty.problems.is_empty());
    }
}

#[test]
fn same_json_agrees_with_comparing_values() {
    let text = String::from_utf8(plan_to_bytes(&parse(&varied_plan().to_string()))).unwrap();
    let base = parse(&text);
    let mut variants = vec![
        base.clone(),
        parse(&varied_plan().to_string()),
        all_as_fields(&base),
    ];
    let changes: [&dyn Fn(&mut Plan); 6] = [
        &|p| {
            p.chunk_mut(ChunkPos { phase: 0, chunk: 1 })
                .set_status(Status::Failed)
        },
        &|p| {
            p.chunk_mut(ChunkPos { phase: 0, chunk: 0 })
                .set_str("x_new", "1")
        },
        &|p| {
            p.chunk_mut(ChunkPos { phase: 1, chunk: 0 })
                .remove("attempts")
        },
        &|p| p.set_field("x_top", json!(null)),
        &|p| {
            std::sync::Arc::make_mut(&mut p.phases[1].chunks).pop();
        },
        &|p| {
            p.phases[0].raw.insert("name".into(), json!("renamed"));
        },
    ];
    for change in changes {
        let mut changed = base.clone();
        change(&mut changed);
        variants.push(changed);
    }
    // Key order aside, as JSON values compare.
    let mut reordered = base.clone();
    let pos = ChunkPos { phase: 0, chunk: 0 };
    let raw = reordered.chunk_mut(pos).raw_mut();
    let mut fields: Vec<(String, Value)> = std::mem::take(raw).into_iter().collect();
    fields.reverse();
    raw.extend(fields);
    variants.push(reordered);
    for a in &variants {
        for b in &variants {
            assert_eq!(a.same_json(b), a.to_value() == b.to_value());
        }
    }
}

#[test]
fn a_plan_read_again_unchanged_is_the_same_plan_and_any_change_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let file = PlanFile::in_spec_dir(dir.path());
    let text = String::from_utf8(plan_to_bytes(&parse(&varied_plan().to_string()))).unwrap();
    std::fs::write(file.path(), &text).unwrap();
    let first = file.load().unwrap().unwrap();
    let again = file.load().unwrap().unwrap();
    assert_eq!(plan_to_bytes(&again), text.as_bytes());
    assert_eq!(again, first);
    // The same length, one chunk's status changed in place: read anew.
    let edited = text.replacen("\"status\": \"pending\"", "\"status\": \"blocked\"", 1);
    assert_ne!(edited, text);
    std::fs::write(file.path(), &edited).unwrap();
    let seen = file.load().unwrap().unwrap();
    assert_eq!(seen.count(Status::Blocked), 1);
    assert_eq!(plan_to_bytes(&seen), edited.as_bytes());
    // Through update too, and what it writes is read back.
    set_status_of(&file, "b", Status::Failed);
    let after = file.load().unwrap().unwrap();
    let fresh = parse_plan(file.path(), &std::fs::read(file.path()).unwrap()).unwrap();
    assert_eq!(after, fresh);
    assert_eq!(
        after.chunk(after.find_chunk("b").unwrap()).status,
        Status::Failed
    );
}

#[test]
fn a_plan_runner_wrote_reads_back_as_a_fresh_parse_would() {
    let dir = tempfile::tempdir().unwrap();
    let file = PlanFile::in_spec_dir(dir.path());
    let plans = [
        varied_plan(),
        // `chunks` read over an empty `subtasks`: the write puts the chunks under both.
        json!({"phases": [{"id": "p", "subtasks": [], "chunks": [
            {"id": "b", "description": "b", "status": "todo"}]}]}),
        // A list beside the phases that is not runner's, and a bare top-level list.
        json!({"subtasks": [{"x": 1}], "phases": [{"id": "p", "subtasks": [
            {"id": "b", "description": "b"}]}]}),
        json!({"x_top": 1, "chunks": [{"id": "b", "description": "b", "status": "done"}]}),
    ];
    for plan in plans {
        std::fs::write(file.path(), plan.to_string()).unwrap();
        for status in [Status::Failed, Status::Pending] {
            file.update(|p| {
                let pos = p.find_chunk("b").unwrap();
                p.chunk_mut(pos).set_status(status);
                Ok(())
            })
            .unwrap();
            let bytes = std::fs::read(file.path()).unwrap();
            let fresh = parse_plan(file.path(), &bytes).unwrap();
            let read = file.load().unwrap().unwrap();
            assert_eq!(read, fresh, "{plan}");
            assert_eq!(read.phases.len(), fresh.phases.len());
            for (a, b) in read.phases.iter().zip(&fresh.phases) {
                assert_eq!((a.chunks_key, a.mirror_key), (b.chunks_key, b.mirror_key));
            }
            assert_eq!(plan_to_bytes(&read), bytes);
        }
    }
}

/// A plan with `inner` as the value of a field of its one chunk, written compactly.
fn plan_with_chunk_field(inner: &str) -> String {
    format!(
        "{{\"phases\": [{{\"id\": \"p\", \"subtasks\": [{{\"id\": \"a\", \"description\": \"d\", \"x\": {inner}}}]}}]}}"
    )
}

#[test]
fn bad_json_anywhere_is_the_syntax_error_a_whole_parse_gives() {
    let mut cases: Vec<Vec<u8>> = [
        // Lone surrogates: only a real parse of the string refuses them.
        "\"\\ud800\"",
        "\"\\udc00x\"",
        "\"\\ud800\\u0041\"",
        // A raw control character, an escape JSON does not have, a bad number.
        "\"a\u{1}b\"",
        "\"\\x\"",
        "01",
        "[1,]",
    ]
    .iter()
    .map(|inner| plan_with_chunk_field(inner).into_bytes())
    .collect();
    // The same in the mirror list (read only to name a difference) and at the phase level.
    cases.push(
        br#"{"phases": [{"id": "p", "subtasks": [{"id": "a", "description": "d"}], "chunks": [{"id": "a", "description": "\ud800"}]}]}"#.to_vec(),
    );
    cases.push(br#"{"phases": [{"id": "p", "name": "\udfff", "subtasks": []}]}"#.to_vec());
    cases.push(br#"{"phases": [], "subtasks": ["\ud800"]}"#.to_vec());
    let bad_utf8 = plan_with_chunk_field("\"\u{e9}\"").into_bytes();
    cases.push(bad_utf8[..bad_utf8.len() - 6].to_vec());
    for bytes in cases {
        let whole = serde_json::from_slice::<Value>(&bytes).unwrap_err();
        let err = parse_plan(Path::new(PATH), &bytes).unwrap_err();
        let shown = String::from_utf8_lossy(&bytes);
        assert_eq!(
            (err.line, err.column, err.problems),
            (
                Some(whole.line()),
                Some(whole.column()),
                vec![format!("not valid JSON: {whole}")]
            ),
            "{shown}"
        );
    }
}

#[test]
fn nesting_past_serde_jsons_limit_is_refused_as_a_whole_parse_refuses_it() {
    let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let cases = [
        // In a chunk read into values (compact), in a phase's field, beside the phases.
        plan_with_chunk_field(&nest(124)),
        format!(
            "{{\"phases\": [{{\"id\": \"p\", \"x\": {}, \"subtasks\": []}}]}}",
            nest(125)
        ),
        format!("{{\"phases\": [], \"subtasks\": [{}]}}", nest(126)),
        format!(
            "{{\"chunks\": [{{\"id\": \"a\", \"description\": \"d\", \"x\": {}}}]}}",
            nest(125)
        ),
    ];
    for text in &cases {
        let whole = serde_json::from_str::<Value>(text).unwrap_err();
        let err = parse_err(text);
        assert_eq!(
            (err.line, err.column, err.problems),
            (
                Some(whole.line()),
                Some(whole.column()),
                vec![format!("not valid JSON: {whole}")]
            ),
        );
    }
    // One level less is a plan.
    let deepest = plan_with_chunk_field(&nest(122));
    serde_json::from_str::<Value>(&deepest).unwrap();
    parse(&deepest);
}

#[test]
fn a_written_plan_past_the_cut_off_is_not_remembered_however_its_chunks_are_held() {
    let dir = tempfile::tempdir().unwrap();
    let file = PlanFile::in_spec_dir(dir.path());
    // A few chunks of 1.5 MB each, written compactly: every chunk read into fields.
    let long = "x".repeat(1_500_000);
    let chunks: Vec<Value> = (0..7)
        .map(|i| json!({"id": format!("c{i}"), "description": long}))
        .collect();
    let plan = json!({"phases": [{"id": "p", "subtasks": chunks}]});
    std::fs::write(file.path(), plan.to_string()).unwrap();
    set_status_of(&file, "c0", Status::Completed);
    assert!(std::fs::metadata(file.path()).unwrap().len() > 8 << 20);
    assert!(!file.remembers_a_plan(), "a plan past 8 MB is held twice");
    // Under the cut-off, it is remembered.
    let small = json!({"phases": [{"id": "p", "subtasks": [{"id": "c0", "description": "d"}]}]});
    std::fs::write(file.path(), small.to_string()).unwrap();
    set_status_of(&file, "c0", Status::Completed);
    assert!(file.remembers_a_plan());
}

#[test]
fn a_chunk_with_very_many_keys_is_scanned_in_linear_time() {
    // An agent may write any chunk; 200,000 keys took minutes when each key was compared with
    // every earlier one (the whole-file parse reads it in a fraction of a second).
    let keys: Map<String, Value> = (0..200_000)
        .map(|i| (format!("k{i}"), Value::from(i)))
        .collect();
    let text = pretty_at(&Value::Object(keys), 4);
    let started = std::time::Instant::now();
    assert!(canonical::is_canonical(&text, 4));
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(30), "took {took:?}");
    // A key given twice, far apart, is still seen.
    let twice = text.replacen("\"k199999\"", "\"k0\"", 1);
    assert!(!canonical::is_canonical(&twice, 4));
}

#[test]
fn a_key_given_twice_is_seen_either_side_of_the_move_from_list_to_set() {
    // The check keeps 16 keys in a list and then moves to a set: a repeat of the first key at
    // the 16th, 17th and 18th place must all be seen.
    for at in [15, 16, 17] {
        let keys: Map<String, Value> = (0..20)
            .map(|i| (format!("k{i:02}"), Value::from(i)))
            .collect();
        let text = pretty_at(&Value::Object(keys), 4);
        assert!(canonical::is_canonical(&text, 4));
        let twice = text.replacen(&format!("\"k{at:02}\""), "\"k00\"", 1);
        assert!(!canonical::is_canonical(&twice, 4), "repeat at {at}");
    }
}

#[test]
fn an_attempt_record_reads_exactly_when_it_can_be_read() {
    let cases = [
        json!({"n": 1}),
        json!({"n": 1, "commit": "abc", "outcome": null}),
        json!({"n": 1, "extra": [1, 2], "outcome": "completed"}),
        json!({"n": 4294967295u64}),
        json!({"n": 4294967296u64}),
        json!({"n": -1}),
        json!({"n": 1.5}),
        json!({"n": "1"}),
        json!({"commit": "abc"}),
        json!({"n": 1, "commit": 7}),
        json!({"n": 1, "reason": {"x": 1}}),
        json!({"n": 1, "session_id": ["a"]}),
        json!([1]),
        json!("n"),
        json!(null),
    ];
    for case in cases {
        assert_eq!(
            Attempt::reads(&case),
            Attempt::from_value(&case).is_some(),
            "{case}"
        );
    }
}

#[test]
fn a_plan_grown_past_the_cut_off_by_one_chunk_is_not_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let file = PlanFile::in_spec_dir(dir.path());
    let small = json!({"phases": [{"id": "p", "subtasks": [
        {"id": "c0", "description": "d"}, {"id": "c1", "description": "e"}]}]});
    std::fs::write(file.path(), small.to_string()).unwrap();
    set_status_of(&file, "c0", Status::Completed);
    assert!(file.remembers_a_plan());
    // An agent writes 9 MB into one chunk, in runner's own form (the quick re-read's case).
    let text = std::fs::read_to_string(file.path()).unwrap();
    let long = "x".repeat(9 << 20);
    let grown = text.replacen(
        "\"description\": \"e\"",
        &format!("\"description\": \"{long}\""),
        1,
    );
    assert_ne!(grown, text);
    std::fs::write(file.path(), &grown).unwrap();
    let read = file.load().unwrap().unwrap();
    assert_eq!(read, parse_plan(file.path(), grown.as_bytes()).unwrap());
    assert!(!file.remembers_a_plan(), "a plan past 8 MB is held twice");
}

/// Set chunk `id`'s status through `PlanFile::update` (the plan's write path).
fn set_status_of(file: &PlanFile, id: &str, status: Status) {
    file.update(|p| {
        let pos = p.find_chunk(id).unwrap();
        p.chunk_mut(pos).set_status(status);
        Ok(())
    })
    .unwrap();
}
