//! What an agent is doing, as a person reads it: each line a session printed (`output.log`)
//! turned into [`Activity`] — the assistant's words, a tool call with its command or file, a
//! tool's result in brief — whatever CLI printed it. Shared by `runner logs` (every activity),
//! the live `runner run` and `runner watch` (the latest one, on one line).
//!
//! The format is told line by line, not from the preset: a plain `--agent-command` may run
//! claude, and a CLI prints text (a login error, a warning) between its JSON events. A line that
//! is one of claude's, codex's or gemini's stream-json events is read as that event (`events`);
//! any other line is text (aider, a plain command, a CLI's own message), as a terminal showed
//! it: colour sequences dropped, a line a carriage return wrote over kept as its last overwrite.
//! A JSON object with a `type` this reader does not know is an event of a newer CLI: it says
//! nothing here (never shown as raw JSON); a line that starts like an event but does not parse
//! (cut by the log's cap or a kill) says nothing either.
//!
//! Pure: bytes in, activities out; never fails, never panics (non-UTF-8, a line cut by the log's
//! cap, an unknown event are all read as well as they can be), and what it keeps of one line is
//! bounded ([`MAX_TEXT`], [`MAX_DETAIL`]) whatever the line's length. Text is returned raw: the
//! front end makes it safe for a terminal (`text::for_terminal`).

use std::path::Path;

mod events;
#[cfg(test)]
mod tests;

/// The most characters kept of the assistant's words in one activity (an agent may print a
/// novel on one line).
pub const MAX_TEXT: usize = 16 * 1024;
/// The most characters kept of a tool's detail or a result's brief.
pub const MAX_DETAIL: usize = 300;

/// The first words of the marker line `agent::capture` writes where it cut a long log.
const CUT_MARKER: &str = "[runner: ";

/// One thing an agent did or said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Activity {
    /// Words the assistant wrote (or a plain command printed).
    Said(String),
    /// A tool call: the tool's name and what it works on (a command, a file, a pattern).
    Tool { name: String, detail: String },
    /// A tool's result, in brief (its first line, or "ok"/"failed").
    Result { ok: bool, brief: String },
    /// The CLI's own news: a session started, an error, a usage limit.
    Note(String),
}

/// What kind of work a tool call does, for the mark it is shown with (`$ cargo test`,
/// `✎ src/lib.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Runs a command (claude's `Bash`, codex's command, gemini's `run_shell_command`).
    Shell,
    /// Writes or edits a file.
    Edit,
    /// Anything else (a read, a search, an MCP tool): shown by its name.
    Other,
}

/// The kind of the tool named `name` (as claude, codex or gemini name it; see `events`).
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "Bash" | "shell" | "run_shell_command" => ToolKind::Shell,
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" | "edit" | "write_file" | "replace" => {
            ToolKind::Edit
        }
        _ => ToolKind::Other,
    }
}

impl Activity {
    /// The activity on one line (raw text; newlines turned into spaces), for a spinner's line.
    pub fn one_line(&self) -> String {
        let text = match self {
            Activity::Said(text) | Activity::Note(text) => text.clone(),
            Activity::Tool { name, detail } => match tool_kind(name) {
                ToolKind::Shell => format!("$ {detail}"),
                ToolKind::Edit => format!("✎ {detail}"),
                ToolKind::Other if detail.is_empty() => name.clone(),
                ToolKind::Other => format!("{name}: {detail}"),
            },
            Activity::Result { ok: true, brief } => format!("→ {brief}"),
            Activity::Result { ok: false, brief } => format!("✗ {brief}"),
        };
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// Its kind in a word, as `runner logs --json` names it: said, tool, result, note.
    pub fn kind(&self) -> &'static str {
        match self {
            Activity::Said(_) => "said",
            Activity::Tool { .. } => "tool",
            Activity::Result { .. } => "result",
            Activity::Note(_) => "note",
        }
    }
}

/// Reads a session's lines in order, keeping what one line alone cannot say: gemini's
/// assistant text comes in pieces (`"delta": true`), joined here into one [`Activity::Said`]
/// until another line comes or [`Reader::flush`] is called; codex says a command when it
/// starts and its result when it ends; after the log's cut marker, the next line starts
/// wherever the cut fell and is read only if it is a whole event.
#[derive(Debug, Default)]
pub struct Reader {
    /// Gemini's assistant text so far (its pieces, joined).
    pending: Option<String>,
    /// The codex items whose start was seen (their end then says only the result).
    started: std::collections::HashSet<String>,
    /// The last line was the cut marker.
    after_cut: bool,
}

