//! `runner completions SHELL` (the script a shell sources for runner's dynamic completion,
//! `complete`) and `runner man`: generated from the clap definitions, so they never fall
//! behind the commands and flags.

use clap::{Args, CommandFactory};
use clap_complete::Shell;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, powershell or elvish.
    pub shell: Shell,
}

/// The script that makes `shell` ask runner for its completions (commands, flags, spec names,
/// run ids): what `COMPLETE=<shell> runner` prints.
pub fn completions(args: CompletionsArgs) -> anyhow::Result<i32> {
    let script = super::complete::registration(args.shell)?;
    print!("{}", String::from_utf8_lossy(&script));
    Ok(0)
}

/// The man page: `runner(1)` with every command and its flags in one page, then the exit
/// codes, environment, files and examples (docs/ in the repository has the whole manual).
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
    render_reference(&mut out);
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

/// The sections after COMMANDS, as (heading, lead paragraph, tagged paragraphs): what
/// `--help` cannot say. The same facts as the README and docs/ (`tests/it/docs.rs` checks the
/// headings and the exit codes).
/// A man page section: its heading, a lead paragraph (may be empty), and (tag, text) items.
type Section = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

const REFERENCE: &[Section] = &[
    (
        "EXIT STATUS",
        "The same for every command; scripts may rely on them (they are never renumbered).",
        &[
            (
                "0",
                "Done: the spec is complete, or the command did what it was asked.",
            ),
            (
                "1",
                "An unexpected error (I/O, git); the message names the file. Also output that could not be written to stdout (a full disk); a closed pipe is not an error.",
            ),
            (
                "2",
                "Bad input or usage: an unknown or ambiguous spec, an invalid plan (left \
                 untouched), bad config, no agent, a question without a terminal and without \
                 the flag that answers it.",
            ),
            (
                "3",
                "Needs a human: a chunk failed max_attempts times, the planner gave no valid \
                 plan, recovery found a state that does not add up, an agent rewrote the \
                 branch's history, a merge, discard or undo refused.",
            ),
            (
                "4",
                "Busy: another live runner holds the spec, the slot or the main worktree. \
                 runner never waits for a lock; nothing was changed.",
            ),
            (
                "5",
                "A budget is spent and work remains: the run's sessions (run.max_sessions), \
                 or the spec's dollars or tokens ([budget], --max-usd).",
            ),
            (
                "6",
                "Paused by a usage limit until the time printed: run again after it, or pass \
                 --wait.",
            ),
            (
                "7",
                "The git remote could not be reached, or refused what was pushed (a lease \
                 another worker holds, a ref that moved since it was read): nothing was \
                 published, and local work is kept.",
            ),
            (
                "130",
                "Interrupted (SIGINT, SIGTERM, SIGHUP), or a question cancelled (Esc, Ctrl-C).",
            ),
        ],
    ),
    (
        "ENVIRONMENT",
        "No environment variable sets a config key.",
        &[
            (
                "NO_COLOR",
                "Non-empty: no colour with --color auto (the default).",
            ),
            ("TERM", "dumb: no colour with --color auto."),
            (
                "COMPLETE",
                "Set by a shell's completion script (runner completions SHELL): runner answers \
                 with the candidates for the words after --, and exits.",
            ),
            (
                "XDG_CONFIG_HOME, HOME",
                "Where the user's config is: $XDG_CONFIG_HOME/runner/config.toml, else \
                 ~/.config/runner/config.toml.",
            ),
            ("RUST_LOG", "Log filter for stderr, as -v and -vv."),
            (
                "PAGER",
                "The pager of runner review --diff on a terminal (default less -R).",
            ),
            (
                "TZ",
                "The time zone a usage limit's pause is shown in on screens (JSON keeps UTC).",
            ),
            (
                "PATH",
                "Where an agent preset's program is looked up (runner's own folder first).",
            ),
            (
                "RUNNER_JOURNAL_SEGMENT_BYTES",
                "The size at which the journal starts a new segment (default 4 MiB).",
            ),
            (
                "RUNNER_SPEC_DIR, RUNNER_CHUNK_ID, RUNNER_SESSION_ID",
                "Set by runner for each agent session, with RUNNER_ROLE, RUNNER_SPEC, \
                 RUNNER_PLAN_FILE, RUNNER_WORKTREE, RUNNER_REPO, RUNNER_ATTEMPT, RUNNER_RUN_ID, \
                 RUNNER_BIN and, for a resumed agent session, RUNNER_AGENT_SESSION_ID; runner \
                 chunk reads them to find its spec, chunk and session.",
            ),
            (
                "CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME, HOME",
                "Where runner looks for an agent CLI's own files after a session was killed \
                 before it said its figures.",
            ),
        ],
    ),
    (
        "FILES",
        "Paths are relative to the repository; .auto-claude/ and .worktrees/ are excluded \
         through .git/info/exclude.",
        &[
            (
                ".auto-claude/config.toml",
                "The configuration (runner init writes it, runner config shows it), over the \
                 user's ~/.config/runner/config.toml key by key.",
            ),
            (
                ".auto-claude/templates/",
                "Prompt templates that replace the built-in ones.",
            ),
            (".auto-claude/specs/<spec>/spec.md", "What to build."),
            (
                ".auto-claude/specs/<spec>/implementation_plan.json",
                "The plan: phases, chunks and their statuses; the progress truth.",
            ),
            (
                ".auto-claude/specs/<spec>/events.jsonl",
                "The spec's journal, one JSON object a line (advisory).",
            ),
            (
                ".auto-claude/specs/<spec>/runs/<run-id>.json, checkpoint.json",
                "Run records and the checkpoint runner resume starts from (advisory).",
            ),
            (
                ".auto-claude/specs/<spec>/sessions/<session-id>/",
                "Each agent session's prompt.md, output.log and verification.log.",
            ),
            (
                ".worktrees/auto-claude, .worktrees/auto-claude-<name>",
                "The slots: git worktrees on branch auto-claude/<spec>.",
            ),
            (
                "refs/auto-claude/recovery/, backup/, undone/",
                "Saved partial work, and the backups merge and discard make (runner gc \
                 removes old backups).",
            ),
        ],
    ),
    (
        "EXAMPLES",
        "",
        &[
            (
                "runner demo",
                "Show runner at work on a throw-away repository with a scripted agent.",
            ),
            (
                "runner new \"Add a login page with JWT\"",
                "Create spec 001-add-a-login-page-with-jwt (or offer an unfinished one like it).",
            ),
            (
                "runner run --spec 001 --agent claude",
                "Plan and build it; killed at any point, the same command continues.",
            ),
            (
                "runner run --jobs 2",
                "Build every spec with work to do (interrupted, planned, new), two at a time, each in a slot of its own.",
            ),
            (
                "runner recover --dry-run",
                "What recovery would do, changing nothing.",
            ),
            (
                "runner status --json",
                "Every spec's state, as one JSON object.",
            ),
            (
                "runner review --spec 001 --diff",
                "The spec's commits, files, progress and patch.",
            ),
            (
                "runner merge --spec 001 --yes && runner undo --spec 001",
                "Land the work on the base branch, then take it back.",
            ),
        ],
    ),
];

/// EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES and SEE ALSO, in roff.
fn render_reference(out: &mut Vec<u8>) {
    for (heading, lead, items) in REFERENCE {
        out.extend_from_slice(format!(".SH \"{heading}\"\n").as_bytes());
        if !lead.is_empty() {
            out.extend_from_slice(format!(".PP\n{}\n", roff_text(lead)).as_bytes());
        }
        for (tag, text) in *items {
            out.extend_from_slice(
                format!(".TP\n\\fB{}\\fR\n{}\n", roff_text(tag), roff_text(text)).as_bytes(),
            );
        }
    }
    out.extend_from_slice(
        b".SH \"SEE ALSO\"\n.PP\nrunner \\fICOMMAND\\fR \\-\\-help; the README and docs/ \
          (commands, agents, recovery, state, configuration, JSON) in runner's repository.\n",
    );
}

/// `text` safe as roff body text: backslashes and dashes escaped, and no line that starts
/// with a control character.
fn roff_text(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with('.') || escaped.starts_with('\'') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}
