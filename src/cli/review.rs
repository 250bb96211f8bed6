//! `runner review`: a spec's commits, files and progress; `--diff` the whole patch.

use std::io::IsTerminal;
use std::path::Path;

use clap::Args;

use super::style::for_stdout;
use runner::ops::review::ReviewOptions;

#[derive(Debug, Args)]
pub struct ReviewArgs {
    #[arg(long, add = super::complete::spec_names())]
    pub spec: Option<String>,
    /// Show the full patch (through $PAGER on a terminal).
    #[arg(long)]
    pub diff: bool,
    #[arg(long)]
    pub json: bool,
    /// Fetch the spec (built elsewhere) from this git remote first: its folder and branch
    /// replace what is here, which is kept on a backup ref first. Needs --spec.
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
}

pub fn review(cwd: &Path, args: ReviewArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    if let Some(remote) = &args.remote {
        let spec = runner::ops::remote::lifecycle::spec_of(args.spec.as_deref())?;
        let r = runner::ops::remote::lifecycle::review(&ctx, Some(remote), &spec, args.diff)?;
        if args.json {
            return super::print_remote_json(&r).map(|()| 0);
        }
        super::fetched_lines(&r.fetched, &spec);
        print!("{}", super::view::review::render(&r.report, for_stdout()));
        if let Some(diff) = &r.report.diff {
            show_patch(diff)?;
        }
        return Ok(0);
    }
    let opts = ReviewOptions {
        spec: args.spec,
        diff: args.diff,
    };
    let r = runner::ops::review::review(&ctx, opts, &super::ask::TerminalAsker)?;
    if args.json {
        super::print_json(&r)?;
        return Ok(0);
    }
    print!("{}", super::view::review::render(&r, for_stdout()));
    if let Some(diff) = &r.diff {
        show_patch(diff)?;
    }
    Ok(0)
}

/// Through $PAGER on a terminal (default `less -R`), else straight to stdout; coloured as
/// `--color` says (made safe for the terminal first, so only the colour's escapes remain).
fn show_patch(text: &str) -> anyhow::Result<()> {
    let text = for_stdout().diff(&runner::text::for_terminal(text));
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
    print!("\n{text}");
    Ok(())
}
