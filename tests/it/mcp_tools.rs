//! `runner mcp` doing the work: the tools that create, run, show, review, merge, discard, undo
//! and recover a spec, called with the rmcp client — their schemas and annotations, the
//! workflow end to end (create_spec → start_run → review_spec → merge_spec → undo_last, with
//! git checked after each step, the run going on after the session closed), and refusals.

use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use crate::common::*;
use crate::mcp::{Client, block_on, call, interrupted_spec, ok};

/// `runner mcp` in the repository with the fake agent's variables (as `TestRepo::cmd` sets
/// them): the runs `start_run` starts inherit them.
async fn start_with_agent(repo: &TestRepo) -> Client {
    let mut cmd = crate::common::tokio_runner_command();
    cmd.arg("mcp")
        .current_dir(&repo.root)
        .env("FAKE_AGENT_SCRIPT", repo.tmp.path().join("agent-script"))
        .env("FAKE_AGENT_LOG", repo.tmp.path().join("agent-log"))
        .env("FAKE_AGENT_PROMPTS", repo.tmp.path().join("prompts"))
        .env("FAKE_AGENT_PLAN", fixture("plans/two-phases.json"));
    for var in [
        "RUNNER_SPEC_DIR",
        "RUNNER_CHUNK_ID",
        "RUNNER_SESSION_ID",
        "RUNNER_RUN_ID",
    ] {
        cmd.env_remove(var);
    }
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("starting runner mcp");
    ().serve(transport).await.expect("initializing the session")
}

/// A refusal's structured content: `{code, kind, message, hints}`, its text beginning with
/// `runner: ` and the message.
#[track_caller]
fn error_of(result: Result<rmcp::model::CallToolResult, String>) -> Value {
    let result = result.expect("a refusal is a tool result");
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let report = result
        .structured_content
        .clone()
        .expect("a refusal has structured content");
    let keys: Vec<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["code", "kind", "message", "hints"], "{report}");
    let text = &result.content[0].as_text().unwrap().text;
    assert!(
        text.starts_with(&format!("runner: {}", report["message"].as_str().unwrap())),
        "{text}"
    );
    report
}

