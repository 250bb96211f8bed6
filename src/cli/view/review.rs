//! `runner review` as a person reads it (also shown by the run's question about existing work).

use super::super::style::Style;
use runner::ops::review::ReviewReport;
use runner::text::count;

/// Plan, agent and file text made safe for the terminal, piece by piece, before colour.
fn t(text: &str) -> String {
    runner::text::for_terminal(text).into_owned()
}

/// The human form: the spec's commits, the files they change (the stat), the plan's progress,
/// the last verifications, uncommitted files, and whether it merges cleanly.
pub fn render(r: &ReviewReport, style: Style) -> String {
    let mut out = format!(
        "{} on {} (base {}",
        style.bold(&format!("Spec {}", t(&r.spec))),
        t(&r.branch),
        t(&r.base_branch)
    );
    if r.base_moved > 0 {
        out.push_str(&format!(
            ", which moved {} since the spec started",
            count(r.base_moved, "commit")
        ));
    }
    out.push_str(")\n");
    let header = format!(
        "{} ahead of {}:",
        count(r.commits.len(), "commit"),
        t(&r.base_branch)
    );
    out.push_str(&format!("\n{}\n", style.bold(&header)));
    for c in &r.commits {
        let id = style.warn(runner::git::short_id(&c.commit));
        out.push_str(&format!("  {id} {}\n", t(&c.summary)));
    }
    render_stat(&mut out, r, style);
    render_progress(&mut out, r, style);
    render_cost(&mut out, r, style);
    if !r.uncommitted.is_empty() {
        let header = format!(
            "Uncommitted in {}:",
            t(r.worktree.as_deref().unwrap_or("the worktree"))
        );
        out.push_str(&format!("\n{}\n", style.bold(&header)));
        for p in &r.uncommitted {
            out.push_str(&format!("  {}\n", t(p)));
        }
    }
    if r.merge.clean {
        let line = format!("It merges cleanly into {}.", t(&r.base_branch));
        out.push_str(&format!("\n{}\n", style.ok(&line)));
    } else {
        let line = format!(
            "It would NOT merge cleanly into {}: conflicts in {}",
            t(&r.base_branch),
            t(&r.merge.conflicts.join(", "))
        );
        out.push_str(&format!("\n{}\n", style.bad(&line)));
    }
    out
}

/// The files changed, with their added (green) and removed (red) line counts.
fn render_stat(out: &mut String, r: &ReviewReport, style: Style) {
    let (adds, dels) = r
        .files
        .iter()
        .fold((0, 0), |(a, d), f| (a + f.additions, d + f.deletions));
    let header = format!("{} changed, +{adds} -{dels}:", count(r.files.len(), "file"));
    out.push_str(&format!("\n{}\n", style.bold(&header)));
    for f in &r.files {
        out.push_str(&format!(
            "  {:<9} {} ({} {})\n",
            t(&f.change),
            t(&f.path),
            style.ok(&format!("+{}", f.additions)),
            style.bad(&format!("-{}", f.deletions))
        ));
    }
}

/// What each chunk (and the planner) cost, when any session recorded dollars or tokens.
fn render_cost(out: &mut String, r: &ReviewReport, style: Style) {
    use runner::policy::budget::dollars;
    let c = &r.cost;
    if c.total.usd <= 0.0 && c.total.tokens == 0 {
        return;
    }
    let header = format!(
        "Cost: ${}, {}, {} (dollars as the agents reported them; notional for a subscription login):",
        dollars(c.total.usd),
        count(c.total.tokens, "token"),
        count(c.total.sessions, "session")
    );
    out.push_str(&format!("\n{}\n", style.bold(&header)));
    for i in c.items.iter().filter(|i| i.sessions > 0) {
        let what = i.chunk.as_deref().map_or("planner".to_string(), t);
        out.push_str(&format!(
            "  {what}: ${}, {}, {}\n",
            dollars(i.usd),
            count(i.tokens, "token"),
            count(i.sessions, "session")
        ));
    }
}

/// Plan progress by phase and the last verification of each chunk.
fn render_progress(out: &mut String, r: &ReviewReport, style: Style) {
    if !r.progress.is_empty() {
        out.push_str(&format!("\n{}\n", style.bold("Plan progress:")));
        for p in &r.progress {
            let name = p.name.as_deref().map(|n| format!(" ({})", t(n)));
            out.push_str(&format!(
                "  {}{}: {}/{}\n",
                t(&p.phase),
                name.unwrap_or_default(),
                p.completed,
                p.total
            ));
        }
    }
    if !r.verifications.is_empty() {
        out.push_str(&format!("\n{}\n", style.bold("Last verifications:")));
        for v in &r.verifications {
            let verdict = if v["passed"] == true {
                style.ok("pass")
            } else {
                style.bad("FAIL")
            };
            out.push_str(&format!(
                "  {verdict} {}: {}\n",
                t(v["chunk"].as_str().unwrap_or("?")),
                t(v["command"].as_str().unwrap_or("?"))
            ));
        }
    }
}
