//! `runner logs`: a spec's agent sessions as a person reads them (the assistant's words, each
//! tool call with its command or file, its result in brief), or their exact bytes (`--raw`), or
//! JSON lines (`--json`); `--follow` streams a live run. Every piece of agent text goes through
//! `text::for_terminal` (no escape sequence of the agent's reaches the terminal), but `--raw`,
//! which gives the bytes as they are, as asked.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Args;
use serde_json::json;

use super::style::{Style, for_stdout};
use runner::agent::output::activity::{Activity, ToolKind, tool_kind};
use runner::ops::logs::{LogsOptions, Piece, logs};
use runner::store::sessions::Started;

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The spec (its number, or a unique part of its name); without one, the spec of the slot
    /// runner is started in, or the only one.
    #[arg(value_name = "SPEC", add = super::complete::spec_names())]
    pub spec: Option<String>,
    /// The spec, as the other commands name it.
    #[arg(long = "spec", value_name = "SPEC", conflicts_with = "spec", add = super::complete::spec_names())]
    pub spec_flag: Option<String>,
    /// Every session of this run, in order (its id, or a prefix of 4 characters or more).
    #[arg(long, value_name = "ID", conflicts_with = "session", add = super::complete::run_ids())]
    pub run: Option<String>,
    /// This session only (its folder's name under the spec's sessions/).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Go on as the logs are written, into the run's next sessions, until the run ends (or
    /// Ctrl-C: exit 130). Started before any session, waits for the first.
    #[arg(short, long)]
    pub follow: bool,
    /// The exact bytes of the output.log(s), not escaped (control sequences included).
    #[arg(long, conflicts_with = "json")]
    pub raw: bool,
    /// Print JSON lines: one object per activity, {"schema":1,"spec","session_id","kind",…}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Form {
    Text(Style),
    Raw,
    Json,
}

pub fn run(cwd: &Path, args: LogsArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    let opts = LogsOptions {
        spec: args.spec.or(args.spec_flag),
        run: args.run,
        session: args.session,
        follow: args.follow,
        raw: args.raw,
        ..LogsOptions::default()
    };
    let mut stream = logs(&ctx, opts)?;
    // Ctrl-C, SIGTERM, SIGHUP end the stream (at its next look, within a poll): exit 130.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let form = if args.raw {
        Form::Raw
    } else if args.json {
        Form::Json
    } else {
        Form::Text(for_stdout())
    };
    let spec = stream.spec().to_string();
    let mut out = std::io::stdout().lock();
    let mut sessions = 0;
    while let Some(piece) = stream.next(&stop) {
        let bytes = match piece {
            Piece::Waiting(what) => {
                super::info(&format!("{what}…"));
                continue;
            }
            Piece::RunGone(what) => {
                super::info(&what);
                continue;
            }
            Piece::Unreadable { why, .. } => {
                runner::output::warn(&why);
                continue;
            }
            Piece::Session(started) => {
                sessions += 1;
                session_header(&started, &spec, form, sessions > 1)
            }
            Piece::Output {
                session_id,
                bytes,
                activities,
            } => match form {
                Form::Raw => bytes,
                Form::Json => json_lines(&spec, &session_id, &activities),
                Form::Text(style) => text_lines(&activities, style),
            },
        };
        if let Err(e) = out.write_all(&bytes).and_then(|()| out.flush()) {
            // The reader left (`runner logs -f | head`): nothing more to do.
            runner::note_stdout_error(e);
            return Ok(0);
        }
    }
    Ok(if stop.load(Ordering::SeqCst) {
        runner::error::exit::INTERRUPTED
    } else {
        0
    })
}

/// Agent text made safe for the terminal.
fn t(text: &str) -> String {
    runner::text::for_terminal(text).into_owned()
}

