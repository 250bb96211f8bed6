//! How each agent preset is started: the command line, where the prompt goes, and what the
//! environment gains. A pure function of the facts (no PATH lookup, no process): the engine
//! resolves the program (`agent::preset`) and runs what this returns.
//!
//! The flags were checked against the CLIs' own sources (2026-11):
//! - claude: `-p`, `--output-format stream-json` (which needs `--verbose` in print mode),
//!   `--session-id <uuid>` (must be a UUID), `--resume <id>`, `--max-budget-usd <usd>`,
//!   `--permission-mode acceptEdits` and `--allowedTools "Bash(runner chunk:*)"` (the legacy
//!   `prefix:*` rule form, still matched by Claude Code's `shellRuleMatching`), and
//!   `--dangerously-skip-permissions` (code.claude.com/docs/en/cli-reference, /permissions);
//!   `--mcp-config <file...>` (variadic: "Support multiple config files with `--mcp-config
//!   file1.json file2.json`"), `--strict-mcp-config` (only those servers), and the
//!   server-level permission rule `mcp__<server>` (anthropics/claude-code CHANGELOG.md).
//! - codex: `codex exec [OPTIONS] [PROMPT]` and `codex exec [OPTIONS] resume <SESSION_ID>
//!   [PROMPT]`, `-` reads the prompt from stdin; `--sandbox`, `-C`, `--add-dir` belong to
//!   `exec` (not global), so they go before `resume` (openai/codex `codex-rs/exec/src/cli.rs`).
//! - gemini: `--output-format text|json|stream-json`, `--approval-mode default|auto_edit|yolo`,
//!   `--resume <id>`; with no positional prompt the prompt is read from stdin
//!   (google-gemini/gemini-cli `packages/cli/src/config/config.ts`).
//! - aider: `--message-file`, `--yes-always`, `--no-analytics`, `--analytics-log`,
//!   `--no-dirty-commits` (aider.chat/docs/config/options.html).
//!
//! And against the real CLIs (claude-code 2.1.197, codex 0.171.0, gemini-cli 0.61.0, aider
//! 0.86.2), which `tests/it/real_clis/` drives: claude's `--settings` sandbox keys
//! (`sandbox.enabled`, `autoAllowBashIfSandboxed`, `allowUnsandboxedCommands`,
//! `failIfUnavailable`, `excludedCommands`), codex's `--skip-git-repo-check`, gemini's
//! `--approval-mode auto_edit`, `--policy FILE` and `GEMINI_CLI_TRUST_WORKSPACE`, aider's
//! `--no-auto-commits`, `--no-gitignore`, `--chat-history-file`, `--input-history-file`,
//! `--map-tokens`, `--file` with `--add-gitignore-files`.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// Which agent CLI runner drives (`[agent] preset`, `run --agent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    Claude,
    Codex,
    Gemini,
    Aider,
    /// `[agent] command` as it is, the prompt on stdin.
    Command,
}