impl Reader {
    pub fn new() -> Reader {
        Reader::default()
    }

    /// The activities of one line (without its newline).
    pub fn line(&mut self, line: &[u8]) -> Vec<Activity> {
        let mut out = Vec::new();
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            return out;
        }
        let after_cut = std::mem::take(&mut self.after_cut);
        if let Some(event) = parse_event(trimmed) {
            if let Some(piece) = events::gemini_delta(&event) {
                let pending = self.pending.get_or_insert_with(String::new);
                push_capped(pending, piece, MAX_TEXT);
                return out;
            }
            out.extend(self.flush());
            out.extend(events::of_event(&event, &mut self.started));
            return out;
        }
        out.extend(self.flush());
        if after_cut || looks_like_event(trimmed) {
            // The rest of a line the cut fell in, or an event cut short: never shown raw.
            return out;
        }
        let text = as_shown(line);
        let text = text.trim();
        if text.starts_with(CUT_MARKER) && text.contains("bytes of output cut here") {
            self.after_cut = true;
            let note = text.trim_start_matches('[').trim_end_matches(']');
            out.push(Activity::Note(capped(note, MAX_DETAIL)));
        } else if !text.is_empty() {
            out.push(Activity::Said(capped(text, MAX_TEXT)));
        }
        out
    }

    /// What is held back (gemini's text so far), to be shown now: at the end of a log, or
    /// when no more output has come for now.
    pub fn flush(&mut self) -> Vec<Activity> {
        match self.pending.take() {
            Some(text) if !text.trim().is_empty() => vec![Activity::Said(text.trim().to_string())],
            _ => Vec::new(),
        }
    }
}

/// The activities of whole lines of output (the caller keeps a partial last line for later).
pub fn of_lines(output: &[u8]) -> Vec<Activity> {
    let mut reader = Reader::new();
    let mut out: Vec<Activity> = output
        .split(|b| *b == b'\n')
        .flat_map(|line| reader.line(line))
        .collect();
    out.extend(reader.flush());
    out
}

/// The activities one line of output says (none for a blank line or an event that says
/// nothing a person needs).
pub fn of_line(line: &[u8]) -> Vec<Activity> {
    let mut reader = Reader::new();
    let mut out = reader.line(line);
    out.extend(reader.flush());
    out
}

/// The latest activity in a session's log, on one line: what `runner run` shows under its
/// spinner and `runner watch` beside each run. `None` when the log is missing or says nothing.
pub fn latest_in_log(log: &Path) -> Option<String> {
    let tail = super::read::tail_bytes(log, 64 * 1024);
    // The first line of a tail read from the middle of a file may be cut: it is still read
    // (a cut JSON event says nothing, and a later whole line wins).
    of_lines(&tail).last().map(Activity::one_line)
}

/// `line` as a JSON object with a string `type`: an event of one of the CLIs (or of a newer
/// one). A cheap look at its ends first: most text lines are never parsed.
fn parse_event(line: &[u8]) -> Option<serde_json::Value> {
    if !(line.starts_with(b"{") && line.ends_with(b"}")) {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    value.get("type")?.as_str()?;
    Some(value)
}

/// A line that starts as a CLI's event does (`{"type":`): one that did not parse was cut.
fn looks_like_event(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"{") else {
        return false;
    };
    rest.trim_ascii_start().starts_with(b"\"type\"")
}

/// A text line as a terminal showed it: colour sequences dropped, and of a line a carriage
/// return wrote over (a progress counter), only what was written last.
fn as_shown(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches('\r');
    let last = text.rsplit('\r').next().unwrap_or(text);
    super::read::without_colours(last)
}

/// `text` cut to `max` characters, `…` where cut.
pub(crate) fn capped(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Append `piece` to `text`, which never grows past `max` characters (`…` where cut).
fn push_capped(text: &mut String, piece: &str, max: usize) {
    // Already cut (checked by length first: counting characters is for long texts only).
    if text.len() > max && text.ends_with('…') && text.chars().count() > max {
        return;
    }
    text.push_str(piece);
    if text.len() > max {
        *text = capped(text, max);
    }
}