/// The line that opens a session: its role, chunk, attempt, start and id (nothing in `--raw`).
fn session_header(s: &Started, spec: &str, form: Form, not_first: bool) -> Vec<u8> {
    match form {
        Form::Raw => Vec::new(),
        Form::Json => {
            let line = json!({
                "schema": super::json::SCHEMA,
                "spec": spec,
                "session_id": s.session_id,
                "kind": "session",
                "run_id": s.run_id,
                "role": s.role,
                "chunk": s.chunk,
                "attempt": s.attempt,
                "started": s.started,
            });
            format!("{line}\n").into_bytes()
        }
        Form::Text(style) => {
            let mut what = vec![match &s.chunk {
                Some(chunk) => format!("{} {}", t(&s.role), t(chunk)),
                None => t(&s.role),
            }];
            if s.attempt > 0 {
                what.push(format!("attempt {}", s.attempt));
            }
            if let Some(at) = s.started {
                what.push(format!("started {}", at.format("%Y-%m-%d %H:%M:%S UTC")));
            }
            what.push(t(&s.session_id));
            let gap = if not_first { "\n" } else { "" };
            format!("{gap}{}\n", style.bold(&format!("── {}", what.join(" · ")))).into_bytes()
        }
    }
}

/// One line (or paragraph) per activity: the assistant's words as written, tool calls,
/// results (dim) and notes indented under them.
fn text_lines(activities: &[Activity], style: Style) -> Vec<u8> {
    let mut text = String::new();
    for a in activities {
        match a {
            Activity::Said(said) => {
                for line in said.lines() {
                    text.push_str(t(line).trim_end());
                    text.push('\n');
                }
            }
            Activity::Tool { name, detail } => {
                let line = match tool_kind(name) {
                    ToolKind::Shell => format!("$ {}", t(detail)),
                    ToolKind::Edit => format!("✎ {}", t(detail)),
                    ToolKind::Other => format!("{} {}", t(name), t(detail)),
                };
                text.push_str(&format!("  {}\n", line.trim_end()));
            }
            Activity::Result { ok, brief } => {
                let mark = if *ok { "→" } else { "✗" };
                text.push_str(&format!(
                    "  {}\n",
                    style.dim(&format!("{mark} {}", t(brief)))
                ));
            }
            Activity::Note(note) => {
                text.push_str(&format!("  {}\n", style.dim(&format!("· {}", t(note)))));
            }
        }
    }
    text.into_bytes()
}

/// One JSON object a line per activity (docs/json.md): exact text, never escaped for a terminal.
fn json_lines(spec: &str, session_id: &str, activities: &[Activity]) -> Vec<u8> {
    let mut text = String::new();
    for a in activities {
        let mut line = json!({
            "schema": super::json::SCHEMA,
            "spec": spec,
            "session_id": session_id,
            "kind": a.kind(),
        });
        let fields = match a {
            Activity::Said(said) => json!({"text": said}),
            Activity::Note(note) => json!({"text": note}),
            Activity::Tool { name, detail } => json!({"name": name, "detail": detail}),
            Activity::Result { ok, brief } => json!({"ok": ok, "brief": brief}),
        };
        if let (Some(line), serde_json::Value::Object(fields)) = (line.as_object_mut(), fields) {
            line.extend(fields);
        }
        text.push_str(&line.to_string());
        text.push('\n');
    }
    text.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activities_read_as_a_transcript_with_agent_text_made_safe() {
        let shown = text_lines(
            &[
                Activity::Said("Let me look.\n\nOK \u{1b}[31mred".into()),
                Activity::Tool {
                    name: "Bash".into(),
                    detail: "cargo test".into(),
                },
                Activity::Tool {
                    name: "Edit".into(),
                    detail: "src/lib.rs".into(),
                },
                Activity::Tool {
                    name: "Grep".into(),
                    detail: "fn main".into(),
                },
                Activity::Result {
                    ok: true,
                    brief: "ok".into(),
                },
                Activity::Result {
                    ok: false,
                    brief: "exit 1".into(),
                },
                Activity::Note("finished".into()),
            ],
            Style::PLAIN,
        );
        assert_eq!(
            String::from_utf8(shown).unwrap(),
            "Let me look.\n\nOK \\u{1b}[31mred\n  $ cargo test\n  ✎ src/lib.rs\n  Grep fn main\n  → ok\n  ✗ exit 1\n  · finished\n"
        );
        let coloured = text_lines(
            &[Activity::Result {
                ok: true,
                brief: "ok".into(),
            }],
            Style::COLOR,
        );
        assert_eq!(
            String::from_utf8(coloured).unwrap(),
            "  \u{1b}[2m→ ok\u{1b}[0m\n"
        );
    }
}