impl Preset {
    pub const ALL: [Preset; 5] = [
        Preset::Claude,
        Preset::Codex,
        Preset::Gemini,
        Preset::Aider,
        Preset::Command,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Claude => "claude",
            Preset::Codex => "codex",
            Preset::Gemini => "gemini",
            Preset::Aider => "aider",
            Preset::Command => "command",
        }
    }

    pub fn parse(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == name)
    }

    /// `claude, codex, gemini, aider, command`: for error messages.
    pub fn names() -> String {
        Preset::ALL.map(Preset::name).join(", ")
    }

    /// The program looked up on PATH when `[agent] program` is not set (none for `command`).
    pub fn default_program(self) -> Option<&'static str> {
        match self {
            Preset::Command => None,
            other => Some(other.name()),
        }
    }

    /// Whether runner chooses the agent's session id itself (claude's `--session-id`); the
    /// others say theirs in their output.
    pub fn chooses_session_id(self) -> bool {
        self == Preset::Claude
    }

    /// Whether the agent can run runner's report command. aider cannot: under `--yes-always`
    /// it declines every shell command (aider 0.86), so its coder is judged by how its session
    /// ended and by the chunk's verification, and its prompt says so.
    pub fn can_report(self) -> bool {
        self != Preset::Aider
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How much the agent may do without asking (`[agent] permission`). An agent in a pipe has
/// nobody to ask: what is not allowed is refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// The default: edit files in the worktree, run the chunk's verification and report with
    /// `<runner> chunk …`; nothing outside the worktree. claude runs its commands in its own
    /// sandbox (`claude_sandbox_settings`), codex in its workspace-write sandbox, gemini only
    /// the commands of its session's policy (`gemini_policy`); aider says yes and runs no
    /// command.
    #[default]
    Safe,
    /// Everything without asking and without a sandbox (claude
    /// `--dangerously-skip-permissions`, codex `--dangerously-bypass-approvals-and-sandbox`):
    /// only on a machine or container you can throw away.
    Full,
    /// No permission flag at all: the agent's own settings decide (`.claude/settings.json`,
    /// `~/.codex/config.toml`, gemini's settings). aider still gets `--yes-always`, without
    /// which it would wait for an answer nobody gives.
    Own,
}

impl Permission {
    pub const ALL: [Permission; 3] = [Permission::Safe, Permission::Full, Permission::Own];

    pub fn name(self) -> &'static str {
        match self {
            Permission::Safe => "safe",
            Permission::Full => "full",
            Permission::Own => "own",
        }
    }

    pub fn parse(name: &str) -> Option<Permission> {
        Permission::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Whether the session starts the agent's conversation afresh or continues an earlier one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionMode {
    /// `session_id`: the id runner chose for the agent's session (claude's `--session-id`),
    /// if its preset takes one.
    Fresh { session_id: Option<String> },
    /// Continue the agent's own session `agent_session_id`.
    Reattach { agent_session_id: String },
}

/// The facts one invocation is built from.
#[derive(Debug, Clone)]
pub struct InvocationFacts<'a> {
    pub preset: Preset,
    /// The program as it will be run (a resolved path, or for `command` the command's first
    /// word).
    pub program: &'a str,
    /// `[agent] args` (for `command`: the command's other words, then `args`).
    pub args: &'a [String],
    pub permission: Permission,
    pub worktree: &'a Path,
    pub spec_dir: &'a Path,
    pub session_dir: &'a Path,
    /// The session's `prompt.md`.
    pub prompt_file: &'a Path,
    pub mode: &'a SessionMode,
    /// What is left of the spec's budget, in dollars (claude stops itself there).
    pub budget_left_usd: Option<f64>,
    /// The MCP config file that hands the session runner's MCP server (`agent.mcp`; claude).
    pub mcp_config: Option<&'a Path>,
    /// runner's program as the prompts name it (its absolute path, shell-quoted): the command
    /// the agent reports with.
    pub runner: &'a str,
    /// The planner's draft (`plan::PLAN_DRAFT` in the worktree), for a planner session: aider
    /// edits only the files it is given.
    pub plan_draft: Option<&'a Path>,
    /// gemini's policy file for the session (`gemini_policy`), written by the caller.
    pub gemini_policy: Option<&'a Path>,
}

/// How to start one agent session.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub argv: Vec<String>,
    /// The prompt goes on stdin (aider reads it from `--message-file` instead).
    pub prompt_on_stdin: bool,
    /// Environment variables the session gains besides runner's `RUNNER_*` contract.
    pub env: Vec<(String, String)>,
}

pub use super::agent_rules::{claude_chunk_rule, claude_sandbox_settings, gemini_policy};

/// The environment variable that carries a resumed agent session's id.
pub const AGENT_SESSION_ENV: &str = "RUNNER_AGENT_SESSION_ID";

/// The claude tool rule for every tool of the MCP server named `runner` (`agent.mcp`).
pub const CLAUDE_MCP_RULE: &str = "mcp__runner";

