//! The text of a pull request `runner pr` opens: its title (from the spec) and its body in
//! GitHub-flavoured Markdown (the chunks with their status and verification, and the cost).
//! Spec and plan text may hold anything: it is made one line per table cell, its `|` escaped
//! (a cell cannot end early), commands put in code spans no backtick in them can close,
//! control and invisible characters dropped, and the whole body capped.

use crate::plan::session_facts::Spent;
use crate::policy::budget::dollars;
use crate::text::count;

/// The longest title, in characters (GitHub takes 256).
pub const MAX_TITLE_CHARS: usize = 200;

/// The longest body, in bytes: under GitHub's 65,536 characters, and well under Linux's
/// 128 KiB for the one argument glab takes it in.
pub const MAX_BODY_BYTES: usize = 60_000;

/// The longest description shown in a chunk's row, in characters.
const MAX_CELL_CHARS: usize = 300;

/// `text` on one line: line breaks and tabs as spaces, control and invisible characters
/// dropped, runs of spaces made one, trimmed.
fn one_line(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .filter(|c| !c.is_control() && !crate::text::is_invisible(*c))
        .collect();
    cleaned.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to `max` characters, with `…` when it was longer.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some(_) => {
            let kept: String = text.chars().take(max.saturating_sub(1)).collect();
            format!("{}…", kept.trim_end())
        }
    }
}

/// The title: the first line of `requirements.json`'s task description, else `spec.md`'s
/// first heading, else the spec's name; on one line, at most [`MAX_TITLE_CHARS`].
pub fn title(task_description: Option<&str>, spec_md: Option<&str>, spec: &str) -> String {
    let heading = |line: &str| {
        let l = line.trim_start();
        let text = l.trim_start_matches('#');
        // An ATX heading: 1 to 6 `#` and a space (or nothing after them).
        let level = l.len() - text.len();
        ((1..=6).contains(&level) && (text.is_empty() || text.starts_with([' ', '\t'])))
            .then(|| one_line(text.trim_end_matches(['#', ' ', '\t'])))
    };
    let from_description = task_description.and_then(|d| {
        d.lines()
            .map(|l| one_line(l.trim_start_matches('#')))
            .find(|l| !l.is_empty())
    });
    let from_spec = || spec_md.and_then(|s| s.lines().filter_map(heading).find(|h| !h.is_empty()));
    let chosen = from_description
        .or_else(from_spec)
        .unwrap_or_else(|| one_line(spec));
    cut(&chosen, MAX_TITLE_CHARS)
}

/// A chunk as the body shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkLine {
    pub id: String,
    pub description: String,
    pub status: String,
    /// The verification command runner runs, if the chunk has one.
    pub command: Option<String>,
    /// Its last result in the journal (`None`: not run, or not recorded).
    pub passed: Option<bool>,
}

/// What the body says.
#[derive(Debug, Clone)]
pub struct BodyFacts<'a> {
    pub spec: &'a str,
    pub branch: &'a str,
    pub base: &'a str,
    pub chunks: &'a [ChunkLine],
    /// The spec's whole ledger (`runner review`'s cost).
    pub cost: Spent,
}

/// A table cell of plain text: one line, `|` escaped, cut.
fn cell(text: &str) -> String {
    cut(&one_line(text), MAX_CELL_CHARS).replace('|', "\\|")
}

/// A code span holding `text` on one line: fenced by more backticks than any run in it, and
/// `|` escaped (GitHub's tables read `\|` inside code as `|`).
fn code(text: &str) -> String {
    let text = one_line(text);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{}{pad}{fence}", text.replace('|', "\\|"))
}

fn row(c: &ChunkLine) -> String {
    let verification = match (&c.command, c.passed) {
        (None, _) => "none".to_string(),
        (Some(cmd), Some(true)) => format!("{}: passed", code(cmd)),
        (Some(cmd), Some(false)) => format!("{}: **failed**", code(cmd)),
        (Some(cmd), None) => format!("{}: not run", code(cmd)),
    };
    format!(
        "| {} | {} | {} | {} |\n",
        code(&c.id),
        cell(&c.description),
        cell(&c.status.replace('_', " ")),
        verification
    )
}

/// The body: what was built, each chunk (id, description, status, verification and its
/// result), and the cost. At most [`MAX_BODY_BYTES`]: rows that do not fit are counted.
pub fn body(f: &BodyFacts<'_>) -> String {
    let done = f.chunks.iter().filter(|c| c.status == "completed").count();
    let total = f.chunks.len();
    let mut head = format!(
        "Built by runner from spec {} on branch {} (base {}): {done}/{total} {} completed.\n\n",
        code(f.spec),
        code(f.branch),
        code(f.base),
        crate::text::noun(total, "chunk")
    );
    if total > 0 {
        head.push_str(
            "| chunk | description | status | verification |\n| --- | --- | --- | --- |\n",
        );
    }
    let cost = if f.cost.usd > 0.0 {
        format!(
            "**Cost:** ${} and {} over {} (dollars as the agents reported them; notional for a subscription login).\n",
            dollars(f.cost.usd),
            count(f.cost.tokens, "token"),
            count(f.cost.sessions, "session")
        )
    } else if f.cost.sessions > 0 || f.cost.tokens > 0 {
        format!(
            "**Cost:** {} over {} (the agents reported no dollars).\n",
            count(f.cost.tokens, "token"),
            count(f.cost.sessions, "session")
        )
    } else {
        "**Cost:** no sessions recorded.\n".to_string()
    };
    let tail_room = cost.len() + 200;
    let mut out = head;
    let mut shown = 0;
    for c in f.chunks {
        let r = row(c);
        if out.len() + r.len() + tail_room > MAX_BODY_BYTES {
            break;
        }
        out.push_str(&r);
        shown += 1;
    }
    if shown < total {
        out.push_str(&format!(
            "\n…and {} more (`runner plan` shows them all).\n",
            count(total - shown, "chunk")
        ));
    }
    if total > 0 {
        out.push('\n');
    }
    out.push_str(&cost);
    out
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
