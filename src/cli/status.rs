//! `runner status`: every spec, its progress, branch and worktree; coloured on a terminal.

use std::path::Path;

use clap::Args;

use super::style::{Style, for_stdout};
use runner::ops::status::{SpecStatus, StatusOptions, StatusReport, status};

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Show only this spec (inside a spec's worktree, that spec is the default).
    #[arg(long, add = super::complete::spec_names())]
    pub spec: Option<String>,
    /// Show merged and discarded specs too (left out by default).
    #[arg(long)]
    pub all: bool,
    /// Print JSON: {"specs": [...], "slots": [...], "hidden": N} (with --remote: {"remote",
    /// "specs", "pauses", "warnings"}).
    #[arg(long)]
    pub json: bool,
    /// Show the specs published on this git remote instead: state, progress, who holds each
    /// and how fresh its heartbeat is, and the accounts' pauses.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["spec", "all"])]
    pub remote: Option<String>,
}

pub fn run(cwd: &Path, args: StatusArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    if let Some(remote) = args.remote {
        let opts = runner::ops::remote::status::RemoteStatusOptions {
            remote: Some(remote),
        };
        let report = runner::ops::remote::status::remote_status(&ctx, opts)?;
        if args.json {
            super::print_json(&report)?;
        } else {
            print!(
                "{}",
                super::status_remote::render(&report, super::plan::width())
            );
        }
        return Ok(0);
    }
    let opts = StatusOptions {
        spec: args.spec,
        all: args.all,
    };
    let report = status(&ctx, opts)?;
    if args.json {
        super::print_json(&report)?;
    } else {
        print!("{}", render(&report, for_stdout()));
    }
    Ok(0)
}

/// Plan and agent text made safe for the terminal; done on each piece, before colour is
/// added, so the only escapes printed are the colour's own.
fn t(text: &str) -> String {
    runner::text::for_terminal(text).into_owned()
}

/// The colour of a spec's status word: done green, broken red, needing a look yellow.
fn paint_status(style: Style, status: &str, padded: &str) -> String {
    match status {
        "complete" | "merged" => style.ok(padded),
        "failed" | "blocked" | "invalid_plan" | "refused" | "missing_work" => style.bad(padded),
        "running" | "planning" | "interrupted" | "budget_exhausted" | "paused" => {
            style.warn(padded)
        }
        _ => padded.to_string(),
    }
}

