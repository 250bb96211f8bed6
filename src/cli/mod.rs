//! The front end: command-line definitions (clap) and dispatch, one file per command that calls
//! its operation in `ops` and renders the result (text or JSON). The only layer that prints or
//! asks: the terminal's progress sink and asker live here and are passed down.

mod ask;
mod chunk;
pub mod complete;
mod completions;
mod config;
mod demo;
mod discard;
mod gc;
mod hint;
mod init;
pub mod interact;
mod json;
mod live;
mod logs;
mod merge;
mod new;
mod pick;
mod plan;
mod pr;
mod progress;
mod recover;
mod resume;
mod review;
mod run;
pub(crate) mod runs;
mod status;
mod status_remote;
pub mod style;
mod submit;
mod undo;
mod view;
mod watch;
mod worker;

pub use hint::carry_directory;
pub use json::{print_error_json, wants_json};

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "runner",
    version,
    about = "Drive AI coding agents through a plan, chunk by chunk, in a git worktree — and survive any interruption.",
    after_help = "Exit codes: 0 done, 1 unexpected error, 2 bad input or usage, 3 needs a human, 4 busy, 5 budget spent (sessions, dollars or tokens), 6 paused by a usage limit, 7 the git remote unreachable or refusing, 130 interrupted."
)]
pub struct Cli {
    /// More log output on stderr (repeat for more). RUST_LOG works too.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// No progress or informational lines on stderr (errors and warnings still shown; the
    /// reports on stdout are unchanged).
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Colour: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub color: style::ColorChoice,
    /// Run as if runner was started in DIR.
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub directory: Option<std::path::PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Plan the spec if needed, then build it chunk by chunk until done, failed or interrupted.
    Run(run::RunArgs),
    /// Start a feature: look for unfinished work like it first, then create its spec (NNN-slug).
    New(new::NewArgs),
    /// Put interrupted state right without running an agent, and report what was done.
    Recover(recover::RecoverArgs),
    /// Bring back an interrupted run: find it, say where it stood and what to do next, continue.
    Resume(resume::ResumeArgs),
    /// Look at a spec's work: commits, files, progress, whether it merges cleanly (read-only).
    Review(review::ReviewArgs),
    /// Land a spec's work on its base branch (backed up first; undoable).
    Merge(merge::MergeArgs),
    /// Throw a spec's build away and reset its plan (backed up first; undoable).
    Discard(discard::DiscardArgs),
    /// Push a spec's branch and open its pull request (gh, glab), or print where to open one.
    Pr(pr::PrArgs),
    /// Reverse the last merge or discard of a spec; --list shows the backups.
    Undo(undo::UndoArgs),
    /// Remove backups older than a number of days (never done automatically).
    Gc(gc::GcArgs),
    /// Every spec: progress, branch, worktree, who is running it (--remote: a remote's).
    Status(status::StatusArgs),
    /// Publish a spec (its folder and branch) on the git remote for workers to build.
    Submit(submit::SubmitArgs),
    /// A spec's whole plan: its phases and chunks, with statuses, attempts and verifications.
    Plan(plan::PlanArgs),
    /// The runs of every spec, newest first: active, stale (killed) or ended.
    Runs(runs::RunsArgs),
    /// Every spec and every active run on one live full screen: state, chunk, progress, cost,
    /// the agent's latest line; Enter opens a spec's log, q quits (needs a terminal).
    Watch(watch::WatchArgs),
    /// One run in detail: its heartbeat, last chunk, checkpoint and last journal lines.
    Show(runs::ShowArgs),
    /// What the agent said and did in a spec's sessions (the latest, a run's, one); -f follows.
    Logs(logs::LogsArgs),
    /// Report on a chunk (for agents): done, fail, show.
    #[command(subcommand)]
    Chunk(chunk::ChunkCommand),
    /// Write .auto-claude/config.toml with every key commented out at its default.
    Init(init::InitArgs),
    /// The effective configuration and where each value came from.
    Config(config::ConfigArgs),
    /// Print the script that makes a shell (bash, zsh, fish, powershell, elvish) complete runner:
    /// commands, flags, spec names, run ids.
    Completions(completions::CompletionsArgs),
    /// Print runner's man page (roff) on stdout.
    Man,
    /// Serve runner's tools over MCP on stdin/stdout (for agents and IDEs; see docs/commands.md).
    Mcp,
    /// Build specs published on a git remote, under a lease each, publishing every chunk
    /// (one worker per clone; see docs/fleet.md).
    Worker(worker::WorkerArgs),
    /// Show runner at work on a throw-away repository with a built-in scripted agent.
    Demo(demo::DemoArgs),
    /// The scripted agent the demo uses (internal).
    #[command(hide = true)]
    DemoAgent,
}

