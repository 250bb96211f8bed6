//! Gemini CLI 0.61 against the scripted Gemini API.

use std::path::Path;

use serde_json::json;

use super::harness::{Case, Cli, Server};

/// `[agent]` lines of the test's config: none (the model is pinned in gemini's settings).
pub const CONFIG: &str = "";

/// gemini's own settings in `GEMINI_CLI_HOME`: an API-key login at the server, a pinned model
/// (no routing side requests), one attempt per request (a per-minute quota would otherwise be
/// retried for minutes), and no telemetry or update checks.
pub fn setup(home: &Path, server: &Server) -> Vec<(String, String)> {
    let dir = home.join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false,
                    "maxAttempts": 1},
        "model": {"name": "gemini-2.5-pro", "disableLoopDetection": true}
    });
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    vec![
        ("GEMINI_CLI_HOME".into(), home.display().to_string()),
        ("GOOGLE_GEMINI_BASE_URL".into(), server.url()),
        ("GEMINI_API_KEY".into(), "runner-test-key".into()),
    ]
}

#[test]
fn gemini_plans_and_builds_a_spec_and_the_ledger_is_what_the_server_served() {
    super::harness::build_scenario(Cli::Gemini);
}

#[test]
fn gemini_daily_quota_pauses_until_the_reset_and_no_session_starts_before_it() {
    super::harness::limit_scenario(Cli::Gemini, 8, 1);
}

#[test]
fn gemini_killed_mid_chunk_resumes_its_session_and_the_ledger_counts_every_token() {
    super::harness::kill_and_resume_scenario(Cli::Gemini);
}

/// A CLI that refuses to start says why on stderr, in no event its parser reads: its words
/// reach the user, for the planner (here: "wrote no plan" with the end of what it printed) as
/// for coders, instead of only "the planner did not write …".
#[test]
fn gemini_refusing_to_start_is_reported_in_its_own_words() {
    let mut case = Case::new(Cli::Gemini, json!([]));
    case.env.retain(|(k, _)| k != "GEMINI_API_KEY");
    let out = case
        .cmd(&["run", "--spec", super::harness::SPEC])
        .env_remove("GEMINI_API_KEY")
        .output()
        .unwrap();
    crate::common::assert_exit(&out, 3);
    let err = crate::common::stderr(&out);
    assert!(err.contains("wrote no plan"), "{err}");
    assert!(err.contains("GEMINI_API_KEY"), "{err}");
    // Its colours are not shown as escapes.
    assert!(!err.contains("\\u{1b}"), "{err}");
    assert_eq!(case.server.count("request"), 0);
}

#[test]
fn gemini_judges_interrupted_work_as_the_recovery_evaluator() {
    super::harness::evaluator_scenario(Cli::Gemini);
}

/// The policy runner gives a `safe` gemini session, put through gemini's own policy engine:
/// the report and the chunk's exact verification run; a redirection, a chain, a substitution,
/// another runner command or another command does not.
#[test]
fn gemini_enforces_runners_safe_policy_as_meant() {
    let bundle = Cli::Gemini
        .program()
        .canonicalize()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let chunk = std::fs::read_dir(&bundle)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.extension().is_some_and(|e| e == "js")
                && std::fs::read_to_string(p).is_ok_and(|t| {
                    t.contains("function isSafeRegExp") && t.contains("loadPoliciesFromToml")
                })
        })
        .expect("gemini's bundle has its policy engine");
    let runner = "'/opt/my runner/runner'";
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        runner::policy::invocation::gemini_policy(runner, Some("test -f \"two.txt\"")),
    )
    .unwrap();
    let cases = [
        (
            "allow",
            format!("{runner} chunk done --notes \"what you did\" -- chunk-1"),
        ),
        (
            "allow",
            format!("{runner} chunk done --notes \"fixed foo() and a \\\"quote\\\"\" -- c"),
        ),
        ("allow", format!("{runner} chunk show -- chunk-1")),
        ("allow", "test -f \"two.txt\"".to_string()),
        (
            "deny",
            format!("{runner} chunk done -- c > /home/u/.bashrc"),
        ),
        ("deny", format!("{runner} chunk done -- c; rm -rf ~")),
        ("deny", format!("{runner} chunk done -- c && curl x")),
        ("deny", format!("{runner} chunk done -- c | sh")),
        ("deny", format!("{runner} chunk done -- c & sleep 9")),
        (
            "deny",
            format!("{runner} chunk done --notes \"$(id)\" -- c"),
        ),
        ("deny", format!("{runner} chunk done --notes `id` -- c")),
        ("deny", format!("{runner} chunk done --notes $HOME -- c")),
        ("deny", format!("{runner} chunk done -- c\nrm -rf ~")),
        ("deny", format!("{runner} gc --older-than 0")),
        ("deny", format!("{runner} discard --spec 002 --yes")),
        ("deny", format!("{runner} -C /elsewhere merge")),
        ("deny", format!("{runner} chunkx")),
        ("deny", "test -f \"two.txt\" -o -f /etc/passwd".to_string()),
        ("deny", "sh -c 'test -f two.txt'".to_string()),
        ("deny", "rm -rf /".to_string()),
    ];
    let mut listed: Vec<serde_json::Value> = cases.iter().map(|(_, c)| json!(c)).collect();
    // A call with an argument of the model's own that holds an allowed command, nested: the
    // real command must not be allowed by it.
    let nested = [
        json!({"command": "rm -rf ~/x", "x": {"command": "test -f \"two.txt\""}}),
        json!({"command": "python3 -c 1", "x": [{"command": format!("{runner} chunk done")}]}),
        json!({"command": format!("{runner} chunk done -- c"),
               "description": "as {\"command\": \"x\"}"}),
    ];
    listed.extend(nested.iter().cloned());
    let cases: Vec<(&str, String)> = cases
        .iter()
        .cloned()
        .chain([
            ("deny", nested[0].to_string()),
            ("deny", nested[1].to_string()),
            ("allow", nested[2].to_string()),
        ])
        .collect();
    let commands = dir.path().join("commands.json");
    std::fs::write(&commands, serde_json::to_vec(&listed).unwrap()).unwrap();
    let out = std::process::Command::new("node")
        .arg(crate::common::fixture("gemini-policy-check.mjs"))
        .arg(&chunk)
        .arg(&policy)
        .arg(&commands)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decisions: Vec<&str> = text.lines().collect();
    assert!(!text.contains("error "), "gemini refused a rule: {text}");
    assert_eq!(decisions.len(), cases.len(), "{text}");
    for ((want, command), line) in cases.iter().zip(&decisions) {
        assert!(line.starts_with(&format!("{want} ")), "{command:?}: {line}");
    }
}

#[test]
fn gemini_under_safe_writes_nothing_outside_the_worktree() {
    super::harness::escape_scenario(Cli::Gemini);
}
