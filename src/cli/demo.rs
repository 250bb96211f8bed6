use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to create the throw-away repository (default: a new folder in the temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Print the final summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: DemoArgs) -> anyhow::Result<i32> {
    let progress = std::rc::Rc::new(super::progress::TerminalProgress::new());
    let result = crate::ops::demo::demo(args.dir, progress)?;
    if args.json {
        super::print_json(&serde_json::json!({
            "dir": result.dir,
            "summary": result.summary,
            "commits": result.commits,
        }))?;
        return Ok(0);
    }
    let s = &result.summary;
    println!("\nCommits on {} (newest first):", s.branch);
    for c in &result.commits {
        println!("  {c}");
    }
    println!(
        "\nDone: {}/{} chunks in {} agent sessions; the work is in {}.",
        s.completed,
        s.total,
        s.sessions,
        s.worktree.display()
    );
    let ws = crate::store::Workspace::open(&result.dir)?;
    println!("\nrunner status:");
    print!(
        "{}",
        crate::ops::status::render(&crate::ops::status::status(&ws)?)
    );
    println!("\nLook around:");
    println!("  cd {}", result.dir.display());
    println!("  runner status            # what runner knows");
    println!("  git log --oneline {}", s.branch);
    println!("  cat .auto-claude/specs/{}/events.jsonl", s.spec);
    Ok(0)
}
