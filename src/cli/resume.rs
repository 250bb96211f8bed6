//! `runner resume [HINT]`: find the interrupted run meant, say where it stood and what to do
//! next (text or JSON, the same content), optionally write the handoff document, then continue
//! it as `runner run --spec S --auto-continue` would, as a new run with `resumed_from`.

use std::path::Path;
use std::rc::Rc;

use chrono::Utc;
use clap::Args;
use serde::Serialize;

use super::ask::TerminalAsker;
use super::interact::{ask, can_ask};
use super::progress::TerminalProgress;
use super::run::ContinueArgs;
use super::style::{Style, for_stdout};
use runner::engine::run::{RunOptions, RunSummary};
use runner::error::RunnerError;
use runner::ops::resume::{Match, ResumeRequest, ResumeSummary, Target};
use runner::policy::resolve::Candidate;
use runner::store::Workspace;

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// What to resume: a run id or a prefix of one (4 characters or more), a spec's name,
    /// number or a part of its name, or the id of the chunk it was working on. Without one:
    /// the most recent resumable run.
    #[arg(conflicts_with_all = ["run", "spec", "chunk"])]
    pub hint: Option<String>,
    /// Read the hint as a run id or prefix only.
    #[arg(long, value_name = "ID", conflicts_with_all = ["spec", "chunk"])]
    pub run: Option<String>,
    /// Read the hint as a spec (name, number, part of a name) only.
    #[arg(long, value_name = "SPEC", conflicts_with = "chunk")]
    pub spec: Option<String>,
    /// Read the hint as a chunk id only (the spec in progress at it, or that last worked on it).
    #[arg(long, value_name = "CHUNK")]
    pub chunk: Option<String>,
    /// Of several matches, take the Nth (as numbered in the list).
    #[arg(long, value_name = "N")]
    pub choice: Option<usize>,
    /// Also write the summary as Markdown to .auto-claude/handoffs/ (as [resume] handoff).
    #[arg(long)]
    pub handoff: bool,
    /// Stop after the summary (start no agent).
    #[arg(long)]
    pub no_run: bool,
    #[command(flatten)]
    pub go: ContinueArgs,
    /// Print JSON on stdout: the summary (with the continued run's summary under "run"), or
    /// the matches to choose from.
    #[arg(long)]
    pub json: bool,
}

/// The summary, and the run that continued it.
#[derive(Serialize)]
struct Resumed<'a> {
    #[serde(flatten)]
    summary: &'a ResumeSummary,
    run: Option<&'a RunSummary>,
}

impl super::json::JsonOutput for Resumed<'_> {}

pub fn run(cwd: &Path, args: ResumeArgs) -> anyhow::Result<i32> {
    args.go.check()?;
    for (flag, value) in [
        ("the hint", &args.hint),
        ("--run", &args.run),
        ("--spec", &args.spec),
        ("--chunk", &args.chunk),
    ] {
        if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return Err(RunnerError::bad_input(format!("{flag} is empty"))
                .with_hint("leave the hint out to resume the most recent run: runner resume")
                .into());
        }
    }
    let ws = Workspace::open(cwd)?;
    let now = Utc::now();
    let req = ResumeRequest {
        hint: args.hint.clone(),
        run: args.run.clone(),
        spec: args.spec.clone(),
        chunk: args.chunk.clone(),
        choice: args.choice,
    };
    let target = match runner::ops::resume::resolve(&ws, &req, now)? {
        Target::One(c) => c,
        Target::Ambiguous { matches, user_hint } => {
            if args.json {
                let list = serde_json::json!({
                    "schema": super::json::SCHEMA,
                    "success": false,
                    "matches": matches,
                    "user_hint": user_hint,
                });
                println!("{}", serde_json::to_string_pretty(&list)?);
                return Ok(runner::error::exit::BAD_INPUT);
            }
            if !can_ask() {
                return Err(ambiguous(user_hint.as_deref(), &matches).into());
            }
            let picked = choose(user_hint.as_deref(), &matches)?;
            // Resolve again by what was picked (its full run id, else its exact spec name),
            // never by its position: the list may have changed while the person chose.
            let chosen = matches
                .iter()
                .find(|m| m.choice == picked)
                .ok_or_else(|| runner::error::RunnerError::bad_input("no such choice"))?;
            let again = match &chosen.run_id {
                Some(id) => ResumeRequest {
                    run: Some(id.clone()),
                    ..ResumeRequest::default()
                },
                None => ResumeRequest {
                    spec: Some(chosen.spec.clone()),
                    ..ResumeRequest::default()
                },
            };
            match runner::ops::resume::resolve(&ws, &again, now)? {
                Target::One(c) => c,
                Target::Ambiguous { matches, .. } => {
                    return Err(ambiguous(Some(&chosen.spec), &matches).into());
                }
            }
        }
    };
    let json = args.json;
    let how = Going::from(&args);
    let resumed = continue_with(cwd, &ws, &target, now, how, args.go)?;
    if json {
        super::print_json(&Resumed {
            summary: &resumed.0,
            run: resumed.1.as_ref(),
        })?;
    } else if let Some(done) = &resumed.1 {
        println!("{}", super::run::summary_line(done));
    }
    Ok(0)
}

