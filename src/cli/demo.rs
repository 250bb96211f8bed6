//! `runner demo` and its scripted agent: the steps are shown on stderr as they end (like a run's
//! progress), the summary, the commands to look around and the one to remove the folder on
//! stdout (or the whole report as JSON).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use runner::ops::demo::agent::INTERRUPTED_CHUNK;
use runner::ops::demo::steps::{Stage, Step};
use runner::ops::demo::{DemoEvent, DemoOptions, DemoReport};

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to create the throw-away repository (default: a new folder in the temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Print the report as JSON on stdout (the steps still show on stderr).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: DemoArgs) -> anyhow::Result<i32> {
    // The steps run this very binary, wherever it is (a `cargo run` build has no `runner` on
    // PATH), and every command shown names it the same way.
    let exe = std::env::current_exe().context("finding the runner binary")?;
    let mut number = 0;
    let mut made: Option<PathBuf> = None;
    let report =
        runner::ops::demo::demo(
            DemoOptions { dir: args.dir, exe },
            &mut |event| match event {
                // The narration is informational: `-q` leaves it out (the summary stays).
                DemoEvent::Ready { dir, spec } => {
                    made = Some(dir.to_path_buf());
                    super::info(render_ready(dir, spec).trim_end());
                }
                DemoEvent::Step(step) => {
                    number += 1;
                    super::info(render_step(number, step).trim_end());
                }
            },
        );
    let report = match (report, made) {
        (Ok(report), _) => report,
        (Err(e), Some(dir)) => {
            // A demo cut short still says where its folder is and how to remove it.
            eprintln!("{}", render_left_behind(&dir));
            return Err(e);
        }
        (Err(e), None) => return Err(e),
    };
    if args.json {
        super::print_json(&serde_json::to_value(&report)?)?;
    } else {
        print!("{}", render_summary(&report));
    }
    Ok(0)
}

/// The hidden `runner demo-agent`: what it says goes to its session's log.
pub fn agent() -> anyhow::Result<i32> {
    runner::ops::demo::demo_agent(&mut |line| println!("{line}"))
}

/// Where a demo that did not finish left its folder, and the command that removes it.
fn render_left_behind(dir: &std::path::Path) -> String {
    let dir = runner::sh(dir.to_string_lossy());
    format!("\nThe demo did not finish; its folder stays: {dir}\n  remove it with: rm -rf {dir}")
}

fn render_ready(dir: &std::path::Path, spec: &str) -> String {
    format!(
        "runner demo: a throw-away repository at {}\n\
         Spec {spec}; agent: runner's built-in scripted agent (no LLM, no network).\n\
         Each step below is a real runner command, run in that folder.\n",
        dir.display()
    )
}

/// What each stage is there to show.
fn stage_text(stage: Stage) -> (&'static str, &'static str) {
    match stage {
        Stage::Build => (
            "Planning and building",
            "runner plans the spec, then builds it chunk by chunk with a commit per chunk; \
             add-greet-test fails its verification once and is retried; in the middle of \
             document-greet the demo kills runner",
        ),
        Stage::Status => (
            "After the crash",
            "the chunk is left in progress and nobody is running it",
        ),
        Stage::Recover => (
            "Recovery",
            "recover puts the interrupted chunk right without running an agent, and keeps \
             its partial work (saved under refs/auto-claude/recovery/ and left in the worktree)",
        ),
        Stage::Resume => (
            "Run again",
            "the next attempt starts from the partial work and finishes the chunk",
        ),
        Stage::Review => (
            "Review",
            "what the spec's branch would bring to main; README.md's section holds the \
             interrupted attempt's half and the next attempt's",
        ),
        Stage::Merge => ("Merge", "the work lands on main, backed up first"),
        Stage::Undo => (
            "Undo",
            "the merge is reversed: main, the branch and its worktree are back",
        ),
    }
}

fn render_step(number: usize, step: &Step) -> String {
    let (title, why) = stage_text(step.stage);
    let mut out = format!("\n{number}. {title}: {why}.\n   $ {}\n", step.command);
    for line in step.output.lines() {
        out.push_str(&format!("   | {}\n", runner::text::for_terminal(line)));
    }
    match (&step.killed_with, step.exit_code) {
        (Some(signal), _) => out.push_str(&format!(
            "   ✂ Interruption: the demo killed runner ({signal}) in the middle of \
             {INTERRUPTED_CHUNK}, as a crash or a power cut would; its agent had written the \
             first half of a README section.\n"
        )),
        (None, Some(0)) => {}
        (None, Some(code)) => out.push_str(&format!("   (exit code {code})\n")),
        (None, None) => out.push_str("   (ended by a signal)\n"),
    }
    out
}

fn render_summary(r: &DemoReport) -> String {
    let p = &r.partial_work;
    let mut out = format!(
        "\nThe partial work survived: the text {:?} that {}'s killed attempt wrote to {}",
        p.text, p.chunk, p.file
    );
    if let Some(saved) = &p.saved_ref {
        out.push_str(&format!(" was saved by recover at {saved} and"));
    }
    match &p.commit {
        Some(c) => out.push_str(&format!(
            " is in commit {} on {}.\n",
            runner::git::short_id(c),
            r.branch
        )),
        None => out.push_str(&format!(" is on {}.\n", r.branch)),
    }
    out.push_str(&format!("\nCommits on {} (newest first):\n", r.branch));
    for c in &r.commits {
        out.push_str(&format!(
            "  {} {}\n",
            runner::git::short_id(&c.commit),
            runner::text::for_terminal(&c.summary)
        ));
    }
    out.push_str(&format!(
        "\nThe demo's folder stays: {}\nEach command below works as shown, from any folder:\n",
        r.dir.display()
    ));
    for s in &r.commands {
        out.push_str(&format!("  {}:\n    {}\n", s.purpose, s.command));
    }
    out
}