/// `, spent $0.12 of $0.50, 1200 tokens`: what the ledger knows (nothing without a cost or
/// tokens recorded), and the budget.
fn spent_words(s: &SpecStatus) -> String {
    use runner::policy::budget::dollars;
    let mut parts = Vec::new();
    if s.spent.usd > 0.0 || s.budget.max_usd.is_some() {
        let of = s
            .budget
            .max_usd
            .map(|max| format!(" of ${}", dollars(max)))
            .unwrap_or_default();
        parts.push(format!("${}{of}", dollars(s.spent.usd)));
    }
    if s.spent.tokens > 0 || s.budget.max_tokens.is_some() {
        let of = s
            .budget
            .max_tokens
            .map(|max| format!(" of {max}"))
            .unwrap_or_default();
        parts.push(format!(
            "{}{of}",
            runner::text::count(s.spent.tokens, "token")
        ));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(", spent {}", parts.join(", "))
}

/// The human form of the report.
pub fn render(report: &StatusReport, style: Style) -> String {
    let mut out = String::new();
    if report.specs.is_empty() && report.hidden == 0 {
        out.push_str("No specs yet. Start one with `runner new \"what to build\"` (or write .auto-claude/specs/001-my-feature/spec.md), then run the command it prints.\n");
    }
    // The name column fits the longest name shown (at least its usual 32).
    let width = report
        .specs
        .iter()
        .map(|s| t(&s.spec).chars().count())
        .max()
        .unwrap_or(0)
        .max(32);
    for s in &report.specs {
        render_spec(&mut out, s, width, style);
    }
    if report.hidden > 0 {
        out.push_str(&style.dim(&format!(
            "({} merged or discarded {} not shown: `runner status --all` shows them)",
            report.hidden,
            runner::text::noun(report.hidden, "spec")
        )));
        out.push('\n');
    }
    for slot in &report.slots {
        let what = match (&slot.state[..], &slot.branch, &slot.problem) {
            ("ready", Some(b), _) => format!("holds {b}"),
            ("ready", None, _) => "detached HEAD".to_string(),
            (_, _, Some(p)) => p.clone(),
            _ => String::new(),
        };
        let state = format!("[{}]", t(&slot.state));
        let state = match &slot.state[..] {
            "ready" => style.ok(&state),
            "broken" => style.bad(&state),
            _ => style.warn(&state),
        };
        out.push_str(&format!("slot {} {state} {}\n", t(&slot.path), t(&what)));
    }
    out
}

fn render_spec(out: &mut String, s: &SpecStatus, width: usize, style: Style) {
    let name = style.bold(&format!("{:<width$}", t(&s.spec)));
    let status = paint_status(style, &s.status, &format!("{:<13}", t(&s.status)));
    out.push_str(&format!(
        "{name} {status} {}/{} {}",
        s.chunks.completed,
        s.chunks.total,
        runner::text::noun(s.chunks.total, "chunk")
    ));
    if s.chunks.failed > 0 {
        out.push_str(&style.bad(&format!(", {} failed", s.chunks.failed)));
    }
    if s.chunks.blocked > 0 {
        out.push_str(&style.bad(&format!(", {} blocked", s.chunks.blocked)));
    }
    match (&s.current_chunk, &s.running, &s.next_chunk) {
        (Some(current), Some(_), _) => out.push_str(&format!(", working on: {}", t(current))),
        (Some(current), None, _) => out.push_str(&format!(", interrupted at: {}", t(current))),
        (None, _, Some(next)) => out.push_str(&format!(", next: {}", t(next))),
        (None, _, None) => {}
    }
    out.push_str(&spent_words(s));
    out.push('\n');
    if s.chunks.failed > 0 {
        out.push_str(&format!(
            "    {} {}\n",
            style.bad("failed chunks:"),
            t(&runner::engine::run::retry_failed_hint(&s.spec, None))
        ));
    }
    if let Some(r) = &s.running {
        out.push_str(&format!(
            "    {} pid {}, {}, since {}\n",
            style.warn("running:"),
            r.pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
            t(r.run_id.as_deref().unwrap_or("?")),
            t(r.since.as_deref().unwrap_or("?"))
        ));
    }
    render_next(out, s, style);
    if let Some(wt) = &s.worktree {
        out.push_str(&style.dim(&format!("    worktree: {}", t(wt))));
        out.push('\n');
    } else if let Some(b) = &s.branch {
        out.push_str(&style.dim(&format!("    branch: {} (not in a worktree)", t(b))));
        out.push('\n');
    }
    if let Some(p) = &s.problem {
        out.push_str(&format!(
            "    {} {}; `runner recover --spec {}` keeps the last tip runner knew and prints the way back\n",
            style.bad("problem:"),
            t(p),
            t(&s.spec)
        ));
    }
    if let Some(e) = &s.error {
        let first = e.lines().next().unwrap_or("");
        out.push_str(&format!("    {} {}\n", style.bad("error:"), t(first)));
    }
}

/// What to do next with a spec that stopped where a person must say: an interrupted or paused
/// spec's continue command (the report's, printed exactly), a complete one's review and merge.
fn render_next(out: &mut String, s: &SpecStatus, style: Style) {
    let again = t(&s
        .continue_command
        .clone()
        .unwrap_or_else(|| runner::policy::next_command::continue_command(&s.spec, None)));
    let spec = runner::sh(&s.spec);
    match (&s.status[..], &s.paused_until) {
        (_, Some(until)) => {
            // In the reader's local time with the time left; JSON keeps the UTC time.
            let until = chrono::DateTime::parse_from_rfc3339(until).map_or_else(
                |_| format!("until {until}"),
                |at| runner::clock::until_words(at.to_utc(), chrono::Utc::now()),
            );
            out.push_str(&format!(
                "    {} by a usage limit {}; `{again}` goes on after it (or pass --wait)\n",
                style.warn("paused:"),
                t(&until),
            ))
        }
        ("interrupted", _) => out.push_str(&format!(
            "    {} the last run did not end; `{again}` continues it\n",
            style.warn("interrupted:")
        )),
        ("complete", _) => out.push_str(&format!(
            "    {} look at it with `runner review --spec {}`, then land it with `runner merge --spec {}`\n",
            style.ok("done:"),
            t(&spec),
            t(&spec)
        )),
        _ => {}
    }
}
