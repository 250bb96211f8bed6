//! The readers over the real CLIs' recordings (`fixtures/agent-output/<cli>/recorded/`) and
//! over the edge cases a recording does not have.

use super::*;
use serde_json::Value;

fn recorded_dir(cli: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/agent-output")
        .join(cli)
        .join("recorded")
}

/// Every recorded case of `cli`: its name and what the CLI printed (stdout, then stderr, as
/// runner's log holds both).
fn cases(cli: &str) -> Vec<(String, Vec<u8>)> {
    let mut names: Vec<String> = std::fs::read_dir(recorded_dir(cli))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".stdout").map(str::to_string))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "{cli}: no recordings");
    names
        .into_iter()
        .map(|name| {
            let mut bytes =
                std::fs::read(recorded_dir(cli).join(format!("{name}.stdout"))).unwrap();
            bytes.extend(std::fs::read(recorded_dir(cli).join(format!("{name}.stderr"))).unwrap());
            (name, bytes)
        })
        .collect()
}

fn events_of(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(|v| v.get("type").is_some())
        .collect()
}

/// The tool calls a recording holds, read from its events here (independently of the reader):
/// each call's name and the command or file it names.
fn calls_in(cli: &str, events: &[Value]) -> Vec<(String, String)> {
    let mut calls = Vec::new();
    for e in events {
        match cli {
            "claude" if e["type"] == "assistant" => {
                for b in e["message"]["content"].as_array().into_iter().flatten() {
                    if b["type"] == "tool_use" {
                        let input = &b["input"];
                        let what = input["command"].as_str().or(input["file_path"].as_str());
                        calls.push((b["name"].as_str().unwrap().into(), what.unwrap().into()));
                    }
                }
            }
            "codex" if e["type"] == "item.started" => match e["item"]["type"].as_str() {
                Some("command_execution") => calls.push((
                    "shell".into(),
                    e["item"]["command"].as_str().unwrap().into(),
                )),
                Some("file_change") => calls.push((
                    "edit".into(),
                    e["item"]["changes"][0]["path"].as_str().unwrap().into(),
                )),
                _ => {}
            },
            "gemini" if e["type"] == "tool_use" => {
                let p = &e["parameters"];
                let what = p["command"].as_str().or(p["file_path"].as_str());
                calls.push((
                    e["tool_name"].as_str().unwrap().into(),
                    what.unwrap().into(),
                ));
            }
            _ => {}
        }
    }
    calls
}

#[test]
fn every_recorded_case_renders_without_a_raw_json_line_and_names_its_tool_calls() {
    for cli in ["claude", "codex", "gemini", "aider"] {
        let mut calls_seen = 0;
        for (name, bytes) in cases(cli) {
            let shown = of_lines(&bytes);
            let shown_lines: Vec<String> = shown.iter().map(Activity::one_line).collect();
            for event in bytes.split(|b| *b == b'\n') {
                if serde_json::from_slice::<Value>(event).is_ok_and(|v| v.get("type").is_some()) {
                    let start = String::from_utf8_lossy(&event[..event.len().min(40)]);
                    assert!(
                        !shown_lines.iter().any(|l| l.contains(start.as_ref())),
                        "{cli}/{name}: a raw event shown: {start}"
                    );
                }
            }
            if cli != "aider" {
                // (aider's text may hold JSON: a plan it writes.)
                for line in &shown_lines {
                    assert!(!line.contains("{\"type\""), "{cli}/{name}: {line}");
                }
            }
            let tools: Vec<(String, String)> = shown
                .iter()
                .filter_map(|a| match a {
                    Activity::Tool { name, detail } => Some((name.clone(), detail.clone())),
                    _ => None,
                })
                .collect();
            let calls = calls_in(cli, &events_of(&bytes));
            assert_eq!(
                tools.len(),
                calls.len(),
                "{cli}/{name}: {tools:?} vs {calls:?}"
            );
            for ((tool, detail), (call, what)) in tools.iter().zip(&calls) {
                assert_eq!(tool, call, "{cli}/{name}");
                // The command as written (codex's without its `bash -lc` wrapper), the file
                // relative to the worktree.
                let short = what.rsplit("/.worktrees/auto-claude/").next().unwrap();
                assert!(
                    what.contains(detail.as_str()) || detail == short,
                    "{cli}/{name}: {detail:?} does not name {what:?}"
                );
                assert!(!detail.is_empty(), "{cli}/{name}");
            }
            calls_seen += calls.len();
            // Every session says something.
            if !bytes.trim_ascii().is_empty() {
                assert!(!shown.is_empty(), "{cli}/{name}");
            }
        }
        if cli != "aider" {
            assert!(calls_seen > 0, "{cli}: the recordings hold tool calls");
        }
    }
}

fn recorded(cli: &str, case: &str) -> Vec<Activity> {
    let (_, bytes) = cases(cli).into_iter().find(|(n, _)| n == case).unwrap();
    of_lines(&bytes)
}