/// How a resolved target goes on: its summary (printed as text unless `json`), the handoff
/// document if asked for, then (unless `no_run`) the continued run.
struct Going {
    handoff: bool,
    no_run: bool,
    json: bool,
}

impl From<&ResumeArgs> for Going {
    fn from(args: &ResumeArgs) -> Going {
        Going {
            handoff: args.handoff,
            no_run: args.no_run,
            json: args.json,
        }
    }
}

/// `runner resume --spec SPEC` for `runner new`, which found the spec: the same resolution,
/// summary and continued run (the summary printed unless `json`); returns the summary and the
/// run's.
pub(super) fn resume_spec(
    cwd: &Path,
    spec: &str,
    go: ContinueArgs,
    json: bool,
) -> anyhow::Result<(ResumeSummary, RunSummary)> {
    go.check()?;
    let ws = Workspace::open(cwd)?;
    let now = Utc::now();
    let req = ResumeRequest {
        spec: Some(spec.to_string()),
        ..ResumeRequest::default()
    };
    let target = match runner::ops::resume::resolve(&ws, &req, now)? {
        Target::One(c) => c,
        Target::Ambiguous { matches, .. } => return Err(ambiguous(Some(spec), &matches).into()),
    };
    let how = Going {
        handoff: false,
        no_run: false,
        json,
    };
    let (summary, done) = continue_with(cwd, &ws, &target, now, how, go)?;
    let done = done.ok_or_else(|| anyhow::anyhow!("resuming {spec} started no run"))?;
    Ok((summary, done))
}

fn continue_with(
    cwd: &Path,
    ws: &Workspace,
    target: &Candidate,
    now: chrono::DateTime<Utc>,
    how: Going,
    go: ContinueArgs,
) -> anyhow::Result<(ResumeSummary, Option<RunSummary>)> {
    let mut summary = runner::ops::resume::summary_of(ws, target, now)?;
    let mut handoff = None;
    if how.handoff || handoff_configured(ws)? {
        let path = runner::ops::resume::handoff::write(ws, &summary, now)?;
        summary.handoff_document = Some(path.display().to_string());
        handoff = Some(path);
    }
    if !how.json {
        print!("{}", render(&summary, for_stdout()));
    }
    if how.no_run {
        return Ok((summary, None));
    }
    let opts = go.options(RunOptions {
        spec: Some(target.spec.clone()),
        auto_continue: true,
        resumed_from: target.run_id.clone(),
        ..RunOptions::default()
    });
    let done = runner::ops::run::run(cwd, opts, Rc::new(TerminalProgress::new()), &TerminalAsker)
        .inspect_err(|e| {
        // The handoff was written before the run's own checks (a budget spent, a busy
        // slot): say in it that the run did not go on.
        let Some(path) = &handoff else { return };
        let code = runner::error::exit_code_of(e);
        let why = format!("{e:#}");
        if let Err(w) =
            runner::ops::resume::handoff::note_not_continued(path, &summary, now, code, &why)
        {
            runner::output::warn(&format!("the handoff document was not updated: {w}"));
        }
    })?;
    Ok((summary, Some(done)))
}

/// `[resume] handoff`.
fn handoff_configured(ws: &Workspace) -> anyhow::Result<bool> {
    Ok(ws.config()?.resume.handoff)
}

/// Several matches and no terminal: exit 2 with each match and its command.
fn ambiguous(hint: Option<&str>, matches: &[Match]) -> RunnerError {
    let what = hint.map_or("The hint".to_string(), |h| format!("'{h}'"));
    let mut e = RunnerError::bad_input(format!(
        "{what} matches {} resumable runs; name one",
        matches.len()
    ));
    for m in matches {
        e = e.with_hint(format!("{}: {}", line(m), m.command));
    }
    e.with_hint("or pass --choice N to take the Nth")
}

