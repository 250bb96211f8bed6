//! Reading a finished (or cut off) session's report from the files it left in its session
//! folder: `output.log` (what the agent printed, capped by runner to `agent.max_log_bytes`, head
//! and tail kept) and, for aider, `aider.jsonl` (its analytics log).
//!
//! Never an error: a missing, unreadable or hostile file (a FIFO, a link to something huge)
//! reads as nothing, and at most `limit` bytes are read from each file (the last ones, where
//! the agents print their summary), so a file the agent grew behind runner's back cannot make
//! runner read gigabytes.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::{SessionFacts, Tokens};
use crate::policy::invocation::Preset;

/// The report of the session whose folder is `session_dir`, read by `preset`'s parser
/// (`command` reads nothing: an empty report). `previous_thread_total` is codex's running total
/// at the end of the previous session of a resumed thread.
pub fn read_session(
    preset: Preset,
    session_dir: &Path,
    previous_thread_total: Option<Tokens>,
    limit: u64,
) -> SessionFacts {
    let output = || tail(&session_dir.join("output.log"), limit);
    match preset {
        Preset::Command => SessionFacts::default(),
        Preset::Claude => claude_session(&output()),
        Preset::Gemini => gemini_session(&output()),
        Preset::Codex => {
            let mut report =
                super::codex::parse(&output(), previous_thread_total, &chrono::Local::now());
            codex_exact_reset(&mut report);
            report
        }
        Preset::Aider => {
            super::aider::parse(&output(), &tail(&session_dir.join("aider.jsonl"), limit))
        }
    }
}

/// A CLI's own folder in runner's environment (the agent's, which it inherits): `$var`, else
/// `dot_folder` in `$HOME`.
fn config_dir(var: &str, dot_folder: &str) -> Option<std::path::PathBuf> {
    std::env::var_os(var)
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(dot_folder)))
}

/// A claude session's report; for one killed before its `result`, the usage of its
/// transcript (the final figures of each message, where the stream showed only their start),
/// if claude's config folder is where runner's environment says.
fn claude_session(output: &[u8]) -> SessionFacts {
    let (mut report, unfinished) = super::claude::parse_unfinished(output);
    if let (Some(unfinished), Some(dir)) = (unfinished, config_dir("CLAUDE_CONFIG_DIR", ".claude"))
    {
        // The transcript is the agent's to write: it can only raise what the stream showed
        // (message by message), never lower it.
        let transcript = tail(&unfinished.transcript(&dir), 64 << 20);
        if let Some(tokens) = super::claude::transcript_tokens(&transcript, &unfinished.streamed) {
            report.set_tokens_priced(tokens);
        }
    }
    report
}

/// A codex usage limit's exact reset, from the thread's session file (codex prints only the
/// minute, which `codex::parse` reads as that minute's end): looked for in `$CODEX_HOME` (else
/// `~/.codex`), in the folders of today and the two days before (a thread started before
/// midnight).
fn codex_exact_reset(report: &mut SessionFacts) {
    let (Some(limit), Some(thread)) = (report.usage_limit, report.agent_session_id.clone()) else {
        return;
    };
    let now = chrono::Utc::now();
    let believable = |at| super::codex::rollout_agrees(at, limit.resets_at, now);
    let Some(home) = config_dir("CODEX_HOME", ".codex") else {
        return;
    };
    let suffix = format!("-{thread}.jsonl");
    let today = chrono::Local::now().date_naive();
    for back in 0..3 {
        let Some(day) = today.checked_sub_days(chrono::Days::new(back)) else {
            continue;
        };
        let dir = home
            .join("sessions")
            .join(day.format("%Y/%m/%d").to_string());
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten().take(100_000) {
            if !entry.file_name().to_string_lossy().ends_with(&suffix) {
                continue;
            }
            if let Some(at) = super::codex::rollout_reset(&tail(&entry.path(), 16 << 20))
                .filter(|at| believable(*at))
            {
                report.usage_limit = Some(super::UsageLimit {
                    resets_at: Some(at),
                });
                return;
            }
        }
    }
}

/// A gemini session's report; for one killed before its `result`, the tokens its chat file
/// records, found in gemini's folder (`$GEMINI_CLI_HOME`, else `$HOME`, then `.gemini/tmp/
/// <project>/chats/`) by the file name's id prefix and its header's full id.
fn gemini_session(output: &[u8]) -> SessionFacts {
    let (mut report, unfinished) = super::gemini::parse_unfinished(output);
    let Some(id) = unfinished else {
        return report;
    };
    let Some(home) = std::env::var_os("GEMINI_CLI_HOME").or_else(|| std::env::var_os("HOME"))
    else {
        return report;
    };
    let prefix: String = id.chars().take(8).collect();
    let suffix = format!("-{prefix}.jsonl");
    let projects = Path::new(&home).join(".gemini/tmp");
    let Ok(entries) = std::fs::read_dir(&projects) else {
        return report;
    };
    // Bounded in all (the folder is the agent's HOME's to fill): at most this many names
    // looked at, across every project.
    let mut budget: usize = 20_000;
    for project in entries.flatten() {
        budget = budget.saturating_sub(1);
        if budget == 0 {
            break;
        }
        let Ok(chats) = std::fs::read_dir(project.path().join("chats")) else {
            continue;
        };
        for chat in chats.flatten() {
            budget = budget.saturating_sub(1);
            if budget == 0 {
                break;
            }
            if !chat.file_name().to_string_lossy().ends_with(&suffix) {
                continue;
            }
            if let Some(tokens) = super::gemini::chat_tokens(&tail(&chat.path(), 64 << 20), &id) {
                report.tokens = tokens;
                return report;
            }
        }
    }
    report
}

