//! `runner new DESCRIPTION`: the arguments, the one question (continue an unfinished spec
//! like it, or start fresh) and the rendering; the workflow is `ops::new`.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use chrono::{DateTime, Utc};
use clap::Args;

use super::ask::{JsonAsker, TerminalAsker};
use super::interact::{ask, can_ask};
use super::progress::TerminalProgress;
use super::run::ContinueArgs;
use runner::engine::run::RunOptions;
use runner::ops::detect::Candidate;
use runner::ops::new::{NewAsker, NewOptions, NewReport};

#[derive(Debug, Args)]
pub struct NewArgs {
    /// What to build, in a sentence or more: the spec's task description (and its spec.md,
    /// unless --spec-file gives one).
    pub description: String,
    /// The slug of the spec's folder (NNN-SLUG) instead of one made from the description:
    /// lowercase ASCII letters, digits and single dashes, at most 50 characters.
    #[arg(long, value_name = "SLUG")]
    pub name: Option<String>,
    /// Write this file's text as the spec's spec.md (UTF-8, at most 10 MB).
    #[arg(long, value_name = "FILE")]
    pub spec_file: Option<PathBuf>,
    /// Start a new spec without looking for unfinished work like it.
    #[arg(short = 'N', long, conflicts_with = "choice")]
    pub new_spec: bool,
    /// Continue the Nth unfinished spec found (as numbered in the list), without asking.
    #[arg(long, value_name = "N")]
    pub choice: Option<usize>,
    /// Go straight on: run the new spec (as `runner run --spec`), or continue the one chosen
    /// (as `runner resume`).
    #[arg(long)]
    pub run: bool,
    #[command(flatten)]
    pub go: ContinueArgs,
    /// Print JSON on stdout: the spec created or resumed, and the candidates found.
    #[arg(long)]
    pub json: bool,
}

/// `directory`: `-C`'s, carried into the commands of the hints printed in JSON (as `main`
/// does for the others).
pub fn run(cwd: &Path, args: NewArgs, directory: Option<&Path>) -> anyhow::Result<i32> {
    args.go.check()?;
    let ctx = super::open(cwd)?.with_progress(Rc::new(TerminalProgress::new()));
    let json = args.json;
    let opts = NewOptions {
        description: args.description,
        name: args.name,
        spec_file: args.spec_file,
        new_spec: args.new_spec,
        choice: args.choice,
        run: args.run,
        go: args.go.options(RunOptions::default()),
    };
    let person: &dyn runner::ops::new::NewAsker = if json { &JsonAsker } else { &TerminalAsker };
    let mut report = runner::ops::new::new(&ctx, opts, person)?;
    // The commands shown go on from where the user typed: with `-C DIR`, they carry it.
    for candidate in report.candidates.iter_mut().chain(&mut report.identical) {
        super::carry_directory(
            std::slice::from_mut(&mut candidate.continue_command),
            directory,
        );
    }
    if let Some(next) = &mut report.next_command {
        super::carry_directory(std::slice::from_mut(next), directory);
    }
    // Stopped (a choice needed, the same spec being run, the run stopped): its error and
    // code, and in JSON still the spec created or continued.
    if let Some(e) = report.stopped.take() {
        if !json {
            return Err(e);
        }
        return stop_json(report, e, directory);
    }
    let next = report.next_command.as_deref().map(t).unwrap_or_default();
    if json {
        super::print_json(&report)?;
    } else if let Some(done) = &report.run {
        println!("{}", super::run::summary_line(done));
    } else {
        if report.created.is_some() {
            println!("Next: {next}");
        } else {
            println!("Continue it with: {next}");
        }
        if report.needs_agent {
            println!(
                "  (no agent is configured: add --agent-command \"CMD\" or --agent NAME to it, or set [agent] in .auto-claude/config.toml)"
            );
        }
    }
    Ok(0)
}

/// With `--json`, stop with `e`: its text on stderr (as every error), the report with the
/// error on stdout; returns the error's exit code.
fn stop_json(
    mut report: NewReport,
    e: anyhow::Error,
    directory: Option<&Path>,
) -> anyhow::Result<i32> {
    let mut error = super::error_report(&e);
    super::carry_directory(&mut error.hints, directory);
    runner::write_quietly(
        &mut std::io::stderr().lock(),
        format_args!("{}", runner::text::for_terminal(&error.to_text())),
    );
    let code = error.code;
    report.error = Some(error);
    super::print_json(&report)?;
    Ok(code)
}

/// "Created spec X in .auto-claude/specs/X".
pub fn created_line(spec: &str) -> String {
    format!(
        "Created spec {0} in {1}/specs/{0}",
        t(spec),
        runner::store::workspace::STATE_DIR
    )
}

/// The candidates shown, then the question: `Some(i)` continues `found[i]`, `None` starts a
/// new spec.
pub fn ask_similar(found: &[Candidate], now: DateTime<Utc>) -> anyhow::Result<Option<usize>> {
    eprint!("{}", render_candidates(found, now));
    let picked = if found.len() == 1 {
        question("Continue it? [Y/n]", 1, true)?
    } else {
        let numbers: Vec<String> = (1..=found.len()).map(|n| n.to_string()).collect();
        let text = format!("Continue which? [{}/n — start fresh]", numbers.join("/"));
        question(&text, found.len(), false)?
    };
    Ok(picked.map(|n| n - 1))
}