/// The command line and stdin of one session. User `args` go where the CLI takes options:
/// after runner's flags, before codex's `resume <id>` and trailing `-`.
pub fn invocation(f: &InvocationFacts) -> Invocation {
    let mut argv = vec![f.program.to_string()];
    let mut push = |words: &[&str]| argv.extend(words.iter().map(|w| w.to_string()));
    let mut prompt_on_stdin = true;
    let resume_id = match f.mode {
        SessionMode::Reattach { agent_session_id } => Some(agent_session_id.as_str()),
        SessionMode::Fresh { .. } => None,
    };
    match f.preset {
        Preset::Claude => argv.extend(claude_args(f)),
        Preset::Codex => {
            // `--skip-git-repo-check`: codex trusts only a git repository it was told about;
            // the worktree is one, but a recovery evaluator may run where it is gone.
            push(&["exec", "--json", "--skip-git-repo-check"]);
            match f.permission {
                // workspace-write also lets commands write the temp folders (/tmp and
                // $TMPDIR): not under `safe`, which keeps the agent to the worktree and the
                // spec folder.
                Permission::Safe => push(&[
                    "--sandbox",
                    "workspace-write",
                    "-c",
                    "sandbox_workspace_write.exclude_slash_tmp=true",
                    "-c",
                    "sandbox_workspace_write.exclude_tmpdir_env_var=true",
                ]),
                Permission::Full => push(&["--dangerously-bypass-approvals-and-sandbox"]),
                Permission::Own => {}
            }
            push(&["-C", &f.worktree.display().to_string()]);
            push(&["--add-dir", &f.spec_dir.display().to_string()]);
            argv.extend(f.args.iter().cloned());
            if let Some(id) = resume_id {
                argv.extend(["resume".to_string(), id.to_string()]);
            }
            argv.push("-".to_string());
        }
        Preset::Gemini => {
            push(&["--output-format", "stream-json"]);
            match f.permission {
                // File edits inside the worktree without asking (gemini refuses paths outside
                // it), and only the shell commands its policy file allows.
                Permission::Safe => {
                    push(&["--approval-mode", "auto_edit"]);
                    if let Some(policy) = f.gemini_policy {
                        push(&["--policy", &policy.display().to_string()]);
                    }
                }
                Permission::Full => push(&["--approval-mode", "yolo"]),
                Permission::Own => {}
            }
            if let Some(id) = resume_id {
                push(&["--resume", id]);
            }
            argv.extend(f.args.iter().cloned());
        }
        Preset::Aider => {
            prompt_on_stdin = false;
            let in_session = |name: &str| f.session_dir.join(name).display().to_string();
            push(&["--message-file", &f.prompt_file.display().to_string()]);
            push(&["--yes-always", "--no-analytics"]);
            push(&["--analytics-log", &in_session("aider.jsonl")]);
            // runner commits each chunk (aider's own commits would keep a failed attempt's
            // edits on the branch); aider writes nothing of its own into the worktree (its
            // chat and input history go to the session folder, no repository map cache, no
            // `.aider*` line in the project's .gitignore) and asks the network nothing.
            push(&["--no-auto-commits", "--no-dirty-commits", "--no-gitignore"]);
            push(&["--chat-history-file", &in_session("chat.md")]);
            push(&["--input-history-file", &in_session("input.history")]);
            push(&[
                "--map-tokens",
                "0",
                "--no-check-update",
                "--no-show-release-notes",
            ]);
            push(&[
                "--no-pretty",
                "--no-stream",
                "--no-fancy-input",
                "--no-detect-urls",
            ]);
            if let Some(draft) = f.plan_draft {
                // The draft is in the git-ignored `.auto-claude/`: aider edits an ignored file
                // only when it is given one.
                push(&[
                    "--file",
                    &draft.display().to_string(),
                    "--add-gitignore-files",
                ]);
            }
            argv.extend(f.args.iter().cloned());
        }
        Preset::Command => argv.extend(f.args.iter().cloned()),
    }
    let mut env: Vec<(String, String)> = resume_id
        .map(|id| vec![(AGENT_SESSION_ENV.to_string(), id.to_string())])
        .unwrap_or_default();
    if f.preset == Preset::Gemini {
        // gemini 0.61 trusts no folder it was not told to (exit 55); runner made the worktree.
        // Without its relaunch, the CLI is one process, which a kill reaches whole.
        env.push(("GEMINI_CLI_TRUST_WORKSPACE".into(), "true".into()));
        env.push(("GEMINI_CLI_NO_RELAUNCH".into(), "true".into()));
    }
    Invocation {
        argv,
        prompt_on_stdin,
        env,
    }
}

