//! `runner mcp` end to end: the official SDK's client (rmcp) starts the real binary as a child
//! process, in a repository whose spec a real run with the fake agent left interrupted, lists
//! the tools and calls every one of them, successes and refusals.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::common::*;

pub type Client = RunningService<RoleClient, ()>;

/// A spec whose run was killed after its second coder session: core-a is committed, core-b is
/// in progress (its session reported done, nothing verified yet), polish is pending. Returns
/// the repository and the session id of core-b's attempt.
pub fn interrupted_spec(spec: &str) -> (TestRepo, String) {
    let repo = TestRepo::new();
    repo.add_spec(spec);
    run_killed_at(&repo, spec, "after_coder_session@2");
    let core_b = repo.chunk(spec, "core-b");
    assert_eq!(core_b["status"], "in_progress", "{core_b}");
    let session = core_b["attempts"]
        .as_array()
        .and_then(|a| a.last())
        .and_then(|a| a["session_id"].as_str())
        .expect("core-b's attempt has a session id")
        .to_string();
    (repo, session)
}

/// `runner mcp` started by the rmcp client in the repository, with `env` (the variables an agent
/// session hands its tools) and none of the test process's own RUNNER_* variables.
pub async fn start(repo: &TestRepo, env: &[(&str, &str)]) -> Client {
    let mut cmd = crate::common::tokio_runner_command();
    cmd.arg("mcp")
        .current_dir(&repo.root)
        .env_remove("RUNNER_SPEC_DIR")
        .env_remove("RUNNER_CHUNK_ID")
        .env_remove("RUNNER_SESSION_ID")
        .env_remove("RUNNER_RUN_ID");
    for (key, value) in env {
        cmd.env(key, value);
    }
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("starting runner mcp");
    ().serve(transport).await.expect("initializing the session")
}

pub async fn call(client: &Client, tool: &str, args: Value) -> Result<CallToolResult, String> {
    let args = args.as_object().expect("arguments are an object").clone();
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .map_err(|e| e.to_string())
}

/// A successful call's structured output (the same JSON as its text content).
#[track_caller]
pub fn ok(result: Result<CallToolResult, String>) -> Value {
    let result = result.expect("the call is answered");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let structured = result
        .structured_content
        .clone()
        .expect("structured output");
    let text = result.content[0]
        .as_text()
        .expect("a text content")
        .text
        .clone();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), structured);
    structured
}

/// A refused call: a tool result marked isError, with runner's message as its text.
#[track_caller]
pub fn refused(result: Result<CallToolResult, String>) -> String {
    let result = result.expect("a refusal is a tool result, not a protocol error");
    assert_eq!(result.is_error, Some(true), "{result:?}");
    result.content[0]
        .as_text()
        .expect("a text content")
        .text
        .clone()
}

/// What `runner ARGS` prints on stderr with the session's variables, after exit 2.
fn cli_error(repo: &TestRepo, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = repo.cmd(args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = cmd.output().unwrap();
    assert_exit(&out, 2);
    stderr(&out).trim_end().to_string()
}

/// `value` fits the output schema of `tool`: every key it requires is there, and every key
/// there is one it declares (the schemas describe what is sent, written by hand or derived).
#[track_caller]
fn conforms(tools: &[rmcp::model::Tool], tool: &str, value: &Value) {
    let schema = tools
        .iter()
        .find(|t| t.name == tool)
        .and_then(|t| t.output_schema.clone())
        .expect("the tool has an output schema");
    for key in schema["required"].as_array().into_iter().flatten() {
        let key = key.as_str().unwrap();
        assert!(
            value.get(key).is_some(),
            "{tool}: {key} missing from {value}"
        );
    }
    let declared = schema["properties"].as_object().expect("properties");
    for key in value.as_object().unwrap().keys() {
        assert!(
            declared.contains_key(key),
            "{tool}: {key} is not in the schema"
        );
    }
}

pub fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        tokio::time::timeout(std::time::Duration::from_secs(120), future)
            .await
            .expect("the MCP exchange finished in time")
    })
}

