//! Agent presets end to end: for each preset a stand-in program named like the real CLI (put
//! first on PATH) records its command line and its prompt, then lets `fixtures/fake-agent` do
//! the chunk's work and report it. The command lines must be docs/agents.md's, the prompt must
//! arrive, and the chunks must complete. Also: a missing program, `[agent] program`, the agent
//! a spec remembers, and unknown preset names.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::*;

/// One call of a stand-in program: its name, its arguments and the prompt it got.
#[derive(Debug)]
struct Call {
    program: String,
    args: Vec<String>,
    prompt: String,
    resumed: String,
}

/// A folder of stand-ins named `names`, each recording its call under `calls/` and then
/// running fake-agent with the prompt (aider's from its `--message-file`).
struct Stand {
    bin: PathBuf,
    calls: PathBuf,
}

impl Stand {
    fn new(repo: &TestRepo, names: &[&str]) -> Stand {
        let bin = repo.tmp.path().join("bin");
        let calls = repo.tmp.path().join("calls");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&calls).unwrap();
        for name in names {
            write_stand_in(&bin.join(name), &calls);
        }
        Stand { bin, calls }
    }

    /// `runner ARGS` with the stand-ins first on PATH.
    fn runner(&self, repo: &TestRepo, args: &[&str]) -> std::process::Output {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![self.bin.clone()];
        dirs.extend(std::env::split_paths(&path));
        repo.cmd(args)
            .env("PATH", std::env::join_paths(dirs).unwrap())
            .output()
            .unwrap()
    }

    /// Every call so far, in order.
    fn calls(&self) -> Vec<Call> {
        let mut names: Vec<String> = std::fs::read_dir(&self.calls)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".args"))
            .collect();
        names.sort();
        names
            .iter()
            .map(|n| {
                let stem = n.trim_end_matches(".args");
                let read = |ext: &str| {
                    std::fs::read_to_string(self.calls.join(format!("{stem}.{ext}")))
                        .unwrap_or_default()
                };
                let args = read("args");
                Call {
                    program: stem.split_once('-').unwrap().1.to_string(),
                    args: args
                        .split('\0')
                        .filter(|a| !a.is_empty())
                        .map(str::to_string)
                        .collect(),
                    prompt: read("prompt"),
                    resumed: read("env"),
                }
            })
            .collect()
    }
}

