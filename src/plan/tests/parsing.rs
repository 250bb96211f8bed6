//! Reading every Auto-Claude variant into the model: both eras, every way a phase is named and
//! referred to, the forms Auto-Claude itself writes (a top-level list, aliases), and the model's
//! small helpers.

use super::*;

#[test]
fn subtasks_era_parses_into_the_model() {
    let plan = parse(SUBTASKS_ERA);
    assert_eq!(plan.phases.len(), 2);
    assert_eq!(plan.total(), 4);
    assert_eq!(plan.str_field("feature"), Some("Attachment upload"));
    assert_eq!(plan.str_field("recoveryNote"), Some("kept as is"));
    assert_eq!(plan.str_field("qa_signoff"), None);

    let p0 = &plan.phases[0];
    assert_eq!(p0.chunks_key, Some("subtasks"));
    assert_eq!(
        p0.key,
        PhaseKey {
            id: Some("phase-1-model".into()),
            number: None
        }
    );
    assert!(p0.depends_on.is_empty());
    assert_eq!(p0.name(), Some("Types"));
    assert_eq!(p0.label(0), "phase-1-model");

    let c = &p0.chunks[0];
    assert_eq!(c.id, "subtask-1-1");
    assert_eq!(c.status, Status::Completed);
    assert_eq!(c.description(), "Extend the message type");
    assert_eq!(c.str_field("service"), Some("frontend"));
    assert_eq!(c.str_field("session_id"), Some("sess-1"));
    assert_eq!(c.str_field("started_at"), Some("2025-01-01T10:00:00Z"));
    assert_eq!(c.str_field("completed_at"), Some("2025-01-01T10:30:00Z"));
    assert_eq!(c.str_field("notes"), Some("typed"));
    assert_eq!(c.list_field("files_to_modify"), vec!["src/shared/types.ts"]);
    assert!(c.list_field("files_to_create").is_empty());
    assert_eq!(c.list_field("patterns_from"), vec!["src/shared/other.ts"]);
    assert_eq!(c.raw().get("x_chunk_extra"), Some(&Value::Null));

    let p1 = &plan.phases[1];
    assert_eq!(p1.depends_on, vec![PhaseRef::Name("phase-1-model".into())]);
    let statuses: Vec<Status> = p1.chunks.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        vec![Status::Pending, Status::InProgress, Status::Pending]
    );
    assert_eq!(
        p1.chunks[0].description(),
        "Render previews",
        "title is the fallback"
    );
    assert!(
        !p1.chunks[2].raw().contains_key("status"),
        "a missing status is not invented on read"
    );
}

#[test]
fn chunks_era_parses_into_the_model() {
    let plan = parse(CHUNKS_ERA);
    assert_eq!(plan.phases.len(), 3);
    for (i, phase) in plan.phases.iter().enumerate() {
        assert_eq!(phase.chunks_key, Some("chunks"));
        assert_eq!(phase.key.id, None);
        assert_eq!(phase.key.number, Some(i as i64 + 1));
        assert_eq!(phase.label(i), format!("phase {}", i + 1));
    }
    assert!(plan.phases[0].depends_on.is_empty());
    assert_eq!(plan.phases[1].depends_on, vec![PhaseRef::Number(1)]);
    assert_eq!(plan.phases[2].depends_on, vec![PhaseRef::Number(2)]);
    assert_eq!(plan.count(Status::Completed), 1);
    assert_eq!(plan.count(Status::Pending), 3);
    assert_eq!(plan.total(), 4);
    assert!(plan.phases[0].is_complete());
    assert!(!plan.phases[1].is_complete());
}

#[test]
fn phase_keys_and_mixed_dependencies_resolve() {
    let plan = parse(MIXED_KEYS);
    let keys: Vec<&PhaseKey> = plan.phases.iter().map(|p| &p.key).collect();
    assert_eq!(
        keys,
        vec![
            &PhaseKey {
                id: None,
                number: Some(1)
            },
            &PhaseKey {
                id: Some("2".into()),
                number: None
            },
            &PhaseKey {
                id: Some("both".into()),
                number: Some(3)
            },
            &PhaseKey {
                id: Some("named".into()),
                number: None
            },
        ]
    );
    assert_eq!(
        plan.phases[2].depends_on,
        vec![PhaseRef::Name("1".into()), PhaseRef::Number(2)]
    );
    assert_eq!(
        plan.phases[3].depends_on,
        vec![
            PhaseRef::Name("both".into()),
            PhaseRef::Number(1),
            PhaseRef::Name("2".into()),
            PhaseRef::Number(3),
        ]
    );
    assert_eq!(plan.phases[0].chunks_key, Some("chunks"));
    assert_eq!(plan.phases[1].chunks_key, Some("subtasks"));
    assert_eq!(
        plan.phases[2].label(2),
        "both",
        "the id wins over the number"
    );
    // Everything before the last phase is complete, so the last phase is ready.
    assert_eq!(next_id(&plan), Some("p4"));
}

