//! `runner new DESCRIPTION`: look for unfinished work like it first (`ops::detect`), let the
//! person continue that instead (asked on a terminal; `--choice N`/`--new-spec` without one),
//! else create the spec (`ops::new`); with `--run`, go straight on, in this process, as
//! `runner resume <spec>` or `runner run --spec <spec>` would.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use chrono::{DateTime, Utc};
use clap::Args;
use serde::Serialize;

use super::ask::TerminalAsker;
use super::interact::{ask, can_ask};
use super::progress::TerminalProgress;
use super::run::ContinueArgs;
use runner::engine::run::{RunOptions, RunSummary};
use runner::error::RunnerError;
use runner::ops::detect::{Candidate, ContinueWith, DETECTION_BOUND, Detection};
use runner::store::Workspace;

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

/// `--json`: `{"schema":1,"created","resumed","candidates",…}` (README "runner new").
#[derive(Serialize)]
struct NewReport<'a> {
    created: Option<&'a str>,
    resumed: Option<&'a str>,
    candidates: &'a [Candidate],
    /// An unfinished spec with the same description.
    identical: Option<&'a Candidate>,
    /// Detection ran past its bound and was given up (as if nothing matched).
    timed_out: bool,
    /// The command that continues the chosen spec, or runs the one created.
    next_command: Option<String>,
    /// With `--run`: the run's summary.
    run: Option<&'a RunSummary>,
    /// Exit 2 because a choice is needed: the error, as `{"error":…}` has it (message, and a
    /// hint with the command of each choice).
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<runner::error::ErrorReport>,
}

impl super::json::JsonOutput for NewReport<'_> {}

/// What happens after detection.
enum Decision {
    Create,
    /// Continue this candidate; `identical`: it has the very same description.
    Continue {
        spec: Candidate,
        identical: bool,
    },
}

/// `directory`: `-C`'s, carried into the commands of the hints printed in JSON (as `main`
/// does for the others).
pub fn run(cwd: &Path, args: NewArgs, directory: Option<&Path>) -> anyhow::Result<i32> {
    // Every refusal before anything is read or written.
    args.go.check()?;
    runner::ops::new::check_description(&args.description)?;
    if let Some(name) = &args.name {
        runner::ops::new::check_name(name)?;
    }
    if args.choice == Some(0) {
        return Err(
            RunnerError::bad_input("--choice 0: the candidates are numbered from 1")
                .with_hint("run without --choice to see them")
                .into(),
        );
    }
    let ws = Workspace::open(cwd)?;
    let spec_text = match &args.spec_file {
        Some(file) => Some(runner::store::new_spec::read_spec_file(&ws.root, file)?),
        None => None,
    };
    let now = Utc::now();
    // Listed before detection, so that a spec another `runner new` makes meanwhile is seen
    // under the lock (`ops::new::NewRequest::seen_specs`).
    let seen_specs = (!args.new_spec).then(|| runner::store::spec::list(&ws.specs_dir));
    let mut detection = if args.new_spec {
        Detection::default()
    } else {
        runner::ops::detect::detect(&ws, &args.description, now, DETECTION_BOUND)
    };
    // The commands shown go on from where the user typed: with `-C DIR`, they carry it.
    for candidate in detection
        .candidates
        .iter_mut()
        .chain(&mut detection.identical)
    {
        super::carry_directory(
            std::slice::from_mut(&mut candidate.continue_command),
            directory,
        );
    }
    if detection.timed_out {
        tracing::info!(
            "looking for unfinished specs like this one took over {} ms ({} scanned); going on as if none matched",
            DETECTION_BOUND.as_millis(),
            detection.scanned
        );
    }
    // The same description as a spec being built right now: nothing to continue or create.
    if let Some(same) = detection
        .identical
        .as_ref()
        .filter(|c| c.is_busy() && args.choice.is_none())
    {
        return refuse(args.json, &detection, being_run(same), directory);
    }
    let decision = match decide(&args, &detection, now)? {
        Some(d) => d,
        // Candidates, and nobody to ask: each choice's command, exit 2, nothing created.
        None => {
            let e = choice_needed(&args.description, &detection.candidates);
            return refuse(args.json, &detection, e, directory);
        }
    };
    let json = args.json;
    let mut outcome = match decision {
        Decision::Continue { spec, identical } => continue_chosen(cwd, args, &spec, identical)?,
        Decision::Create => {
            let req = runner::ops::new::NewRequest {
                description: args.description.clone(),
                spec_text,
                name: args.name.clone(),
                seen_specs,
            };
            create_spec(cwd, &ws, &req, args, now)?
        }
    };
    super::carry_directory(std::slice::from_mut(&mut outcome.next_command), directory);
    // The run stopped (needs a person, budget, interrupted): its error and code, and in JSON
    // still the spec created or continued.
    if let Some(e) = outcome.failed.take() {
        if !json {
            return Err(e);
        }
        return stop_json(&detection, &outcome, e, directory);
    }
    if json {
        super::print_json(&report(&detection, &outcome))?;
    } else if let Some(done) = &outcome.run {
        println!("{}", super::run::summary_line(done));
    } else if outcome.created.is_some() {
        println!("Next: {}", t(&outcome.next_command));
    } else {
        println!("Continue it with: {}", t(&outcome.next_command));
    }
    Ok(0)
}

