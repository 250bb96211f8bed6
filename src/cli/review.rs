//! `runner review`: a spec's commits, files and progress; `--diff` the whole patch.

use std::io::IsTerminal;
use std::path::Path;

use clap::Args;

use crate::ops::Workspace;
use crate::ops::run::pick_spec;

#[derive(Debug, Args)]
pub struct ReviewArgs {
    #[arg(long)]
    pub spec: Option<String>,
    /// Show the full patch (through $PAGER on a terminal).
    #[arg(long)]
    pub diff: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn review(cwd: &Path, args: ReviewArgs) -> anyhow::Result<i32> {
    let ws = Workspace::open(cwd)?;
    let name = pick_spec(&ws, args.spec.as_deref())?;
    let paths = ws.spec(&name)?;
    let r = crate::ops::review::review(&ws, &paths)?;
    if args.json {
        let mut v = serde_json::to_value(&r)?;
        if args.diff {
            v["diff"] = patch(&ws, &r)?.into();
        }
        super::print_json(&v)?;
        return Ok(0);
    }
    print!(
        "{}",
        crate::text::for_terminal(&crate::ops::review::render(&r))
    );
    if args.diff {
        show_patch(&patch(&ws, &r)?)?;
    }
    Ok(0)
}

fn patch(ws: &Workspace, r: &crate::ops::review::Review) -> anyhow::Result<String> {
    let from = r.merge_base.unwrap_or(r.tip);
    crate::git::merge::patch_text(&ws.main.repo, from, r.tip)
}

/// Through $PAGER on a terminal (default `less -R`), else straight to stdout.
fn show_patch(text: &str) -> anyhow::Result<()> {
    if std::io::stdout().is_terminal() {
        let pager = std::env::var("PAGER").unwrap_or_else(|_| "less -R".into());
        if let Ok(argv) = shell_words::split(&pager)
            && let Some((program, rest)) = argv.split_first()
            && let Ok(mut child) = std::process::Command::new(program)
                .args(rest)
                .stdin(std::process::Stdio::piped())
                .spawn()
        {
            if let Some(mut stdin) = child.stdin.take() {
                use std::io::Write;
                let _ = stdin.write_all(text.as_bytes());
            }
            let _ = child.wait();
            return Ok(());
        }
    }
    print!("\n{}", crate::text::for_terminal(text));
    Ok(())
}
