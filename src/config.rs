//! The config: every key, its default, and the one-run overrides; read from the user's file
//! under the repository's `.auto-claude/config.toml` (`files`).
//! `.auto-claude.example/config.toml` documents the same keys for users and is what `runner
//! init` writes (it ships inside the binary); a test fails when it misses a key known here.
//!
//! An unknown key is a warning (`output::warn`, naming the key, the file and the keys its
//! table knows), not an error: a config written for a newer runner still works with this one.

mod agent;
mod files;
mod fleet;
mod keys;
mod notify;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::RunnerError;
use crate::policy::invocation::{Permission, Preset};

pub use agent::parse_preset;
use agent::{permission_name, preset_name};
pub use files::{ConfigFiles, Loaded, load, load_quietly};
pub use fleet::{FleetConfig, MAX_LEASE_SECS, MIN_LEASE_SECS};
pub use keys::{Setting, Source, UnknownKey, known_keys, settings, unknown_keys};
pub use notify::NotifyConfig;

pub const CONFIG_FILE: &str = "config.toml";

/// The example config, every key commented out at its default: what `runner init` writes.
pub const EXAMPLE: &str = include_str!("../.auto-claude.example/config.toml");

/// The example config with `[agent] preset` set (what `runner init --agent NAME` writes).
pub fn example_with_preset(preset: Option<Preset>) -> String {
    match preset {
        Some(p) => EXAMPLE.replacen(
            "\n# preset = \"claude\"\n",
            &format!("\npreset = \"{}\"\n", p.name()),
            1,
        ),
        None => EXAMPLE.to_string(),
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct Config {
    #[serde(default)]
    pub agent: AgentConfig,
    #[serde(default)]
    pub run: RunConfig,
    #[serde(default)]
    pub git: GitConfig,
    #[serde(default)]
    pub recovery: RecoveryConfig,
    #[serde(default)]
    pub backup: BackupConfig,
    #[serde(default)]
    pub budget: BudgetConfig,
    #[serde(default)]
    pub resume: ResumeConfig,
    #[serde(default)]
    pub notify: NotifyConfig,
    #[serde(default)]
    pub fleet: FleetConfig,
}

/// `[resume]`: how `runner runs`, `show` and `resume` judge runs.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct ResumeConfig {
    /// Seconds after its last heartbeat that a run nobody holds the lock of is stale.
    pub stale_after: u64,
    /// `runner resume` writes the handoff document every time, as `--handoff` does.
    pub handoff: bool,
}

impl Default for ResumeConfig {
    fn default() -> Self {
        ResumeConfig {
            stale_after: crate::policy::runs::STALE_AFTER_DEFAULT.num_seconds() as u64,
            handoff: false,
        }
    }
}

impl ResumeConfig {
    /// `stale_after` as a duration (at most a year).
    pub fn stale_after(&self) -> chrono::Duration {
        chrono::Duration::seconds(self.stale_after.min(MAX_WAIT_LIMIT) as i64)
    }
}

/// `[budget]`: what one spec may spend, over all its runs (its ledger: the attempt records
/// and the planner's, see `store::ledger`). Unset: no limit of that kind.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct BudgetConfig {
    /// Dollars (as the agents report them, or computed); `run --max-usd` overrides it.
    pub max_usd: Option<f64>,
    /// Tokens (input, output and cache, summed): the limit for agents that report no dollars.
    pub max_tokens: Option<u64>,
}

impl BudgetConfig {
    pub fn budget(&self) -> crate::policy::budget::Budget {
        crate::policy::budget::Budget {
            max_usd: self.max_usd,
            max_tokens: self.max_tokens,
        }
    }
}