fn all_formats(schema: &Value, path: &str, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(f)) = map.get("format") {
                out.push(format!("{path}: {f}"));
            }
            for (k, v) in map {
                all_formats(v, &format!("{path}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                all_formats(v, &format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

#[test]
fn every_schema_keeps_to_standard_formats_and_the_annotations_say_what_each_tool_does() {
    let repo = TestRepo::new();
    block_on(async {
        let client = start_with_agent(&repo).await;
        let tools = client.list_all_tools().await.unwrap();
        let mut found = Vec::new();
        for tool in &tools {
            let input = Value::Object(tool.input_schema.as_ref().clone());
            all_formats(&input, &format!("{} input", tool.name), &mut found);
            let output = Value::Object(tool.output_schema.clone().unwrap().as_ref().clone());
            all_formats(&output, &format!("{} output", tool.name), &mut found);
        }
        let odd: Vec<&String> = found
            .iter()
            .filter(|f| !STANDARD_FORMATS.contains(&f.rsplit(": ").next().unwrap()))
            .collect();
        assert!(odd.is_empty(), "non-standard formats: {odd:?}");
        // The dates keep theirs.
        assert!(
            found.iter().any(|f| f.ends_with(": date-time")),
            "{found:?}"
        );

        let read_only = [
            "chunk_show",
            "list_runs",
            "review_spec",
            "show_plan",
            "show_run",
            "status",
            "summarize_interrupted_run",
        ];
        let destructive = ["discard_spec", "merge_spec", "undo_last"];
        for tool in &tools {
            let a = tool.annotations.as_ref().expect("annotations");
            let name = tool.name.as_ref();
            assert_eq!(a.read_only_hint, Some(read_only.contains(&name)), "{name}");
            if !read_only.contains(&name) {
                assert_eq!(
                    a.destructive_hint,
                    Some(destructive.contains(&name)),
                    "{name}"
                );
                assert!(a.idempotent_hint.is_some(), "{name}");
            }
        }
        // Numeric arguments: a number or a string of digits.
        let start = tools.iter().find(|t| t.name == "start_run").unwrap();
        let drain = &start.input_schema["properties"]["drain_timeout"];
        assert_eq!(drain["anyOf"][0]["type"], "integer", "{drain}");
        assert_eq!(drain["anyOf"][1]["type"], "string", "{drain}");
        // The instructions list the workflow.
        let info = client.peer_info().unwrap();
        let text = info.instructions.clone().unwrap();
        for step in [
            "create_spec",
            "start_run",
            "review_spec",
            "merge_spec",
            "undo_last",
        ] {
            assert!(text.contains(step), "{step}: {text}");
        }
        client.cancel().await.unwrap();
    });
}

/// The whole workflow over MCP, with git's view after each step; the run started by
/// `start_run` goes on after the session that started it is closed.
#[test]
fn create_run_review_merge_and_undo_over_mcp() {
    let repo = TestRepo::new();
    // Each coder session takes a second: the run is still going when the session closes.
    repo.script("* * slow 1\n");
    let agent = fixture("fake-agent").display().to_string();
    let main_before = repo.git(&["rev-parse", "main"]);
    let spec = "001-add-a-sign-many-helper";
    let run_id = block_on(async {
        let client = start_with_agent(&repo).await;
        let created = ok(call(
            &client,
            "create_spec",
            json!({"description": "Add a sign many helper"}),
        )
        .await);
        assert_eq!(created["created"], spec, "{created}");
        assert!(created.get("error").is_none(), "{created}");
        assert!(repo.spec_dir(spec).join("spec.md").is_file());
        // Nothing committed, nothing to commit: the state folder is git-ignored.
        assert_eq!(repo.git(&["status", "--porcelain"]), "");

        // The same description again: the spec is continued, not made twice.
        let again = ok(call(
            &client,
            "create_spec",
            json!({"description": "Add a sign many helper"}),
        )
        .await);
        assert_eq!(again["created"], Value::Null, "{again}");
        assert_eq!(again["resumed"], spec);

        // Named loosely, as a model writes it; a number as a string of digits.
        let started = ok(call(
            &client,
            "start_run",
            json!({"spec": "sign_many", "agent_command": &agent, "drain_timeout": "5"}),
        )
        .await);
        let run_id = started["run_id"].as_str().unwrap().to_string();
        assert!(run_id.len() == 13 && run_id.starts_with('r'), "{started}");
        assert_eq!(started["spec"], spec);
        assert_eq!(started["state"], "running", "{started}");
        assert!(
            repo.spec_dir(spec)
                .join(format!("runs/{run_id}.json"))
                .is_file()
        );

        // A second start while it runs: busy, code 4, and no second run.
        let busy = error_of(call(&client, "start_run", json!({"spec": "001"})).await);
        assert_eq!(
            (busy["code"].clone(), busy["kind"].clone()),
            (json!(4), json!("busy"))
        );
        assert!(
            busy["message"].as_str().unwrap().contains(&run_id),
            "{busy}"
        );
        client.cancel().await.unwrap();
        run_id
    });

    // The session is closed; the run goes on to the end.
    wait_for_end(&repo, spec);
    let statuses = repo.statuses(spec);
    assert!(
        statuses.iter().all(|(_, s)| s == "completed"),
        "{statuses:?}"
    );
    let branch = format!("auto-claude/{spec}");
    assert_eq!(
        repo.branch_log(&branch).len(),
        3,
        "{:?}",
        repo.branch_log(&branch)
    );
    let log =
        std::fs::read_to_string(repo.spec_dir(spec).join(format!("runs/{run_id}.log"))).unwrap();
    assert!(log.contains("complete"), "{log}");

    block_on(async {
        let client = start_with_agent(&repo).await;
        let run = ok(call(&client, "show_run", json!({"run_id": &run_id})).await);
        assert_eq!(run["state"], "ended", "{run}");
        assert_eq!(run["outcome"], "complete", "{run}");
        let plan = ok(call(&client, "show_plan", json!({"spec": "sign_many"})).await);
        assert_eq!(
            (plan["completed"].clone(), plan["total"].clone()),
            (json!(3), json!(3))
        );
        assert_eq!(
            plan["phases"][0]["chunks"][0]["status"], "completed",
            "{plan}"
        );

        let review = ok(call(&client, "review_spec", json!({"spec": "001"})).await);
        assert_eq!(review["commits"].as_array().unwrap().len(), 3, "{review}");
        assert_eq!(review["merge"]["clean"], true);

        // Not on a base checkout with uncommitted changes; nothing moves.
        repo.write("README.md", "# changed\n");
        let dirty = error_of(call(&client, "merge_spec", json!({"spec": "001"})).await);
        assert_eq!(dirty["kind"], "needs_human", "{dirty}");
        assert!(
            dirty["message"]
                .as_str()
                .unwrap()
                .contains("uncommitted changes"),
            "{dirty}"
        );
        assert_eq!(repo.git(&["rev-parse", "main"]), main_before);
        repo.git(&["checkout", "--", "README.md"]);

        let merged = ok(call(&client, "merge_spec", json!({"spec": "sign_many"})).await);
        assert_eq!(merged["target"], "main", "{merged}");
        let tip = repo.git(&["rev-parse", "main"]);
        assert_ne!(tip, main_before);
        assert_eq!(merged["commit"].as_str().unwrap(), tip.trim());
        assert!(git_result(&repo.root, &["rev-parse", "--verify", &branch]).is_err());
        assert_eq!(repo.git(&["status", "--porcelain"]), "");

        let undone = ok(call(&client, "undo_last", json!({"spec": "001"})).await);
        assert_eq!(undone["kind"], "merge", "{undone}");
        assert_eq!(repo.git(&["rev-parse", "main"]), main_before);
        assert_eq!(repo.branch_log(&branch).len(), 3);
        client.cancel().await.unwrap();
    });
}

/// Until the spec's run lock is free and its status says it ended.
fn wait_for_end(repo: &TestRepo, spec: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let out = repo.runner(&["status", "--json"]);
        let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
        // Complete, and no longer held: `status` says complete as soon as the plan is, while
        // the run may still hold the spec for an instant (its record then reads active).
        let ended = v["specs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["spec"] == spec)
            .is_some_and(|s| s["status"] == "complete" && s["running"].is_null());
        if ended {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the background run did not end: {v}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn the_spec_tools_show_discard_undo_and_recover_an_interrupted_spec() {
    let spec = "001-mcp";
    let (repo, _) = interrupted_spec(spec);
    let branch = format!("auto-claude/{spec}");
    block_on(async {
        let client = start_with_agent(&repo).await;
        let plan = ok(call(&client, "show_plan", json!({})).await);
        assert_eq!(plan["spec"], spec);
        assert_eq!(plan["current_chunk"], "core-b", "{plan}");
        // polish waits for its phase's dependency.
        assert_eq!(plan["next_chunk"], Value::Null, "{plan}");
        let statuses: Vec<&str> = plan["phases"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["chunks"].as_array().unwrap())
            .map(|c| c["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["completed", "in_progress", "pending"]);

        let dry = ok(call(&client, "recover", json!({"dry_run": true})).await);
        assert_eq!(dry["dry_run"], true);
        assert_eq!(repo.chunk(spec, "core-b")["status"], "in_progress");
        // core-b's session had reported it done: recovery settles it.
        let done = ok(call(&client, "recover", json!({"spec": "mcp"})).await);
        assert_eq!(done["specs"][0]["spec"], spec, "{done}");
        assert_eq!(repo.chunk(spec, "core-b")["status"], "completed", "{done}");

        let tip = repo.git(&["rev-parse", &branch]);
        let discarded = ok(call(&client, "discard_spec", json!({"spec": "001"})).await);
        assert!(
            discarded["backup"]
                .as_str()
                .unwrap()
                .starts_with("refs/auto-claude/backup/"),
            "{discarded}"
        );
        assert!(git_result(&repo.root, &["rev-parse", "--verify", &branch]).is_err());
        assert!(
            repo.statuses(spec).iter().all(|(_, s)| s == "pending"),
            "{:?}",
            repo.statuses(spec)
        );
        let undone = ok(call(&client, "undo_last", json!({"spec": "001"})).await);
        assert_eq!(undone["kind"], "discard", "{undone}");
        assert_eq!(repo.git(&["rev-parse", &branch]), tip);
        assert_eq!(repo.chunk(spec, "core-a")["status"], "completed");
        client.cancel().await.unwrap();
    });
}

#[test]
fn create_spec_returns_similar_work_and_the_caller_chooses() {
    let repo = TestRepo::new();
    block_on(async {
        let client = start_with_agent(&repo).await;
        let first = ok(call(
            &client,
            "create_spec",
            json!({"description": "Add a login page with JWT tokens"}),
        )
        .await);
        let spec = first["created"].as_str().unwrap().to_string();
        let like = json!({"description": "Login page with JWT tokens and a logout button"});
        let found = ok(call(&client, "create_spec", like.clone()).await);
        assert_eq!(found["created"], Value::Null, "{found}");
        assert_eq!(found["resumed"], Value::Null, "{found}");
        assert!(
            found["error"]["message"]
                .as_str()
                .unwrap()
                .contains("say which to continue"),
            "{found}"
        );
        assert_eq!(found["candidates"][0]["spec"], spec.as_str());
        assert_eq!(
            std::fs::read_dir(repo.path(".auto-claude/specs"))
                .unwrap()
                .count(),
            1
        );

        let mut pick = like.clone();
        pick["choice"] = json!("1");
        let chosen = ok(call(&client, "create_spec", pick).await);
        assert_eq!(chosen["resumed"], spec.as_str(), "{chosen}");
        assert_eq!(chosen["created"], Value::Null);

        let mut bad = like.clone();
        bad["choice"] = json!("first");
        let e = error_of(call(&client, "create_spec", bad).await);
        assert_eq!(e["code"], 2);
        let message = e["message"].as_str().unwrap();
        assert!(message.contains("expected a whole number"), "{message}");
        assert!(!message.contains("usize"), "{message}");

        let mut fresh = like;
        fresh["new_spec"] = json!(true);
        let made = ok(call(&client, "create_spec", fresh).await);
        assert!(
            made["created"].as_str().unwrap().starts_with("002-"),
            "{made}"
        );
        client.cancel().await.unwrap();
    });
}

#[test]
fn hostile_and_wrong_arguments_are_refused_with_structured_errors() {
    let spec = "001-mcp";
    let (repo, _) = interrupted_spec(spec);
    let plan_before = std::fs::read(repo.plan_path(spec)).unwrap();
    let main_before = repo.git(&["rev-parse", "main"]);
    block_on(async {
        let client = start_with_agent(&repo).await;
        for tool in [
            "show_plan",
            "review_spec",
            "merge_spec",
            "discard_spec",
            "undo_last",
            "start_run",
            "recover",
        ] {
            for hint in ["../x", "/etc", "a/../../b"] {
                let e = error_of(call(&client, tool, json!({ "spec": hint })).await);
                assert_eq!(
                    (e["code"].clone(), e["kind"].clone()),
                    (json!(2), json!("bad_input")),
                    "{tool} {hint}: {e}"
                );
            }
        }
        let unknown =
            error_of(call(&client, "show_plan", json!({"spec": "nothing-like-it"})).await);
        assert!(
            unknown["message"]
                .as_str()
                .unwrap()
                .contains("no spec matches"),
            "{unknown}"
        );
        for run in ["../../etc/passwd", "/etc/passwd", "runs/x.json"] {
            let e = error_of(call(&client, "show_run", json!({ "run_id": run })).await);
            assert_eq!(e["code"], 2, "{run}: {e}");
            assert!(
                e["message"].as_str().unwrap().contains("No run found"),
                "{e}"
            );
        }
        // Arguments that do not fit the schema get the same structure.
        let e = error_of(call(&client, "start_run", json!({"drain_timeout": "soon"})).await);
        assert_eq!(e["code"], 2);
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("expected a whole number"),
            "{e}"
        );
        let e = error_of(call(&client, "merge_spec", json!({"mode": "rebase"})).await);
        assert_eq!(e["kind"], "bad_input", "{e}");
        client.cancel().await.unwrap();
    });
    assert_eq!(std::fs::read(repo.plan_path(spec)).unwrap(), plan_before);
    assert_eq!(repo.git(&["rev-parse", "main"]), main_before);
    // The hidden --run-id start_run hands its run: a run id, unused for the spec.
    let runs = std::fs::read_dir(repo.spec_dir(spec).join("runs")).unwrap();
    let used = runs
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".json")
                .map(str::to_string)
        })
        .next()
        .unwrap();
    for (id, says) in [
        ("../x", "is not a run id"),
        ("rABCDEF012345", "is not a run id"),
        (used.as_str(), "already has a run of that id"),
    ] {
        let out = repo.run_spec(spec, &["--run-id", id]);
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(says), "{id}: {}", stderr(&out));
    }
    assert_eq!(std::fs::read(repo.plan_path(spec)).unwrap(), plan_before);
}

/// start_run's refusals are the caller's errors with their reasons: a value `runner run`'s
/// flags refuse, and a refusal the run makes just after writing its record (a base branch to
/// re-pin to, which needs a confirmation nobody can give) — not `running`.
#[test]
fn start_run_refusals_say_why() {
    let (repo, _) = interrupted_spec("001-mcp");
    block_on(async {
        let client = start_with_agent(&repo).await;
        // A value the run's own flags refuse: the reason, not only an exit status.
        let e = error_of(call(&client, "start_run", json!({"agent": "nope"})).await);
        assert_eq!(e["code"], 2, "{e}");
        assert!(e["message"].as_str().unwrap().contains("'nope'"), "{e}");
        // A refusal the run makes after writing its record (here: a base branch to re-pin
        // to, which needs a confirmation nobody can give) is the caller's error, not
        // `running`; a value that starts with `-` is the flag's value, not a flag of runner
        // run's.
        for base in ["no-such-branch", "--help"] {
            let e = error_of(call(&client, "start_run", json!({ "base_branch": base })).await);
            let message = e["message"].as_str().unwrap();
            assert!(message.contains(base), "{e}");
            assert!(!message.contains("stopped at once"), "{e}");
        }
        client.cancel().await.unwrap();
    });
}

#[test]
fn start_run_with_plan_only_plans_and_builds_nothing() {
    let repo = TestRepo::new();
    repo.add_spec("001-plan-first");
    block_on(async {
        let client = start_with_agent(&repo).await;
        let started = ok(call(
            &client,
            "start_run",
            json!({"spec": "001", "plan_only": true, "agent_command": fixture("fake-agent")}),
        )
        .await);
        let run_id = started["run_id"].as_str().unwrap().to_string();
        wait_for("the plan-only run to end", || {
            let out = repo.runner(&["show", &run_id, "--json"]);
            serde_json::from_str::<Value>(&stdout(&out)).is_ok_and(|v| v["outcome"] == "planned")
        });
        let plan = ok(call(&client, "show_plan", json!({"spec": "001"})).await);
        assert_eq!(
            (plan["completed"].clone(), plan["total"].clone()),
            (json!(0), json!(3))
        );
        client.cancel().await.unwrap();
    });
    assert!(
        repo.agent_log().iter().all(|l| l.starts_with("planner ")),
        "{:?}",
        repo.agent_log()
    );
    assert!(repo.branch_log("auto-claude/001-plan-first").is_empty());
}