/// The last `limit` bytes of a session's `output.log` as text (what the CLI said on stdout and
/// stderr); empty if it cannot be read.
pub fn output_tail(session_dir: &Path, limit: u64) -> String {
    String::from_utf8_lossy(&tail(&session_dir.join("output.log"), limit)).into_owned()
}

/// How many of the CLI's last lines of text [`last_words`] keeps, and how long each may be.
const LAST_WORDS_LINES: usize = 4;
const LAST_WORDS_LINE_CHARS: usize = 400;

/// The CLI's last lines of text in `output` — what it printed that is not one of its JSON
/// events (those are read by the parsers) nor blank — joined by ` / `; `None` when there are
/// none. For a session that failed before the CLI said anything its parser reads: gemini's
/// `Gemini CLI is not running in a trusted directory…`, a login error.
pub fn last_words(output: &[u8]) -> Option<String> {
    let mut kept: Vec<String> = Vec::new();
    for line in output.rsplit(|b| *b == b'\n') {
        let text = without_colours(&String::from_utf8_lossy(line));
        let text = text.trim();
        if text.is_empty() || text.starts_with('{') || text.starts_with('[') {
            continue;
        }
        let mut clipped: String = text.chars().take(LAST_WORDS_LINE_CHARS).collect();
        if clipped.len() < text.len() {
            clipped.push('…');
        }
        kept.push(clipped);
        if kept.len() == LAST_WORDS_LINES {
            break;
        }
    }
    kept.reverse();
    (!kept.is_empty()).then(|| kept.join(" / "))
}

