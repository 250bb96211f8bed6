use std::path::Path;

use clap::Args;

use runner::ops::worker::{WorkerOptions, WorkerReport, worker};

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The git remote specs are taken from and published to (default: [fleet] remote, "origin").
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
    /// Build up to N specs at the same time, each by a run of its own in a slot of its own.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Exit (0) once no published spec is left to take and nothing runs, instead of waiting
    /// for new ones.
    #[arg(long)]
    pub exit_when_idle: bool,
    /// The agent preset every run uses: claude, codex, gemini, aider or command (names the
    /// usage-limit account unless [fleet] account does).
    #[arg(long, value_name = "NAME", conflicts_with = "agent_command", value_parser = clap::builder::PossibleValuesParser::new(["claude", "codex", "gemini", "aider", "command"]))]
    pub agent: Option<String>,
    /// The agent command every run uses, e.g. "claude -p" (the `command` preset).
    #[arg(long, value_name = "CMD")]
    pub agent_command: Option<String>,
    /// Print one report as JSON on stdout at the end: the specs taken and how each ended,
    /// leases lost, pushes refused.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cwd: &Path, args: WorkerArgs) -> anyhow::Result<i32> {
    let shown = super::progress::JobsProgress::new();
    let ctx = super::open(cwd)?.with_progress(shown.own());
    let program = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find runner's own program to start: {e}"))?;
    let mut job_args: Vec<std::ffi::OsString> = vec!["--color".into(), "never".into()];
    if runner::output::quiet() {
        job_args.push("-q".into());
    }
    for _ in 0..runner::output::verbosity() {
        job_args.push("-v".into());
    }
    let report = worker(
        &ctx,
        WorkerOptions {
            remote: args.remote,
            jobs: args.jobs,
            exit_when_idle: args.exit_when_idle,
            agent: args.agent,
            agent_command: args.agent_command,
            program,
            args: job_args,
            live: shown.live(),
        },
    )?;
    if args.json {
        super::print_json(&report)?;
    } else {
        print_text(&report);
    }
    Ok(if report.interrupted {
        runner::error::exit::INTERRUPTED
    } else {
        0
    })
}

/// One line per spec taken, one per lease lost.
fn print_text(report: &WorkerReport) {
    let safe = |t: &str| runner::text::for_terminal(t).into_owned();
    if report.specs.is_empty() {
        println!("No spec taken from {}.", safe(&report.remote));
    }
    for taken in &report.specs {
        println!(
            "{}: {} ({}{})",
            safe(&taken.spec),
            safe(&taken.end),
            runner::text::count(taken.publications, "publication"),
            if taken.released { ", released" } else { "" }
        );
    }
    for lost in &report.leases_lost {
        println!(
            "{}: lease lost ({}); leftovers kept on {}",
            safe(&lost.spec),
            safe(&lost.reason),
            safe(&lost.kept.join(", "))
        );
    }
}
