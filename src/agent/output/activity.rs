//! What an agent is doing, as a person reads it: each line a session printed (`output.log`)
//! turned into [`Activity`] — the assistant's words, a tool call with its command or file, a
//! tool's result in brief — whatever CLI printed it. Shared by `runner logs` (every activity),
//! the live `runner run` and `runner watch` (the latest one, on one line).
//!
//! The format is told line by line, not from the preset: a plain `--agent-command` may run
//! claude, and a CLI prints text (a login error, a warning) between its JSON events. A line that
//! is one of claude's, codex's or gemini's stream-json events is read as that event; any other
//! line is text (aider, a plain command, a CLI's own message).
//!
//! Pure: bytes in, activities out; never fails, never panics (non-UTF-8, a line cut by the log's
//! cap, an unknown event are all read as well as they can be). Text is returned raw: the front
//! end makes it safe for a terminal (`text::for_terminal`).

use std::path::Path;

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

impl Activity {
    /// The activity on one line (raw text; newlines turned into spaces), for a spinner's line.
    pub fn one_line(&self) -> String {
        let text = match self {
            Activity::Said(text) | Activity::Note(text) => text.clone(),
            Activity::Tool { name, detail } if detail.is_empty() => name.clone(),
            Activity::Tool { name, detail } => format!("{name}: {detail}"),
            Activity::Result { ok: true, brief } => format!("→ {brief}"),
            Activity::Result { ok: false, brief } => format!("✗ {brief}"),
        };
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// The activities of whole lines of output (the caller keeps a partial last line for later).
pub fn of_lines(output: &[u8]) -> Vec<Activity> {
    output.split(|b| *b == b'\n').flat_map(of_line).collect()
}

/// The activities one line of output says (none for a blank line or an event that says
/// nothing a person needs).
pub fn of_line(line: &[u8]) -> Vec<Activity> {
    // Scaffold (issue 28): the line as text; the stream-json readers replace this.
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    if text.is_empty() {
        return Vec::new();
    }
    vec![Activity::Said(text.to_string())]
}

/// The latest activity in a session's log, on one line: what `runner run` shows under its
/// spinner and `runner watch` beside each run. `None` when the log is missing or says nothing.
pub fn latest_in_log(log: &Path) -> Option<String> {
    let tail = super::read::tail_bytes(log, 64 * 1024);
    // The first line of a tail read from the middle of a file may be cut: it is still read
    // (a cut JSON event is text then, and a later whole line wins).
    of_lines(&tail).last().map(Activity::one_line)
}
