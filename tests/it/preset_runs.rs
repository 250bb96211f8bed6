//! Every preset end to end against its fake CLI: what the agent's output says is read after
//! each session, kept on the attempt record in the plan (the cost ledger), and decides the
//! session together with the agent's own report (`runner chunk done`).

use serde_json::Value;

use crate::common::*;
use crate::fake_cli::{FakeCli, PRESETS};

/// What each fake reports for one coder session (see the fakes' docstrings): its tokens, and
/// the dollars when the CLI reports them.
fn expected(preset: &str) -> (Value, Option<f64>) {
    let tokens = |input: u64, output: u64, cache_read: u64, cache_write: u64| serde_json::json!({"input": input, "output": output, "cache_read": cache_read, "cache_write": cache_write});
    match preset {
        "claude" => (tokens(1000, 200, 5000, 300), Some(0.05)),
        "codex" => (tokens(600, 200, 400, 0), None),
        "gemini" => (tokens(1500, 300, 500, 0), None),
        "aider" => (tokens(1000, 200, 0, 0), Some(0.05)),
        other => panic!("{other}"),
    }
}

#[test]
fn every_preset_completes_a_spec_and_records_what_its_cli_reported() {
    for preset in PRESETS {
        let cli = FakeCli::new(preset, "");
        let out = cli.run(&[]);
        assert_exit(&out, 0);
        assert!(
            cli.repo
                .statuses("001-p")
                .iter()
                .all(|(_, s)| s == "completed"),
            "{preset}: {:?}",
            cli.repo.statuses("001-p")
        );
        assert_eq!(
            cli.argv_log().len(),
            4,
            "{preset}: planner and three coders"
        );
        let (tokens, usd) = expected(preset);
        let mut session_ids = std::collections::HashSet::new();
        for id in ["core-a", "core-b", "polish"] {
            let attempts = cli.attempts(id);
            assert_eq!(attempts.len(), 1, "{preset} {id}: {attempts:?}");
            let a = &attempts[0];
            assert_eq!(a["outcome"], "completed", "{preset} {id}: {a}");
            assert_eq!(a["tokens"], tokens, "{preset} {id}: {a}");
            // codex's `exec --json` names no model; the others do.
            if preset != "codex" {
                assert!(a["model"].as_str().is_some_and(|m| !m.is_empty()), "{a}");
            }
            match usd {
                Some(usd) => {
                    assert_eq!(a["cost_usd"].as_f64(), Some(usd), "{preset}: {a}");
                    assert_eq!(a["cost_source"], "reported", "{preset}: {a}");
                }
                None => {
                    // No dollars from this CLI: none are made up (unless a price is known).
                    assert!(
                        a.get("cost_usd").is_none() || a["cost_source"] == "computed",
                        "{preset}: {a}"
                    );
                }
            }
            if preset == "aider" {
                assert!(
                    a.get("agent_session_id").is_none(),
                    "aider has no sessions: {a}"
                );
            } else {
                let sid = a["agent_session_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                assert!(!sid.is_empty(), "{preset}: {a}");
                session_ids.insert(sid);
            }
        }
        if preset != "aider" {
            assert_eq!(
                session_ids.len(),
                3,
                "{preset}: one agent session per chunk"
            );
        }
        // The journal's session ends carry the report too.
        let ends: Vec<Value> = cli
            .repo
            .events("001-p")
            .into_iter()
            .filter(|e| e["event"] == "session_end")
            .collect();
        assert_eq!(ends.len(), 4);
        assert!(
            ends.iter().all(|e| e["report"]["tokens"].is_object()),
            "{preset}: {ends:?}"
        );
    }
}

/// The generic command says nothing runner reads: its attempt records stay as they were.
#[test]
fn the_command_preset_records_no_report() {
    let repo = TestRepo::new();
    repo.add_spec("001-p");
    assert_exit(&repo.run_spec("001-p", &[]), 0);
    let a = &repo.chunk("001-p", "core-a")["attempts"][0];
    for key in ["cost_usd", "tokens", "agent_session_id", "model"] {
        assert!(a.get(key).is_none(), "{key}: {a}");
    }
    let ends: Vec<Value> = repo
        .events("001-p")
        .into_iter()
        .filter(|e| e["event"] == "session_end")
        .collect();
    assert_eq!(ends.len(), 4);
    assert!(ends.iter().all(|e| e.get("report").is_none()), "{ends:?}");
}

/// A session the CLI says failed is a failed attempt, even when the agent reported its chunk
/// done: claude's `is_error: true` with `subtype: "success"`, codex's `turn.failed`, aider's
/// failed model call (it exits 0). The CLI's words are in the reason; the attempt's cost is
/// still recorded.
#[test]
fn a_session_its_cli_says_failed_is_a_failed_attempt_with_the_clis_words() {
    let cases = [
        ("claude", "core-a 1 is-error", "API Error"),
        ("codex", "core-a 1 fail", "high demand"),
        ("gemini", "core-a 1 auth-fail", "authentication credentials"),
        ("aider", "core-a 1 model-fail", "AuthenticationError"),
    ];
    for (preset, rule, words) in cases {
        let cli = FakeCli::new(preset, "[run]\nmax_attempts = 1\n");
        cli.preset_script(rule);
        let out = cli.run(&[]);
        assert_exit(&out, 3);
        let attempts = cli.attempts("core-a");
        assert_eq!(attempts.len(), 1, "{preset}: {attempts:?}");
        let a = &attempts[0];
        assert_eq!(a["outcome"], "failed", "{preset}: {a}");
        let reason = a["reason"].as_str().unwrap();
        assert!(
            reason.to_lowercase().contains(&words.to_lowercase()),
            "{preset}: {reason}"
        );
        assert_eq!(cli.repo.chunk("001-p", "core-a")["status"], "failed");
        if preset == "claude" {
            // The agent did its work and reported it done: the CLI's error still decides.
            assert!(reason.contains("reported the chunk done"), "{reason}");
            assert!(a["cost_usd"].as_f64().is_some(), "{a}");
            assert!(a["agent_error"].as_str().is_some(), "{a}");
        }
        // The next chunk never started.
        assert_eq!(cli.repo.chunk("001-p", "core-b")["status"], "pending");
    }
}

/// The recovery evaluator asks the configured preset; the stream-json CLIs print its answer
/// inside their final message's JSON string (the fakes put what fake-agent said there and
/// nowhere else), and the answer is read from there.
#[test]
fn the_agent_evaluator_reads_its_answer_from_each_presets_final_message() {
    for preset in PRESETS {
        let cli = FakeCli::killed_after_a_session_with_partial_work(preset);
        let out = cli.runner(&["recover", "--spec", "001-p", "--json"]);
        assert_exit(&out, 0);
        let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
        let action = &report["specs"][0]["actions"][0];
        assert_eq!(action["decision"], "restart", "{preset}: {report}");
        let rec = &cli.repo.chunk("001-p", "core-a")["attempts"][0]["recovery"];
        assert_eq!(rec["source"], "agent", "{preset}: {rec}");
        assert_eq!(rec["reason"], "not worth it", "{preset}: {rec}");
        // The question went to the preset's own CLI.
        assert!(
            cli.argv_log().iter().any(|argv| argv[0] == preset),
            "{preset}"
        );
    }
}

#[test]
fn a_huge_model_name_or_session_id_or_a_negative_cost_never_reaches_the_plan() {
    // A broken or hostile CLI: a model name and a session id of a megabyte. The plan is
    // rewritten whole at every step of the run: it must not grow by what the agent printed.
    let cli = FakeCli::new("claude", "");
    cli.preset_script("core-a * big 1000000\ncore-b * ok -7.5\n");
    let out = cli.run(&[]);
    assert_exit(&out, 0);
    let plan_len = std::fs::metadata(cli.repo.plan_path("001-p"))
        .unwrap()
        .len();
    assert!(plan_len < 100_000, "the plan grew to {plan_len} bytes");
    let a = &cli.attempts("core-a")[0];
    assert_eq!(a["outcome"], "completed", "{a}");
    assert!(a.get("model").is_none(), "a megabyte is no model name");
    // The id runner chose for the session stays; a megabyte id from the output is not one.
    assert!(
        a["agent_session_id"]
            .as_str()
            .is_some_and(|s| s.len() < 100),
        "agent_session_id of {} bytes",
        a["agent_session_id"].as_str().map_or(0, str::len)
    );
    // A negative figure is no cost: it would lower what the spec is said to have spent.
    let b = &cli.attempts("core-b")[0];
    assert_eq!(b["outcome"], "completed", "{b}");
    assert!(b.get("cost_usd").is_none(), "{b}");
}

/// Every preset stops at the spec's budget: tokens (all four report them), and dollars for the
/// two that report dollars. The run exits 5 with the spending, the spec is `budget_exhausted`,
/// and no session starts past the budget.
#[test]
fn every_preset_stops_at_the_specs_budget() {
    let cases = PRESETS.iter().map(|p| (*p, "max_tokens = 1", 1)).chain([
        ("claude", "max_usd = 0.07", 2),
        ("aider", "max_usd = 0.07", 2),
    ]);
    for (preset, limit, sessions) in cases {
        let cli = FakeCli::new(preset, &format!("[budget]\n{limit}\n"));
        let out = cli.run(&[]);
        assert_exit(&out, 5);
        assert!(
            stderr(&out).contains("budget"),
            "{preset}: {}",
            stderr(&out)
        );
        assert_eq!(
            cli.argv_log().len(),
            sessions,
            "{preset} {limit}: sessions started"
        );
        let status = cli.runner(&["status", "--json"]);
        let v: Value = serde_json::from_str(&stdout(&status)).unwrap();
        let spec = &v["specs"][0];
        assert_eq!(
            spec["status"], "budget_exhausted",
            "{preset} {limit}: {spec}"
        );
        assert_eq!(
            spec["spent"]["sessions"], sessions as u64,
            "{preset}: {spec}"
        );
        assert!(
            spec["spent"]["tokens"].as_u64().unwrap() > 1,
            "{preset}: {spec}"
        );
    }
}

/// aider cannot report, so its clean exit is its report — but only where there is something to
/// judge: a session that did nothing to a chunk with no verification (core-a) completes
/// nothing; a chunk with a verification (core-b) is judged by it.
#[test]
fn an_aider_session_that_left_no_work_completes_no_chunk_without_a_verification() {
    let cli = FakeCli::new("aider", "[run]\nmax_attempts = 1\n");
    cli.repo.script("core-a * noop\n");
    let out = cli.run(&[]);
    assert_exit(&out, 3);
    let a = &cli.attempts("core-a")[0];
    assert_eq!(a["outcome"], "failed", "{a}");
    assert_eq!(
        cli.repo.branch_log("auto-claude/001-p").len(),
        0,
        "nothing committed"
    );
}