#[test]
fn mixed_dependencies_gate_on_the_right_phase() {
    // Same shape, but the phase referred to by the string "1" is not done yet.
    let text = MIXED_KEYS.replacen(
        r#""id": "p1", "description": "numbered", "status": "completed""#,
        r#""id": "p1", "description": "numbered", "status": "pending""#,
        1,
    );
    let plan = parse(&text);
    assert_eq!(next_id(&plan), Some("p1"));
    // And if the phase with id "2" (referred to by the number 2) is the one left undone.
    let text = MIXED_KEYS.replacen(
        r#""id": "p2", "title": "string id two", "status": "completed""#,
        r#""id": "p2", "title": "string id two", "status": "pending""#,
        1,
    );
    let plan = parse(&text);
    assert_eq!(next_id(&plan), Some("p2"));
    let mut plan = plan;
    let pos = plan.find_chunk("p2").unwrap();
    plan.chunk_mut(pos).set_status(Status::Failed);
    // "both" is already complete, so only "named" (which also depends on 2) is reported.
    assert_eq!(
        next_step(&plan),
        NextStep::Stuck(vec![
            "chunk p2 is failed".into(),
            "named waits for 2".into(),
        ])
    );
}

#[test]
fn phase_ref_matching() {
    let numbered = PhaseKey {
        id: None,
        number: Some(1),
    };
    let string_two = PhaseKey {
        id: Some("2".into()),
        number: None,
    };
    let named = PhaseKey {
        id: Some("phase-1-model".into()),
        number: Some(7),
    };
    assert!(PhaseRef::Number(1).matches(&numbered));
    assert!(PhaseRef::Name("1".into()).matches(&numbered));
    assert!(!PhaseRef::Name("phase-1".into()).matches(&numbered));
    assert!(!PhaseRef::Number(2).matches(&numbered));

    assert!(PhaseRef::Number(2).matches(&string_two));
    assert!(PhaseRef::Name("2".into()).matches(&string_two));
    assert!(!PhaseRef::Number(1).matches(&string_two));

    assert!(PhaseRef::Name("phase-1-model".into()).matches(&named));
    assert!(PhaseRef::Number(7).matches(&named));
    assert!(PhaseRef::Name("7".into()).matches(&named));
    assert!(!PhaseRef::Number(1).matches(&named));
    assert!(!PhaseRef::Name("1".into()).matches(&PhaseKey::default()));

    assert_eq!(PhaseRef::Number(3).to_string(), "3");
    assert_eq!(PhaseRef::Name("a".into()).to_string(), "\"a\"");
}

#[test]
fn phase_number_and_id_in_other_json_types() {
    let plan = parse(
        r#"{"phases": [
            {"phase": " 4 ", "chunks": [{"id": "a", "description": "x"}]},
            {"id": 5, "chunks": [{"id": 6, "description": "numeric chunk id"}]},
            {"id": null, "phase": null, "depends_on": null, "chunks": []},
            {"id": "single", "depends_on": "4"},
            {"id": "single-number", "depends_on": 5}
        ]}"#,
    );
    assert_eq!(plan.phases[0].key.number, Some(4));
    assert_eq!(plan.phases[1].key.id.as_deref(), Some("5"));
    assert_eq!(plan.phases[1].chunks[0].id, "6");
    assert_eq!(plan.phases[2].key, PhaseKey::default());
    assert_eq!(plan.phases[2].label(2), "phase #3");
    assert!(plan.phases[2].depends_on.is_empty());
    assert_eq!(plan.phases[3].depends_on, vec![PhaseRef::Name("4".into())]);
    assert_eq!(plan.phases[3].chunks_key, None);
    assert_eq!(plan.phases[4].depends_on, vec![PhaseRef::Number(5)]);
    assert_eq!(plan.find_chunk("6"), Some(ChunkPos { phase: 1, chunk: 0 }));
    assert_round_trip(
        r#"{"phases": [
            {"phase": " 4 ", "chunks": [{"id": "a", "description": "x"}]},
            {"id": 5, "chunks": [{"id": 6, "description": "numeric chunk id"}]},
            {"id": "single", "depends_on": "4"}
        ]}"#,
    );
}

