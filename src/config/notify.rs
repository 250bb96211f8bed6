//! `[notify]`: who is told when a run ends or resumes interrupted work (docs/configuration.md).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::policy::notify::NotifyEvent;

/// The longest `notify.timeout_secs`: a notification that takes longer is not one.
pub const MAX_TIMEOUT_SECS: u64 = 600;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct NotifyConfig {
    /// A shell command line (`sh -c`), run in the repository's root with the payload (JSON)
    /// on stdin and the same facts in `RUNNER_*` variables. Unset: none.
    pub command: Option<String>,
    /// A desktop notification (`notify-send`, or `osascript` on macOS) where there is a
    /// desktop to show it.
    pub desktop: bool,
    /// The terminal bell, when runner's stderr is a terminal.
    pub bell: bool,
    /// Seconds the command (and the desktop notifier) may take before its process group is
    /// stopped (SIGTERM, then SIGKILL 5 s later).
    pub timeout_secs: u64,
    /// The events that notify; the default is all of them.
    pub events: Vec<NotifyEvent>,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            command: None,
            desktop: false,
            bell: false,
            timeout_secs: 10,
            events: NotifyEvent::ALL.to_vec(),
        }
    }
}

impl NotifyConfig {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.clamp(1, MAX_TIMEOUT_SECS))
    }

    /// Whether `event` is one to tell of, by any of the three ways.
    pub fn wants(&self, event: NotifyEvent) -> bool {
        (self.command.is_some() || self.desktop || self.bell) && self.events.contains(&event)
    }

    /// What is wrong with the keys, for the config's error.
    pub(super) fn problem(&self) -> Option<String> {
        if !(1..=MAX_TIMEOUT_SECS).contains(&self.timeout_secs) {
            return Some(format!(
                "notify.timeout_secs must be between 1 and {MAX_TIMEOUT_SECS} seconds; it is {}",
                self.timeout_secs
            ));
        }
        if self.command.as_deref().is_some_and(|c| c.trim().is_empty()) {
            return Some("notify.command is empty (leave it out to run no command)".to_string());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::*;

    fn load(text: &str) -> Result<Config, crate::error::RunnerError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        Config::load(&path)
    }

    #[test]
    fn the_keys_are_read_with_every_event_by_default() {
        let c = load("").unwrap().notify;
        assert_eq!(c, NotifyConfig::default());
        assert_eq!(c.timeout_secs, 10);
        assert!(!c.wants(NotifyEvent::Complete), "nothing to notify with");
        let c = load(
            "[notify]\ncommand = \"curl -d @- https://x\"\nbell = true\ndesktop = true\ntimeout_secs = 3\nevents = [\"failed\", \"resuming\"]\n",
        )
        .unwrap()
        .notify;
        assert_eq!(c.command.as_deref(), Some("curl -d @- https://x"));
        assert!(c.bell && c.desktop);
        assert_eq!(c.timeout(), Duration::from_secs(3));
        assert!(c.wants(NotifyEvent::Failed) && c.wants(NotifyEvent::Resuming));
        assert!(!c.wants(NotifyEvent::Complete));
        let c = load("[notify]\nbell = true\n").unwrap().notify;
        assert!(NotifyEvent::ALL.iter().all(|e| c.wants(*e)));
    }

    #[test]
    fn bad_values_are_errors_that_name_the_key() {
        for (text, says) in [
            ("timeout_secs = 0", "notify.timeout_secs"),
            ("timeout_secs = 601", "between 1 and 600"),
            ("timeout_secs = -1", "timeout_secs"),
            ("command = \"  \"", "notify.command is empty"),
            ("command = [\"a\"]", "command"),
            ("events = [\"done\"]", "unknown variant `done`"),
            ("events = \"complete\"", "events"),
            ("desktop = \"yes\"", "desktop"),
        ] {
            let err = load(&format!("[notify]\n{text}\n")).unwrap_err();
            assert!(err.to_string().contains(says), "{text}: {err}");
            assert_eq!(err.exit_code(), crate::error::exit::BAD_INPUT, "{text}");
        }
        assert!(load("[notify]\ntimeout_secs = 600\n").is_ok());
    }
}