/// `text` without the terminal's colour and cursor sequences (`ESC [ … letter`) CLIs and test
/// runners print even into a pipe (gemini's red "not running in a trusted directory", pytest's
/// red FAILED), nor its title and link sequences (`ESC ] … BEL`): the words are what is kept;
/// any other control character is escaped where they are shown (`text::for_terminal`).
pub(super) fn without_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates, then one final byte in @..~.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
            continue;
        }
        if c == '\u{1b}' && chars.peek() == Some(&']') {
            // Up to BEL or ST (`ESC \`).
            while let Some(c) = chars.next() {
                if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// How much of a log's end [`last_lines`] reads.
const LAST_LINES_BYTES: u64 = 64 * 1024;

/// The last `count` lines of the log at `path`, for a person reading why something failed (as
/// `cargo test` shows a failing test's output): as a terminal showed them (colour and cursor
/// sequences dropped, what a carriage return wrote over left out), trailing blank lines
/// dropped, each cut to `width` characters (`…` where cut); with `text_only`, an agent CLI's
/// JSON event lines left out too (its parser reads those). Other control characters are the
/// printer's to escape. Empty when the file cannot be read or holds nothing.
pub fn last_lines(path: &Path, count: usize, width: usize, text_only: bool) -> Vec<String> {
    let bytes = tail(path, LAST_LINES_BYTES);
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.split('\n').collect();
    if bytes.len() as u64 >= LAST_LINES_BYTES {
        // The first line read may be the end of a longer one.
        lines.remove(0);
    }
    let mut shown: Vec<String> = Vec::new();
    for line in lines {
        let line = line.trim_end_matches('\r');
        let line = line.rsplit('\r').next().unwrap_or(line);
        let line = without_colours(line);
        let line = line.trim_end();
        if text_only && (line.starts_with('{') || line.starts_with('[')) {
            continue;
        }
        let mut cut: String = line.chars().take(width).collect();
        if cut.len() < line.len() {
            cut.push('…');
        }
        shown.push(cut);
    }
    while shown.last().is_some_and(|l| l.trim().is_empty()) {
        shown.pop();
    }
    let start = shown.len().saturating_sub(count);
    shown.split_off(start)
}

/// The CLI's last words in the session folder's `output.log` (see [`last_words`]).
pub fn last_words_of(session_dir: &Path) -> Option<String> {
    last_words(&tail(&session_dir.join("output.log"), 64 * 1024))
}

/// The last `limit` bytes of the regular file at `path`; nothing if it cannot be read.
/// Never through a link: an agent may put one where its log belongs, and the line is shown
/// (`runner watch`, the live `runner run`).
pub fn tail_bytes(path: &Path, limit: u64) -> Vec<u8> {
    let Ok(file) = crate::fs::safe::open_read_no_link(path) else {
        return Vec::new();
    };
    tail_of(file, limit)
}

fn tail(path: &Path, limit: u64) -> Vec<u8> {
    let Ok(file) = crate::fs::safe::open_read(path) else {
        return Vec::new();
    };
    tail_of(file, limit)
}

fn tail_of(mut file: std::fs::File, limit: u64) -> Vec<u8> {
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > limit && file.seek(SeekFrom::Start(len - limit)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if file.take(limit).read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_folder_is_read_by_its_preset_and_never_fails() {
        let dir = tempfile::tempdir().unwrap();
        // Nothing there: an empty report, whatever the preset.
        for preset in Preset::ALL {
            assert_eq!(
                read_session(preset, dir.path(), None, 1 << 20),
                SessionFacts::default()
            );
        }
        let result = br#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.25,"num_turns":3,"session_id":"abc"}"#;
        let mut log = b"x".repeat(5000);
        log.push(b'\n');
        log.extend_from_slice(result);
        log.push(b'\n');
        std::fs::write(dir.path().join("output.log"), &log).unwrap();
        let report = read_session(Preset::Claude, dir.path(), None, 1 << 20);
        assert_eq!(report.cost_usd, Some(0.25));
        assert_eq!(report.agent_session_id.as_deref(), Some("abc"));
        // Only the tail is read: the summary line is still in it.
        let report = read_session(Preset::Claude, dir.path(), None, result.len() as u64 + 1);
        assert_eq!(report.cost_usd, Some(0.25));
        // The generic command reads nothing.
        assert_eq!(
            read_session(Preset::Command, dir.path(), None, 1 << 20),
            SessionFacts::default()
        );
    }

    #[test]
    fn last_words_are_the_clis_text_lines_without_colours() {
        let out = b"{\"type\":\"init\"}\n\x1b[31mGemini CLI is not running in a trusted directory.\x1b[0m\n\n[1,2]\n";
        assert_eq!(
            last_words(out).as_deref(),
            Some("Gemini CLI is not running in a trusted directory.")
        );
        assert_eq!(last_words(b"{\"a\":1}\n\n"), None);
        let many = b"one\ntwo\nthree\nfour\nfive\n";
        assert_eq!(
            last_words(many).as_deref(),
            Some("two / three / four / five")
        );
        let long = "x".repeat(1000);
        let words = last_words(long.as_bytes()).unwrap();
        assert_eq!(words.chars().count(), LAST_WORDS_LINE_CHARS + 1);
        assert!(words.ends_with('…'));
    }

    #[test]
    fn last_lines_are_the_end_of_a_log_as_a_terminal_showed_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("verification.log");
        let mut text = String::new();
        for i in 1..=30 {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str("\x1b[31mFAILED\x1b[0m test_x\n\x1b]0;title\x07named\n");
        text.push_str("10%\r50%\r100% done\r\n");
        text.push_str(&"y".repeat(500));
        text.push_str("\n{\"type\":\"result\"}\nbell\x07\n\n  \n");
        std::fs::write(&log, &text).unwrap();
        let lines = last_lines(&log, 6, 100, false);
        assert_eq!(
            lines,
            [
                "FAILED test_x".to_string(),
                "named".into(),
                "100% done".into(),
                format!("{}…", "y".repeat(100)),
                "{\"type\":\"result\"}".into(),
                "bell\x07".into(),
            ]
        );
        let text_only = last_lines(&log, 3, 100, true);
        assert_eq!(text_only[2], "bell\x07");
        assert!(!text_only.iter().any(|l| l.starts_with('{')));
        assert_eq!(last_lines(&log, 40, 100, false)[0], "line 1");
        assert!(last_lines(&dir.path().join("none"), 5, 100, false).is_empty());
        // A log longer than what is read: its first, partial line is left out.
        std::fs::write(&log, "x".repeat(LAST_LINES_BYTES as usize + 10) + "\nend\n").unwrap();
        assert_eq!(last_lines(&log, 5, 100, false), ["end"]);
    }

    #[test]
    fn a_fifo_or_a_folder_in_place_of_the_log_reads_as_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("output.log")).unwrap();
        assert_eq!(
            read_session(Preset::Gemini, dir.path(), None, 1 << 20),
            SessionFacts::default()
        );
        let fifo = dir.path().join("aider.jsonl");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        let fifo_mode = rustix::fs::Mode::from_raw_mode(0o600);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            c.as_c_str(),
            rustix::fs::FileType::Fifo,
            fifo_mode,
            0,
        )
        .unwrap();
        assert_eq!(
            read_session(Preset::Aider, dir.path(), None, 1 << 20),
            SessionFacts::default()
        );
    }
}