/// The question and what `runner new` says on a terminal.
impl NewAsker for TerminalAsker {
    fn similar_work(
        &self,
        found: &[runner::ops::detect::Candidate],
        now: chrono::DateTime<chrono::Utc>,
    ) -> anyhow::Result<Option<Option<usize>>> {
        if !can_ask() {
            return Ok(None);
        }
        ask_similar(found, now).map(Some)
    }

    fn show_created(&self, spec: &str) {
        println!("{}", created_line(spec));
    }

    fn show_continuing(&self, spec: &str, identical: bool, now: bool) {
        let spec = runner::text::for_terminal(spec);
        // What happens: continued now (--run), or only chosen (nothing started).
        println!(
            "{}",
            match (identical, now) {
                (true, true) => format!(
                    "Identical spec found: continuing {spec} (pass --new-spec to start fresh)"
                ),
                (true, false) => format!(
                    "Identical spec found: {spec}; nothing was started (pass --new-spec to start fresh)"
                ),
                (false, true) => format!("Continuing {spec}"),
                (false, false) => format!("Chose {spec}; nothing was started"),
            }
        );
    }
}

impl NewAsker for JsonAsker {
    fn show_created(&self, spec: &str) {
        super::info(&created_line(spec));
    }
}

/// Ask `text` until the answer is a number 1..=`count` (or, with `yes`, empty/y/yes: 1) or
/// n/no (`None`: start fresh). Esc or Ctrl-C: exit 130, nothing created.
fn question(text: &str, count: usize, yes: bool) -> anyhow::Result<Option<usize>> {
    let read = move |answer: &str| -> Option<Option<usize>> {
        let a = answer.trim().to_ascii_lowercase();
        match a.as_str() {
            "n" | "no" => Some(None),
            "" | "y" | "yes" if yes => Some(Some(1)),
            _ => a.parse().ok().filter(|n| (1..=count).contains(n)).map(Some),
        }
    };
    let help = if yes {
        "Enter or y: continue it; n: start a new spec".to_string()
    } else {
        format!("a number from 1 to {count} continues that spec; n starts a new one")
    };
    let answer = ask(|| {
        inquire::Text::new(text)
            .with_help_message(&help)
            .with_validator(move |a: &str| {
                Ok(match read(a) {
                    Some(_) => inquire::validator::Validation::Valid,
                    None => inquire::validator::Validation::Invalid(
                        "answer with one of the choices in brackets".into(),
                    ),
                })
            })
            .prompt()
    })?;
    Ok(read(&answer).flatten())
}

/// The candidates for a person: one in detail, several as a numbered list with progress bars.
fn render_candidates(found: &[Candidate], now: DateTime<Utc>) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if let [c] = found {
        let _ = writeln!(out, "An unfinished spec looks like this one:");
        let _ = writeln!(out, "  spec           {}", t(&c.spec));
        let _ = writeln!(out, "  status         {}", t(&c.status));
        let _ = writeln!(
            out,
            "  chunks         {}/{} done",
            c.chunks.completed, c.chunks.total
        );
        let _ = writeln!(out, "  spent          ${:.2}", c.spent_usd);
        let _ = writeln!(out, "  last activity  {}", ago(&c.last_activity, now));
        let _ = writeln!(out, "  description    {}", t(&c.description));
        return out;
    }
    let _ = writeln!(out, "Unfinished specs look like this one:");
    for (i, c) in found.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {}. {}  {} {}/{}  {}  ${:.2}  {}",
            i + 1,
            t(&c.spec),
            bar(c.chunks.completed, c.chunks.total),
            c.chunks.completed,
            c.chunks.total,
            t(&c.status),
            c.spent_usd,
            ago(&c.last_activity, now)
        );
        let _ = writeln!(out, "     {}", t(&c.description));
    }
    out
}

/// `[####------]`: ten steps of the chunks done.
fn bar(done: usize, total: usize) -> String {
    let filled = (done.min(total) * 10).checked_div(total).unwrap_or(0);
    format!("[{}{}]", "#".repeat(filled), "-".repeat(10 - filled))
}

/// "3 hours ago", from an RFC 3339 time ("unknown" if it does not read).
fn ago(when: &str, now: DateTime<Utc>) -> String {
    let Ok(then) = DateTime::parse_from_rfc3339(when) else {
        return "unknown".into();
    };
    let secs = (now - then.with_timezone(&Utc)).num_seconds();
    let (n, unit) = match secs {
        s if s < 60 => return "just now".into(),
        s if s < 3600 => (s / 60, "minute"),
        s if s < 86_400 => (s / 3600, "hour"),
        s => (s / 86_400, "day"),
    };
    format!("{} ago", runner::text::count(n, unit))
}

/// Text from specs made safe for the terminal.
fn t(text: &str) -> String {
    runner::text::for_terminal(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_bars_read_as_the_issue_shows_them() {
        let now = DateTime::parse_from_rfc3339("2026-11-23T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(ago("2026-11-23T09:00:00Z", now), "3 hours ago");
        assert_eq!(ago("2026-11-23T11:59:00Z", now), "1 minute ago");
        assert_eq!(ago("2026-11-23T11:59:30Z", now), "just now");
        assert_eq!(ago("2026-11-20T12:00:00Z", now), "3 days ago");
        assert_eq!(ago("not a time", now), "unknown");
        assert_eq!(bar(2, 5), "[####------]");
        assert_eq!(bar(0, 0), "[----------]");
        assert_eq!(bar(7, 3), "[##########]");
    }
}
