//! `runner plan`: a spec's whole plan as a person reads it (and its report as JSON), against the
//! real Auto-Claude plans and the fixture plans.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

/// Every `*.json` in `dir`, sorted.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// Each chunk's id and description, read from the file itself (either era's key; a chunk
/// without a description is told by its `title`, else its id).
fn chunks_in(plan: &Value) -> Vec<(String, String)> {
    plan["phases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| {
            ["chunks", "subtasks"]
                .iter()
                .find_map(|k| p.get(*k).and_then(Value::as_array))
                .cloned()
                .unwrap_or_default()
        })
        .map(|c| {
            let id = c["id"].as_str().unwrap().to_string();
            let description = ["description", "title"]
                .iter()
                .find_map(|k| c[*k].as_str().filter(|s| !s.trim().is_empty()))
                .unwrap_or(&id)
                .to_string();
            (id, description)
        })
        .collect()
}

/// `runner plan` on `file` as a spec's plan: the text names every chunk of the file, and the
/// JSON has each with its whole description, in file order.
fn shows_every_chunk(file: &Path) {
    let repo = TestRepo::new();
    let dir = repo.add_spec("001-real");
    std::fs::copy(file, dir.join("implementation_plan.json")).unwrap();
    let original: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let chunks = chunks_in(&original);
    assert!(!chunks.is_empty(), "{}", file.display());

    let text = repo.runner(&["plan"]);
    assert_exit(&text, 0);
    let text = stdout(&text);
    for (id, _) in &chunks {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().nth(1) == Some(id)),
            "{}: chunk {id} has no line of its own:\n{text}",
            file.display()
        );
    }
    // Cut to a narrow terminal's width, it still names every chunk.
    let narrow = repo
        .cmd(&["plan", "001"])
        .env("COLUMNS", "50")
        .output()
        .unwrap();
    assert_exit(&narrow, 0);
    let narrow = stdout(&narrow);
    assert!(narrow.lines().all(|l| l.chars().count() <= 50), "{narrow}");
    for (id, _) in &chunks {
        assert!(narrow.contains(id.as_str()), "{id} in:\n{narrow}");
    }

    let json = repo.runner(&["plan", "--json"]);
    assert_exit(&json, 0);
    let report: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(report["schema"], 1);
    let shown: Vec<(String, String)> = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["chunks"].as_array().unwrap().clone())
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["description"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(shown, chunks, "{}", file.display());
}

#[test]
fn every_real_auto_claude_plan_is_shown_with_every_chunk() {
    let Some(dir) = reference_plans_dir() else {
        return;
    };
    let files = json_files(&dir);
    assert!(!files.is_empty());
    for file in files {
        shows_every_chunk(&file);
    }
}

#[test]
fn every_fixture_plan_is_shown_with_every_chunk() {
    for file in json_files(&fixture("plans")) {
        shows_every_chunk(&file);
    }
}

