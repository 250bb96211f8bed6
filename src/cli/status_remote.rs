//! `runner status --remote NAME` as text: a line per published spec, cut to the terminal's
//! width, then the accounts' pauses and the refs that were ignored.

use runner::ops::remote::status::{RemoteSpecStatus, RemoteStatusReport};

/// What came from the remote, made safe for a terminal.
fn t(text: &str) -> String {
    runner::text::for_terminal(text).into_owned()
}

/// The report as text; each line at most `width` characters when given.
pub fn render(report: &RemoteStatusReport, width: Option<usize>) -> String {
    let mut lines = Vec::new();
    if report.specs.is_empty() {
        lines.push(format!(
            "No spec is published on {}. Publish one with `runner submit --remote {}`.",
            t(&report.remote),
            runner::sh(&report.remote)
        ));
    }
    let name_width = report
        .specs
        .iter()
        .map(|s| t(&s.spec).chars().count())
        .max()
        .unwrap_or(0);
    for spec in &report.specs {
        lines.push(spec_line(spec, name_width));
    }
    for pause in &report.pauses {
        lines.push(match (&pause.until, &pause.problem) {
            (Some(until), _) if pause.active => format!(
                "account {} paused until {until} (set by {}: {})",
                t(&pause.account),
                t(pause.set_by.as_deref().unwrap_or("?")),
                t(pause.reason.as_deref().unwrap_or(""))
            ),
            (Some(until), _) => format!("account {}: pause over since {until}", t(&pause.account)),
            (None, problem) => format!(
                "account {}: pause record not believed ({})",
                t(&pause.account),
                t(problem.as_deref().unwrap_or(""))
            ),
        });
    }
    for warning in &report.warnings {
        lines.push(format!("warning: {}", t(warning)));
    }
    let mut out = String::new();
    for line in lines {
        out.push_str(&cut(&line, width));
        out.push('\n');
    }
    out
}

fn spec_line(s: &RemoteSpecStatus, name_width: usize) -> String {
    let name = t(&s.spec);
    let pad = name_width.saturating_sub(name.chars().count());
    let mut line = format!(
        "{name}{}  {:<13} {}/{}",
        " ".repeat(pad),
        s.status,
        s.chunks.completed,
        s.chunks.total
    );
    if let Some(tip) = &s.branch {
        line.push_str(&format!("  branch {}", &tip[..tip.len().min(7)]));
    }
    match &s.holder {
        Some(h) if !h.expired => line.push_str(&format!(
            "  held by {} on {} (pid {}), heartbeat {}s ago",
            t(&h.worker),
            t(&h.host),
            h.pid,
            h.heartbeat_secs
        )),
        Some(h) => line.push_str(&format!(
            "  lease of {} on {} expired (heartbeat {}s ago)",
            t(&h.worker),
            t(&h.host),
            h.heartbeat_secs
        )),
        None => {}
    }
    if s.lease_problem.is_some() {
        line.push_str("  (lease record not believed)");
    }
    if let Some(e) = &s.error {
        line.push_str(&format!("  {}", t(e).replace('\n', " ")));
    }
    line
}

/// `line` cut to `width` characters (with `…`), when a width is known.
fn cut(line: &str, width: Option<usize>) -> String {
    match width {
        Some(w) if line.chars().count() > w && w > 1 => {
            let mut kept: String = line.chars().take(w - 1).collect();
            kept.push('…');
            kept
        }
        _ => line.to_string(),
    }
}
