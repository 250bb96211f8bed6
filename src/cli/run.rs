use std::path::Path;

use clap::Args;

use std::rc::Rc;

use super::ask::TerminalAsker;
use super::progress::TerminalProgress;
use runner::ops::run::{
    RunOptions, RunReport, run as run_op, run_chosen, run_interrupted, run_jobs,
};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The spec: a folder name under .auto-claude/specs, its number (001), or a unique part of it.
    #[arg(long, add = super::complete::spec_names())]
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
    /// Build up to N specs at the same time — the SPECs given, else every spec with work to
    /// do (interrupted ones first, then planned and new ones) — each by a run of its own in a
    /// slot of its own, with no questions (1: one after the other, in this run).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// With --jobs: the specs to build (each named as with --spec); none: every spec with
    /// work to do.
    #[arg(value_name = "SPEC", requires = "jobs", add = super::complete::spec_names())]
    pub specs: Vec<String>,
    /// Plan the spec (when it has no plan yet), show the plan and stop before any chunk, so
    /// that it can be read and edited; the next `runner run` codes from it.
    #[arg(long, conflicts_with = "jobs")]
    pub plan_only: bool,
    /// Print the final summary as JSON on stdout (with --plan-only: the plan, as `runner plan
    /// --json`).
    #[arg(long)]
    pub json: bool,
    /// Progress as marked JSON lines on stderr, for the runner that started this one
    /// (`--jobs`).
    #[arg(long, hide = true)]
    pub progress_events: bool,
    /// With --progress-events: the runner that started this one shows agent sessions live
    /// (a terminal), so they are sent too.
    #[arg(long, hide = true, requires = "progress_events")]
    pub progress_live: bool,
    /// The run id to take (with --spec; for the MCP server's start_run, which chooses it).
    #[arg(long, hide = true, value_name = "ID", requires = "spec")]
    pub run_id: Option<String>,
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
            runner::store::spec::check_name(slot)
                .map_err(|e| runner::error::RunnerError::bad_input(format!("--slot: {e}")))?;
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

/// `001-a: complete — 3/3 chunks on auto-claude/001-a (3 sessions)`; `1/1 chunk`, `(1 session)`.
pub fn summary_line(summary: &RunReport) -> String {
    format!(
        "{}: {} — {}/{} {} on {} ({})",
        summary.spec,
        summary.outcome,
        summary.completed,
        summary.total,
        runner::text::noun(summary.total, "chunk"),
        summary.branch,
        runner::text::count(summary.sessions, "session")
    )
}

fn parse_max_usd(text: &str) -> Result<f64, String> {
    let usd: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of dollars"))?;
    runner::config::check_max_usd(usd)
}

/// What `runner run` does: one spec, every interrupted spec (`--auto-continue` with no spec),
/// or several specs at once (`--jobs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Many {
    One,
    Interrupted,
    Jobs(usize),
}

pub fn run(cwd: &Path, args: RunArgs) -> anyhow::Result<i32> {
    args.go.check()?;
    check_jobs(&args)?;
    let ctx = super::open(cwd)?;
    // With --auto-continue and no --spec (and not started in a spec's slot), every interrupted
    // spec is resumed; with --jobs, the specs named or every one with work to do (JSON: a
    // list). Otherwise the spec is chosen here, where a question may be asked. (--plan-only is
    // about one spec, chosen as everywhere.)
    let in_slot = runner::store::spec::slot_spec(&ctx.ws, cwd).is_some();
    let many = match args.jobs {
        Some(_) if in_slot => {
            return Err(jobs_usage(
                "not inside a spec's slot (it builds specs in slots of their own)",
            ));
        }
        Some(n) => Many::Jobs(n),
        None if !args.plan_only && args.spec.is_none() && args.auto_continue && !in_slot => {
            Many::Interrupted
        }
        None => Many::One,
    };
    let job_args = job_args(&args);
    let (plan_only, json) = (args.plan_only, args.json);
    let named = args.specs;
    let opts = args.go.options(RunOptions {
        spec: args.spec,
        // Each job runs with no questions.
        auto_continue: args.auto_continue || matches!(many, Many::Jobs(_)),
        base_branch: args.base_branch,
        yes: args.yes,
        run_id: args.run_id,
        ..RunOptions::default()
    });
    let progress: Rc<dyn runner::ops::run::ProgressSink> = if args.progress_events {
        Rc::new(super::progress::EventsProgress {
            live: args.progress_live,
        })
    } else {
        Rc::new(TerminalProgress::new())
    };
    let ctx = ctx.with_progress(progress);
    if plan_only {
        return show_plan_only(&ctx, opts, json);
    }
    let summaries = match many {
        Many::One => vec![run_op(&ctx, opts, &TerminalAsker)?],
        Many::Interrupted => run_interrupted(&ctx, opts, &TerminalAsker)?,
        Many::Jobs(1) => run_chosen(&ctx, opts, &named, &TerminalAsker)?,
        Many::Jobs(jobs) => {
            let shown = super::progress::JobsProgress::new();
            let ctx = ctx.with_progress(shown.own());
            let options = runner::engine::jobs::JobsOptions {
                jobs,
                program: std::env::current_exe().map_err(|e| {
                    anyhow::anyhow!("--jobs: cannot find runner's own program to start: {e}")
                })?,
                cwd: cwd.to_path_buf(),
                args: job_args,
                live: shown.live(),
            };
            run_jobs(&ctx, &options, &opts, &named)?
        }
    };
    if summaries.is_empty() && !json {
        match many {
            Many::Interrupted => println!("No interrupted spec to resume."),
            Many::Jobs(_) => println!("No spec to start or continue."),
            Many::One => {}
        }
    }
    if json {
        if many == Many::One {
            super::print_json(&summaries[0])?;
        } else {
            super::print_json(&summaries)?;
        }
    } else {
        for summary in &summaries {
            println!("{}", summary_line(summary));
        }
    }
    Ok(0)
}