#[test]
fn a_phase_may_have_no_chunks_at_all() {
    let text = r#"{"phases": [
        {"id": "docs", "name": "nothing to do"},
        {"id": "empty", "subtasks": []},
        {"id": "work", "depends_on": ["docs", "empty"],
         "subtasks": [{"id": "w", "description": "work"}]}
    ]}"#;
    let plan = parse(text);
    assert_eq!(plan.phases[0].chunks_key, None);
    assert_eq!(plan.phases[1].chunks_key, Some("subtasks"));
    assert!(plan.phases[0].is_complete());
    assert!(plan.phases[1].is_complete());
    assert_eq!(next_id(&plan), Some("w"));
    assert_round_trip(text);
    // No chunks key is invented on save.
    let saved = to_value(&plan);
    let phase0 = saved["phases"][0].as_object().unwrap();
    assert!(!phase0.contains_key("chunks") && !phase0.contains_key("subtasks"));
}

#[test]
fn list_fields_accept_a_single_string() {
    let plan = parse(&one_phase(json!([{
        "id": "c",
        "description": "x",
        "files_to_modify": "src/one.rs",
        "files_to_create": "",
        "patterns_from": ["a.rs", 3, null],
        "service": ["not", "a", "string"]
    }])));
    let c = &plan.phases[0].chunks[0];
    assert_eq!(c.list_field("files_to_modify"), vec!["src/one.rs"]);
    assert!(c.list_field("files_to_create").is_empty());
    assert_eq!(c.list_field("patterns_from"), vec!["a.rs", "3", "null"]);
    assert!(c.list_field("missing").is_empty());
    assert_eq!(c.str_field("service"), None);
}

#[test]
fn description_falls_back_to_title() {
    let plan = parse(&one_phase(json!([
        { "id": "d", "description": "the description", "title": "the title" },
        { "id": "t", "title": "the title" }
    ])));
    let c = &plan.phases[0].chunks;
    assert_eq!(c[0].description(), "the description");
    assert_eq!(c[1].description(), "the title");
}

#[test]
fn positions_and_lookup_follow_file_order() {
    let plan = parse(SUBTASKS_ERA);
    let ids: Vec<&str> = plan
        .positions()
        .map(|p| plan.chunk(p).id.as_str())
        .collect();
    assert_eq!(
        ids,
        ["subtask-1-1", "subtask-2-1", "subtask-2-2", "subtask-2-3"]
    );
    let ids2: Vec<&str> = plan.chunks().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ids2);
    assert_eq!(
        plan.find_chunk("subtask-2-2"),
        Some(ChunkPos { phase: 1, chunk: 1 })
    );
    assert_eq!(plan.find_chunk("nope"), None);
    let counts: Vec<usize> = Status::ALL.iter().map(|&s| plan.count(s)).collect();
    assert_eq!(counts, [2, 1, 1, 0, 0]);
    assert_eq!(counts.iter().sum::<usize>(), plan.total());
}

#[test]
fn plan_raw_keeps_everything_but_the_phases() {
    let plan = parse(SUBTASKS_ERA);
    let want: Map<String, Value> = value_of(SUBTASKS_ERA).as_object().unwrap().clone();
    for (k, v) in &want {
        if k != "phases" {
            assert_eq!(plan.raw.get(k), Some(v), "{k}");
        }
    }
    let phase_raw = &plan.phases[0].raw;
    assert_eq!(phase_raw.get("x_phase_extra"), Some(&json!(true)));
    assert_eq!(phase_raw.get("parallel_safe"), Some(&json!(true)));
}

#[test]
fn a_blank_description_falls_back_to_the_title() {
    let plan = parse(&one_phase(json!([
        { "id": "e", "description": "", "title": "The title", "status": "pending" }
    ])));
    assert_eq!(plan.chunks().next().unwrap().description(), "The title");
}

