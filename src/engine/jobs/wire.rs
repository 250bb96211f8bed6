//! What a spec's own `runner run` (a job of `run --jobs`) hands its parent: its progress as
//! one marked JSON line per event on stderr (`--progress-events`, a hidden flag), and at its end
//! its `--json` summary or error object on stdout.

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::engine::progress::{Event, Progress};
use crate::engine::run::RunReport;
use crate::error::{RunnerError, exit};

/// Starts every line of progress a job writes; any other line on its stderr is text (an error,
/// a warning, what a signal did).
pub const MARK: &str = "@runner-progress ";

/// One progress event as the line a job writes (without the newline).
pub fn encode(event: &Progress<'_>) -> String {
    let value = match event {
        Progress::Line(text) => json!({"line": text}),
        Progress::Notice(text) => json!({"notice": text}),
        Progress::Position {
            done,
            total,
            current,
        } => json!({"position": {"done": done, "total": total, "current": current}}),
        Progress::Waiting { until, left_secs } => {
            json!({"waiting": {"until": until, "left_secs": left_secs}})
        }
        Progress::SessionStarted { label, started } => {
            json!({"session": {"label": label, "started_ms": unix_ms(*started)}})
        }
        Progress::Activity(text) => json!({"activity": text}),
        Progress::SessionEnded => json!({"session_ended": true}),
        Progress::Finished => json!({"finished": true}),
        Progress::Bell => json!({"bell": true}),
    };
    format!("{MARK}{value}")
}

/// A line of a job's stderr as the event it is: a marked line decoded, any other line (or a
/// marked one that does not decode) a notice, shown even with `--quiet` (errors and warnings
/// are among them).
pub fn decode(line: &str) -> Event {
    let text = || Event::Notice(line.to_string());
    let Some(body) = line.strip_prefix(MARK) else {
        return text();
    };
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return text();
    };
    let str_of = |v: &Value| v.as_str().map(str::to_string);
    let num = |v: &Value| v.as_u64();
    let decoded = if let Some(t) = value.get("line") {
        str_of(t).map(Event::Line)
    } else if let Some(t) = value.get("notice") {
        str_of(t).map(Event::Notice)
    } else if let Some(p) = value.get("position") {
        (|| {
            Some(Event::Position {
                done: usize::try_from(num(&p["done"])?).ok()?,
                total: usize::try_from(num(&p["total"])?).ok()?,
                current: str_of(&p["current"])?,
            })
        })()
    } else if let Some(w) = value.get("waiting") {
        (|| {
            Some(Event::Waiting {
                until: str_of(&w["until"])?,
                left_secs: num(&w["left_secs"])?,
            })
        })()
    } else if let Some(s) = value.get("session") {
        (|| {
            Some(Event::SessionStarted {
                label: str_of(&s["label"])?,
                started: SystemTime::UNIX_EPOCH
                    .checked_add(Duration::from_millis(num(&s["started_ms"])?))?,
            })
        })()
    } else if let Some(t) = value.get("activity") {
        str_of(t).map(Event::Activity)
    } else if value.get("session_ended").is_some() {
        Some(Event::SessionEnded)
    } else if value.get("finished").is_some() {
        Some(Event::Finished)
    } else if value.get("bell").is_some() {
        Some(Event::Bell)
    } else {
        None
    };
    decoded.unwrap_or_else(text)
}

/// The event as the borrowed form sinks take.
pub fn as_progress(event: &Event) -> Progress<'_> {
    match event {
        Event::Line(t) => Progress::Line(t),
        Event::Notice(t) => Progress::Notice(t),
        Event::Position {
            done,
            total,
            current,
        } => Progress::Position {
            done: *done,
            total: *total,
            current,
        },
        Event::Waiting { until, left_secs } => Progress::Waiting {
            until,
            left_secs: *left_secs,
        },
        Event::SessionStarted { label, started } => Progress::SessionStarted {
            label,
            started: *started,
        },
        Event::Activity(t) => Progress::Activity(t),
        Event::SessionEnded => Progress::SessionEnded,
        Event::Finished => Progress::Finished,
        Event::Bell => Progress::Bell,
    }
}