#[test]
fn every_tool_answers_with_structured_output_and_refuses_as_runner_chunk_does() {
    let spec = "001-mcp";
    let (repo, session) = interrupted_spec(spec);
    let spec_dir = repo.spec_dir(spec).display().to_string();
    let env = [
        ("RUNNER_SPEC_DIR", spec_dir.as_str()),
        ("RUNNER_SESSION_ID", session.as_str()),
    ];
    block_on(async {
        let client = start(&repo, &env).await;

        // Every tool has an input and an output schema, both objects.
        let tools = client.list_all_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "chunk_done",
                "chunk_fail",
                "chunk_show",
                "create_spec",
                "discard_spec",
                "list_runs",
                "merge_spec",
                "recover",
                "review_spec",
                "show_plan",
                "show_run",
                "start_run",
                "status",
                "summarize_interrupted_run",
                "undo_last",
            ]
        );
        for tool in &tools {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            let output = tool.output_schema.as_ref().expect("an output schema");
            assert_eq!(output["type"], "object", "{}", tool.name);
            assert!(tool.description.is_some());
        }

        // status: what `runner status --json` says.
        let status = ok(call(&client, "status", json!({})).await);
        conforms(&tools, "status", &status);
        let cli: Value =
            serde_json::from_str(&stdout(&repo.runner(&["status", "--json"]))).unwrap();
        assert_eq!(status["specs"], cli["specs"]);
        assert_eq!(status["specs"][0]["spec"], spec);
        assert_eq!(status["specs"][0]["current_chunk"], "core-b");
        assert_eq!(
            ok(call(&client, "status", json!({"spec": "001"})).await)["specs"][0]["spec"],
            spec
        );
        let unknown = refused(call(&client, "status", json!({"spec": "999-nope"})).await);
        assert!(
            unknown.starts_with("runner: ") && unknown.contains("999-nope"),
            "{unknown}"
        );

        // chunk_show: the session's chunk by default, any chunk by id.
        let shown = ok(call(&client, "chunk_show", json!({})).await);
        conforms(&tools, "chunk_show", &shown);
        assert_eq!(shown["spec"], spec);
        assert_eq!(shown["current"]["chunk"]["id"], "core-b");
        assert_eq!(shown["progress"], json!({"completed": 1, "total": 3}));
        let polish = ok(call(&client, "chunk_show", json!({"chunk": "polish"})).await);
        assert_eq!(polish["current"]["chunk"]["status"], "pending");
        let nope = refused(call(&client, "chunk_show", json!({"chunk": "nope"})).await);
        assert!(nope.contains("no chunk \"nope\""), "{nope}");

        // A session reports only its own chunk: the refusal is runner chunk's, word for word,
        // and the plan is untouched.
        let before = std::fs::read(repo.plan_path(spec)).unwrap();
        let other = refused(call(&client, "chunk_done", json!({"chunk": "polish"})).await);
        assert!(
            other.contains("may only report on the chunk it is working on"),
            "{other}"
        );
        assert_eq!(other, cli_error(&repo, &["chunk", "done", "polish"], &env));
        let done_one = refused(
            call(
                &client,
                "chunk_fail",
                json!({"chunk": "core-a", "reason": "no"}),
            )
            .await,
        );
        assert_eq!(
            done_one,
            cli_error(&repo, &["chunk", "fail", "core-a", "--reason", "no"], &env)
        );
        assert_eq!(std::fs::read(repo.plan_path(spec)).unwrap(), before);

        // Arguments that do not fit the input schema are refused the same way (the model sees
        // why); an unknown tool is a protocol error. Nothing changes.
        for (tool, args) in [
            ("chunk_done", json!({})),
            ("chunk_done", json!({"chunk": 5})),
            ("chunk_fail", json!({"chunk": "core-b"})),
            ("chunk_done", json!({"chunk": "core-b", "note": "typo"})),
            ("status", json!({"spec": ["001"]})),
        ] {
            let text = refused(call(&client, tool, args.clone()).await);
            assert!(
                text.contains("failed to deserialize parameters"),
                "{tool} {args}: {text}"
            );
        }
        let unknown_tool = call(&client, "no_such_tool", json!({})).await;
        assert!(unknown_tool.is_err(), "{unknown_tool:?}");
        assert_eq!(std::fs::read(repo.plan_path(spec)).unwrap(), before);

        // Its own chunk: recorded on the attempt, left for the run to verify.
        let done = ok(call(
            &client,
            "chunk_done",
            json!({"chunk": "core-b", "notes": "via mcp"}),
        )
        .await);
        conforms(&tools, "chunk_done", &done);
        assert_eq!(done["chunk"], "core-b");
        assert_eq!(done["spec"], spec);
        assert!(
            done["message"].as_str().unwrap().contains("reported done"),
            "{done}"
        );
        let core_b = repo.chunk(spec, "core-b");
        assert_eq!(core_b["status"], "in_progress");
        let attempt = core_b["attempts"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(attempt["reported"], "done");
        assert_eq!(attempt["report_notes"], "via mcp");
        let failed = ok(call(
            &client,
            "chunk_fail",
            json!({"chunk": "core-b", "reason": "tests do not pass"}),
        )
        .await);
        conforms(&tools, "chunk_fail", &failed);
        assert!(
            failed["message"]
                .as_str()
                .unwrap()
                .contains("reported failed")
        );
        let attempt = repo.chunk(spec, "core-b")["attempts"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(attempt["reported"], "fail");
        assert_eq!(attempt["report_notes"], "tests do not pass");
        client.cancel().await.unwrap();

        // A stray session of an earlier attempt is refused, as by `runner chunk`.
        let stray_env = [
            ("RUNNER_SPEC_DIR", spec_dir.as_str()),
            ("RUNNER_SESSION_ID", "s-stray"),
        ];
        let stray = start(&repo, &stray_env).await;
        let before = std::fs::read(repo.plan_path(spec)).unwrap();
        let text = refused(call(&stray, "chunk_done", json!({"chunk": "core-b"})).await);
        assert!(text.contains("not the current attempt"), "{text}");
        assert_eq!(
            text,
            cli_error(&repo, &["chunk", "done", "core-b"], &stray_env)
        );
        assert_eq!(std::fs::read(repo.plan_path(spec)).unwrap(), before);
        stray.cancel().await.unwrap();
    });
}

