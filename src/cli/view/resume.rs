//! Where a resumed run stood, as a person reads it before it goes on.

use super::super::style::Style;
use runner::ops::resume::ResumeSummary;

/// The summary for a person; `continuing`: a run continues it next (else nothing is started,
/// and the first line says so).
pub fn render(s: &ResumeSummary, continuing: bool, style: Style) -> String {
    use std::fmt::Write as _;
    let t = |s: &str| runner::text::for_terminal(s).into_owned();
    let sum = &s.summary;
    let mut out = String::new();
    let run = s.run_id.as_deref().unwrap_or("(no run record)");
    let _ = match continuing {
        true => writeln!(out, "{} {run}  spec {}", style.bold("Resuming"), t(&s.spec)),
        false => writeln!(
            out,
            "{} {run}  spec {} (--no-run: nothing was started)",
            style.bold("Where it stood:"),
            t(&s.spec)
        ),
    };
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
                "  current chunk {} ({}, {}): {}",
                t(&c.id),
                c.status,
                runner::text::count(c.attempts, "attempt"),
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
        "  progress {}/{} {} ({}); {} s spent, ${:.2}",
        p.done,
        p.total,
        runner::text::noun(p.total, "chunk"),
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
        "  git {}{}: {} ahead of {}, {} staged, {} changed",
        t(&g.branch),
        if g.branch_exists { "" } else { " (missing)" },
        g.commits_ahead
            .map_or("? commits".into(), |n| runner::text::count(n, "commit")),
        g.base.as_deref().map_or("its base".into(), t),
        g.staged.len(),
        g.changed.len()
    );
    let c = &sum.checkpoint;
    let age = c.age_secs.map_or(String::new(), |a| {
        format!(", written {}", runner::policy::age::ago(a))
    });
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