fn tool(name: &str, detail: &str) -> Activity {
    Activity::Tool {
        name: name.into(),
        detail: detail.into(),
    }
}

fn ok(brief: &str) -> Activity {
    Activity::Result {
        ok: true,
        brief: brief.into(),
    }
}

fn said(text: &str) -> Activity {
    Activity::Said(text.into())
}

fn note(text: &str) -> Activity {
    Activity::Note(text.into())
}

const REPORT: &str =
    "/work/main/target/debug/runner chunk done --notes \"what you did\" -- chunk-1";
const REPORTED: &str =
    "chunk chunk-1 reported done; runner verifies and commits it when the session ends";

#[test]
fn a_recorded_claude_coder_session_reads_as_a_person_would_tell_it() {
    assert_eq!(
        recorded("claude", "suite-build-coder"),
        vec![
            note("session started (model claude-sonnet-4-5-20250929)"),
            said("Writing the file."),
            tool("Write", "one.txt"),
            ok(
                "File created successfully at: /tmp/.tmpTJ8kFU/project/.worktrees/auto-claude/one.txt (file state is current in your context — no need to Read it back)"
            ),
            tool("Bash", REPORT),
            ok(REPORTED),
            said("Done."),
            note("finished (3 turns, $0.018)"),
        ]
    );
    assert_eq!(tool("Bash", "cargo test").one_line(), "$ cargo test");
    assert_eq!(tool("Write", "one.txt").one_line(), "✎ one.txt");
    assert_eq!(tool("Grep", "fn main").one_line(), "Grep: fn main");
}

#[test]
fn recorded_claude_errors_and_limits_are_notes() {
    let limit = recorded("claude", "usage-limit");
    assert!(limit.contains(&note("usage limit reached")), "{limit:?}");
    assert!(
        limit.contains(&note(
            "ended with an error: You've hit your session limit · resets 9:18am (UTC)"
        )),
        "{limit:?}"
    );
    let unknown = recorded("claude", "resume-unknown");
    assert!(
        unknown.iter().any(|a| a
            .one_line()
            .starts_with("ended with an error: No conversation found")),
        "{unknown:?}"
    );
    // The same words on stderr: text.
    assert!(
        unknown
            .iter()
            .any(|a| matches!(a, Activity::Said(t) if t.starts_with("No conversation found"))),
        "{unknown:?}"
    );
    let retries = recorded("claude", "usage-limit-apikey-retries");
    assert!(
        retries.contains(&note("API error 429, retry 1 of 3")),
        "{retries:?}"
    );
    let budget = recorded("claude", "budget");
    assert!(
        budget.iter().any(|a| a.one_line()
            == "ended with an error: Reached maximum budget ($0.01) — $0.0192 spent"),
        "{budget:?}"
    );
}

#[test]
fn a_recorded_codex_coder_session_says_each_command_once_with_its_result() {
    assert_eq!(
        recorded("codex", "suite-build-coder"),
        vec![
            note("session started"),
            tool("edit", "one.txt"),
            tool("shell", REPORT),
            ok(REPORTED),
            said("Done."),
        ]
    );
    let limit = recorded("codex", "limit");
    assert!(
        limit.iter().any(|a| a
            .one_line()
            .starts_with("turn failed: You’ve hit your usage limit")),
        "{limit:?}"
    );
}

#[test]
fn a_recorded_gemini_session_joins_its_text_pieces_and_keeps_its_stderr_as_text() {
    let coder = recorded("gemini", "suite-build-coder");
    assert_eq!(
        coder[2..],
        [
            note("session started (model gemini-2.5-pro)"),
            tool("write_file", "one.txt"),
            ok("ok"),
            tool("run_shell_command", REPORT),
            ok(REPORTED),
            said("Done."),
            note("finished (3600 tokens, 2 tool calls)"),
        ]
    );
    assert!(matches!(&coder[0], Activity::Said(t) if t.starts_with("Warning: 256-color")));
    // "Plan w" + "ritten.": one paragraph.
    let planner = recorded("gemini", "suite-build-planner");
    assert!(planner.contains(&said("Plan written.")), "{planner:?}");
    assert!(!planner.contains(&said("Plan w")), "{planner:?}");
    let limit = recorded("gemini", "suite-limit-coder");
    assert!(
        limit.iter().any(|a| a
            .one_line()
            .starts_with("ended with an error: [API Error: You have exhausted")),
        "{limit:?}"
    );
}

#[test]
fn a_recorded_aider_session_is_its_text_without_colours() {
    let (_, bytes) = cases("aider")
        .into_iter()
        .find(|(n, _)| n == "suite-build-coder")
        .unwrap();
    let shown = of_lines(&bytes);
    let lines = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty())
        .count();
    assert_eq!(shown.len(), lines);
    assert!(
        shown
            .iter()
            .all(|a| matches!(a, Activity::Said(t) if !t.contains('\u{1b}')))
    );
}

