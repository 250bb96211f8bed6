//! The handoff document (`runner resume --handoff`, or `resume.handoff = true`): the summary,
//! next steps and commands as Markdown, for the next person or agent, in
//! `.auto-claude/handoffs/YYYY-MM-DD-HHMM-<spec>-resume.md`. Written atomically and never over
//! another one: a second in the same minute is `…-resume-2.md`, and so on.

use std::fmt::Write as _;
use std::path::PathBuf;

use chrono::{DateTime, Utc};

use super::summary::ResumeSummary;
use crate::store::workspace::Workspace;

/// The folder under `.auto-claude/`.
pub const HANDOFFS_DIR: &str = "handoffs";

/// The most documents tried in one minute for one spec.
const MAX_SAME_MINUTE: usize = 1000;

/// Write `summary` as a handoff document; returns its path.
pub fn write(
    ws: &Workspace,
    summary: &ResumeSummary,
    now: DateTime<Utc>,
) -> anyhow::Result<PathBuf> {
    let dir = crate::store::safe::create_real_dirs(&ws.state_dir, &[HANDOFFS_DIR])?;
    let stem = format!("{}-{}-resume", now.format("%Y-%m-%d-%H%M"), summary.spec);
    let names = (1..=MAX_SAME_MINUTE).map(|n| match n {
        1 => format!("{stem}.md"),
        n => format!("{stem}-{n}.md"),
    });
    Ok(crate::store::atomic::write_new(
        &dir,
        names,
        render(summary, now).as_bytes(),
    )?)
}

/// Say at the end of the handoff document at `path` (written by [`write`] for `summary`) that
/// the run `runner resume` went on to continue was refused or stopped (`code`, `why`): the
/// document must not leave its reader believing the run went on. Replaced atomically.
pub fn note_not_continued(
    path: &std::path::Path,
    summary: &ResumeSummary,
    now: DateTime<Utc>,
    code: i32,
    why: &str,
) -> std::io::Result<()> {
    let mut md = render(summary, now);
    let _ = writeln!(
        md,
        "\n## The run\n\nAfter writing this document `runner resume` went on to continue the \
         run: it was refused or stopped (exit {code}): {why}\n\nWhat is written above is from \
         before that; `runner status --spec {}` shows where the spec stands now.",
        crate::sh(&summary.spec)
    );
    crate::store::atomic::write_atomic(path, md.as_bytes())
}

/// The document's Markdown.
pub fn render(s: &ResumeSummary, now: DateTime<Utc>) -> String {
    let mut md = String::new();
    let sum = &s.summary;
    let _ = writeln!(md, "# Resume handoff: {}\n", s.spec);
    let _ = writeln!(
        md,
        "Written {} by `runner resume`.\n",
        now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    let _ = writeln!(
        md,
        "- Run: {}",
        s.run_id.as_deref().unwrap_or("(no run record)")
    );
    let _ = writeln!(
        md,
        "- Confidence: {}/100 ({}), rebuilt from the {}",
        s.confidence_score,
        s.confidence_reason,
        s.source.as_str()
    );
    for w in &s.warnings {
        let _ = writeln!(md, "- **Warning:** {w}");
    }
    let _ = writeln!(md, "\n## Where it stands\n");
    match &sum.current_chunk {
        Some(c) => {
            let _ = writeln!(
                md,
                "- Current chunk: `{}` ({}, {}): {}",
                c.id,
                c.status,
                crate::text::count(c.attempts, "attempt"),
                c.description
            );
        }
        None => {
            let _ = writeln!(md, "- Current chunk: none");
        }
    }
    let p = &sum.progress;
    let _ = writeln!(
        md,
        "- Progress: {}/{} {} done; {} s spent, ${:.2}",
        p.done,
        p.total,
        crate::text::noun(p.total, "chunk"),
        p.seconds_spent,
        p.cost_usd
    );
    for phase in &p.by_phase {
        let _ = writeln!(md, "  - {}: {}/{}", phase.phase, phase.done, phase.total);
    }
    if let Some(v) = &sum.verification {
        let verdict = if v.passed { "passed" } else { "failed" };
        let _ = writeln!(
            md,
            "- Last verification: `{}` on {} {verdict}",
            v.command, v.chunk
        );
    }
    let g = &sum.git_status;
    let _ = writeln!(
        md,
        "- Git: branch `{}`{}, {} ahead of {}, {} staged, {} changed",
        g.branch,
        if g.branch_exists { "" } else { " (missing)" },
        g.commits_ahead
            .map_or("? commits".into(), |n| crate::text::count(n, "commit")),
        g.base.as_deref().unwrap_or("its base"),
        g.staged.len(),
        g.changed.len()
    );
    if !sum.recent_actions.is_empty() {
        let _ = writeln!(md, "\n## Recent actions\n");
        for a in &sum.recent_actions {
            let _ = writeln!(md, "- {a}");
        }
    }
    let _ = writeln!(md, "\n## Next steps\n");
    for (i, step) in sum.next_steps.iter().enumerate() {
        let _ = writeln!(md, "{}. {}", i + 1, step.text);
        if let Some(c) = &step.command {
            let _ = writeln!(md, "\n   ```sh\n   {c}\n   ```\n");
        }
    }
    md
}