/// `1. r3f9a0c4  spec 001-add-login  chunk subtask-1-2  last active 2026-11-23T20:30:00Z`.
fn line(m: &Match) -> String {
    let t = |s: &str| runner::text::for_terminal(s).into_owned();
    format!(
        "{}. {}  spec {}  chunk {}  last active {}",
        m.choice,
        m.shown.as_deref().unwrap_or("(no run record)"),
        t(&m.spec),
        m.chunk.as_deref().map_or("-".into(), t),
        m.last_activity.map_or("unknown".into(), |a| a
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
    )
}

/// The numbered list on a terminal; returns the number picked (Esc: exit 130).
fn choose(hint: Option<&str>, matches: &[Match]) -> anyhow::Result<usize> {
    let title = match hint {
        Some(h) => format!("'{}' matches several runs:", runner::text::for_terminal(h)),
        None => "Which run?".to_string(),
    };
    let lines: Vec<String> = matches.iter().map(line).collect();
    let picked = ask(|| inquire::Select::new(&title, lines).raw_prompt())?;
    Ok(picked.index + 1)
}

/// The summary for a person.
pub fn render(s: &ResumeSummary, style: Style) -> String {
    use std::fmt::Write as _;
    let t = |s: &str| runner::text::for_terminal(s).into_owned();
    let sum = &s.summary;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {}  spec {}",
        style.bold("Resuming"),
        s.run_id.as_deref().unwrap_or("(no run record)"),
        t(&s.spec)
    );
    let confidence = format!("{}/100", s.confidence_score);
    let confidence = if s.confidence_score < runner::ops::resume::summary::LOW_CONFIDENCE {
        style.warn(&confidence)
    } else {
        style.ok(&confidence)
    };
    let _ = writeln!(
        out,
        "  confidence {confidence} ({}), from the {}",
        t(&s.confidence_reason),
        s.source.as_str()
    );
    for w in &s.warnings {
        let _ = writeln!(out, "  {} {}", style.warn("warning:"), t(w));
    }
    match &sum.current_chunk {
        Some(c) => {
            let _ = writeln!(
                out,
                "  current chunk {} ({}, {} attempts): {}",
                t(&c.id),
                c.status,
                c.attempts,
                t(&c.description)
            );
        }
        None => {
            let _ = writeln!(out, "  current chunk: none");
        }
    }
    let p = &sum.progress;
    let phases: Vec<String> = p
        .by_phase
        .iter()
        .map(|ph| format!("{} {}/{}", t(&ph.phase), ph.done, ph.total))
        .collect();
    let _ = writeln!(
        out,
        "  progress {}/{} chunks ({}); {} s spent, ${:.2}",
        p.done,
        p.total,
        phases.join(", "),
        p.seconds_spent,
        p.cost_usd
    );
    if let Some(v) = &sum.verification {
        let verdict = if v.passed {
            style.ok("passed")
        } else {
            style.bad("failed")
        };
        let _ = writeln!(
            out,
            "  last verification {verdict}: {} on {}",
            t(&v.command),
            t(&v.chunk)
        );
    }
    let g = &sum.git_status;
    let _ = writeln!(
        out,
        "  git {}{}: {} commits ahead of {}, {} staged, {} changed",
        t(&g.branch),
        if g.branch_exists { "" } else { " (missing)" },
        g.commits_ahead.map_or("?".into(), |n| n.to_string()),
        g.base.as_deref().map_or("its base".into(), t),
        g.staged.len(),
        g.changed.len()
    );
    let c = &sum.checkpoint;
    let age = c.age_secs.map_or(String::new(), |a| format!(", {a} s old"));
    let _ = writeln!(out, "  checkpoint: {}{age}", c.source.as_str());
    if !sum.recent_actions.is_empty() {
        let _ = writeln!(out, "  recent actions:");
        for a in &sum.recent_actions {
            let _ = writeln!(out, "    {}", t(a));
        }
    }
    let _ = writeln!(out, "  next steps:");
    for (i, step) in sum.next_steps.iter().enumerate() {
        match &step.command {
            Some(cmd) => {
                let _ = writeln!(
                    out,
                    "    {}. {}: {}",
                    i + 1,
                    t(&step.text),
                    style.bold(&t(cmd))
                );
            }
            None => {
                let _ = writeln!(out, "    {}. {}", i + 1, t(&step.text));
            }
        }
    }
    if let Some(h) = &s.handoff_document {
        let _ = writeln!(out, "  handoff document: {}", t(h));
    }
    out
}