/// `--plan-only`: the plan (written first if there was none), then what to do with it.
fn show_plan_only(ctx: &runner::ops::Ctx, opts: RunOptions, json: bool) -> anyhow::Result<i32> {
    let report = runner::ops::run::plan_only(ctx, opts, &TerminalAsker)?;
    let plan = &report.plan;
    let spec = runner::text::for_terminal(&plan.spec).into_owned();
    let again = runner::engine::run::run_again_command(&plan.spec, None, false);
    let first = match &report.planned {
        Some(_) => format!("Planned {spec}; no chunk was started."),
        None => format!("{spec} has a plan already: nothing was planned or started."),
    };
    super::plan::show(plan, json)?;
    super::info(&format!(
        "{first}\nRead it, edit {} if you like, then `{}` codes from it.",
        runner::text::for_terminal(&plan.plan),
        runner::text::for_terminal(&again)
    ));
    Ok(0)
}

/// `--jobs` goes without `--spec` (the specs are named after it) nor `--slot` (each spec gets
/// a slot of its own), and is at least 1.
fn check_jobs(args: &RunArgs) -> anyhow::Result<()> {
    match args.jobs {
        None => Ok(()),
        Some(0) => Err(runner::error::RunnerError::bad_input(
            "--jobs 0 would build nothing; give 1 or more (1: one spec after the other)",
        )
        .into()),
        Some(_) if args.spec.is_some() => Err(jobs_usage(
            "without --spec (name the specs after it: runner run --jobs N SPEC…)",
        )),
        Some(n) if n > 1 && args.go.slot.is_some() => Err(jobs_usage(
            "without --slot (each spec builds in the slot that holds it, or a new one of its own)",
        )),
        Some(_) => Ok(()),
    }
}

fn jobs_usage(when: &str) -> anyhow::Error {
    runner::error::RunnerError::bad_input(format!(
        "--jobs builds several specs at once: it is used {when}"
    ))
    .with_hint("runner run --jobs N [SPEC…]")
    .into()
}

/// The flags each spec's run gets under `--jobs`: this run's own, as given, and the global
/// ones (`-C` is already the folder it starts in; colour is the parent's to add).
fn job_args(args: &RunArgs) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = vec!["--color".into(), "never".into()];
    let mut flag = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            out.push(name.into());
            out.push(value.into());
        }
    };
    flag("--agent-command", args.go.agent_command.clone());
    flag("--agent", args.go.agent.clone());
    flag("--base-branch", args.base_branch.clone());
    flag(
        "--drain-timeout",
        args.go.drain_timeout.map(|s| s.to_string()),
    );
    // (An f64 prints as the shortest text that reads back as the same number.)
    flag("--max-usd", args.go.max_usd.map(|usd| usd.to_string()));
    for (on, name) in [(args.yes, "--yes"), (args.go.wait, "--wait")] {
        if on {
            out.push(name.into());
        }
    }
    if runner::output::quiet() {
        out.push("-q".into());
    }
    for _ in 0..runner::output::verbosity() {
        out.push("-v".into());
    }
    out
}