/// The command's `--json` object without `schema`, and without the heartbeat's age (a second
/// may pass between the two readings).
fn cli_json(repo: &TestRepo, args: &[&str]) -> Value {
    let out = repo.runner(args);
    assert_exit(&out, 0);
    let mut v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    v.as_object_mut().unwrap().remove("schema");
    without_ages(v)
}

fn without_ages(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("heartbeat_age_secs");
    }
    if let Some(runs) = v.get_mut("runs").and_then(Value::as_array_mut) {
        for run in runs {
            run.as_object_mut().unwrap().remove("heartbeat_age_secs");
        }
    }
    v
}

/// `v` without the checkpoint's age: a second may pass between two readings of one summary.
fn without_checkpoint_age(mut v: Value) -> Value {
    if let Some(o) = v.get_mut("checkpoint").and_then(Value::as_object_mut) {
        o.remove("age_secs");
    }
    v
}

#[test]
fn the_run_tools_answer_as_runs_show_and_resume_do_and_start_nothing() {
    let (repo, _) = interrupted_spec("001-mcp-a");
    // The second spec in a slot of its own (in the default one, its run would first settle
    // the first spec's interrupted chunk).
    repo.add_spec("002-mcp-b");
    let agent = fixture("fake-agent").display().to_string();
    let killed = repo
        .cmd(&[
            "run",
            "--spec",
            "002-mcp-b",
            "--slot",
            "b",
            "--agent-command",
            &agent,
        ])
        .env("RUNNER_FAILPOINTS", "after_coder_session@1")
        .output()
        .unwrap();
    assert_eq!(killed.status.code(), None, "{}", stderr(&killed));
    let runs_before = std::fs::read_dir(repo.spec_dir("001-mcp-a").join("runs"))
        .unwrap()
        .count();
    block_on(async {
        let client = start(&repo, &[]).await;
        let tools = client.list_all_tools().await.unwrap();

        // list_runs: both killed runs, as `runner runs --stale --json` lists them.
        let stale = ok(call(&client, "list_runs", json!({"stale": true})).await);
        conforms(&tools, "list_runs", &stale);
        let runs = stale["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{stale}");
        for run in runs {
            assert_eq!(run["state"], "stale");
        }
        assert_eq!(
            without_ages(stale.clone()),
            cli_json(&repo, &["runs", "--stale", "--json"])
        );

        // show_run: `runner show RUN --json`, by a prefix.
        let run_a = runs.iter().find(|r| r["spec"] == "001-mcp-a").unwrap();
        let id = run_a["run_id"].as_str().unwrap();
        let details = ok(call(&client, "show_run", json!({"run_id": &id[..6]})).await);
        conforms(&tools, "show_run", &details);
        assert_eq!(details["run_id"], id);
        assert_eq!(details["branch"], "auto-claude/001-mcp-a");
        assert_eq!(
            without_ages(details.clone()),
            cli_json(&repo, &["show", id, "--json"])
        );
        let unknown = refused(call(&client, "show_run", json!({"run_id": "rzzzz"})).await);
        assert!(
            unknown.contains("No run found matching 'rzzzz'"),
            "{unknown}"
        );
        let bad = refused(call(&client, "show_run", json!({})).await);
        assert!(bad.contains("failed to deserialize parameters"), "{bad}");

        // summarize_interrupted_run: the summary of the run the hint names, as `runner resume
        // --no-run --json`.
        let answer = ok(call(&client, "summarize_interrupted_run", json!({"hint": "001"})).await);
        conforms(&tools, "summarize_interrupted_run", &answer);
        let summary = answer["summary"].clone();
        assert_eq!(summary["success"], true);
        assert_eq!(summary["run_id"], id);
        assert_eq!(summary["spec"], "001-mcp-a");
        assert_eq!(summary["summary"]["current_chunk"]["id"], "core-b");
        let cli = cli_json(&repo, &["resume", "001", "--no-run", "--json"]);
        for key in [
            "success",
            "run_id",
            "spec",
            "source",
            "confidence_score",
            "summary",
        ] {
            assert_eq!(
                without_checkpoint_age(summary[key].clone()),
                without_checkpoint_age(cli[key].clone()),
                "{key}"
            );
        }
        // A hint that matches both: the list to choose from, then the choice.
        let both = ok(call(&client, "summarize_interrupted_run", json!({"hint": "mcp"})).await);
        conforms(&tools, "summarize_interrupted_run", &both);
        assert_eq!(both["summary"], Value::Null, "{both}");
        assert_eq!(both["user_hint"], "mcp");
        let matches = both["matches"].as_array().unwrap();
        assert_eq!(matches.len(), 2);
        let second = &matches[1];
        let picked = ok(call(
            &client,
            "summarize_interrupted_run",
            json!({"hint": "mcp", "choice": second["choice"]}),
        )
        .await);
        assert_eq!(picked["summary"]["success"], true);
        assert_eq!(picked["summary"]["spec"], second["spec"]);
        // The choice as a string of digits, as a model may write it.
        let by_text = ok(call(
            &client,
            "summarize_interrupted_run",
            json!({"hint": "mcp", "choice": second["choice"].to_string()}),
        )
        .await);
        assert_eq!(by_text["summary"]["spec"], second["spec"]);
        let none = refused(
            call(
                &client,
                "summarize_interrupted_run",
                json!({"hint": "zzz-nothing"}),
            )
            .await,
        );
        assert!(
            none.contains("No run found matching 'zzz-nothing'"),
            "{none}"
        );
        for choice in [json!(-1), json!("one")] {
            let bad = refused(
                call(
                    &client,
                    "summarize_interrupted_run",
                    json!({ "choice": choice }),
                )
                .await,
            );
            assert!(
                bad.contains("expected a whole number of 0 or more"),
                "{bad}"
            );
            assert!(!bad.contains("usize"), "{bad}");
        }
        client.cancel().await.unwrap();
    });
    // Nothing was started or written: no new run record, the plans as the runs left them.
    let runs_after = std::fs::read_dir(repo.spec_dir("001-mcp-a").join("runs"))
        .unwrap()
        .count();
    assert_eq!(runs_after, runs_before);
    assert_eq!(repo.chunk("001-mcp-a", "core-b")["status"], "in_progress");
}