#[test]
fn the_plan_reads_as_text_with_statuses_attempts_and_verifications() {
    let repo = repo_with_fixture_plan("001-shape");
    // core-b fails once, then succeeds; polish fails its only attempt.
    repo.write_config("[run]\nmax_attempts = 2\n");
    repo.script("core-b 1 fail not yet\npolish * fail the colours clash\n");
    assert_exit(&repo.run_spec("001-shape", &[]), 3);
    let out = repo.runner(&["plan", "001"]);
    assert_exit(&out, 0);
    crate::assert_screen!(repo, stdout(&out), @"
    Plan of 001-shape: 2/3 chunks completed
      [repo]/.auto-claude/specs/001-shape/implementation_plan.json

    phase-1 Core — 2/2
      ✓ core-a  completed
          Build part A
      ✓ core-b  completed · done on attempt 2 of 2
          Build part B
          verify: test -f work/core-b.txt — file exists

    phase-2 Polish — 0/1, after phase-1
      ✗ polish  failed · attempt 2 of 2 failed
          Polish it
          reason: the agent reported failure: the colours clash
    ");
    // The JSON says the same, word for word where the text has words.
    let report: Value = serde_json::from_str(&stdout(&repo.runner(&["plan", "--json"]))).unwrap();
    assert_eq!(report["max_attempts"], 2);
    let polish = &report["phases"][1]["chunks"][0];
    assert_eq!(polish["attempt"], "attempt 2 of 2 failed");
    assert_eq!(polish["failed_attempts"], 2);
    assert_eq!(
        polish["reason"],
        "the agent reported failure: the colours clash"
    );
    let core_b = &report["phases"][0]["chunks"][1];
    assert_eq!(
        core_b["verification"],
        serde_json::json!({"kind": "command", "runs": true, "command": "test -f work/core-b.txt",
                           "expect": null, "note": "file exists"})
    );
    assert_eq!(report["phases"][0]["chunks"][0]["attempt"], Value::Null);
}

#[test]
fn a_chunk_in_progress_says_its_attempt_and_the_marks_take_colour_only_when_asked() {
    let repo = repo_with_fixture_plan("001-live");
    repo.write_config("[run]\nmax_attempts = 3\n");
    // Killed during core-a's session: the plan keeps it in progress, its attempt open.
    run_killed_at(&repo, "001-live", "after_take");
    let out = repo.runner(&["plan"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.contains("  in progress: core-a, next: core-b\n"),
        "{text}"
    );
    assert!(
        text.contains("  ▸ core-a  in progress · attempt 1 of 3\n"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "no escapes into a pipe: {text:?}");
    let coloured = stdout(&repo.runner(&["plan", "--color", "always"]));
    assert!(
        coloured.contains("\u{1b}[33m▸\u{1b}[0m core-a"),
        "{coloured:?}"
    );
    assert!(
        coloured.contains("\u{1b}[1mPlan of 001-live:\u{1b}[0m"),
        "{coloured:?}"
    );
}

#[test]
fn plan_text_cannot_act_on_the_terminal() {
    let repo = repo_with_fixture_plan("001-esc");
    let mut plan = repo.plan("001-esc");
    plan["phases"][0]["name"] = "Core\u{1b}[2J".into();
    plan["phases"][0]["subtasks"][0]["description"] = "Build \u{1b}]0;pwned\u{7} A\r".into();
    plan["phases"][0]["subtasks"][1]["verification"]["command"] = "test\u{1b}[31m -f x".into();
    repo.write_plan("001-esc", &serde_json::to_string_pretty(&plan).unwrap());
    let out = repo.runner(&["plan", "--color", "always"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("Core\\u{1b}[2J"), "{text}");
    assert!(
        text.contains("Build \\u{1b}]0;pwned\\u{7} A\\u{d}"),
        "{text}"
    );
    assert!(text.contains("verify: test\\u{1b}[31m -f x"), "{text}");
    // Every escape left is one of the colours runner adds.
    let own = [
        "\u{1b}[0m",
        "\u{1b}[1m",
        "\u{1b}[2m",
        "\u{1b}[31m",
        "\u{1b}[32m",
        "\u{1b}[33m",
    ];
    let mut rest = text.clone();
    for code in own {
        rest = rest.replace(code, "");
    }
    assert!(!rest.contains('\u{1b}'), "{rest:?}");
    // JSON keeps the text exactly.
    let json: Value = serde_json::from_str(&stdout(&repo.runner(&["plan", "--json"]))).unwrap();
    assert_eq!(
        json["phases"][0]["chunks"][0]["description"],
        "Build \u{1b}]0;pwned\u{7} A\r"
    );
}

#[test]
fn the_spec_is_chosen_as_everywhere() {
    let repo = TestRepo::new();
    add_fixture_spec(&repo, "001-add-login");
    add_fixture_spec(&repo, "002-fix-logout");
    // Named by a part of its name, as SPEC or --spec.
    for args in [&["plan", "logout"][..], &["plan", "--spec", "002"]] {
        let out = repo.runner(args);
        assert_exit(&out, 0);
        assert!(
            stdout(&out).starts_with("Plan of 002-fix-logout:"),
            "{}",
            stdout(&out)
        );
    }
    // Several, no terminal to ask on: the usual error, a command for each.
    let out = repo.runner(&["plan"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("runner plan --spec 001-add-login"), "{err}");
    assert!(err.contains("runner plan --spec 002-fix-logout"), "{err}");
    // A spec with no plan yet: what to do.
    repo.add_spec("003-new");
    let out = repo.runner(&["plan", "003"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("spec 003-new has no plan yet"),
        "{}",
        stderr(&out)
    );
}