#[test]
fn a_top_level_subtasks_list_is_one_implicit_phase() {
    let text = r#"{"feature": "qa fixes", "subtasks": [
        {"id": "fix-1", "description": "x", "status": "completed"},
        {"id": "fix-2", "description": "y", "status": "todo"}
    ], "qa_signoff": {"status": "rejected"}}"#;
    assert_round_trip_top_level(text);
    let mut plan = parse(text);
    assert_eq!(plan.shape, PlanShape::TopLevelChunks);
    assert_eq!(plan.phases.len(), 1);
    assert_eq!(plan.total(), 2);
    assert_eq!(next_id(&plan), Some("fix-2"));
    let pos = plan.find_chunk("fix-2").unwrap();
    plan.chunk_mut(pos).set_status(Status::Completed);
    let saved = to_value(&plan);
    assert!(saved.get("phases").is_none(), "no phases added: {saved}");
    assert_eq!(saved["subtasks"][1]["status"], "completed");
    let keys: Vec<&String> = saved.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["feature", "subtasks", "qa_signoff"]);
    assert_eq!(next_step(&plan), NextStep::Complete);

    // `chunks` too, and both, kept equal.
    let plan = parse(r#"{"chunks": [{"id": "a", "description": "x"}]}"#);
    assert_eq!(plan.shape, PlanShape::TopLevelChunks);
    assert_eq!(plan.phases[0].chunks_key, Some("chunks"));
    let mut plan = parse(
        r#"{"subtasks": [{"id": "a", "description": "x"}], "chunks": [{"id": "a", "description": "x"}]}"#,
    );
    let pos = plan.find_chunk("a").unwrap();
    plan.chunk_mut(pos).set_status(Status::Failed);
    let saved = to_value(&plan);
    assert_eq!(saved["subtasks"], saved["chunks"]);
    assert_eq!(saved["chunks"][0]["status"], "failed");

    // Problems name the top-level path.
    let err = parse_err(r#"{"subtasks": [{"description": "no id"}]}"#);
    assert_problem(&err, &["subtasks[0].id: missing"]);
    assert!(
        !err.problems[0].starts_with("phases"),
        "{:#?}",
        err.problems
    );
    let plan = parse(
        r#"{"subtasks": [{"id": "a", "description": "x"}], "chunks": [{"id": "b", "description": "x"}]}"#,
    );
    assert_warning(
        &plan,
        &["subtasks and chunks differ", "subtasks[0].id is \"a\""],
    );
    assert!(
        !plan.warnings[0].starts_with("phases"),
        "{:#?}",
        plan.warnings
    );
}

/// `assert_round_trip` for a plan without `phases`.
fn assert_round_trip_top_level(text: &str) {
    let plan = parse(text);
    let written = to_value(&plan);
    let mut want = value_of(text);
    for chunk in want["subtasks"].as_array_mut().unwrap() {
        if let Some(Value::String(s)) = chunk.get_mut("status") {
            *s = Status::parse(s).unwrap().as_str().into();
        }
    }
    assert_eq!(written, want);
    assert_same_key_order(&want, &written, "$");
}

#[test]
fn phases_win_over_a_top_level_list() {
    // As in Auto-Claude: a top-level list beside `phases` is not read (and is kept).
    let text = r#"{"phases": [{"id": "p", "chunks": [{"id": "a", "description": "x"}]}],
        "subtasks": [{"id": "stray", "description": "y"}]}"#;
    let plan = parse(text);
    assert_eq!(plan.shape, PlanShape::Phases);
    assert_eq!(plan.total(), 1);
    assert_eq!(to_value(&plan)["subtasks"][0]["id"], "stray");
    // Without either, the message names both ways.
    let err = parse_err(r#"{"feature": "x"}"#);
    assert_problem(&err, &["phases: missing", "top-level \"subtasks\""]);
}

#[test]
fn auto_claude_aliases_subtask_id_and_title() {
    let text = one_phase(json!([
        { "subtask_id": "s-1", "title": "From the title" },
        { "id": null, "subtask_id": 7, "description": "", "title": "Numbered" },
        { "id": "  ", "subtask_id": "s-3", "description": "d" },
        { "id": "real", "subtask_id": "ignored", "description": "d" }
    ]));
    let plan = parse(&text);
    let ids: Vec<&str> = plan.chunks().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["s-1", "7", "s-3", "real"]);
    assert_eq!(
        plan.chunks().next().unwrap().description(),
        "From the title"
    );
    // The file keeps its own keys: no `id` or `description` is added.
    assert_round_trip(&text);
    let saved = to_value(&plan);
    assert!(saved["phases"][0]["chunks"][0].get("id").is_none());
    assert!(saved["phases"][0]["chunks"][0].get("description").is_none());
    // Aliases take part in the rules: unique ids, `runner chunk` lookups.
    let err = parse_err(&one_phase(json!([
        { "subtask_id": "dup", "description": "x" },
        { "id": "dup", "description": "y" }
    ])));
    assert_problem(&err, &["chunk id \"dup\" is used more than once"]);
    // A broken alias is named by its own key.
    let err = parse_err(&one_phase(
        json!([{ "subtask_id": ["x"], "description": "x" }]),
    ));
    assert_problem(
        &err,
        &["phases[0].chunks[0].subtask_id: expected a non-empty string"],
    );
    let err = parse_err(&one_phase(
        json!([{ "subtask_id": "", "description": "x" }]),
    ));
    assert_problem(&err, &["phases[0].chunks[0].id: missing"]);
}