fn write_stand_in(path: &Path, calls: &Path) {
    let fake = fixture("fake-agent");
    let script = format!(
        r#"#!/usr/bin/env bash
# A stand-in for a real agent CLI: record the call, then let fake-agent do the work.
calls={calls}
n=$(ls "$calls" | grep -c '\.args$')
stem="$calls/$(printf '%03d' "$n")-$(basename "$0")"
printf '%s\0' "$@" > "$stem.args.tmp"
printf '%s' "${{RUNNER_AGENT_SESSION_ID:-}}" > "$stem.env"
if [ "$(basename "$0")" = aider ]; then
    file=""; prev=""
    for a in "$@"; do [ "$prev" = --message-file ] && file="$a"; prev="$a"; done
    cat "$file" > "$stem.prompt"
else
    cat > "$stem.prompt"
fi
mv "$stem.args.tmp" "$stem.args"
exec {fake} < "$stem.prompt"
"#,
        calls = sh(&calls.display().to_string()),
        fake = sh(&fake.display().to_string()),
    );
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn sh(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn words(text: &str) -> Vec<String> {
    text.split(' ').map(str::to_string).collect()
}

fn is_uuid_v4(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && parts
            .iter()
            .all(|p| p.bytes().all(|b| b.is_ascii_hexdigit()))
        && parts[2].starts_with('4')
}

fn session_starts(repo: &TestRepo, spec: &str) -> Vec<Value> {
    repo.events(spec)
        .into_iter()
        .filter(|e| e["event"] == "session_start")
        .collect()
}

/// The command line each preset's session gets, without the program (docs/agents.md, "Presets"):
/// `start` is the session's `session_start` event.
fn expected_args(
    preset: &str,
    repo: &TestRepo,
    spec: &str,
    call: &Call,
    start: &Value,
) -> Vec<String> {
    let spec_dir = repo.spec_dir(spec).display().to_string();
    let wt = repo.worktree().display().to_string();
    let session_dir = repo
        .spec_dir(spec)
        .join("sessions")
        .join(start["session_id"].as_str().unwrap());
    let in_session = |name: &str| session_dir.join(name).display().to_string();
    let planner = start["role"] == "planner";
    match preset {
        "claude" => {
            let mut want = words("-p --output-format stream-json --verbose --session-id");
            want.push(call.args.get(5).cloned().unwrap_or_default());
            want.extend(words("--permission-mode acceptEdits --allowedTools"));
            want.push(format!("Bash({} chunk:*)", runner_word()));
            want.push("--settings".into());
            want.push(runner::policy::invocation::claude_sandbox_settings(
                &runner_word(),
            ));
            want
        }
        "codex" => {
            let mut want = words(
                "exec --json --skip-git-repo-check --sandbox workspace-write \
                 -c sandbox_workspace_write.exclude_slash_tmp=true \
                 -c sandbox_workspace_write.exclude_tmpdir_env_var=true -C",
            );
            want.extend([wt, "--add-dir".into(), spec_dir, "-".into()]);
            want
        }
        "gemini" => {
            let mut want = words("--output-format stream-json --approval-mode auto_edit --policy");
            want.push(in_session("gemini-policy.toml"));
            want
        }
        "aider" => {
            let mut want = vec!["--message-file".into(), in_session("prompt.md")];
            want.extend(words("--yes-always --no-analytics --analytics-log"));
            want.push(in_session("aider.jsonl"));
            want.extend(words(
                "--no-auto-commits --no-dirty-commits --no-gitignore --chat-history-file",
            ));
            want.push(in_session("chat.md"));
            want.push("--input-history-file".into());
            want.push(in_session("input.history"));
            want.extend(words(
                "--map-tokens 0 --no-check-update --no-show-release-notes \
                 --no-pretty --no-stream --no-fancy-input --no-detect-urls",
            ));
            if planner {
                // Only the planner is given its draft (git-ignored: aider edits it only so).
                want.push("--file".into());
                want.push(
                    repo.worktree()
                        .join(".auto-claude/plan-draft.json")
                        .display()
                        .to_string(),
                );
                want.push("--add-gitignore-files".into());
            }
            want
        }
        _ => unreachable!(),
    }
}

#[test]
fn every_preset_runs_a_spec_with_its_own_command_line() {
    for preset in ["claude", "codex", "gemini", "aider"] {
        let repo = TestRepo::new();
        repo.add_spec("001-p");
        repo.write_config(&format!("[agent]\npreset = \"{preset}\"\n"));
        let stand = Stand::new(&repo, &[preset]);
        let out = stand.runner(&repo, &["run", "--spec", "001"]);
        assert_exit(&out, 0);
        assert!(
            repo.statuses("001-p").iter().all(|(_, s)| s == "completed"),
            "{preset}: {:?}",
            repo.statuses("001-p")
        );
        let calls = stand.calls();
        assert_eq!(
            calls.len(),
            4,
            "{preset}: planner and three coders: {calls:?}"
        );
        let starts = session_starts(&repo, "001-p");
        assert_eq!(starts.len(), 4);
        let mut claude_ids = std::collections::HashSet::new();
        for (call, start) in calls.iter().zip(&starts) {
            assert_eq!(call.program, preset);
            assert_eq!(
                call.args,
                expected_args(preset, &repo, "001-p", call, start),
                "{preset}"
            );
            if preset == "gemini" {
                // Its shell may run runner's report command (by runner's absolute path): the
                // policy file runner wrote in the session's folder names it.
                let policy = std::fs::read_to_string(call.args.last().unwrap()).unwrap();
                assert!(policy.contains("commandPrefix"), "{policy}");
                assert!(policy.contains(&runner_word()), "{policy}");
            }
            assert_eq!(call.resumed, "", "a fresh session is not a resumed one");
            // The prompt arrived (stdin, or aider's message file, which is the session's).
            assert!(call.prompt.contains("001-p"), "{preset}: {}", call.prompt);
            assert_eq!(start["preset"], preset);
            let program = Path::new(start["command"][0].as_str().unwrap());
            assert_eq!(program, stand.bin.join(preset), "the program found on PATH");
            if preset == "claude" {
                let id = &call.args[5];
                assert!(is_uuid_v4(id), "{id}");
                assert_eq!(start["agent_session_id"], id.as_str());
                claude_ids.insert(id.clone());
            } else {
                assert!(start.get("agent_session_id").is_none(), "{start}");
            }
            if preset == "aider" {
                let prompt_md = start_prompt(&repo, "001-p", start);
                assert_eq!(call.args[1], prompt_md.display().to_string());
            }
        }
        if preset == "claude" {
            assert_eq!(claude_ids.len(), 4, "a fresh uuid for every session");
        }
        // A coder's prompt names its chunk.
        assert!(calls[1].prompt.contains("core-a"), "{}", calls[1].prompt);
    }
}

fn start_prompt(repo: &TestRepo, spec: &str, start: &Value) -> PathBuf {
    repo.spec_dir(spec)
        .join("sessions")
        .join(start["session_id"].as_str().unwrap())
        .join("prompt.md")
}

#[test]
fn a_missing_program_stops_the_run_before_anything_is_written() {
    for (config, named) in [
        ("[agent]\npreset = \"codex\"\n", "\"codex\""),
        (
            "[agent]\npreset = \"claude\"\nprogram = \"/no/such/claude\"\n",
            "\"/no/such/claude\"",
        ),
    ] {
        let repo = TestRepo::new();
        let dir = repo.add_spec("002-missing");
        repo.write_config(config);
        // No stand-ins: nothing named codex in the folder put first on PATH.
        let stand = Stand::new(&repo, &[]);
        let out = stand.runner(&repo, &["run", "--spec", "002"]);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(named), "{err}");
        assert!(err.contains("[agent] program"), "{err}");
        assert!(!dir.join("implementation_plan.json").exists());
        assert!(!dir.join("sessions").exists());
        assert!(!dir.join("events.jsonl").exists());
        assert!(!repo.path(".auto-claude/agents").exists());
        assert!(!repo.worktree().exists());
        assert!(stand.calls().is_empty());
    }
}

#[test]
fn the_configured_program_and_args_are_used() {
    let repo = TestRepo::new();
    repo.add_spec("003-prog");
    let stand = Stand::new(&repo, &[]);
    // A relative path is the repository's; the stand-in's name is still "gemini".
    std::fs::create_dir_all(repo.path("tools")).unwrap();
    write_stand_in(&repo.path("tools/gemini"), &stand.calls);
    repo.write_config(
        "[agent]\npreset = \"gemini\"\nprogram = \"./tools/gemini\"\nargs = \"-m 'gemini pro'\"\n",
    );
    let out = stand.runner(&repo, &["run", "--spec", "003"]);
    assert_exit(&out, 0);
    let calls = stand.calls();
    assert_eq!(calls.len(), 4);
    let start = &session_starts(&repo, "003-prog")[0];
    let policy = repo
        .spec_dir("003-prog")
        .join("sessions")
        .join(start["session_id"].as_str().unwrap())
        .join("gemini-policy.toml");
    let mut want = words("--output-format stream-json --approval-mode auto_edit --policy");
    want.extend([
        policy.display().to_string(),
        "-m".into(),
        "gemini pro".into(),
    ]);
    assert_eq!(calls[0].args, want);
    assert_eq!(
        Path::new(start["command"][0].as_str().unwrap()),
        repo.path("./tools/gemini")
    );
}

/// Runs of one session each (`max_sessions = 1`): which agent ran each session.
#[test]
fn a_spec_remembers_its_agent_until_a_flag_or_a_later_config_replaces_it() {
    let repo = TestRepo::new();
    repo.add_spec("004-mem");
    let stand = Stand::new(&repo, &["claude", "codex", "gemini", "aider"]);
    repo.write_config("[agent]\npreset = \"claude\"\n[run]\nmax_sessions = 1\n");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--spec", "004"];
        args.extend_from_slice(extra);
        let out = stand.runner(&repo, &args);
        assert!(matches!(out.status.code(), Some(0 | 5)), "{}", stderr(&out));
        stand.calls().last().unwrap().program.clone()
    };
    assert_eq!(run(&["--agent", "codex"]), "codex", "the flag");
    assert_eq!(run(&[]), "codex", "remembered, over the unchanged config");
    assert_eq!(
        run(&["--agent", "aider"]),
        "aider",
        "a later flag replaces it"
    );
    // The config changed since: it was given later, and is remembered in turn.
    repo.write_config("[agent]\npreset = \"gemini\"\n[run]\nmax_sessions = 1\n");
    assert_eq!(run(&[]), "gemini");
    let memory: Value =
        serde_json::from_str(&repo.read(".auto-claude/agents/004-mem.json")).unwrap();
    assert_eq!(memory["agent"]["preset"], "gemini");
    assert_eq!(memory["config"]["preset"], "gemini");
    assert!(
        repo.statuses("004-mem")
            .iter()
            .all(|(_, s)| s == "completed"),
        "{:?}",
        repo.statuses("004-mem")
    );
}

