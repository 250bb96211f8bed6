//! `runner chunk show` as a person (or an agent, told it "prints this step again") reads it:
//! the chunk's id, status and attempts, its description, the fields the coder prompt shows
//! (service, files, patterns, verification), its attempts one a line, every other field of the
//! chunk as the plan has it, and the plan's progress. Nothing of the chunk is left out: `--json`
//! gives the same exactly.

use serde_json::Value;

use super::super::style::Style;
use runner::ops::chunk::{ChunkView, ShownChunk};
use runner::text::noun;

/// Plan and agent text made safe for the terminal, piece by piece, before colour.
fn t(text: &str) -> String {
    runner::text::for_terminal(text).into_owned()
}

/// The fields shown in their own words above; the rest are listed as the plan has them.
const SHOWN: &[&str] = &[
    "id",
    "description",
    "title",
    "status",
    "service",
    "files_to_modify",
    "files_to_create",
    "patterns_from",
    "verification",
    "attempts",
];

/// The whole view.
pub fn render(view: &ChunkView, style: Style) -> String {
    let mut out = String::new();
    match &view.current {
        Some(shown) => render_chunk(&mut out, &view.spec, shown, style),
        None => out.push_str(&format!(
            "No chunk of {} is left to work on.\n",
            t(&view.spec)
        )),
    }
    out.push_str(&format!(
        "\nProgress: {}/{} {} completed\n",
        view.progress.completed,
        view.progress.total,
        noun(view.progress.total, "chunk")
    ));
    out
}

fn render_chunk(out: &mut String, spec: &str, shown: &ShownChunk, style: Style) {
    let c = &shown.chunk;
    let text = |key: &str| {
        c.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    };
    let id = text("id").unwrap_or("?");
    let status = text("status").unwrap_or("pending").replace('_', " ");
    let mut head = format!(
        "{} [{}]",
        style.bold(&format!("Chunk {}", t(id))),
        t(&status)
    );
    if let Some(attempt) = &shown.attempt {
        head.push_str(&format!(" · {}", t(attempt)));
    }
    out.push_str(&head);
    out.push('\n');
    let phase = match &shown.phase_name {
        Some(name) => format!("{} ({})", t(&shown.phase), t(name)),
        None => t(&shown.phase),
    };
    out.push_str(&format!("Spec {}, phase {phase}\n", t(spec)));
    if let Some(d) = text("description").or_else(|| text("title")) {
        out.push_str(&format!("\n{}\n", t(d)));
    }
    if let Some(service) = text("service") {
        out.push_str(&format!("\nService: {}\n", t(service)));
    }
    for (key, title) in [
        ("files_to_modify", "Files to modify:"),
        ("files_to_create", "Files to create:"),
        ("patterns_from", "Follow the patterns in:"),
    ] {
        let Some(Value::Array(items)) = c.get(key) else {
            continue;
        };
        if items.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{title}\n"));
        for item in items {
            out.push_str(&format!("- {}\n", t(&plain(item))));
        }
    }
    if let Some(v) = &shown.verification {
        // Under its own heading the plan view's "verify: " says nothing more.
        let words = super::plan::verification_words(v);
        let words = words.strip_prefix("verify: ").unwrap_or(&words);
        out.push_str(&format!("\nVerification: {words}\n"));
        if v.runs {
            out.push_str(
                "(runner runs the command in the worktree after the chunk; it must succeed)\n",
            );
        }
    }
    render_attempts(out, c);
    let others: Vec<(&String, &Value)> = c
        .iter()
        .filter(|(k, v)| !SHOWN.contains(&k.as_str()) && !v.is_null())
        .collect();
    if !others.is_empty() {
        out.push_str("\nAlso in the plan:\n");
        for (k, v) in others {
            out.push_str(&format!("  {}: {}\n", t(k), t(&plain(v))));
        }
    }
}

/// One line per attempt record: its number, how it ended (or that it is under way), why.
fn render_attempts(out: &mut String, c: &serde_json::Map<String, Value>) {
    let Some(Value::Array(attempts)) = c.get("attempts") else {
        return;
    };
    if attempts.is_empty() {
        return;
    }
    out.push_str("\nAttempts:\n");
    for (i, a) in attempts.iter().enumerate() {
        let field = |k: &str| a.get(k).and_then(Value::as_str);
        let n = a.get("n").map(plain).unwrap_or_else(|| (i + 1).to_string());
        let mut line = format!(
            "  {}: {}",
            t(&n),
            t(field("outcome").unwrap_or("under way"))
        );
        if let Some(reported) = field("reported") {
            line.push_str(&format!(", the agent reported {}", t(reported)));
        }
        if let Some(why) = field("reason").or(field("report_notes")) {
            line.push_str(&format!(" — {}", t(why.lines().next().unwrap_or(""))));
        }
        if let Some(session) = field("session_id") {
            line.push_str(&format!(" (session {})", t(session)));
        }
        out.push_str(&line);
        out.push('\n');
    }
}

/// A value as a line of text: a string as it is, anything else as compact JSON.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
