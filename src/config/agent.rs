//! `[agent]`: the preset, its program, args and permission, and the agent they name.

use serde::Deserialize;

use super::AgentConfig;
use crate::error::RunnerError;
use crate::policy::agent_choice::AgentChoice;
use crate::policy::invocation::{Permission, Preset};

/// `[agent] preset`: one of the known names, or an error naming the key and the choices.
pub(super) fn preset_name<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Preset>, D::Error> {
    let name = String::deserialize(d).map_err(|_| {
        serde::de::Error::custom(format!("agent.preset must be one of {}", Preset::names()))
    })?;
    parse_preset(&name)
        .map(Some)
        .map_err(|e| serde::de::Error::custom(e.to_string()))
}

/// `[agent] permission`: `safe`, `full` or `own`.
pub(super) fn permission_name<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Permission, D::Error> {
    let choices = || Permission::ALL.map(Permission::name).join(", ");
    let name = String::deserialize(d).map_err(|_| {
        serde::de::Error::custom(format!("agent.permission must be one of {}", choices()))
    })?;
    Permission::parse(&name).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "agent.permission {name:?} is not known; it is one of {}",
            choices()
        ))
    })
}

/// A preset's name (config or `--agent`), or a bad-input error that lists the valid ones.
pub fn parse_preset(name: &str) -> Result<Preset, RunnerError> {
    Preset::parse(name).ok_or_else(|| {
        RunnerError::bad_input(format!(
            "agent.preset {name:?} is not known; it is one of {}",
            Preset::names()
        ))
    })
}

impl AgentConfig {
    /// The agent this config names, if any: `preset` with `program`, `args` and `permission`;
    /// for `command` (set, or implied by a command), the command (its first word replaced by
    /// `program` when set) and then `args`.
    pub fn choice(&self) -> Option<AgentChoice> {
        let preset = match self.preset {
            Some(preset) => preset,
            None if self.command.is_empty() => return None,
            None => Preset::Command,
        };
        Some(self.choice_of(preset))
    }

    /// `preset` as this config would run it: its program and args when the config names the
    /// same preset; the config's permission in any case.
    pub fn choice_of(&self, preset: Preset) -> AgentChoice {
        let configured = self.preset.unwrap_or(Preset::Command) == preset;
        if preset == Preset::Command {
            let mut c = AgentChoice::command(&self.command, self.permission);
            if configured {
                if let Some(program) = &self.program {
                    c.program = Some(program.clone());
                }
                c.args.extend(self.args.iter().cloned());
            }
            return c;
        }
        AgentChoice {
            preset,
            program: self.program.clone().filter(|_| configured),
            args: if configured {
                self.args.clone()
            } else {
                Vec::new()
            },
            permission: self.permission,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn the_agent_preset_program_args_and_permission() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(
            &path,
            "[agent]\npreset = \"codex\"\nprogram = \"/opt/codex\"\nargs = \"-m 'o 3'\"\npermission = \"full\"\nresume_sessions = false\n",
        )
        .unwrap();
        let c = Config::load(&path).unwrap();
        let choice = c.agent.choice().unwrap();
        assert_eq!(choice.preset, Preset::Codex);
        assert_eq!(choice.program.as_deref(), Some("/opt/codex"));
        assert_eq!(choice.args, ["-m", "o 3"]);
        assert_eq!(choice.permission, Permission::Full);
        assert!(!c.agent.resume_sessions);
        // Another preset (the flag's) keeps the permission, not this preset's program or args.
        let other = c.agent.choice_of(Preset::Claude);
        assert_eq!((other.program, other.args.len()), (None, 0));
        assert_eq!(other.permission, Permission::Full);
        // A command alone means the command preset; nothing means no agent.
        assert_eq!(Config::default().agent.choice(), None);
        std::fs::write(
            &path,
            "[agent]\ncommand = \"my-agent -x\"\nargs = [\"-y\"]\n",
        )
        .unwrap();
        let c = Config::load(&path).unwrap().agent.choice().unwrap();
        assert_eq!(c.preset, Preset::Command);
        assert_eq!(
            (c.program.as_deref(), c.args.clone()),
            (Some("my-agent"), vec!["-x".to_string(), "-y".to_string()])
        );
        std::fs::write(&path, "[agent]\npreset = \"command\"\n").unwrap();
        assert_eq!(
            Config::load(&path).unwrap().agent.choice().unwrap().program,
            None
        );
        for (bad, key) in [
            ("preset = \"claud\"", "agent.preset"),
            ("preset = 3", "agent.preset"),
            ("permission = \"yolo\"", "agent.permission"),
            ("args = 3", "agent.args"),
        ] {
            std::fs::write(&path, format!("[agent]\n{bad}\n")).unwrap();
            let err = Config::load(&path).unwrap_err();
            assert!(err.to_string().contains(key), "{bad}: {err}");
            assert_eq!(err.exit_code(), crate::error::exit::BAD_INPUT);
        }
        std::fs::write(&path, "[agent]\npreset = \"claud\"\n").unwrap();
        let err = Config::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("claude, codex, gemini, aider, command"),
            "{err}"
        );
    }
}