/// Stop with `e`, nothing created; with `--json` the report (the candidates, the identical
/// spec) carries the error, and the exit code is the error's.
fn refuse(
    json: bool,
    detection: &Detection,
    e: RunnerError,
    directory: Option<&Path>,
) -> anyhow::Result<i32> {
    if !json {
        return Err(e.into());
    }
    stop_json(detection, &Outcome::default(), e.into(), directory)
}

/// With `--json`, stop with `e`: its text on stderr (as every error), the report with the
/// error on stdout; returns the error's exit code.
fn stop_json(
    detection: &Detection,
    outcome: &Outcome,
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
    super::print_json(&NewReport {
        error: Some(error),
        ..report(detection, outcome)
    })?;
    Ok(code)
}

/// A live run holds the spec with the same description (exit 4).
fn being_run(same: &Candidate) -> RunnerError {
    let spec = t(&same.spec);
    RunnerError::Busy(format!(
        "spec {spec} has this description and is being run right now; nothing was created"
    ))
    .with_hint(format!(
        "follow it with `runner status --spec {}`",
        runner::sh(&same.spec)
    ))
    .with_hint("pass --new-spec to start another spec anyway")
}

/// Where `runner new` ended: the spec created or continued, the command that goes on with
/// it, and with `--run` the run's summary.
#[derive(Default)]
struct Outcome {
    created: Option<String>,
    resumed: Option<String>,
    next_command: String,
    run: Option<RunSummary>,
    /// With `--run`: the run stopped with this error.
    failed: Option<anyhow::Error>,
}

fn report<'a>(d: &'a Detection, o: &'a Outcome) -> NewReport<'a> {
    NewReport {
        created: o.created.as_deref(),
        resumed: o.resumed.as_deref(),
        candidates: &d.candidates,
        identical: d.identical.as_ref(),
        timed_out: d.timed_out,
        next_command: (!o.next_command.is_empty()).then(|| o.next_command.clone()),
        run: o.run.as_ref(),
        error: None,
    }
}

/// The candidate chosen (or the identical one): said, then with `--run` continued here.
fn continue_chosen(
    cwd: &Path,
    args: NewArgs,
    spec: &Candidate,
    identical: bool,
) -> anyhow::Result<Outcome> {
    if !args.json {
        let shown = t(&spec.spec);
        if identical {
            println!("Identical spec found — resuming {shown} (pass --new-spec to start fresh)");
        } else {
            println!("Resuming {shown}");
        }
    }
    let (run, failed) = match args.run {
        true => split(continue_spec(cwd, spec, args.go, args.json)),
        false => (None, None),
    };
    Ok(Outcome {
        resumed: Some(spec.spec.clone()),
        next_command: spec.continue_command.clone(),
        run,
        failed,
        ..Outcome::default()
    })
}

