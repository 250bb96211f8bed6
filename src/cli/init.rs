//! `runner init`: write `.auto-claude/config.toml`, every key commented out at its default.

use std::path::Path;

use clap::Args;

use runner::ops::config::InitOptions;
use runner::policy::invocation::Preset;

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Replace an existing .auto-claude/config.toml (its settings are lost).
    #[arg(long)]
    pub force: bool,
    /// The agent preset to write into the config ([agent] preset): claude, codex, gemini, aider
    /// or command. Without it, asked on a terminal; left unset otherwise.
    #[arg(long, value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(["claude", "codex", "gemini", "aider", "command"]))]
    pub agent: Option<String>,
}

/// What the question offers besides the presets.
const NO_AGENT: &str = "none for now (set [agent] preset later, or pass --agent to run)";

/// The preset to write: the flag's; else, on a terminal, the answer to a question.
fn chosen_preset(args: &InitArgs) -> anyhow::Result<Option<Preset>> {
    if let Some(name) = &args.agent {
        return Ok(Some(runner::config::parse_preset(name)?));
    }
    if !super::interact::can_ask() {
        return Ok(None);
    }
    let choices = vec!["claude", "codex", "gemini", "aider", NO_AGENT];
    let picked = super::interact::ask(|| {
        inquire::Select::new("Which agent runs the sessions?", choices).prompt()
    })?;
    Ok(Preset::parse(picked))
}

pub fn run(cwd: &Path, args: InitArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    runner::ops::config::refuse_existing(&ctx, args.force)?;
    // Asked before anything is written: a cancelled question changes nothing.
    let preset = chosen_preset(&args)?;
    let opts = InitOptions {
        force: args.force,
        preset,
    };
    let report = runner::ops::config::init(&ctx, opts)?;
    let agent = match preset {
        Some(p) => format!(" The agent is {p} ([agent] preset)."),
        None => String::new(),
    };
    println!(
        "Wrote {}: every key commented out at its default. Uncomment what you change; \
         `runner config` shows the values in effect.{agent}",
        runner::text::for_terminal(&report.file.display().to_string())
    );
    Ok(0)
}
