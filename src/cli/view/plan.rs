//! A spec's plan as a person reads it (`runner plan`, `runner run --plan-only`): the progress,
//! then each phase with its chunks — a mark and the status, the attempts as a run numbers
//! them, the description, the verification in brief and why a chunk failed.
//!
//! On a terminal the text fits its width: descriptions are wrapped (at most
//! [`DESCRIPTION_LINES`] lines, then cut with `…`) and the other lines cut; `--json` has every
//! word. Without a width (a pipe) nothing is cut, so `grep` sees all of it.

use super::super::style::Style;
use runner::ops::plan::{ChunkLine, PhaseView, PlanReport};
use runner::plan::verification::Brief;
use runner::text::noun;

/// The lines a description may take on a terminal before it is cut.
pub const DESCRIPTION_LINES: usize = 3;

/// Where a chunk's details start (under its id).
const INDENT: &str = "      ";

/// Plan and agent text made safe for the terminal, piece by piece, before colour.
fn t(text: &str) -> String {
    runner::text::for_terminal(text).into_owned()
}

/// The whole plan. `width`: the terminal's columns, or `None` to cut nothing.
pub fn render(r: &PlanReport, style: Style, width: Option<usize>) -> String {
    let mut out = format!(
        "{} {}/{} {} completed\n",
        style.bold(&format!("Plan of {}:", t(&r.spec))),
        r.completed,
        r.total,
        noun(r.total, "chunk")
    );
    let mut head = Vec::new();
    if let Some(c) = &r.current_chunk {
        head.push(format!("in progress: {}", t(c)));
    }
    if let Some(c) = &r.next_chunk {
        head.push(format!("next: {}", t(c)));
    }
    if !head.is_empty() {
        out.push_str(&format!("  {}\n", head.join(", ")));
    }
    out.push_str(&style.dim(&cut(&format!("  {}", t(&r.plan)), width)));
    out.push('\n');
    for phase in &r.phases {
        render_phase(&mut out, phase, style, width);
    }
    for w in &r.warnings {
        out.push_str(&format!("\n{} {}", style.warn("warning:"), t(w)));
    }
    if !r.warnings.is_empty() {
        out.push('\n');
    }
    out
}

fn render_phase(out: &mut String, p: &PhaseView, style: Style, width: Option<usize>) {
    let mut title = t(&p.phase);
    if let Some(name) = &p.name {
        title.push_str(&format!(" {}", t(name)));
    }
    let mut tail = format!(" — {}/{}", p.completed, p.total);
    if !p.depends_on.is_empty() {
        tail.push_str(&format!(", after {}", t(&p.depends_on.join(", "))));
    }
    out.push('\n');
    out.push_str(&style.bold(&cut(&format!("{title}{tail}"), width)));
    out.push('\n');
    if p.chunks.is_empty() {
        out.push_str("  (no chunks)\n");
    }
    for c in &p.chunks {
        render_chunk(out, c, style, width);
    }
}

/// The mark before a chunk's id, by its status: the run's ✓ and ✗, and one for each other.
fn mark(status: &str) -> &'static str {
    match status {
        "completed" => "✓",
        "failed" => "✗",
        "in_progress" => "▸",
        "blocked" => "!",
        _ => "·",
    }
}

/// A status in the colours `runner status` uses: done green, broken red, under way yellow.
fn paint(style: Style, status: &str, text: &str) -> String {
    match status {
        "completed" => style.ok(text),
        "failed" | "blocked" => style.bad(text),
        "in_progress" => style.warn(text),
        _ => text.to_string(),
    }
}