#[test]
fn an_unusable_remembered_agent_is_a_warning_and_the_config_decides() {
    for bad in [
        "{\"agent\": {\"preset\": \"evil\"}}".to_string(),
        "\u{0}garbage".to_string(),
        "{\"agent\": {\"preset\": \"codex\", \"program\": \"\"}}".to_string(),
    ] {
        let repo = TestRepo::new();
        repo.add_spec("005-bad");
        let stand = Stand::new(&repo, &["claude", "codex"]);
        repo.write_config("[agent]\npreset = \"claude\"\n");
        repo.write(".auto-claude/agents/005-bad.json", &bad);
        let out = stand.runner(&repo, &["run", "--spec", "005"]);
        assert_exit(&out, 0);
        let err = stderr(&out);
        assert!(err.contains("005-bad.json"), "{err}");
        assert!(stand.calls().iter().all(|c| c.program == "claude"));
        let memory: Value =
            serde_json::from_str(&repo.read(".auto-claude/agents/005-bad.json")).unwrap();
        assert_eq!(
            memory["agent"]["preset"], "claude",
            "rewritten with what ran"
        );
    }
}

#[test]
fn unknown_preset_names_are_refused_with_the_valid_ones() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("006-unknown");
    repo.write_config("[agent]\npreset = \"claud\"\n");
    let out = repo.runner(&["run", "--spec", "006"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("agent.preset"), "{err}");
    assert!(
        err.contains("claude, codex, gemini, aider, command"),
        "{err}"
    );

    repo.write_config("");
    let out = repo.runner(&["run", "--spec", "006", "--agent", "claud"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("claud") && err.contains("codex"), "{err}");
    assert!(!dir.join("events.jsonl").exists());
    assert!(!dir.join("implementation_plan.json").exists());
}

#[test]
fn without_any_agent_the_run_says_how_to_give_one() {
    let repo = TestRepo::new();
    let dir = repo.add_spec("007-none");
    for config in ["", "[agent]\npreset = \"command\"\n"] {
        repo.write_config(config);
        let out = repo.runner(&["run", "--spec", "007"]);
        assert_exit(&out, 2);
        assert!(
            stderr(&out).contains("no agent command"),
            "{}",
            stderr(&out)
        );
        assert!(!dir.join("events.jsonl").exists());
    }
    // `--agent command` takes the configured command.
    let fake = fixture("fake-agent").display().to_string();
    repo.write_config(&format!("[agent]\ncommand = [\"{fake}\"]\n"));
    let out = repo.runner(&["run", "--spec", "007", "--agent", "command"]);
    assert_exit(&out, 0);
    assert_eq!(repo.agent_log().len(), 4);
}

#[test]
fn init_writes_the_chosen_preset_and_run_uses_it() {
    let repo = TestRepo::new();
    repo.add_spec("008-init");
    let out = repo.runner(&["init", "--agent", "bogus"]);
    assert_exit(&out, 2);
    assert!(!repo.path(".auto-claude/config.toml").exists());
    assert_exit(&repo.runner(&["init", "--agent", "codex"]), 0);
    let written = repo.read(".auto-claude/config.toml");
    assert!(written.contains("\npreset = \"codex\"\n"), "{written}");
    let stand = Stand::new(&repo, &["codex"]);
    assert_exit(&stand.runner(&repo, &["run", "--spec", "008"]), 0);
    assert_eq!(stand.calls().len(), 4);
    assert!(stand.calls().iter().all(|c| c.program == "codex"));
}