/// Create the spec, say so, and with `--run` run it here as `runner run --spec` does.
fn create_spec(
    cwd: &Path,
    ws: &Workspace,
    req: &runner::ops::new::NewRequest,
    args: NewArgs,
    now: DateTime<Utc>,
) -> anyhow::Result<Outcome> {
    let created = runner::ops::new::create(ws, req, now)?;
    let line = format!(
        "Created spec {0} in {1}/specs/{0}",
        created.spec,
        runner::store::workspace::STATE_DIR
    );
    if args.json {
        super::info(&line);
    } else {
        println!("{line}");
    }
    let (run, failed) = if args.run {
        let opts = args.go.options(RunOptions {
            spec: Some(created.spec.clone()),
            ..RunOptions::default()
        });
        let progress = Rc::new(TerminalProgress::new());
        split(runner::ops::run::run(cwd, opts, progress, &TerminalAsker))
    } else {
        (None, None)
    };
    Ok(Outcome {
        next_command: format!("runner run --spec {}", runner::sh(&created.spec)),
        created: Some(created.spec),
        run,
        failed,
        ..Outcome::default()
    })
}

/// A run's result as `Outcome` keeps it.
fn split(result: anyhow::Result<RunSummary>) -> (Option<RunSummary>, Option<anyhow::Error>) {
    match result {
        Ok(done) => (Some(done), None),
        Err(e) => (None, Some(e)),
    }
}

/// Create, continue a candidate, or (`None`) a choice is needed and cannot be asked.
fn decide(
    args: &NewArgs,
    detection: &Detection,
    now: DateTime<Utc>,
) -> anyhow::Result<Option<Decision>> {
    let found = &detection.candidates;
    // An identical spec is continued, unless --choice names one of the candidates (the
    // identical one is among them, first).
    if let Some(same) = detection
        .identical
        .as_ref()
        .filter(|_| args.choice.is_none())
    {
        return Ok(Some(Decision::Continue {
            spec: same.clone(),
            identical: true,
        }));
    }
    if let Some(n) = args.choice {
        return match found.get(n - 1) {
            Some(c) => Ok(Some(Decision::Continue {
                spec: c.clone(),
                identical: false,
            })),
            None => Err(RunnerError::bad_input(format!(
                "--choice {n}: {} unfinished spec{} like this one {} found",
                found.len(),
                if found.len() == 1 { "" } else { "s" },
                if found.len() == 1 { "was" } else { "were" }
            ))
            .with_hint("run without --choice to see them, or pass --new-spec to start fresh")
            .into()),
        };
    }
    if found.is_empty() {
        return Ok(Some(Decision::Create));
    }
    if args.json || !can_ask() {
        return Ok(None);
    }
    eprint!("{}", render_candidates(found, now));
    let picked = if found.len() == 1 {
        question("Resume it? [Y/n]", 1, true)?
    } else {
        let numbers: Vec<String> = (1..=found.len()).map(|n| n.to_string()).collect();
        let text = format!("Resume which? [{}/n — start fresh]", numbers.join("/"));
        question(&text, found.len(), false)?
    };
    Ok(Some(match picked {
        Some(n) => Decision::Continue {
            spec: found[n - 1].clone(),
            identical: false,
        },
        None => Decision::Create,
    }))
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

/// Continue `c` in this process as its `continue_with` says: `runner resume <spec>`, or
/// `runner run --spec <spec>` (a spec planned but never started has no run to resume).
fn continue_spec(
    cwd: &Path,
    c: &Candidate,
    go: ContinueArgs,
    json: bool,
) -> anyhow::Result<RunSummary> {
    if c.continue_with == ContinueWith::Resume {
        return Ok(super::resume::resume_spec(cwd, &c.spec, go, json)?.1);
    }
    let opts = go.options(RunOptions {
        spec: Some(c.spec.clone()),
        auto_continue: true,
        ..RunOptions::default()
    });
    runner::ops::run::run(cwd, opts, Rc::new(TerminalProgress::new()), &TerminalAsker)
}

/// Candidates and no way to ask: exit 2 with the command of each choice.
fn choice_needed(description: &str, found: &[Candidate]) -> RunnerError {
    let base = format!("runner new {}", runner::sh(description));
    let mut e = RunnerError::bad_input(format!(
        "found {} unfinished spec{} like this one; say which to continue, or start fresh",
        found.len(),
        if found.len() == 1 { "" } else { "s" }
    ));
    for (i, c) in found.iter().enumerate() {
        e = e.with_hint(format!(
            "{}. {} ({}, {}/{} chunks, score {:.2}): {base} --choice {}",
            i + 1,
            t(&c.spec),
            t(&c.status),
            c.chunks.completed,
            c.chunks.total,
            c.score,
            i + 1
        ));
    }
    e.with_hint(format!("start fresh: {base} --new-spec"))
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
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
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