/// Run the parsed command; returns the process exit code.
pub fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    apply_globals(&cli)?;
    // Read only by the commands that need it: the demo, completions and the man page work in
    // a current folder that was removed since.
    let cwd = current_dir;
    match cli.command {
        Command::Run(args) => run::run(&cwd()?, args),
        Command::New(args) => new::run(&cwd()?, args, cli.directory.as_deref()),
        Command::Recover(args) => recover::run(&cwd()?, args),
        Command::Resume(args) => resume::run(&cwd()?, args),
        Command::Status(args) => status::run(&cwd()?, args),
        Command::Submit(args) => submit::run(&cwd()?, args),
        Command::Plan(args) => plan::run(&cwd()?, args),
        Command::Runs(args) => runs::runs_cmd(&cwd()?, args),
        Command::Watch(args) => watch::run(&cwd()?, args),
        Command::Show(args) => runs::show_cmd(&cwd()?, args),
        Command::Logs(args) => logs::run(&cwd()?, args),
        Command::Review(args) => review::review(&cwd()?, args),
        Command::Merge(args) => merge::merge_cmd(&cwd()?, args),
        Command::Discard(args) => discard::discard_cmd(&cwd()?, args),
        Command::Pr(args) => pr::run(&cwd()?, args),
        Command::Undo(args) => undo::undo_cmd(&cwd()?, args),
        Command::Gc(args) => gc::gc_cmd(&cwd()?, args),
        Command::Init(args) => init::run(&cwd()?, args),
        Command::Config(args) => config::run(&cwd()?, args),
        Command::Completions(args) => completions::completions(args),
        Command::Man => completions::man(),
        Command::Mcp => crate::mcp::serve(cwd()?),
        Command::Chunk(cmd) => chunk::run(&cwd()?, cmd),
        Command::Worker(args) => worker::run(&cwd()?, args),
        Command::Demo(args) => demo::run(args),
        Command::DemoAgent => demo::agent(),
    }
}

/// The folder runner was started in (or `-C`'s): one that was removed since is said plainly.
fn current_dir() -> anyhow::Result<std::path::PathBuf> {
    std::env::current_dir().map_err(|e| {
        runner::error::RunnerError::bad_input(format!("the current folder cannot be used: {e}"))
            .with_hint("cd to your project's folder (it may have been removed), or pass -C DIR")
            .into()
    })
}

/// The global flags, before anything else looks at the directory or prints: `-C` first (so
/// the repository is found from there), then colour and quiet, and the sink that prints the
/// warnings lower layers hand up (`output::warn`).
fn apply_globals(cli: &Cli) -> anyhow::Result<()> {
    if let Some(dir) = &cli.directory {
        std::env::set_current_dir(dir).map_err(|e| {
            runner::error::RunnerError::bad_input(format!(
                "-C {}: cannot run there: {e}",
                dir.display()
            ))
        })?;
    }
    style::init(cli.color);
    runner::output::set_quiet(cli.quiet);
    runner::output::set_verbosity(cli.verbose);
    runner::output::set_warning_sink(style::print_warning);
    // What a signal did, said at once on stderr (a closed stderr must not panic the shutdown:
    // runner's eprintln! is the quiet one).
    runner::output::set_urgent_sink(|line| eprintln!("{line}"));
    Ok(())
}

/// The report of an error that ends a command (as `main` prints it): an interruption says
/// how to resume where it stopped.
pub fn error_report(err: &anyhow::Error) -> runner::error::ErrorReport {
    let mut report = runner::error::ErrorReport::of(err);
    if report.kind == "interrupted" {
        // The signal's context says nothing new; how to go on does.
        report.message = "interrupted".into();
        report
            .hints
            .push(match runner::engine::run::resume_command() {
                Some(command) => format!("resume where it stopped with: {command}"),
                None => "run it again to resume where it stopped".into(),
            });
    }
    report
}

/// The context of a command, opened once: the repository `cwd` is in, and specs named in
/// messages as the command typed, with `--spec <name>` (`pick::typed_with_spec`).
fn open(cwd: &std::path::Path) -> anyhow::Result<runner::ops::Ctx> {
    Ok(runner::ops::Ctx::open(cwd)?.with_spec_command(Box::new(pick::typed_with_spec)))
}

/// An informational line on stderr, left out with `-q/--quiet`.
fn info(line: &str) {
    if !runner::output::quiet() {
        eprintln!("{line}");
    }
}

/// Print `value` as pretty JSON on stdout: one object that starts with `"schema"`
/// (docs/json.md).
/// A command's report with what `--remote` added (`fetched`, `published`), as one JSON object.
fn print_remote_json<R: serde::Serialize>(
    value: &runner::ops::remote::lifecycle::WithRemote<R>,
) -> anyhow::Result<()> {
    print_json(&serde_json::to_value(value)?)
}

/// What `--remote` brought here, and the refs that keep what was here before, on stderr.
fn fetched_lines(fetched: &runner::ops::remote::bring::Brought, spec: &str) {
    let t = |s: &str| runner::text::for_terminal(s).into_owned();
    info(&format!(
        "Fetched {} from {}: its folder ({}){}.",
        t(spec),
        t(&fetched.remote),
        runner::git::short_id(&fetched.folder),
        match &fetched.branch {
            Some(tip) => format!(
                " and branch auto-claude/{} ({})",
                t(spec),
                runner::git::short_id(tip)
            ),
            None => String::new(),
        }
    ));
    for kept in &fetched.backups {
        info(&format!("What was here before is kept on {}.", t(kept)));
    }
    for chunk in &fetched.reports_withdrawn {
        info(&format!(
            "Chunk {} was reported done where it ran, but its work was never published; a run here builds it again.",
            t(chunk)
        ));
    }
}

fn print_json(value: &impl json::JsonOutput) -> anyhow::Result<()> {
    println!("{}", json::to_json(value)?);
    Ok(())
}