#[test]
fn dependency_index_agrees_with_phase_ref_matching() {
    // Phases keyed every way a reference can name them, including look-alikes ("01", "+1").
    let phases = json!([
        {"id": "1"}, {"phase": 1}, {"id": "01"}, {"phase": 2, "id": "two"}, {"id": "+3"},
        {"phase": 3}, {"id": "x", "phase": 4}, {"phase": -5}, {"id": "-5"}, {"id": "a b"}
    ]);
    let plan = parse(&json!({"phases": phases}).to_string());
    let refs = [
        PhaseRef::Name("1".into()),
        PhaseRef::Number(1),
        PhaseRef::Name("01".into()),
        PhaseRef::Name("two".into()),
        PhaseRef::Name("2".into()),
        PhaseRef::Number(2),
        PhaseRef::Name("+3".into()),
        PhaseRef::Name("3".into()),
        PhaseRef::Number(3),
        PhaseRef::Name("4".into()),
        PhaseRef::Name("x".into()),
        PhaseRef::Number(-5),
        PhaseRef::Name("-5".into()),
        PhaseRef::Name("a b".into()),
        PhaseRef::Name("nothing".into()),
        PhaseRef::Number(99),
    ];
    for dep in refs {
        let by_scan: Vec<usize> = (0..plan.phases.len())
            .filter(|&j| dep.matches(&plan.phases[j].key))
            .collect();
        let mut one = plan.clone();
        one.phases.push(Phase {
            raw: Map::new(),
            key: PhaseKey {
                id: Some("probe".into()),
                number: None,
            },
            depends_on: vec![dep.clone()],
            chunks_key: None,
            mirror_key: None,
            chunks: Vec::new().into(),
        });
        let mut problems = Vec::new();
        let resolved = super::validate::resolve_dependencies(&one, &mut problems);
        match by_scan.as_slice() {
            [j] => assert_eq!(resolved.unwrap().last().unwrap(), &vec![*j], "{dep}"),
            [] => assert!(
                problems[0].contains("names no phase"),
                "{dep}: {problems:?}"
            ),
            _ => assert!(
                problems[0].contains("could mean any of"),
                "{dep}: {problems:?}"
            ),
        }
    }
}

#[test]
fn a_commit_is_matched_to_the_chunk_whose_id_holds_the_separator() {
    let plan = parse(&one_phase(json!([
        {"id": "x", "description": "second"},
        {"id": "x - y", "description": "first"},
        {"id": "a", "description": "b - c"},
        {"id": "a - b", "description": "c"},
        {"id": "solo", "description": "alone"},
    ])));
    let id_of = |message: &str| {
        plan.chunk_of_commit(message)
            .map(|p| plan.chunk(p).id.clone())
    };
    // The old parse read "x" here, and would have marked the wrong chunk completed.
    assert_eq!(id_of("auto-claude: x - y - first"), Some("x - y".into()));
    assert_eq!(id_of("auto-claude: x - second"), Some("x".into()));
    assert_eq!(id_of("auto-claude: x - second\n"), Some("x".into()));
    // Truly ambiguous (both chunks' messages are this one): neither is claimed.
    assert_eq!(id_of("auto-claude: a - b - c"), None);
    // Matching no chunk's id, or not runner's subject at all.
    assert_eq!(id_of("auto-claude: z - first"), None);
    assert_eq!(id_of("x - y - first"), None);
    // Only one id starts the subject: it is that chunk, whatever its description is now.
    assert_eq!(
        id_of("auto-claude: solo - edited later"),
        Some("solo".into())
    );
    // Two do, and neither message is the commit's: neither is claimed.
    assert_eq!(id_of("auto-claude: x - y - edited later"), None);
}

/// Auto-Claude strips `subtask_id` when it takes it as the id; the file keeps it as written.
#[test]
fn a_subtask_id_alias_is_trimmed() {
    let text = one_phase(json!([{ "subtask_id": "  s-9\t", "description": "d" }]));
    let plan = parse(&text);
    assert_eq!(plan.chunks().next().unwrap().id, "s-9");
    assert!(plan.find_chunk("s-9").is_some());
    assert_eq!(
        to_value(&plan)["phases"][0]["chunks"][0]["subtask_id"],
        "  s-9\t"
    );
}