fn render_chunk(out: &mut String, c: &ChunkLine, style: Style, width: Option<usize>) {
    let mut rest = format!("{}  {}", t(&c.id), c.status.replace('_', " "));
    if let Some(attempt) = &c.attempt {
        rest.push_str(&format!(" · {}", t(attempt)));
    }
    // The mark takes the status's colour; "  ✓ " is four columns.
    let rest = cut(&rest, width.map(|w| w.saturating_sub(4)));
    let mark = paint(style, &c.status, mark(&c.status));
    out.push_str(&format!("  {mark} {rest}\n"));
    for l in wrap(&t(&c.description), width) {
        out.push_str(&format!("{INDENT}{l}\n"));
    }
    if let Some(v) = &c.verification {
        let l = cut(&format!("{INDENT}{}", verification_words(v)), width);
        out.push_str(&style.dim(&l));
        out.push('\n');
    }
    if let Some(reason) = &c.reason {
        let first = reason.lines().next().unwrap_or("");
        let l = cut(&format!("{INDENT}reason: {}", t(first)), width);
        out.push_str(&paint(style, &c.status, &l));
        out.push('\n');
    }
}

/// `verify: cargo test (exit status 2) — No errors` (a command runner runs), or `manual
/// check: Open the page` (one it only shows the agent): one line, the first line of each text.
pub fn verification_words(v: &Brief) -> String {
    let first = |s: &str| t(s.lines().next().unwrap_or(""));
    let kind = match v.kind.as_str() {
        "text" => "check".to_string(),
        other => format!("{} check", t(other)),
    };
    let mut words = match (&v.command, v.runs) {
        (Some(cmd), true) => format!("verify: {}", first(cmd)),
        (Some(cmd), false) => format!("{kind} (not run by runner): {}", first(cmd)),
        (None, _) => kind,
    };
    if let Some(expect) = &v.expect {
        words.push_str(&format!(" ({})", first(expect)));
    }
    if let Some(note) = &v.note {
        let sep = if v.command.is_some() { " — " } else { ": " };
        words.push_str(&format!("{sep}{}", first(note)));
    }
    words
}

/// `line` cut to `width` characters, its last one `…` when cut.
fn cut(line: &str, width: Option<usize>) -> String {
    match width {
        Some(w) if line.chars().count() > w => {
            let mut s: String = line.chars().take(w.saturating_sub(1)).collect();
            s.push('…');
            s
        }
        _ => line.to_string(),
    }
}

/// A description in lines under its chunk: without a width, its own lines; with one, each
/// paragraph wrapped at word boundaries to fit after the indent, at most
/// [`DESCRIPTION_LINES`] lines, the last cut with `…` when more was left.
fn wrap(text: &str, width: Option<usize>) -> Vec<String> {
    let Some(width) = width else {
        return text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect();
    };
    let room = width.saturating_sub(INDENT.len()).max(20);
    let mut lines: Vec<String> = Vec::new();
    for para in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut line = String::new();
        for word in para.split_whitespace() {
            let len = line.chars().count();
            if len > 0 && len + 1 + word.chars().count() > room {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines.push(line);
    }
    let lines: Vec<String> = lines.into_iter().map(|l| cut(&l, Some(room))).collect();
    if lines.len() <= DESCRIPTION_LINES {
        return lines;
    }
    let mut kept: Vec<String> = lines.into_iter().take(DESCRIPTION_LINES).collect();
    if let Some(last) = kept.last_mut() {
        let mut l: String = last.chars().take(room.saturating_sub(1)).collect();
        l.push('…');
        *last = l;
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_description_is_wrapped_then_cut_and_nothing_is_cut_without_a_width() {
        let text = "one two three four five six seven eight nine ten ".repeat(6);
        let wrapped = wrap(&text, Some(40));
        assert_eq!(wrapped.len(), DESCRIPTION_LINES, "{wrapped:?}");
        assert!(
            wrapped
                .iter()
                .all(|l| l.chars().count() <= 40 - INDENT.len())
        );
        assert!(wrapped[DESCRIPTION_LINES - 1].ends_with('…'));
        assert_eq!(wrap(&text, None), vec![text.clone()]);
        assert_eq!(wrap("short", Some(40)), vec!["short".to_string()]);
    }

    #[test]
    fn a_line_longer_than_the_width_ends_with_an_ellipsis() {
        assert_eq!(cut("abcdef", Some(4)), "abc…");
        assert_eq!(cut("abcd", Some(4)), "abcd");
        assert_eq!(cut("abcdef", None), "abcdef");
    }
}
