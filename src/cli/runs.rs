//! `runner runs` (every run the records tell of, newest first) and `runner show RUN` (one run in
//! detail). Read-only.

use std::path::Path;

use clap::Args;
use serde_json::Value;

use runner::ops::runs::{
    RunDetailsView, RunView, RunsOptions, RunsView, ShowOptions, ShowReport, kind_word, runs, show,
    state_word,
};

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Only the runs of this spec.
    #[arg(long, add = super::complete::spec_names())]
    pub spec: Option<String>,
    /// Only the stale runs (not ended, and nobody runs them: killed, or their machine went away).
    #[arg(long)]
    pub stale: bool,
    /// Also the records of recovers, merges, discards and undos (by default only the runs of
    /// an agent: run, resume).
    #[arg(long)]
    pub all: bool,
    /// At most N runs, the newest.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Print JSON: {"schema":1,"runs":[...]}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The run: its id, or a prefix of 4 characters or more (`runner runs` lists them).
    /// Without one: the latest run (the first `runner runs` lists).
    #[arg(add = super::complete::run_ids())]
    pub run: Option<String>,
    /// Print JSON: the run's fields, its checkpoint and its last journal lines.
    #[arg(long)]
    pub json: bool,
}

pub fn runs_cmd(cwd: &Path, args: RunsArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    let opts = RunsOptions {
        spec: args.spec,
        stale: args.stale,
        all: args.all,
        limit: args.limit,
    };
    let found = runs(&ctx, opts)?;
    if args.json {
        let runs = RunsView {
            runs: found.iter().map(RunView::of).collect(),
        };
        super::print_json(&serde_json::to_value(&runs)?)?;
        return Ok(0);
    }
    if found.is_empty() {
        println!("No runs.");
        return Ok(0);
    }
    let rows: Vec<[String; 7]> = found
        .iter()
        .map(|r| {
            [
                r.shown.clone(),
                t(&r.record.spec),
                state_word(r.state).to_string(),
                age(r.heartbeat_age_secs),
                t(r.record.chunk.as_deref().unwrap_or("-")),
                t(r.record.outcome.as_deref().unwrap_or("-")),
                kind_word(&r.record).to_string(),
            ]
        })
        .collect();
    let header = [
        "ID",
        "SPEC",
        "STATE",
        "HEARTBEAT",
        "CHUNK",
        "OUTCOME",
        "KIND",
    ]
    .map(String::from);
    let mut widths = [0; 7];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
    Ok(0)
}

pub fn show_cmd(cwd: &Path, args: ShowArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    let d = show(&ctx, ShowOptions { run: args.run })?;
    for w in &d.warnings {
        runner::output::warn(w);
    }
    if args.json {
        super::print_json(&serde_json::to_value(RunDetailsView::of(&d))?)?;
        return Ok(0);
    }
    print!("{}", render(&d));
    Ok(0)
}

/// `runner show`'s text.
fn render(d: &ShowReport) -> String {
    let r = &d.info.record;
    let time = |t: &chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%d %H:%M:%S UTC").to_string();
    let mut out = format!(
        "Run {} ({}) of spec {}\n",
        r.run_id,
        kind_word(r),
        t(&r.spec)
    );
    let mut line = |k: &str, v: String| out.push_str(&format!("  {k:<13} {v}\n"));
    line("state", state_word(d.info.state).to_string());
    line("started", time(&r.started));
    line(
        "heartbeat",
        format!(
            "{} ({})",
            time(&r.heartbeat),
            age(d.info.heartbeat_age_secs)
        ),
    );
    if let Some(ended) = &r.ended {
        line("ended", time(ended));
    }
    line("outcome", t(r.outcome.as_deref().unwrap_or("-")));
    line("last chunk", t(r.chunk.as_deref().unwrap_or("-")));
    line("branch", t(&d.branch));
    if let Some(agent) = &r.agent {
        line("agent", t(agent));
    }
    if let Some(slot) = &r.slot {
        line("slot", t(slot));
    }
    line("process", format!("pid {} on {}", r.pid, t(&r.host)));
    if let Some(from) = &r.resumed_from {
        line("resumed from", t(from));
    }
    match &d.checkpoint {
        Some(c) => line(
            "checkpoint",
            format!(
                "{} at {} ({}), written by {}",
                c.id,
                time(&c.time),
                serde_json::to_value(c.trigger)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                if c.by_this_run {
                    "this run".to_string()
                } else {
                    format!("a later run, {}", c.run_id)
                }
            ),
        ),
        None => line("checkpoint", "none written by this run or since".into()),
    }
    if d.events.is_empty() {
        out.push_str("  No journal lines of this run.\n");
    } else {
        out.push_str(&format!(
            "  Last {} journal lines, newest first:\n",
            d.events.len()
        ));
        for e in &d.events {
            out.push_str(&format!("    {}\n", event_line(e)));
        }
    }
    out
}

/// A journal line in one short line: its time, its event, its other fields.
fn event_line(e: &Value) -> String {
    let text = |k: &str| e[k].as_str().unwrap_or("").to_string();
    let rest: Vec<String> = e
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !matches!(k.as_str(), "time" | "event" | "run_id"))
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    let mut line = format!("{} {} {}", text("time"), text("event"), rest.join(" "));
    if line.chars().count() > 160 {
        line = line.chars().take(159).collect::<String>() + "…";
    }
    t(line.trim_end())
}

/// `12s ago`, `5m ago`, `3h ago`, `2d ago`; `3h in the future (clock skew)`.
fn age(secs: i64) -> String {
    runner::policy::age::ago_short(secs)
}

/// Record and journal text made safe for the terminal.
fn t(text: &str) -> String {
    runner::text::for_terminal(text).into_owned()
}