/// A time as milliseconds since the Unix epoch (0 before it).
fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How a job ended, from its exit code and what it printed on stdout: its summary (exit 0), or
/// its error as the error of the same exit code, naming the spec.
pub fn result(spec: &str, code: i32, stdout: &str) -> anyhow::Result<RunReport> {
    let value: Option<Value> = serde_json::from_str(stdout.trim()).ok();
    if code == 0 {
        return value
            .and_then(|v| serde_json::from_value::<RunReport>(v).ok())
            .ok_or_else(|| {
                anyhow::anyhow!("spec {spec}: its run ended well but printed no summary")
            });
    }
    let error = value.as_ref().map(|v| &v["error"]);
    let message = error
        .and_then(|e| e["message"].as_str())
        .map(|m| format!("spec {spec}: {m}"))
        .unwrap_or_else(|| format!("spec {spec}: its run ended with exit code {code}"));
    let hints: Vec<String> = error
        .and_then(|e| e["hints"].as_array())
        .map(|h| {
            h.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let fact = match code {
        exit::BAD_INPUT => RunnerError::BadInput(message),
        exit::NEEDS_HUMAN => RunnerError::NeedsHuman(message),
        exit::BUSY => RunnerError::Busy(message),
        exit::BUDGET_SPENT => RunnerError::BudgetSpent(message),
        exit::USAGE_LIMITED => RunnerError::UsageLimited(message),
        exit::INTERRUPTED => RunnerError::Interrupted,
        _ => return Err(anyhow::anyhow!(message)),
    };
    Err(hints
        .into_iter()
        .fold(fact, |e, hint| e.with_hint(hint))
        .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_goes_through_the_wire_unchanged() {
        let events = [
            Event::Line("Chunk 1-1 done ✓ \u{1b}[2J".into()),
            Event::Notice("saved at refs/x".into()),
            Event::Position {
                done: 2,
                total: 5,
                current: "1-3".into(),
            },
            Event::Waiting {
                until: "2026-11-23T18:00:00Z".into(),
                left_secs: 61,
            },
            Event::SessionStarted {
                label: "1-2 (attempt 2) \u{1b}]0;x\u{7}".into(),
                started: SystemTime::UNIX_EPOCH + Duration::from_millis(1_790_000_000_123),
            },
            Event::Activity("editing src/lib.rs now\nand \u{1b}[2J".into()),
            Event::SessionEnded,
            Event::Finished,
            Event::Bell,
        ];
        for event in events {
            let line = encode(&as_progress(&event));
            assert!(!line.contains('\n'), "{line}");
            assert_eq!(decode(&line), event);
        }
    }

    #[test]
    fn any_other_line_is_a_notice_as_written() {
        for line in [
            "runner: spec 001 is being run by another runner",
            "@runner-progress {not json",
            "@runner-progress {\"position\": {\"done\": -1}}",
            "@runner-progress {\"other\": 1}",
            "@runner-progress {\"session\": {\"label\": \"x\"}}",
            "@runner-progress {\"session\": {\"label\": \"x\", \"started_ms\": -5}}",
            "@runner-progress {\"activity\": 3}",
        ] {
            assert_eq!(decode(line), Event::Notice(line.to_string()));
        }
    }

    #[test]
    fn a_job_ends_with_its_summary_or_its_error_under_the_same_exit_code() {
        let summary = r#"{"schema": 1, "spec": "001-a", "outcome": "complete", "branch": "auto-claude/001-a",
            "worktree": "/r/.worktrees/auto-claude-1", "base_branch": "main", "completed": 2, "total": 2,
            "sessions": 2, "run_id": "r0123456789ab"}"#;
        let ran = result("001-a", 0, summary).unwrap();
        assert_eq!((ran.spec.as_str(), ran.completed), ("001-a", 2));
        assert!(result("001-a", 0, "garbage").is_err());
        let failed = r#"{"schema": 1, "error": {"code": 3, "kind": "needs_human",
            "message": "chunk 1-1 failed", "hints": ["runner recover --spec 001-a --retry-failed"]}}"#;
        let e = result("001-a", 3, failed).unwrap_err();
        let report = crate::error::ErrorReport::of(&e);
        assert_eq!(report.code, 3);
        assert_eq!(report.message, "spec 001-a: chunk 1-1 failed");
        assert_eq!(
            report.hints,
            vec!["runner recover --spec 001-a --retry-failed"]
        );
        for code in [2, 4, 5, 6, 130] {
            assert_eq!(
                crate::error::exit_code_of(&result("x", code, "").unwrap_err()),
                code
            );
        }
        assert_eq!(
            crate::error::exit_code_of(&result("x", 1, "").unwrap_err()),
            1
        );
        assert_eq!(
            crate::error::exit_code_of(&result("x", 77, "").unwrap_err()),
            1
        );
    }
}
