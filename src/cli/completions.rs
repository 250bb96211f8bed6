//! `runner completions SHELL` and `runner man`: generated from the clap definitions, so they
//! never fall behind the commands and flags.

use clap::{Args, CommandFactory};
use clap_complete::Shell;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, powershell or elvish.
    pub shell: Shell,
}

pub fn completions(args: CompletionsArgs) -> anyhow::Result<i32> {
    let mut cmd = without_hidden_commands(super::Cli::command());
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "runner", &mut out);
    print!("{}", String::from_utf8_lossy(&out));
    Ok(0)
}

/// `cmd` without its hidden subcommands (the demo's internal agent): the generators would
/// offer them, and clap has no way to take a subcommand out, so the root is built again.
fn without_hidden_commands(cmd: clap::Command) -> clap::Command {
    let mut root = clap::Command::new("runner")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommand_required(true);
    for arg in cmd.get_arguments() {
        root = root.arg(arg.clone());
    }
    root.subcommands(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned())
}

/// The man page: `runner(1)` with every command and its flags in one page.
pub fn man() -> anyhow::Result<i32> {
    let cmd = super::Cli::command();
    let mut out = Vec::new();
    let page = clap_mangen::Man::new(cmd.clone());
    page.render_title(&mut out)?;
    page.render_name_section(&mut out)?;
    page.render_synopsis_section(&mut out)?;
    page.render_description_section(&mut out)?;
    page.render_options_section(&mut out)?;
    render_commands(&cmd, &mut out)?;
    page.render_version_section(&mut out)?;
    print!("{}", String::from_utf8_lossy(&out));
    Ok(0)
}

/// One subsection per command (clap_mangen's own lists only the names): its synopsis, what it
/// does and its own flags (the global ones are in OPTIONS above), so `man runner` answers
/// what `runner CMD --help` would.
fn render_commands(cmd: &clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
    out.extend_from_slice(b".SH COMMANDS\n");
    render_subcommands(cmd, "runner", out)
}

/// Each visible subcommand of `cmd` (named `prefix SUB`), then its own subcommands in turn:
/// `runner chunk done|fail|show` get their flags described like the others.
fn render_subcommands(cmd: &clap::Command, prefix: &str, out: &mut Vec<u8>) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("{prefix} {}", sub.get_name());
        let page_cmd = sub.clone().bin_name(name.clone());
        out.extend_from_slice(format!(".SS \"{name}\"\n").as_bytes());
        let page = clap_mangen::Man::new(page_cmd);
        let mut section = Vec::new();
        page.render_synopsis_section(&mut section)?;
        page.render_description_section(&mut section)?;
        page.render_options_section(&mut section)?;
        // Nested under COMMANDS: the section headings become paragraph breaks, and the
        // quoting prelude clap_mangen repeats before each section is said once, at the top.
        for line in String::from_utf8_lossy(&section).lines() {
            let line = match line {
                ".SH SYNOPSIS" | ".SH DESCRIPTION" => ".PP",
                ".SH OPTIONS" => ".PP\nOptions:",
                l if l.starts_with(".ie \\n(.g") || l.starts_with(".el .ds Aq") => continue,
                l => l,
            };
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        render_subcommands(sub, &name, out)?;
    }
    Ok(())
}
