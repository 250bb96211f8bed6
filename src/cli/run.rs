use std::path::Path;

use clap::Args;

use std::rc::Rc;

use super::ask::TerminalAsker;
use super::progress::TerminalProgress;
use crate::ops::run::{RunOptions, RunSummary, run as run_op, run_interrupted};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The spec: a folder name under .auto-claude/specs, its number (001), or a unique part of it.
    #[arg(long)]
    pub spec: Option<String>,
    /// Never ask; continue the existing build.
    #[arg(long)]
    pub auto_continue: bool,
    /// Never ask. With existing work this needs --auto-continue (or use review/merge/discard).
    /// Confirms re-pinning a spec whose pinned base branch was deleted (--base-branch).
    #[arg(long)]
    pub yes: bool,
    /// The branch to start from (pinned for the spec after its first run; if the pinned branch
    /// was deleted, re-pins the spec here once confirmed).
    #[arg(long)]
    pub base_branch: Option<String>,
    #[command(flatten)]
    pub go: ContinueArgs,
    /// Print the final summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// How a run goes on: the flags `runner resume` shares with `runner run`.
#[derive(Debug, Args)]
pub struct ContinueArgs {
    /// The agent command for this run, e.g. "claude -p" (the `command` preset; overrides the
    /// config and the agent the spec last ran with, and is remembered for the spec).
    #[arg(long, conflicts_with = "agent")]
    pub agent_command: Option<String>,
    /// The agent preset for this run: claude, codex, gemini, aider or command (overrides
    /// [agent] preset and the agent the spec last ran with, and is remembered for the spec).
    #[arg(long, value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(["claude", "codex", "gemini", "aider", "command"]))]
    pub agent: Option<String>,
    /// Build in .worktrees/auto-claude-NAME instead of .worktrees/auto-claude.
    #[arg(long, value_name = "NAME")]
    pub slot: Option<String>,
    /// Seconds the agent may take to finish after Ctrl-C/SIGTERM (overrides [run] drain_timeout).
    #[arg(long, value_name = "SECONDS")]
    pub drain_timeout: Option<u64>,
    /// Dollars the spec may spend over all its runs, for this run (overrides [budget] max_usd).
    #[arg(long, value_name = "USD", value_parser = parse_max_usd)]
    pub max_usd: Option<f64>,
    /// On a usage limit, wait until it resets (showing the countdown) and go on, instead of
    /// stopping with exit 6 (as [run] wait_for_limits; bounded by [run] max_wait).
    #[arg(long)]
    pub wait: bool,
}

impl ContinueArgs {
    /// Refuse a bad `--slot` name before anything is read.
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(slot) = &self.slot {
            crate::store::spec::check_name(slot)
                .map_err(|e| crate::error::RunnerError::bad_input(format!("--slot: {e}")))?;
        }
        Ok(())
    }

    /// `opts` with these flags.
    pub fn options(self, opts: RunOptions) -> RunOptions {
        RunOptions {
            agent_command: self.agent_command,
            agent: self.agent,
            slot: self.slot,
            drain_timeout: self.drain_timeout,
            max_usd: self.max_usd,
            wait: self.wait,
            ..opts
        }
    }
}

/// `001-a: complete — 3/3 chunks on auto-claude/001-a (3 sessions)`.
pub fn summary_line(summary: &RunSummary) -> String {
    format!(
        "{}: {} — {}/{} chunks on {} ({} sessions)",
        summary.spec,
        summary.outcome,
        summary.completed,
        summary.total,
        summary.branch,
        summary.sessions
    )
}

fn parse_max_usd(text: &str) -> Result<f64, String> {
    let usd: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of dollars"))?;
    crate::config::check_max_usd(usd)
}

pub fn run(cwd: &Path, args: RunArgs) -> anyhow::Result<i32> {
    args.go.check()?;
    // With --auto-continue and no --spec (and not started in a spec's slot), every interrupted
    // spec is resumed (JSON: a list). Otherwise the spec is chosen here, where a question may
    // be asked.
    let ws = crate::store::Workspace::open(cwd)?;
    let many = args.spec.is_none()
        && args.auto_continue
        && crate::store::spec::slot_spec(&ws, cwd).is_none();
    let spec = if many {
        None
    } else {
        Some(super::pick::spec(&ws, cwd, args.spec.as_deref())?)
    };
    let opts = args.go.options(RunOptions {
        spec,
        auto_continue: args.auto_continue,
        base_branch: args.base_branch,
        yes: args.yes,
        ..RunOptions::default()
    });
    let progress = Rc::new(TerminalProgress::new());
    let summaries = if many {
        let all = run_interrupted(cwd, opts, progress, &TerminalAsker)?;
        if all.is_empty() && !args.json {
            println!("No interrupted spec to resume.");
        }
        all
    } else {
        vec![run_op(cwd, opts, progress, &TerminalAsker)?]
    };
    if args.json {
        if many {
            super::print_json(&summaries)?;
        } else {
            super::print_json(&summaries[0])?;
        }
    } else {
        for summary in &summaries {
            println!("{}", summary_line(summary));
        }
    }
    Ok(0)
}