/// A dollar limit must be a finite number, zero or more (zero: no session starts).
pub fn check_max_usd(usd: f64) -> Result<f64, String> {
    if usd.is_finite() && usd >= 0.0 {
        Ok(usd)
    } else {
        Err(format!(
            "must be a number of dollars, 0 or more; it is {usd}"
        ))
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct BackupConfig {
    /// `runner gc` removes backups older than this many days. Nothing is removed automatically.
    pub keep_days: u64,
}

impl Default for BackupConfig {
    fn default() -> Self {
        BackupConfig { keep_days: 30 }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct RecoveryConfig {
    /// `rules` (default): recovery decides by its documented rules. `agent`: for a chunk with
    /// partial work, the agent is asked (recovery prompt, JSON answer); anything but a valid
    /// answer falls back to the rules.
    #[serde(default)]
    pub evaluator: Evaluator,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Evaluator {
    #[default]
    Rules,
    Agent,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct AgentConfig {
    /// `claude`, `codex`, `gemini`, `aider` or `command`. Unset: `command` when a command is
    /// set, else no agent.
    #[serde(deserialize_with = "preset_name")]
    pub preset: Option<Preset>,
    /// The preset's program, when not its name on PATH (a path is used as given; a relative
    /// one is relative to the repository).
    pub program: Option<String>,
    /// Extra arguments for the preset's command line: a list, or a string split like a shell.
    #[serde(deserialize_with = "args_string_or_list")]
    pub args: Vec<String>,
    /// What the agent may do without asking: `safe` (default), `full` or `own` (see docs/agents.md, "Permissions and their risks").
    #[serde(deserialize_with = "permission_name")]
    pub permission: Permission,
    /// Continue an interrupted chunk's agent session where the preset can (used by resume).
    pub resume_sessions: bool,
    /// claude: hand each session runner's MCP server (`runner mcp`, docs/commands.md),
    /// through `--mcp-config <session folder>/mcp.json --strict-mcp-config`.
    pub mcp: bool,
    /// The agent's argv, e.g. `["claude", "-p", "--dangerously-skip-permissions"]`; in the
    /// file a list, or a string split like a shell (`"claude -p"`).
    #[serde(deserialize_with = "command_string_or_list")]
    pub command: Vec<String>,
    /// Bytes of output one session log (agent, verification, evaluator) keeps: the first half
    /// and the last half, with a line saying what was cut between, so a runaway agent cannot
    /// fill the disk.
    pub max_log_bytes: u64,
}

/// 50 MiB.
pub const DEFAULT_MAX_LOG_BYTES: u64 = 50 * 1024 * 1024;

/// Below this a log could not even hold a useful head and tail.
const MIN_LOG_BYTES: u64 = 1024;

/// 1 GiB. Above this the kept tail (half the cap, held in memory while the output streams)
/// would risk runner's memory, and such a log is past reading anyway.
const MAX_LOG_BYTES: u64 = 1024 * 1024 * 1024;

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            preset: None,
            program: None,
            args: Vec::new(),
            permission: Permission::Safe,
            resume_sessions: true,
            mcp: false,
            command: Vec::new(),
            max_log_bytes: DEFAULT_MAX_LOG_BYTES,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct RunConfig {
    /// Seconds a single agent session may take before its process group is killed.
    pub session_timeout: u64,
    /// Attempts per chunk (and per planning) before runner gives up and asks for a human.
    pub max_attempts: u32,
    /// Agent sessions one `runner run` may start before it stops (exit 5) to let a person look.
    pub max_sessions: u32,
    /// Seconds a verification command may take.
    pub verification_timeout: u64,
    /// After Ctrl-C or SIGTERM: seconds the agent may take to finish before it is killed.
    pub drain_timeout: u64,
    /// On a usage limit, sleep until it resets and go on (as `run --wait`), instead of
    /// stopping with exit 6.
    pub wait_for_limits: bool,
    /// Seconds one run may spend waiting for usage limits in total; past it, exit 6.
    pub max_wait: u64,
    /// Seconds a spec is paused when the agent's CLI says no reset time (aider) or one runner
    /// does not believe.
    pub limit_wait_default: u64,
}

/// A year: no run waits longer (and the times stay far from overflowing).
const MAX_WAIT_LIMIT: u64 = 366 * 86_400;

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            session_timeout: 3600,
            max_attempts: 3,
            max_sessions: 200,
            verification_timeout: 600,
            drain_timeout: 30,
            wait_for_limits: false,
            max_wait: 86_400,
            limit_wait_default: 900,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct GitConfig {
    /// The branch specs start from and will merge into. Default: the branch checked out when
    /// the spec first runs. Pinned per spec (in its plan) once chosen.
    pub base_branch: Option<String>,
}

impl RunConfig {
    pub fn session_timeout(&self) -> Duration {
        Duration::from_secs(self.session_timeout)
    }
    pub fn verification_timeout(&self) -> Duration {
        Duration::from_secs(self.verification_timeout)
    }
    pub fn drain_timeout(&self) -> Duration {
        Duration::from_secs(self.drain_timeout)
    }
    pub fn max_wait(&self) -> Duration {
        Duration::from_secs(self.max_wait)
    }
    pub fn limit_wait_default(&self) -> chrono::Duration {
        chrono::Duration::seconds(self.limit_wait_default.min(MAX_WAIT_LIMIT) as i64)
    }
}

impl Config {
    /// The config of the file at `path` alone (no user file), or the defaults if there is no
    /// file: for the tests of the keys. Commands read both files (`files::load`).
    #[cfg(test)]
    pub fn load(path: &Path) -> Result<Config, RunnerError> {
        let files = ConfigFiles {
            user: None,
            repository: path.to_path_buf(),
        };
        Ok(files::load(&files)?.config)
    }

    fn check(&self, path: &Path) -> Result<(), RunnerError> {
        let bad = |what: &str| {
            Err(RunnerError::bad_input(format!(
                "invalid config {}: {what}",
                path.display()
            )))
        };
        if self.run.max_attempts == 0 {
            return bad("run.max_attempts must be at least 1");
        }
        if self.run.max_sessions == 0 {
            return bad("run.max_sessions must be at least 1");
        }
        if let Some(usd) = self.budget.max_usd
            && let Err(e) = check_max_usd(usd)
        {
            return bad(&format!("budget.max_usd {e}"));
        }
        if self.run.session_timeout == 0 {
            return bad("run.session_timeout must be at least 1 second");
        }
        if self.run.max_wait > MAX_WAIT_LIMIT {
            return bad(&format!(
                "run.max_wait must be at most {MAX_WAIT_LIMIT} seconds (a year); it is {}",
                self.run.max_wait
            ));
        }
        let believed = crate::policy::pause::MAX_BELIEVED.num_seconds() as u64;
        if !(1..=believed).contains(&self.run.limit_wait_default) {
            return bad(&format!(
                "run.limit_wait_default must be between 1 and {believed} seconds (8 days); it is {}",
                self.run.limit_wait_default
            ));
        }
        if !(MIN_LOG_BYTES..=MAX_LOG_BYTES).contains(&self.agent.max_log_bytes) {
            return bad(&format!(
                "agent.max_log_bytes must be between {MIN_LOG_BYTES} and {MAX_LOG_BYTES} (1 GiB); \
                 it is {} (the default is {DEFAULT_MAX_LOG_BYTES}, 50 MiB)",
                self.agent.max_log_bytes
            ));
        }
        if let Some(problem) = self.notify.problem() {
            return bad(&problem);
        }
        if let Some(problem) = self.fleet.problem() {
            return bad(&problem);
        }
        Ok(())
    }
}

/// `[agent] command`: a list of strings as it is, or a string split like a shell.
fn command_string_or_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    words_string_or_list(d, "agent.command")
}

/// `[agent] args`, like `command`.
fn args_string_or_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    words_string_or_list(d, "agent.args")
}

fn words_string_or_list<'de, D: serde::Deserializer<'de>>(
    d: D,
    key: &str,
) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Command {
        Line(String),
        Argv(Vec<String>),
    }
    match Command::deserialize(d).map_err(|_| {
        serde::de::Error::custom(format!(
            "{key} must be a string (\"claude -p\") or a list of strings"
        ))
    })? {
        Command::Argv(argv) => Ok(argv),
        Command::Line(line) => shell_words::split(&line)
            .map_err(|e| serde::de::Error::custom(format!("{key} {line:?} does not parse: {e}"))),
    }
}

/// Split `--agent-command "claude -p"` the way a shell would.
pub fn parse_agent_command(text: &str) -> Result<Vec<String>, RunnerError> {
    let argv = shell_words::split(text).map_err(|e| {
        RunnerError::bad_input(format!("--agent-command {text:?} does not parse: {e}"))
    })?;
    if argv.is_empty() {
        return Err(RunnerError::bad_input("--agent-command is empty"));
    }
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_without_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let c = Config::load(&dir.path().join("config.toml")).unwrap();
        assert_eq!(c.run.max_attempts, 3);
        assert!(c.agent.command.is_empty());
    }

    #[test]
    fn reads_keys_and_warns_of_typos() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(
            &path,
            "[agent]\ncommand = [\"claude\", \"-p\"]\n[run]\nmax_attempts = 5\n[git]\nbase_branch = \"dev\"\n",
        )
        .unwrap();
        let c = Config::load(&path).unwrap();
        assert_eq!(c.agent.command, vec!["claude", "-p"]);
        assert_eq!(c.run.max_attempts, 5);
        assert_eq!(c.run.session_timeout, 3600);
        assert_eq!(c.git.base_branch.as_deref(), Some("dev"));

        // A typo is a warning (output::warn), not an error: the rest of the file still counts.
        std::fs::write(&path, "[run]\nmax_attempt = 5\nmax_sessions = 9\n").unwrap();
        let c = Config::load(&path).unwrap();
        assert_eq!(c.run.max_attempts, 3);
        assert_eq!(c.run.max_sessions, 9);
    }

    #[test]
    fn agent_command_is_a_list_or_a_string_split_like_a_shell() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[agent]\ncommand = \"claude -p 'a b'\"\n").unwrap();
        assert_eq!(
            Config::load(&path).unwrap().agent.command,
            vec!["claude", "-p", "a b"]
        );
        for bad in ["\"'open\"", "3", "[1, 2]"] {
            std::fs::write(&path, format!("[agent]\ncommand = {bad}\n")).unwrap();
            let err = Config::load(&path).unwrap_err();
            assert!(err.to_string().contains("agent.command"), "{bad}: {err}");
            assert_eq!(err.exit_code(), crate::error::exit::BAD_INPUT);
        }
    }

    /// The example with its `# key = value` lines uncommented.
    fn example_uncommented() -> String {
        EXAMPLE
            .lines()
            .map(|line| match line.strip_prefix("# ") {
                Some(rest) if is_key_line(rest) => rest,
                _ => line,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn is_key_line(text: &str) -> bool {
        text.split_once(" = ").is_some_and(|(key, _)| {
            !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_')
        })
    }

    #[test]
    fn the_example_lists_every_key_the_config_knows() {
        let example: toml::Table = toml::from_str(&example_uncommented()).unwrap();
        for (table, keys) in known_keys() {
            for key in keys {
                assert!(
                    example
                        .get(&table)
                        .and_then(|t| t.as_table())
                        .is_some_and(|t| t.contains_key(&key)),
                    "{table}.{key} is missing from .auto-claude.example/config.toml: add it, \
                     commented out at its default"
                );
            }
        }
        assert!(unknown_keys(&example, Path::new("c")).is_empty());
    }

    #[test]
    fn the_example_is_all_comments_and_says_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, EXAMPLE).unwrap();
        assert_eq!(Config::load(&path).unwrap(), Config::default());
        std::fs::write(&path, example_uncommented()).unwrap();
        let mut c = Config::load(&path).unwrap();
        // The keys without a default show an example value.
        assert_eq!(c.git.base_branch.take().as_deref(), Some("main"));
        assert_eq!(c.agent.preset.take(), Some(Preset::Claude));
        assert_eq!(c.agent.program.take().as_deref(), Some("claude"));
        assert_eq!(c.budget.max_usd.take(), Some(5.0));
        assert_eq!(c.budget.max_tokens.take(), Some(2_000_000));
        assert_eq!(
            c.notify.command.take().as_deref(),
            Some("notify-send \"runner\" \"$RUNNER_MESSAGE\"")
        );
        assert_eq!(c.fleet.account.take().as_deref(), Some("team-claude"));
        assert_eq!(c, Config::default());
    }

    #[test]
    fn fleet_keys_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let bad_lines =
            "lease_secs = 1\nlease_secs = 3601\nremote = \"\"\nremote = \"-x\"\naccount = \"../x\"";
        for bad in bad_lines.lines() {
            std::fs::write(&path, format!("[fleet]\n{bad}\n")).unwrap();
            let err = Config::load(&path).unwrap_err();
            assert!(format!("{err:#}").contains("fleet."), "{bad}: {err:#}");
        }
        std::fs::write(&path, "[fleet]\nlease_secs = 2\naccount = \"a@b\"\n").unwrap();
        let c = Config::load(&path).unwrap();
        assert_eq!(
            (c.fleet.lease_secs, c.fleet.account.as_deref()),
            (2, Some("a@b"))
        );
    }

    #[test]
    fn the_budget_is_read_and_must_be_a_number_of_dollars() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        for (text, usd) in [("0.5", 0.5), ("3", 3.0), ("0", 0.0)] {
            std::fs::write(
                &path,
                format!("[budget]\nmax_usd = {text}\nmax_tokens = 9\n"),
            )
            .unwrap();
            let c = Config::load(&path).unwrap();
            assert_eq!(
                (c.budget.max_usd, c.budget.max_tokens),
                (Some(usd), Some(9))
            );
        }
        for bad in ["-1", "nan", "inf", "\"5\"", "1e999"] {
            std::fs::write(&path, format!("[budget]\nmax_usd = {bad}\n")).unwrap();
            let err = Config::load(&path).unwrap_err();
            assert!(err.to_string().contains("max_usd"), "{bad}: {err}");
        }
        std::fs::write(&path, "[budget]\nmax_tokens = -5\n").unwrap();
        assert!(Config::load(&path).is_err());
    }

    #[test]
    fn the_log_cap_is_read_and_must_be_usable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[agent]\nmax_log_bytes = 65536\n").unwrap();
        assert_eq!(Config::load(&path).unwrap().agent.max_log_bytes, 65536);
        for bad in ["10", "1073741825", "18446744073709551615"] {
            std::fs::write(&path, format!("[agent]\nmax_log_bytes = {bad}\n")).unwrap();
            let err = Config::load(&path).unwrap_err();
            assert!(err.to_string().contains("agent.max_log_bytes"), "{err}");
            assert_eq!(err.exit_code(), crate::error::exit::BAD_INPUT);
        }
        std::fs::write(&path, "[agent]\nmax_log_bytes = 1073741824\n").unwrap();
        assert!(Config::load(&path).is_ok());
    }

    #[test]
    fn the_evaluator_is_rules_or_agent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(
            &path,
            "[recovery]\nevaluator = \"agent\"\n[run]\ndrain_timeout = 5\n",
        )
        .unwrap();
        let c = Config::load(&path).unwrap();
        assert_eq!(c.recovery.evaluator, Evaluator::Agent);
        assert_eq!(c.run.drain_timeout, 5);
        std::fs::write(&path, "[recovery]\nevaluator = \"oracle\"\n").unwrap();
        assert!(
            Config::load(&path)
                .unwrap_err()
                .to_string()
                .contains("oracle")
        );
    }

    #[test]
    fn init_can_write_the_example_with_a_preset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        for preset in Preset::ALL {
            std::fs::write(&path, example_with_preset(Some(preset))).unwrap();
            let c = Config::load(&path).unwrap();
            assert_eq!(c.agent.preset, Some(preset));
            let mut rest = c.clone();
            rest.agent.preset = None;
            assert_eq!(rest, Config::default(), "only the preset is set");
        }
        assert_eq!(example_with_preset(None), EXAMPLE);
    }

    #[test]
    fn agent_command_splits_like_a_shell() {
        assert_eq!(
            parse_agent_command("claude -p 'a b'").unwrap(),
            vec!["claude", "-p", "a b"]
        );
        assert!(parse_agent_command("  ").is_err());
        assert!(parse_agent_command("'open").is_err());
    }
}
