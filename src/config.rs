//! `.auto-claude/config.toml`: every key, its default, and the one-run overrides.
//! `.auto-claude.example/config.toml` documents the same keys for users; keep them in step.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::error::RunnerError;

pub const CONFIG_FILE: &str = "config.toml";

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
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
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BackupConfig {
    /// `runner gc` removes backups older than this many days. Nothing is removed automatically.
    pub keep_days: u64,
}

impl Default for BackupConfig {
    fn default() -> Self {
        BackupConfig { keep_days: 30 }
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RecoveryConfig {
    /// `rules` (default): recovery decides by its documented rules. `agent`: for a chunk with
    /// partial work, the agent is asked (recovery prompt, JSON answer); anything but a valid
    /// answer falls back to the rules.
    #[serde(default)]
    pub evaluator: Evaluator,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Evaluator {
    #[default]
    Rules,
    Agent,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// The agent's argv, e.g. `["claude", "-p", "--dangerously-skip-permissions"]`.
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
            command: Vec::new(),
            max_log_bytes: DEFAULT_MAX_LOG_BYTES,
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
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
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            session_timeout: 3600,
            max_attempts: 3,
            max_sessions: 200,
            verification_timeout: 600,
            drain_timeout: 30,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
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
}

impl Config {
    /// The config at `path`, or the defaults if there is no file.
    pub fn load(path: &Path) -> Result<Config, RunnerError> {
        let text = match crate::store::safe::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => {
                return Err(RunnerError::bad_input(format!(
                    "cannot read {}: {e}",
                    path.display()
                )));
            }
        };
        let config: Config = toml::from_str(&text).map_err(|e| {
            RunnerError::bad_input(format!(
                "invalid config {}: {e}\nSee .auto-claude.example/config.toml in the runner repository for every key.",
                path.display()
            ))
        })?;
        config.check(path)?;
        Ok(config)
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
        if self.run.session_timeout == 0 {
            return bad("run.session_timeout must be at least 1 second");
        }
        if !(MIN_LOG_BYTES..=MAX_LOG_BYTES).contains(&self.agent.max_log_bytes) {
            return bad(&format!(
                "agent.max_log_bytes must be between {MIN_LOG_BYTES} and {MAX_LOG_BYTES} (1 GiB); \
                 it is {} (the default is {DEFAULT_MAX_LOG_BYTES}, 50 MiB)",
                self.agent.max_log_bytes
            ));
        }
        Ok(())
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
    fn reads_keys_and_rejects_typos() {
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

        std::fs::write(&path, "[run]\nmax_attempt = 5\n").unwrap();
        let err = Config::load(&path).unwrap_err().to_string();
        assert!(err.contains("max_attempt"), "{err}");
    }

    #[test]
    fn the_example_config_is_valid_and_says_the_defaults() {
        let example =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(".auto-claude.example/config.toml");
        let c = Config::load(&example).unwrap();
        assert_eq!(c.run, RunConfig::default());
        assert_eq!(c.git.base_branch, None);
        assert_eq!(c.recovery.evaluator, Evaluator::Rules);
        assert_eq!(c.agent.max_log_bytes, DEFAULT_MAX_LOG_BYTES);
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
    fn agent_command_splits_like_a_shell() {
        assert_eq!(
            parse_agent_command("claude -p 'a b'").unwrap(),
            vec!["claude", "-p", "a b"]
        );
        assert!(parse_agent_command("  ").is_err());
        assert!(parse_agent_command("'open").is_err());
    }
}
