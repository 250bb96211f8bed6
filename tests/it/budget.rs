//! The spec's money and token budget end to end through the fake CLIs: claude is given what is
//! left (`--max-budget-usd`), agents without dollars stop between sessions on `max_tokens`,
//! the spec ends `budget_exhausted` with exit 5 and a list of what was spent on what, and
//! `status --json` / `review` show the ledger.

use serde_json::Value;

use crate::common::*;
use crate::fake_cli::FakeCli;

/// The `--max-budget-usd` of every claude invocation, in order.
fn budgets(cli: &FakeCli) -> Vec<String> {
    cli.argv_log()
        .iter()
        .map(|argv| {
            let at = argv
                .iter()
                .position(|a| a == "--max-budget-usd")
                .unwrap_or_else(|| panic!("no --max-budget-usd in {argv:?}"));
            argv[at + 1].clone()
        })
        .collect()
}

fn status_json(cli: &FakeCli) -> Value {
    let out = cli.runner(&["status", "--json"]);
    assert_exit(&out, 0);
    let all: Value = serde_json::from_str(&stdout(&out)).unwrap();
    all["specs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["spec"] == "001-p")
        .cloned()
        .unwrap()
}

/// The sum of the attempt records' dollars and tokens, and their number, plus the planner's
/// ledger.
fn ledger_sum(cli: &FakeCli) -> (f64, u64, u64) {
    let plan = cli.repo.plan("001-p");
    let (mut usd, mut tokens, mut sessions) = (0.0, 0, 0);
    for phase in plan["phases"].as_array().unwrap() {
        for chunk in phase["subtasks"].as_array().unwrap() {
            for a in chunk["attempts"].as_array().into_iter().flatten() {
                usd += a["cost_usd"].as_f64().unwrap_or(0.0);
                tokens += a["tokens"]
                    .as_object()
                    .map_or(0, |t| t.values().map(|v| v.as_u64().unwrap()).sum::<u64>());
                sessions += 1;
            }
        }
    }
    let planner: Value = serde_json::from_str(
        &std::fs::read_to_string(cli.repo.spec_dir("001-p").join("planner_ledger.json")).unwrap(),
    )
    .unwrap();
    usd += planner["cost_usd"].as_f64().unwrap();
    tokens += planner["tokens"].as_u64().unwrap();
    sessions += planner["sessions"].as_u64().unwrap();
    (usd, tokens, sessions)
}

#[test]
fn claude_is_given_what_is_left_and_the_spec_stops_budget_exhausted() {
    let cli = FakeCli::new("claude", "[budget]\nmax_usd = 0.12\n");
    let out = cli.run(&[]);
    assert_exit(&out, 5);
    // Planner 0.05, core-a 0.05, then core-b is given the 0.02 left: claude stops there.
    assert_eq!(budgets(&cli), ["0.12", "0.07", "0.02"]);
    let err = stderr(&out);
    assert!(err.contains("budget_exhausted"), "{err}");
    assert!(err.contains("$0.12 of the $0.12"), "{err}");
    assert!(err.contains("planner: $0.05"), "{err}");
    assert!(err.contains("chunk core-a: $0.05"), "{err}");
    assert!(err.contains("chunk core-b: $0.02"), "{err}");
    assert!(err.contains("--max-usd"), "{err}");
    // claude's stop at its budget is not a failed attempt: core-b is pending again, its
    // attempt closed as budget_exhausted with its cost.
    let b = cli.repo.chunk("001-p", "core-b");
    assert_eq!(b["status"], "pending", "{b}");
    let a = &b["attempts"][0];
    assert_eq!(a["outcome"], "budget_exhausted", "{a}");
    assert_eq!(a["cost_usd"].as_f64(), Some(0.02), "{a}");
    assert_eq!(cli.repo.chunk("001-p", "core-a")["status"], "completed");
    let s = status_json(&cli);
    assert_eq!(s["status"], "budget_exhausted", "{s}");
    assert_eq!(s["budget"]["max_usd"].as_f64(), Some(0.12), "{s}");
    assert!(s["budget"]["max_tokens"].is_null(), "{s}");
    let (usd, tokens, sessions) = ledger_sum(&cli);
    assert!(
        (s["spent"]["usd"].as_f64().unwrap() - usd).abs() < 1e-9,
        "{s}"
    );
    assert!((usd - 0.12).abs() < 1e-9, "{usd}");
    assert_eq!(s["spent"]["tokens"].as_u64(), Some(tokens), "{s}");
    assert_eq!(s["spent"]["sessions"].as_u64(), Some(sessions), "{s}");
    assert_eq!(sessions, 3);

    // Another run with the same budget starts nothing.
    let again = cli.run(&[]);
    assert_exit(&again, 5);
    assert_eq!(budgets(&cli).len(), 3);
    // --max-usd overrides the config for one run: 0.20 leaves 0.08 for core-b.
    let more = cli.run(&["--max-usd", "0.20"]);
    assert_exit(&more, 5);
    assert_eq!(budgets(&cli)[3..], ["0.08", "0.03"]);
    assert_eq!(cli.repo.chunk("001-p", "core-b")["status"], "completed");
    // The budget raised in the config: the run goes on to the end, and the mark goes.
    cli.repo.write_config(&format!(
        "[agent]\npreset = \"claude\"\nprogram = \"{}\"\n[budget]\nmax_usd = 1\n",
        fixture("fake-claude").display()
    ));
    let done = cli.run(&[]);
    assert_exit(&done, 0);
    assert!(cli.repo.plan("001-p").get("budget_exhausted").is_none());
    let s = status_json(&cli);
    assert_eq!(s["status"], "complete", "{s}");
    let (usd, _, sessions) = ledger_sum(&cli);
    assert!(
        (s["spent"]["usd"].as_f64().unwrap() - usd).abs() < 1e-9,
        "{s}"
    );
    assert_eq!(s["spent"]["sessions"].as_u64(), Some(sessions), "{s}");
}

#[test]
fn a_zero_budget_starts_no_session() {
    let cli = FakeCli::new("claude", "[budget]\nmax_usd = 0\n");
    let out = cli.run(&[]);
    assert_exit(&out, 5);
    assert!(cli.argv_log().is_empty());
    assert!(stderr(&out).contains("is spent"), "{}", stderr(&out));
    // A bad flag is a usage error, nothing run.
    for bad in ["-1", "NaN", "inf", "lots"] {
        assert_exit(&cli.run(&["--max-usd", bad]), 2);
    }
    assert!(cli.argv_log().is_empty());
}

#[test]
fn agents_without_dollars_stop_between_sessions_on_max_tokens() {
    // A session of the fakes: codex 1200 tokens, gemini 2300 (see their docstrings).
    for (preset, max) in [("codex", 2000), ("gemini", 3000)] {
        let cli = FakeCli::new(preset, &format!("[budget]\nmax_tokens = {max}\n"));
        let out = cli.run(&[]);
        assert_exit(&out, 5);
        // The planner's session and core-a's; core-b never started.
        assert_eq!(cli.argv_log().len(), 2, "{preset}: {:?}", cli.argv_log());
        assert_eq!(cli.repo.chunk("001-p", "core-b")["status"], "pending");
        assert!(
            cli.repo.chunk("001-p", "core-b").get("attempts").is_none(),
            "{preset}"
        );
        let err = stderr(&out);
        assert!(
            err.contains(&format!("max_tokens {max}")),
            "{preset}: {err}"
        );
        let s = status_json(&cli);
        assert_eq!(s["status"], "budget_exhausted", "{preset}: {s}");
        let (_, tokens, sessions) = ledger_sum(&cli);
        assert_eq!(s["spent"]["tokens"].as_u64(), Some(tokens), "{s}");
        assert!(tokens >= max, "{preset}: {tokens}");
        assert_eq!(sessions, 2);
        assert_eq!(s["budget"]["max_tokens"].as_u64(), Some(max), "{s}");
    }
}

/// The ledger is in files an agent can edit: a run never takes the spending as less than what
/// it saw itself. Here the agent of core-b zeroes the costs recorded before it (and writes
/// garbage into the planner's ledger): the run still stops where the real spending says.
#[test]
fn an_agent_lowering_the_ledger_does_not_buy_itself_budget() {
    let cli = FakeCli::new("claude", "[budget]\nmax_usd = 0.155\n");
    cli.repo.script("core-b * lower-ledger\n");
    let out = cli.run(&[]);
    assert_exit(&out, 5);
    // 0.155: planner, core-a, core-b ran (given 0.15, 0.10, 0.05: cents rounded down); polish
    // would get less than a cent.
    let b = budgets(&cli);
    assert_eq!(b, ["0.15", "0.10", "0.05"], "{}", stderr(&out));
    assert_eq!(cli.repo.chunk("001-p", "core-b")["status"], "completed");
    assert_eq!(cli.repo.chunk("001-p", "polish")["status"], "pending");
}

#[test]
fn review_and_status_show_the_cost_per_chunk() {
    let cli = FakeCli::new("claude", "");
    cli.preset_script("core-b 1 ok 0.25\n");
    assert_exit(&cli.run(&[]), 0);
    // No budget: claude is given none.
    assert!(
        cli.argv_log()
            .iter()
            .all(|argv| !argv.contains(&"--max-budget-usd".to_string()))
    );
    let out = cli.runner(&["review", "--spec", "001-p", "--json"]);
    assert_exit(&out, 0);
    let r: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let items = r["cost"]["items"].as_array().unwrap();
    let of = |chunk: Value| {
        items
            .iter()
            .find(|i| i["chunk"] == chunk)
            .unwrap_or_else(|| panic!("{chunk} in {items:?}"))
            .clone()
    };
    assert_eq!(of(Value::Null)["usd"].as_f64(), Some(0.05));
    for (id, usd) in [("core-a", 0.05), ("core-b", 0.25), ("polish", 0.05)] {
        let line = of(Value::from(id));
        let a = &cli.attempts(id)[0];
        assert_eq!(line["usd"].as_f64(), a["cost_usd"].as_f64(), "{id}");
        assert_eq!(line["usd"].as_f64(), Some(usd), "{id}");
        assert_eq!(line["tokens"].as_u64(), Some(6500), "{id}: {line}");
        assert_eq!(line["sessions"], 1);
    }
    assert!((r["cost"]["total"]["usd"].as_f64().unwrap() - 0.40).abs() < 1e-9);
    assert_eq!(r["cost"]["total"]["sessions"], 4);
    let text = stdout(&cli.runner(&["review", "--spec", "001-p"]));
    assert!(
        text.contains("core-b: $0.25, 6500 tokens, 1 session"),
        "{text}"
    );
    assert!(text.contains("notional"), "{text}");
    let status = stdout(&cli.runner(&["status"]));
    assert!(status.contains("spent $0.40, 26000 tokens"), "{status}");
    let s = status_json(&cli);
    assert!(s["budget"]["max_usd"].is_null(), "{s}");
    let (usd, tokens, sessions) = ledger_sum(&cli);
    assert!(
        (s["spent"]["usd"].as_f64().unwrap() - usd).abs() < 1e-9,
        "{s}"
    );
    assert_eq!(s["spent"]["tokens"].as_u64(), Some(tokens));
    assert_eq!(s["spent"]["sessions"].as_u64(), Some(sessions));
}

/// A session cut off by a shutdown keeps what it cost on its attempt (recovery closes it).
#[test]
fn an_interrupted_session_keeps_its_cost_on_its_attempt() {
    let cli = FakeCli::new("claude", "");
    cli.repo.script("core-a * graceful 30\n");
    let child = cli
        .cmd(&["run", "--spec", "001-p", "--drain-timeout", "20"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = cli.repo.spec_dir("001-p").join("fake-agent.pid");
    wait_for("the agent", || pid_file.exists());
    // SAFETY: a plain kill(2) of our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 130);
    let a = &cli.attempts("core-a")[0];
    assert_eq!(a["cost_usd"].as_f64(), Some(0.05), "{a}");
    assert_eq!(a["recovery"]["decision"], "next", "{a}");
    let s = status_json(&cli);
    assert!(
        (s["spent"]["usd"].as_f64().unwrap() - 0.10).abs() < 1e-9,
        "{s}"
    );
}

/// A run killed during a session (no shutdown to record its report): what the session cost
/// still counts before the next session starts, in the budget and in `status`. Recovery
/// completes core-a (it reported done), so no later take of core-a would read its report.
#[test]
fn a_session_of_a_killed_run_counts_against_the_budget() {
    let cli = FakeCli::new("claude", "[budget]\nmax_usd = 0.12\n");
    let out = cli
        .cmd(&["run", "--spec", "001-p"])
        .env("RUNNER_FAILPOINTS", "after_coder_session")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{}", stderr(&out));
    assert_eq!(budgets(&cli), ["0.12", "0.07"]);
    let out = cli.run(&[]);
    assert_exit(&out, 5);
    // Planner 0.05 and core-a 0.05 are spent: core-b is given the 0.02 left.
    assert_eq!(budgets(&cli), ["0.12", "0.07", "0.02"]);
    let s = status_json(&cli);
    assert!(
        (s["spent"]["usd"].as_f64().unwrap() - 0.12).abs() < 1e-9,
        "{s}"
    );
}

/// `budget.max_usd = 0`: no session starts, the recovery evaluator's neither. A run that
/// recovers a chunk with partial work under `evaluator = "agent"` decides by the rules when the
/// spec's budget is spent (instead of paying for an agent session the ledger never counts), or
/// while a usage limit pauses the spec.
#[test]
fn a_spent_budget_or_a_pause_starts_no_recovery_evaluator_session() {
    for case in ["budget", "paused"] {
        let cli = FakeCli::killed_after_a_session_with_partial_work("claude");
        let sessions = cli.argv_log().len();
        let code = if case == "budget" {
            cli.repo.write_config(&format!(
                "[agent]\npreset = \"claude\"\nprogram = \"{}\"\n[recovery]\nevaluator = \"agent\"\n[budget]\nmax_usd = 0\n",
                fixture("fake-claude").display()
            ));
            5
        } else {
            let dir = cli.repo.path(".auto-claude/pauses");
            std::fs::create_dir_all(&dir).unwrap();
            let now = chrono::Utc::now();
            let until = (now + chrono::Duration::hours(1)).to_rfc3339();
            std::fs::write(
                dir.join("001-p.json"),
                format!(
                    r#"{{"until":"{until}","reason":"x","preset":"claude","session_id":null,"set_at":"{}"}}"#,
                    now.to_rfc3339()
                ),
            )
            .unwrap();
            6
        };
        let out = cli.run(&[]);
        assert_exit(&out, code);
        assert_eq!(
            cli.argv_log().len(),
            sessions,
            "{case}: {:?}",
            cli.argv_log()
        );
        let rec = &cli.repo.chunk("001-p", "core-a")["attempts"][0]["recovery"];
        assert_eq!(rec["source"], "rules", "{case}: {rec}");
    }
}
