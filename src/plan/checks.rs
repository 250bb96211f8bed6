//! The checks every reader of a plan's text applies, to the whole plan and to each chunk
//! (`parse`, `parse_chunk`): ids a person and git can use, the kind of a JSON value named in
//! words, text cut short for a message.

use std::fmt;

use serde_json::Value;

/// `text` cut to at most `max` characters, with `…` when cut.
pub(super) fn short(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Longest chunk or phase id, in bytes. Ids reach environment variables, git refs, file names
/// and commit subjects; a page of text is not an id.
pub const MAX_ID_BYTES: usize = 200;

/// Ids must be printable: they reach environment variables (where NUL cannot go), ref and file
/// names, commit subjects and the terminal (where control characters, line breaks and
/// direction overrides would forge or hide text).
pub(super) fn check_id(at: &dyn fmt::Display, what: &str, id: &str, problems: &mut Vec<String>) {
    let problem = if id.len() > MAX_ID_BYTES {
        Some(format!(
            "is {} bytes long; at most {MAX_ID_BYTES} are allowed",
            id.len()
        ))
    } else {
        id.chars().find(|&c| !is_printable(c)).map(|c| {
            format!(
                "contains {} (U+{:04X}); use printable characters only",
                if c.is_control() {
                    "a control character"
                } else {
                    "an invisible or direction-changing character"
                },
                c as u32
            )
        })
    };
    if let Some(problem) = problem {
        let shown = short(&format!("{id:?}"), 60);
        problems.push(format!(
            "{at}: {what} id {shown} {problem} (ids reach environment variables, git refs and file names)"
        ));
    }
}

fn is_printable(c: char) -> bool {
    !c.is_control() && !crate::text::is_invisible(c)
}

pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// What a number in a plan (a phase number, a `depends_on` entry) is to runner, which keeps
/// such numbers as 64-bit integers.
pub(super) enum Whole {
    Fits(i64),
    /// Written as a whole number, but past the limit: what to say, with the limit.
    OutOfRange(String),
    /// Not a whole number (`1.5`, `1e3`).
    Not,
}

/// `text` (a JSON number as written, or a string's trimmed text) read as a whole number; `what`
/// names it for the message ("a phase number").
pub(super) fn whole_number(text: &str, what: &str) -> Whole {
    if let Ok(n) = text.parse::<i64>() {
        return Whole::Fits(n);
    }
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Whole::Not;
    }
    let shown = short(text, 40);
    Whole::OutOfRange(if negative {
        format!("{shown} is too small: {what} is at least {}", i64::MIN)
    } else {
        format!("{shown} is too large: {what} is at most {}", i64::MAX)
    })
}