#[test]
fn text_lines_are_shown_as_a_terminal_showed_them() {
    assert_eq!(
        of_line(b"\x1b[31mFAILED\x1b[0m test_x\r"),
        vec![said("FAILED test_x")]
    );
    assert_eq!(of_line(b"10%\r50%\r100% done"), vec![said("100% done")]);
    assert_eq!(of_line(b"   "), vec![]);
    // Not UTF-8: read as well as it can be.
    assert_eq!(of_line(b"caf\xe9 ok"), vec![said("caf\u{fffd} ok")]);
    // JSON that is no CLI's event is text; an array too.
    assert_eq!(of_line(b"{\"a\": 1}"), vec![said("{\"a\": 1}")]);
    assert_eq!(of_line(b"[1,2]"), vec![said("[1,2]")]);
}

#[test]
fn an_unknown_event_or_one_cut_short_says_nothing() {
    assert_eq!(of_line(br#"{"type":"brand_new","x":1}"#), vec![]);
    assert_eq!(of_line(br#"{"type":"stream_event","event":{}}"#), vec![]);
    assert_eq!(
        of_line(br#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"}}"#),
        vec![]
    );
    assert_eq!(
        of_line(br#"{"type":"assistant","message":{"content":[{"type":"text","text":"cut her"#),
        vec![]
    );
    // Fields of the wrong type: nothing made up, nothing panics.
    assert_eq!(
        of_line(br#"{"type":"assistant","message":{"content":"no blocks"}}"#),
        vec![]
    );
    assert_eq!(
        of_line(
            br#"{"type":"item.completed","item":{"type":"command_execution","exit_code":"x"}}"#
        ),
        vec![
            tool("shell", ""),
            Activity::Result {
                ok: false,
                brief: "failed".into()
            }
        ]
    );
}

#[test]
fn after_the_logs_cut_marker_the_rest_of_a_cut_line_is_dropped() {
    let log = b"{\"type\":\"system\",\"subtype\":\"init\",\"model\":\"m\"}\n{\"type\":\"assis\n[runner: 9000 bytes of output cut here; the log keeps the first 500 and the last 500 bytes (agent.max_log_bytes = 1000)]\nxt\":\"late\"}]}}\n{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"whole\"}}\nplain\n";
    assert_eq!(
        of_lines(log),
        vec![
            note("session started (model m)"),
            note(
                "runner: 9000 bytes of output cut here; the log keeps the first 500 and the last 500 bytes (agent.max_log_bytes = 1000)"
            ),
            said("whole"),
            said("plain"),
        ]
    );
}

#[test]
fn a_ten_megabyte_line_is_read_in_bounded_time_and_kept_bounded() {
    let big = "x".repeat(10 << 20);
    let start = std::time::Instant::now();
    let text = of_line(big.as_bytes());
    let event = format!(
        r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"{big}"}},{{"type":"tool_use","name":"Bash","input":{{"command":"{big}"}}}}]}}}}"#
    );
    let events = of_line(event.as_bytes());
    let deltas: String = (0..2000)
        .map(|_| format!("{{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"{}\",\"delta\":true}}\n", "y".repeat(5000)))
        .collect();
    let joined = of_lines(deltas.as_bytes());
    assert!(
        start.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    let Activity::Said(t) = &text[0] else {
        panic!()
    };
    assert_eq!(t.chars().count(), MAX_TEXT + 1);
    assert!(t.ends_with('…'));
    assert_eq!(events.len(), 2);
    assert!(events[0].one_line().len() <= MAX_TEXT * 4 + 3);
    let Activity::Tool { detail, .. } = &events[1] else {
        panic!()
    };
    assert_eq!(detail.chars().count(), MAX_DETAIL + 1);
    assert_eq!(joined.len(), 1);
    assert_eq!(joined[0].one_line().chars().count(), MAX_TEXT + 1);
}

#[test]
fn the_latest_activity_of_a_log_is_its_last_words_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("output.log");
    assert_eq!(latest_in_log(&log), None);
    let (_, bytes) = cases("claude")
        .into_iter()
        .find(|(n, _)| n == "suite-build-coder")
        .unwrap();
    // Cut before the result: the latest is the agent's last words.
    let needle = b"{\"type\":\"result\"";
    let upto = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap();
    std::fs::write(&log, &bytes[..upto]).unwrap();
    assert_eq!(latest_in_log(&log).as_deref(), Some("Done."));
    std::fs::write(&log, b"step one\n  two\nthree\nfour").unwrap();
    assert_eq!(latest_in_log(&log).as_deref(), Some("four"));
    std::fs::write(
        &log,
        b"{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"a\\nb\",\"delta\":true}\n",
    )
    .unwrap();
    assert_eq!(latest_in_log(&log).as_deref(), Some("a b"));
}