/// claude's words after its program: runner's flags, then the user's `args`.
fn claude_args(f: &InvocationFacts) -> Vec<String> {
    let mut argv = Vec::new();
    let mut push = |words: &[&str]| argv.extend(words.iter().map(|w| w.to_string()));
    push(&["-p", "--output-format", "stream-json", "--verbose"]);
    match f.mode {
        SessionMode::Reattach { agent_session_id } => push(&["--resume", agent_session_id]),
        SessionMode::Fresh {
            session_id: Some(id),
        } => push(&["--session-id", id]),
        SessionMode::Fresh { session_id: None } => {}
    }
    if let Some(left) = f.budget_left_usd {
        push(&["--max-budget-usd", &usd(left)]);
    }
    // `--mcp-config` takes several files: the flag after the file ends its list.
    if let Some(config) = f.mcp_config {
        push(&["--mcp-config", &config.display().to_string()]);
        push(&["--strict-mcp-config"]);
    }
    match f.permission {
        Permission::Safe => {
            push(&[
                "--permission-mode",
                "acceptEdits",
                "--allowedTools",
                &claude_chunk_rule(f.runner),
            ]);
            if f.mcp_config.is_some() {
                push(&[CLAUDE_MCP_RULE]);
            }
            push(&["--settings", &claude_sandbox_settings(f.runner)]);
        }
        Permission::Full => push(&["--dangerously-skip-permissions"]),
        Permission::Own => {}
    }
    argv.extend(f.args.iter().cloned());
    argv
}

