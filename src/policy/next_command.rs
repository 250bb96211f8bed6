//! The command runner prints for a person to run a spec again. "Continue this spec" is one
//! command on every screen (`runner run --spec S --auto-continue`): it asks no question, so it
//! works as printed without a terminal (a script, a closed terminal, `sh -c`), and it recovers,
//! plans and builds whatever state the spec was left in. The agent flag the run was given goes
//! with it, so that the command runs the agent the person chose even where the spec does not
//! remember it (a run stopped before its slot was ready).

/// How a run's agent was named on its command line, as a printed command must repeat it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentFlag {
    /// `--agent-command TEXT`.
    Command(String),
    /// `--agent NAME` (a preset, run as the config's `[agent]` would run it).
    Preset(String),
}

impl AgentFlag {
    /// The flag of a run given `--agent-command` or `--agent` (clap refuses both at once; the
    /// command wins, as the run's own choice does).
    pub fn of(agent_command: Option<&str>, preset: Option<&str>) -> Option<AgentFlag> {
        match (agent_command, preset) {
            (Some(command), _) => Some(AgentFlag::Command(command.to_string())),
            (None, Some(name)) => Some(AgentFlag::Preset(name.to_string())),
            (None, None) => None,
        }
    }

    /// The flag as typed, its value quoted for a POSIX shell.
    pub fn words(&self) -> String {
        match self {
            AgentFlag::Command(command) => format!("--agent-command {}", crate::sh(command)),
            AgentFlag::Preset(name) => format!("--agent {}", crate::sh(name)),
        }
    }
}

/// `runner run --spec S` (quoted), with `--auto-continue` when existing work would otherwise
/// need a question on a terminal, and the run's agent flag.
pub fn run_command(spec: &str, agent: Option<&AgentFlag>, auto_continue: bool) -> String {
    let mut command = format!("runner run --spec {}", crate::sh(spec));
    if auto_continue {
        command.push_str(" --auto-continue");
    }
    if let Some(agent) = agent {
        command.push(' ');
        command.push_str(&agent.words());
    }
    command
}

/// The one command that continues `spec`, printed wherever a spec can be continued.
pub fn continue_command(spec: &str, agent: Option<&AgentFlag>) -> String {
    run_command(spec, agent, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_continue_command_asks_nothing_and_repeats_the_agent_flag() {
        assert_eq!(
            continue_command("001-a", None),
            "runner run --spec 001-a --auto-continue"
        );
        let command = AgentFlag::of(Some("claude -p"), None);
        assert_eq!(
            continue_command("001-a b", command.as_ref()),
            "runner run --spec '001-a b' --auto-continue --agent-command 'claude -p'"
        );
        let preset = AgentFlag::of(None, Some("codex"));
        assert_eq!(
            continue_command("001-a", preset.as_ref()),
            "runner run --spec 001-a --auto-continue --agent codex"
        );
        assert_eq!(AgentFlag::of(None, None), None);
        // Without --auto-continue: a start (no existing work, so no question).
        assert_eq!(
            run_command("001-a", preset.as_ref(), false),
            "runner run --spec 001-a --agent codex"
        );
    }
}
