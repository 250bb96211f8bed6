//! Which agent a run uses: the flag, the config, or the one the spec last ran with.

use serde::{Deserialize, Serialize};

use super::invocation::{Permission, Preset};

/// An agent as configured: a preset, the program (none: the preset's own name on PATH; for
/// `command`, the command's first word), extra arguments, and the permission setting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentChoice {
    pub preset: Preset,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub permission: Permission,
}

impl AgentChoice {
    /// The `command` preset running `argv` (empty: no command, which a run refuses).
    pub fn command(argv: &[String], permission: Permission) -> AgentChoice {
        AgentChoice {
            preset: Preset::Command,
            program: argv.first().cloned(),
            args: argv.iter().skip(1).cloned().collect(),
            permission,
        }
    }
}

/// What a spec remembers of its last run's agent: the agent, and the config's agent at that
/// time (so that a config changed since is seen as "given later").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remembered {
    pub agent: AgentChoice,
    #[serde(default)]
    pub config: Option<AgentChoice>,
}

/// The agent of a run: the flag; else the config, when it differs from the config the spec
/// remembered (it was given later); else the remembered agent; else the config; else none.
pub fn choose_agent(
    flag: Option<AgentChoice>,
    config: Option<AgentChoice>,
    remembered: Option<Remembered>,
) -> Option<AgentChoice> {
    if flag.is_some() {
        return flag;
    }
    match remembered {
        Some(r) if config.is_some() && config != r.config => config,
        Some(r) => Some(r.agent),
        None => config,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(preset: Preset, program: Option<&str>) -> AgentChoice {
        AgentChoice {
            preset,
            program: program.map(str::to_string),
            args: Vec::new(),
            permission: Permission::Safe,
        }
    }

    #[test]
    fn the_flag_then_a_changed_config_then_the_memory_then_the_config() {
        let claude = agent(Preset::Claude, None);
        let codex = agent(Preset::Codex, None);
        let gemini = agent(Preset::Gemini, Some("/opt/gemini"));
        let remembered = |agent: &AgentChoice, config: Option<&AgentChoice>| Remembered {
            agent: agent.clone(),
            config: config.cloned(),
        };
        // The flag wins over everything.
        assert_eq!(
            choose_agent(
                Some(codex.clone()),
                Some(claude.clone()),
                Some(remembered(&gemini, None))
            ),
            Some(codex.clone())
        );
        // `run --agent codex` with claude configured, then `run`: codex continues.
        let r = remembered(&codex, Some(&claude));
        assert_eq!(
            choose_agent(None, Some(claude.clone()), Some(r.clone())),
            Some(codex.clone())
        );
        // The config changed since: it was given later, it wins.
        assert_eq!(
            choose_agent(None, Some(gemini.clone()), Some(r.clone())),
            Some(gemini.clone())
        );
        // The config removed: the memory still holds.
        assert_eq!(choose_agent(None, None, Some(r)), Some(codex.clone()));
        // Nothing remembered: the config; nothing at all: none.
        assert_eq!(choose_agent(None, Some(claude.clone()), None), Some(claude));
        assert_eq!(choose_agent(None, None, None), None);
    }

    #[test]
    fn a_command_is_its_first_word_and_the_rest() {
        let c = AgentChoice::command(&["sh".into(), "-c".into(), "x".into()], Permission::Full);
        assert_eq!(c.program.as_deref(), Some("sh"));
        assert_eq!(c.args, ["-c", "x"]);
        assert_eq!(AgentChoice::command(&[], Permission::Safe).program, None);
    }
}