/// Dollars as claude's `--max-budget-usd` takes them: never negative, cents rounded down (a
/// budget must not be overstated).
fn usd(amount: f64) -> String {
    let cents = if amount.is_finite() && amount > 0.0 {
        (amount * 100.0).floor()
    } else {
        0.0
    };
    format!("{:.2}", cents / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(preset: Preset, mode: SessionMode, args: &[&str], budget: Option<f64>) -> Invocation {
        build_with(preset, Permission::Safe, mode, args, budget)
    }

    fn build_with(
        preset: Preset,
        permission: Permission,
        mode: SessionMode,
        args: &[&str],
        budget: Option<f64>,
    ) -> Invocation {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        invocation(&InvocationFacts {
            preset,
            program: "/bin/agent",
            args: &args,
            permission,
            worktree: Path::new("/r/.worktrees/auto-claude"),
            spec_dir: Path::new("/r/.auto-claude/specs/001-a"),
            session_dir: Path::new("/r/.auto-claude/specs/001-a/sessions/s1"),
            prompt_file: Path::new("/r/.auto-claude/specs/001-a/sessions/s1/prompt.md"),
            mode: &mode,
            budget_left_usd: budget,
            mcp_config: None,
            runner: "runner",
            plan_draft: None,
            gemini_policy: None,
        })
    }

    #[test]
    fn claude_gets_the_mcp_config_and_its_tools_rule_when_given_one() {
        let mode = fresh(Some("u-1"));
        let facts = |permission, mcp_config| InvocationFacts {
            preset: Preset::Claude,
            program: "/bin/claude",
            args: &[],
            permission,
            worktree: Path::new("/w"),
            spec_dir: Path::new("/s"),
            session_dir: Path::new("/s/sessions/s1"),
            prompt_file: Path::new("/s/sessions/s1/prompt.md"),
            mode: &mode,
            budget_left_usd: None,
            mcp_config,
            runner: "runner",
            plan_draft: None,
            gemini_policy: None,
        };
        let config = Path::new("/s/sessions/s1/mcp.json");
        let i = invocation(&facts(Permission::Safe, Some(config)));
        let want = words(
            "/bin/claude -p --output-format stream-json --verbose --session-id u-1 \
             --mcp-config /s/sessions/s1/mcp.json --strict-mcp-config \
             --permission-mode acceptEdits --allowedTools",
        );
        assert_eq!(i.argv[..want.len()], want[..]);
        assert_eq!(
            i.argv[want.len()..],
            [
                claude_chunk_rule("runner").as_str(),
                CLAUDE_MCP_RULE,
                "--settings",
                &claude_sandbox_settings("runner"),
            ]
        );
        let full = invocation(&facts(Permission::Full, Some(config)));
        assert!(full.argv.contains(&"--strict-mcp-config".to_string()));
        assert!(!full.argv.contains(&CLAUDE_MCP_RULE.to_string()));
        let without = invocation(&facts(Permission::Safe, None));
        assert!(!without.argv.iter().any(|a| a.contains("mcp")));
    }

    fn fresh(id: Option<&str>) -> SessionMode {
        SessionMode::Fresh {
            session_id: id.map(str::to_string),
        }
    }

    fn resume(id: &str) -> SessionMode {
        SessionMode::Reattach {
            agent_session_id: id.to_string(),
        }
    }

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn claude_fresh_resume_budget_and_permissions() {
        let i = build(
            Preset::Claude,
            fresh(Some("u-1")),
            &["--model", "opus"],
            Some(2.567),
        );
        let mut want = words(
            "/bin/agent -p --output-format stream-json --verbose --session-id u-1 \
             --max-budget-usd 2.56 --permission-mode acceptEdits --allowedTools",
        );
        want.extend([
            "Bash(runner chunk:*)".into(),
            "--settings".into(),
            claude_sandbox_settings("runner"),
            "--model".into(),
            "opus".into(),
        ]);
        assert_eq!(i.argv, want);
        assert!(i.prompt_on_stdin);
        assert!(i.env.is_empty());
        // Every Bash command runs in claude's sandbox, but for runner's own report command.
        let settings: serde_json::Value =
            serde_json::from_str(&claude_sandbox_settings("/opt/my runner")).unwrap();
        assert_eq!(settings["sandbox"]["enabled"], true);
        assert_eq!(settings["sandbox"]["allowUnsandboxedCommands"], false);
        assert_eq!(
            settings["sandbox"]["excludedCommands"],
            serde_json::json!(["/opt/my runner chunk:*"])
        );

        let i = build(Preset::Claude, resume("abc"), &[], None);
        assert_eq!(&i.argv[5..7], ["--resume", "abc"]);
        assert!(!i.argv.contains(&"--session-id".to_string()));
        assert!(!i.argv.contains(&"--max-budget-usd".to_string()));
        assert_eq!(i.env, [(AGENT_SESSION_ENV.to_string(), "abc".to_string())]);

        let full = build_with(Preset::Claude, Permission::Full, fresh(None), &[], None);
        assert_eq!(full.argv[5..], words("--dangerously-skip-permissions")[..]);
        let own = build_with(Preset::Claude, Permission::Own, fresh(None), &[], None);
        assert_eq!(own.argv.len(), 5);
    }

    #[test]
    fn a_spent_or_odd_budget_is_never_overstated() {
        assert_eq!(usd(0.019), "0.01");
        assert_eq!(usd(-3.0), "0.00");
        assert_eq!(usd(f64::NAN), "0.00");
        assert_eq!(usd(f64::INFINITY), "0.00");
        assert_eq!(usd(10.0), "10.00");
    }

    #[test]
    fn codex_options_go_before_resume_and_the_dash() {
        let i = build(Preset::Codex, fresh(None), &["-m", "o3"], Some(1.0));
        assert_eq!(
            i.argv,
            words(
                "/bin/agent exec --json --skip-git-repo-check --sandbox workspace-write \
                 -c sandbox_workspace_write.exclude_slash_tmp=true \
                 -c sandbox_workspace_write.exclude_tmpdir_env_var=true \
                 -C /r/.worktrees/auto-claude --add-dir /r/.auto-claude/specs/001-a -m o3 -"
            )
        );
        assert!(i.prompt_on_stdin);
        let i = build(Preset::Codex, resume("th-9"), &["-m", "o3"], None);
        assert_eq!(i.argv[i.argv.len() - 5..], words("-m o3 resume th-9 -")[..]);
        assert_eq!(i.env, [(AGENT_SESSION_ENV.to_string(), "th-9".to_string())]);
        let full = build_with(Preset::Codex, Permission::Full, fresh(None), &[], None);
        assert_eq!(full.argv[4], "--dangerously-bypass-approvals-and-sandbox");
        assert!(!full.argv.contains(&"--sandbox".to_string()));
    }

    #[test]
    fn gemini_and_its_resume() {
        let i = build(Preset::Gemini, fresh(Some("ignored")), &["-m", "pro"], None);
        assert_eq!(
            i.argv,
            words("/bin/agent --output-format stream-json --approval-mode auto_edit -m pro")
        );
        let i = build(Preset::Gemini, resume("g1"), &[], None);
        assert_eq!(
            i.argv,
            words("/bin/agent --output-format stream-json --approval-mode auto_edit --resume g1")
        );
        let full = build_with(Preset::Gemini, Permission::Full, fresh(None), &[], None);
        assert_eq!(
            full.argv,
            words("/bin/agent --output-format stream-json --approval-mode yolo")
        );
        let own = build_with(Preset::Gemini, Permission::Own, fresh(None), &[], None);
        assert_eq!(own.argv, words("/bin/agent --output-format stream-json"));
    }

    #[test]
    fn aider_reads_the_prompt_file_and_logs_analytics_in_the_session() {
        let i = build(
            Preset::Aider,
            fresh(None),
            &["--model", "sonnet"],
            Some(1.0),
        );
        assert_eq!(
            i.argv,
            words(
                "/bin/agent --message-file /r/.auto-claude/specs/001-a/sessions/s1/prompt.md \
                 --yes-always --no-analytics --analytics-log \
                 /r/.auto-claude/specs/001-a/sessions/s1/aider.jsonl \
                 --no-auto-commits --no-dirty-commits --no-gitignore \
                 --chat-history-file /r/.auto-claude/specs/001-a/sessions/s1/chat.md \
                 --input-history-file /r/.auto-claude/specs/001-a/sessions/s1/input.history \
                 --map-tokens 0 --no-check-update --no-show-release-notes \
                 --no-pretty --no-stream --no-fancy-input --no-detect-urls --model sonnet"
            )
        );
        assert!(!i.prompt_on_stdin);
    }

    #[test]
    fn command_is_the_command_as_given() {
        let i = build(Preset::Command, fresh(Some("x")), &["-p", "a b"], Some(3.0));
        assert_eq!(i.argv, ["/bin/agent", "-p", "a b"]);
        assert!(i.prompt_on_stdin);
        assert!(i.env.is_empty());
    }

    #[test]
    fn names_round_trip() {
        for p in Preset::ALL {
            assert_eq!(Preset::parse(p.name()), Some(p));
        }
        for p in Permission::ALL {
            assert_eq!(Permission::parse(p.name()), Some(p));
        }
        assert_eq!(Preset::parse("Claude"), None);
        assert_eq!(Preset::names(), "claude, codex, gemini, aider, command");
        assert_eq!(Preset::Command.default_program(), None);
        assert_eq!(Preset::Aider.default_program(), Some("aider"));
    }
}