/// An empty or blank hint is refused by summarize_interrupted_run as `runner resume ""` refuses
/// it, with the same words: it is not read as no hint (the most recent run).
#[test]
fn an_empty_hint_is_refused_by_the_tool_as_by_the_command() {
    let (repo, _) = interrupted_spec("001-mcp-empty");
    let cli = cli_error(&repo, &["resume", "", "--no-run"], &[]);
    assert!(cli.contains("the hint is empty"), "{cli}");
    block_on(async {
        let client = start(&repo, &[]).await;
        for hint in ["", "   "] {
            let refusal = refused(
                call(
                    &client,
                    "summarize_interrupted_run",
                    json!({ "hint": hint }),
                )
                .await,
            );
            assert!(refusal.contains("the hint is empty"), "{hint:?}: {refusal}");
        }
        client.cancel().await.unwrap();
    });
    let cli_blank = cli_error(&repo, &["resume", "   ", "--no-run"], &[]);
    assert_eq!(cli_blank, cli);
}

/// Raw JSON-RPC lines: a line that is not JSON-RPC is skipped, the server keeps answering,
/// stdout carries nothing but protocol, and the server exits 0 when stdin closes.
#[test]
fn the_server_skips_garbage_prints_only_protocol_and_ends_with_stdin() {
    let repo = TestRepo::new();
    let mut child = repo
        .cmd(&["mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    writeln!(stdin, "not json at all {{").unwrap();
    writeln!(stdin, "\u{0}\u{1}garbage").unwrap();
    writeln!(stdin, "{initialize}").unwrap();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["id"], 1, "{first}");
    assert_eq!(first["result"]["serverInfo"]["name"], "runner");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    )
    .unwrap();
    // Outside an Auto-Claude project the tool is refused, the server lives on.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "chunk_show", "arguments": {}}});
    writeln!(stdin, "{call}").unwrap();
    drop(stdin);
    let rest: Vec<Value> = lines
        .map(|l| serde_json::from_str(&l.unwrap()).expect("stdout is JSON-RPC only"))
        .collect();
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert_eq!(rest[0]["id"], 2);
    assert_eq!(rest[0]["result"]["tools"].as_array().unwrap().len(), 15);
    assert_eq!(rest[1]["id"], 3);
    assert_eq!(rest[1]["result"]["isError"], true, "{}", rest[1]);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

/// `agent.mcp = true`: each claude session gets `--mcp-config <its folder>/mcp.json
/// --strict-mcp-config` (and the `mcp__runner` tools rule), the file starts this very runner as
/// `runner mcp` with the session's variables, and a session that reports through the server's
/// `chunk_done` (instead of `runner chunk done`) completes the spec.
#[test]
fn the_claude_preset_hands_each_session_runners_mcp_server() {
    use crate::fake_cli::FakeCli;
    let cli = FakeCli::new("claude", "mcp = true\n");
    let log = cli.repo.tmp.path().join("mcp-log");
    // The work is done but not reported by `runner chunk`: only the MCP call reports it.
    cli.repo.script("* * uncommitted\n");
    cli.preset_script("* * mcp chunk_done\n");
    let out = cli
        .cmd(&["run", "--spec", "001-p"])
        .env("FAKE_MCP_LOG", &log)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    for (id, status) in cli.repo.statuses("001-p") {
        assert_eq!(status, "completed", "{id}");
        let last = cli.attempts(&id).last().cloned().unwrap();
        assert_eq!(last["reported"], "done", "{id}: {last}");
        assert_eq!(last["report_notes"], "reported over MCP", "{id}");
    }
    let answers: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 3, "{answers:?}");
    for answer in &answers {
        assert!(
            answer["tools"]
                .as_array()
                .unwrap()
                .contains(&json!("chunk_done"))
        );
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }

    // Every session (the planner's too) got the flags, its own file, and the tools rule.
    let sessions = cli.repo.spec_dir("001-p").join("sessions");
    let argvs = cli.argv_log();
    assert_eq!(argvs.len(), 4, "{argvs:?}");
    for argv in &argvs {
        let at = argv
            .iter()
            .position(|a| a == "--mcp-config")
            .expect("--mcp-config");
        let file = std::path::Path::new(&argv[at + 1]);
        assert_eq!(argv[at + 2], "--strict-mcp-config");
        assert!(
            file.starts_with(&sessions) && file.ends_with("mcp.json"),
            "{argv:?}"
        );
        let tools = argv.iter().position(|a| a == "--allowedTools").unwrap();
        assert_eq!(
            argv[tools + 1..tools + 3],
            [
                format!("Bash({} chunk:*)", runner_word()),
                "mcp__runner".into()
            ]
        );
        let config: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        let server = &config["mcpServers"]["runner"];
        assert_eq!(server["command"], RUNNER);
        assert!(std::path::Path::new(RUNNER).is_absolute());
        assert_eq!(server["args"], json!(["mcp"]));
        let session = file
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        assert_eq!(server["env"]["RUNNER_SESSION_ID"], session);
        assert_eq!(
            server["env"]["RUNNER_SPEC_DIR"],
            cli.repo.spec_dir("001-p").display().to_string()
        );
    }

    // Off by default: no MCP flags.
    let plain = FakeCli::new("claude", "");
    assert_exit(&plain.run(&[]), 0);
    // (Not any word with `mcp` in it: runner's own path, in the tools rule, may have one.)
    assert!(
        !plain
            .argv_log()
            .iter()
            .flatten()
            .any(|a| a.contains("--mcp-config") || a.contains("mcp__runner"))
    );
}
