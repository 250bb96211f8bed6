//! What runner tells the `[notify]` command, the desktop and the terminal bell: which event a
//! run's end is, the payload (one JSON object on the command's stdin) and its `RUNNER_*`
//! variables, the one-line message, and the desktop notifier's command line. Pure: the engine
//! gathers the facts, `notify` (the mechanism) runs the commands.

use serde::{Deserialize, Serialize};

use crate::policy::outcome::RunOutcome;

/// What happened, as `notify.events` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, Hash)]
#[serde(rename_all = "snake_case")]
pub enum NotifyEvent {
    /// A run starts again on work a run before it left interrupted (once per run).
    Resuming,
    /// Every chunk is done (or the person merged the existing work instead of running).
    Complete,
    /// `run --plan-only`: the plan is written, for a person to read before any code is.
    Planned,
    /// A chunk failed its last attempt, or the run stopped on an error of its own.
    Failed,
    /// The agent's usage limit paused the spec.
    UsageLimited,
    /// The run's sessions or the spec's dollars or tokens are spent.
    BudgetExhausted,
    /// Something only a person can sort out (a blocked chunk, recovery's doubt, a broken plan
    /// or history).
    NeedsHuman,
    /// Ctrl-C, SIGTERM or SIGHUP stopped the run.
    Interrupted,
    /// `runner pr` opened a pull request (not when it only printed the page to open one).
    PrOpened,
}

impl NotifyEvent {
    pub const ALL: [NotifyEvent; 9] = [
        NotifyEvent::Resuming,
        NotifyEvent::Complete,
        NotifyEvent::Planned,
        NotifyEvent::Failed,
        NotifyEvent::UsageLimited,
        NotifyEvent::BudgetExhausted,
        NotifyEvent::NeedsHuman,
        NotifyEvent::Interrupted,
        NotifyEvent::PrOpened,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            NotifyEvent::Resuming => "resuming",
            NotifyEvent::Complete => "complete",
            NotifyEvent::Planned => "planned",
            NotifyEvent::Failed => "failed",
            NotifyEvent::UsageLimited => "usage_limited",
            NotifyEvent::BudgetExhausted => "budget_exhausted",
            NotifyEvent::NeedsHuman => "needs_human",
            NotifyEvent::Interrupted => "interrupted",
            NotifyEvent::PrOpened => "pr_opened",
        }
    }
}

/// The event of a run that ended with `outcome`, its plan holding `failed_chunks` failed
/// chunks: a spec that needs a person because a chunk failed for good is `failed`.
pub fn end_event(outcome: RunOutcome, failed_chunks: usize) -> NotifyEvent {
    match outcome {
        RunOutcome::Complete | RunOutcome::Merged => NotifyEvent::Complete,
        RunOutcome::Planned => NotifyEvent::Planned,
        RunOutcome::Interrupted => NotifyEvent::Interrupted,
        RunOutcome::NeedsHuman if failed_chunks > 0 => NotifyEvent::Failed,
        RunOutcome::NeedsHuman => NotifyEvent::NeedsHuman,
        RunOutcome::BudgetSpent => NotifyEvent::BudgetExhausted,
        RunOutcome::UsageLimited => NotifyEvent::UsageLimited,
        RunOutcome::Error => NotifyEvent::Failed,
    }
}

/// What the engine knows of the spec when it notifies.
#[derive(Debug, Clone)]
pub struct SpecFacts<'a> {
    pub spec: &'a str,
    pub run_id: &'a str,
    /// Chunks completed, and in the plan (0 and 0 before there is one).
    pub done: usize,
    pub total: usize,
    /// The spec's dollars over all its runs (its ledger); 0 when the agent reports none.
    pub usd: f64,
    /// The one continue command (`policy::next_command::continue_command`).
    pub continue_command: String,
    pub time: chrono::DateTime<chrono::Utc>,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunEnd<'a> {
    pub outcome: RunOutcome,
    /// runner's exit code for it.
    pub exit_code: i32,
    pub failed_chunks: usize,
    /// The error the run ended with, as runner prints it (none when it succeeded).
    pub reason: Option<&'a str>,
}

/// `progress` in the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
}

/// The notify command's stdin (docs/configuration.md, "[notify]").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Payload {
    pub event: NotifyEvent,
    pub spec: String,
    /// The run; null for `pr_opened` (`runner pr` is not a run).
    pub run_id: Option<String>,
    /// How the run ended, as `runner run --json` says it; null for `resuming`.
    pub outcome: Option<RunOutcome>,
    /// runner's exit code; null for `resuming`.
    pub exit_code: Option<i32>,
    /// One line for a person (a chat message, a desktop notification).
    pub message: String,
    /// `resuming`: the chunk the interrupted run was on (null: it was planning).
    pub chunk: Option<String>,
    pub progress: Progress,
    /// The spec's dollars over all its runs; null when its agent reports none.
    pub cost_usd: Option<f64>,
    /// What a person runs next: `runner merge --spec S` once complete, else the continue
    /// command; null for `resuming` and after a merge.
    pub next_command: Option<String>,
    /// The error the run ended with, whole (it may run over many lines); null when none.
    pub reason: Option<String>,
    /// `pr_opened`: the pull request's URL, as the tool printed it; null otherwise.
    pub url: Option<String>,
    /// When, in RFC 3339 (UTC).
    pub time: String,
}

/// The payload of a run that ended as `end` says.
pub fn end_payload(facts: &SpecFacts<'_>, end: &RunEnd<'_>) -> Payload {
    let event = end_event(end.outcome, end.failed_chunks);
    let spec = facts.spec;
    let state = match (event, end.outcome) {
        (_, RunOutcome::Merged) => "was merged".to_string(),
        (NotifyEvent::Complete, _) => "is complete".to_string(),
        (NotifyEvent::Planned, _) => "is planned".to_string(),
        (NotifyEvent::Failed, _) => "failed".to_string(),
        (NotifyEvent::UsageLimited, _) => "is paused by a usage limit".to_string(),
        (NotifyEvent::BudgetExhausted, _) => "is out of budget".to_string(),
        (NotifyEvent::Interrupted, _) => "was interrupted".to_string(),
        (NotifyEvent::NeedsHuman | NotifyEvent::Resuming | NotifyEvent::PrOpened, _) => {
            "needs a person".to_string()
        }
    };
    let next_command = match (event, end.outcome) {
        (_, RunOutcome::Merged) => None,
        (NotifyEvent::Complete, _) => Some(format!("runner merge --spec {}", crate::sh(spec))),
        _ => Some(facts.continue_command.clone()),
    };
    Payload {
        event,
        outcome: Some(end.outcome),
        exit_code: Some(end.exit_code),
        message: one_line(&format!(
            "spec {spec} {state}: {}/{} {} done",
            facts.done,
            facts.total,
            crate::text::noun(facts.total, "chunk")
        )),
        chunk: None,
        next_command,
        reason: end.reason.map(str::to_string),
        ..common(facts, event)
    }
}

/// The payload of a run that starts again on interrupted work: the chunk the interrupted run
/// was on (`None`: it was planning).
pub fn resuming_payload(facts: &SpecFacts<'_>, chunk: Option<&str>) -> Payload {
    Payload {
        message: one_line(&format!(
            "resuming interrupted work on {}: {}",
            facts.spec,
            chunk.unwrap_or("planning")
        )),
        chunk: chunk.map(str::to_string),
        ..common(facts, NotifyEvent::Resuming)
    }
}

/// The payload of a pull request `runner pr` opened at `url` (`None`: the tool printed none),
/// a draft or not. `facts.run_id` is not used: no run opens it.
pub fn pr_opened_payload(facts: &SpecFacts<'_>, url: Option<&str>, draft: bool) -> Payload {
    let what = if draft {
        "draft pull request"
    } else {
        "pull request"
    };
    Payload {
        message: one_line(&format!(
            "{what} opened for spec {}: {}",
            facts.spec,
            url.unwrap_or("(no URL printed)")
        )),
        run_id: None,
        url: url.map(str::to_string),
        ..common(facts, NotifyEvent::PrOpened)
    }
}

fn common(facts: &SpecFacts<'_>, event: NotifyEvent) -> Payload {
    Payload {
        event,
        spec: facts.spec.to_string(),
        run_id: Some(facts.run_id.to_string()),
        outcome: None,
        exit_code: None,
        message: String::new(),
        chunk: None,
        progress: Progress {
            done: facts.done,
            total: facts.total,
        },
        cost_usd: (facts.usd.is_finite() && facts.usd > 0.0).then_some(facts.usd),
        next_command: None,
        reason: None,
        url: None,
        time: facts
            .time
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    }
}

/// Text on one line that cannot act on a terminal or a notification: control characters
/// (line breaks too) shown as escapes, direction controls removed.
fn one_line(text: &str) -> String {
    crate::text::for_terminal(text)
        .replace('\n', "\\u{a}")
        .replace('\t', " ")
}

/// Longest value of a `RUNNER_*` variable, in bytes: Linux refuses to start a program given
/// one string over 128 KiB, and no fact here needs a page.
const MAX_ENV_BYTES: usize = 4096;

/// A value fit for an environment variable: on one line, no NUL, at most [`MAX_ENV_BYTES`].
fn env_value(text: &str) -> String {
    let mut value = one_line(text);
    if value.len() > MAX_ENV_BYTES {
        let mut end = MAX_ENV_BYTES;
        while !value.is_char_boundary(end) {
            end -= 1;
        }
        value.truncate(end);
    }
    value
}

impl Payload {
    /// The payload as the command reads it on stdin: one line of JSON.
    pub fn json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The same facts as variables (an absent one is empty, so that nothing of the same name
    /// in runner's own environment shows through). The reason is only in the JSON.
    pub fn env(&self) -> Vec<(String, String)> {
        let text = |v: Option<String>| v.unwrap_or_default();
        [
            ("RUNNER_NOTIFY_EVENT", self.event.as_str().to_string()),
            ("RUNNER_SPEC", self.spec.clone()),
            ("RUNNER_RUN_ID", text(self.run_id.clone())),
            ("RUNNER_OUTCOME", text(self.outcome.map(|o| o.to_string()))),
            (
                "RUNNER_EXIT_CODE",
                text(self.exit_code.map(|c| c.to_string())),
            ),
            ("RUNNER_MESSAGE", self.message.clone()),
            ("RUNNER_CHUNK_ID", text(self.chunk.clone())),
            ("RUNNER_DONE", self.progress.done.to_string()),
            ("RUNNER_TOTAL", self.progress.total.to_string()),
            (
                "RUNNER_COST_USD",
                text(self.cost_usd.map(|u| u.to_string())),
            ),
            ("RUNNER_NEXT_COMMAND", text(self.next_command.clone())),
            ("RUNNER_URL", text(self.url.clone())),
            ("RUNNER_TIME", self.time.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), env_value(&v)))
        .collect()
    }

    /// A desktop notification's title.
    pub fn title(&self) -> String {
        one_line(&format!("runner: {}", self.spec))
    }
}

/// Where a desktop notification can be shown, as the mechanism found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Desktop {
    /// macOS: `osascript` shows it.
    MacOs,
    /// Linux (and other Unix): `notify-send` at this path, and whether a desktop session is
    /// there to show it in (a session bus, `DISPLAY` or `WAYLAND_DISPLAY`).
    Linux {
        notify_send: Option<String>,
        session: bool,
    },
}

/// The desktop notifier's argv for `payload` (no shell: every text is one argument, after
/// `--` or as a script's argument, never code), or `None` where nothing can show it.
pub fn desktop_argv(desktop: &Desktop, payload: &Payload) -> Option<Vec<String>> {
    let (title, body) = (payload.title(), payload.message.clone());
    match desktop {
        Desktop::MacOs => Some(vec![
            "osascript".into(),
            "-e".into(),
            "on run argv".into(),
            "-e".into(),
            "display notification (item 2 of argv) with title (item 1 of argv)".into(),
            "-e".into(),
            "end run".into(),
            title,
            body,
        ]),
        Desktop::Linux {
            notify_send: Some(program),
            session: true,
        } => Some(vec![
            program.clone(),
            "--app-name=runner".into(),
            "--".into(),
            title,
            body,
        ]),
        Desktop::Linux { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> SpecFacts<'static> {
        SpecFacts {
            spec: "001-a b",
            run_id: "r0123456789ab",
            done: 2,
            total: 3,
            usd: 0.0,
            continue_command: "runner run --spec '001-a b' --auto-continue".into(),
            time: chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
        }
    }

    fn end(outcome: RunOutcome, exit_code: i32, failed_chunks: usize) -> Payload {
        end_payload(
            &facts(),
            &RunEnd {
                outcome,
                exit_code,
                failed_chunks,
                reason: Some("line one\nline two"),
            },
        )
    }

    #[test]
    fn each_outcome_is_the_event_a_person_cares_about() {
        use NotifyEvent as E;
        use RunOutcome as O;
        for (outcome, failed, event) in [
            (O::Complete, 0, E::Complete),
            (O::Merged, 0, E::Complete),
            (O::Planned, 0, E::Planned),
            (O::Interrupted, 1, E::Interrupted),
            (O::NeedsHuman, 1, E::Failed),
            (O::NeedsHuman, 0, E::NeedsHuman),
            (O::BudgetSpent, 0, E::BudgetExhausted),
            (O::UsageLimited, 0, E::UsageLimited),
            (O::Error, 0, E::Failed),
        ] {
            assert_eq!(end_event(outcome, failed), event, "{outcome}");
        }
        for e in NotifyEvent::ALL {
            assert_eq!(serde_json::to_value(e).unwrap(), e.as_str());
        }
    }

    #[test]
    fn the_payload_says_what_happened_and_what_to_run_next() {
        let p = end(RunOutcome::Complete, 0, 0);
        assert_eq!(p.message, "spec 001-a b is complete: 2/3 chunks done");
        assert_eq!(
            p.next_command.as_deref(),
            Some("runner merge --spec '001-a b'")
        );
        assert_eq!(p.cost_usd, None, "no dollars reported: null, not 0");
        assert_eq!(p.time, "2023-11-14T22:13:20Z");
        let p = end(RunOutcome::NeedsHuman, 3, 1);
        assert_eq!(p.event, NotifyEvent::Failed);
        assert_eq!(p.message, "spec 001-a b failed: 2/3 chunks done");
        assert_eq!(
            p.next_command.as_deref(),
            Some(facts().continue_command.as_str())
        );
        assert_eq!(p.reason.as_deref(), Some("line one\nline two"));
        let p = end(RunOutcome::Merged, 0, 0);
        assert_eq!(p.next_command, None);
        assert_eq!(p.message, "spec 001-a b was merged: 2/3 chunks done");
        let json: serde_json::Value =
            serde_json::from_str(&end(RunOutcome::UsageLimited, 6, 0).json()).unwrap();
        assert_eq!(json["event"], "usage_limited");
        assert_eq!(json["outcome"], "usage_limited");
        assert_eq!(json["exit_code"], 6);
        assert_eq!(json["progress"], serde_json::json!({"done": 2, "total": 3}));
        let mut one = facts();
        (one.done, one.total, one.usd) = (1, 1, 0.25);
        let p = resuming_payload(&one, Some("core-a"));
        assert_eq!(p.message, "resuming interrupted work on 001-a b: core-a");
        assert_eq!((p.outcome, p.exit_code, p.next_command), (None, None, None));
        assert_eq!(p.cost_usd, Some(0.25));
        assert_eq!(
            resuming_payload(&one, None).message,
            "resuming interrupted work on 001-a b: planning"
        );
    }

    #[test]
    fn a_pull_request_opened_says_where_and_belongs_to_no_run() {
        let p = pr_opened_payload(&facts(), Some("https://github.com/o/r/pull/7"), false);
        assert_eq!(p.event, NotifyEvent::PrOpened);
        assert_eq!(
            p.message,
            "pull request opened for spec 001-a b: https://github.com/o/r/pull/7"
        );
        assert_eq!(p.url.as_deref(), Some("https://github.com/o/r/pull/7"));
        assert_eq!(
            (p.run_id.as_deref(), p.outcome, p.exit_code),
            (None, None, None)
        );
        assert_eq!(p.progress, Progress { done: 2, total: 3 });
        let json: serde_json::Value = serde_json::from_str(&p.json()).unwrap();
        assert_eq!(json["event"], "pr_opened");
        assert_eq!(json["run_id"], serde_json::Value::Null);
        let env = p.env();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get("RUNNER_URL"), "https://github.com/o/r/pull/7");
        assert_eq!(get("RUNNER_RUN_ID"), "");
        assert_eq!(get("RUNNER_NOTIFY_EVENT"), "pr_opened");
        let draft = pr_opened_payload(&facts(), None, true);
        assert_eq!(
            draft.message,
            "draft pull request opened for spec 001-a b: (no URL printed)"
        );
        // Every other event has a run and no URL.
        let end = end(RunOutcome::Complete, 0, 0);
        assert_eq!(end.run_id.as_deref(), Some("r0123456789ab"));
        assert_eq!(end.url, None);
    }

    #[test]
    fn the_variables_are_safe_lines_and_hide_nothing_of_the_same_name() {
        let mut p = end(RunOutcome::Complete, 0, 0);
        p.spec = "a\nb\0c\u{1b}[2J\u{202e}d".into();
        p.message = "x".repeat(10_000);
        let env = p.env();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get("RUNNER_SPEC"), "a\\u{a}b\\u{0}c\\u{1b}[2Jd");
        assert_eq!(get("RUNNER_MESSAGE").len(), MAX_ENV_BYTES);
        assert_eq!(get("RUNNER_CHUNK_ID"), "", "set, empty");
        assert_eq!(get("RUNNER_COST_USD"), "");
        assert_eq!(get("RUNNER_EXIT_CODE"), "0");
        assert_eq!(get("RUNNER_DONE"), "2");
        assert!(env.iter().all(|(_, v)| !v.contains(['\0', '\n'])));
        // The JSON keeps the name exactly.
        let json: serde_json::Value = serde_json::from_str(&p.json()).unwrap();
        assert_eq!(json["spec"], "a\nb\0c\u{1b}[2J\u{202e}d");
        assert!(!p.json().contains('\n'), "one line");
    }

    #[test]
    fn a_desktop_notification_passes_its_text_as_arguments() {
        let p = end(RunOutcome::Interrupted, 130, 0);
        let linux = |path: Option<&str>, session| Desktop::Linux {
            notify_send: path.map(str::to_string),
            session,
        };
        assert_eq!(
            desktop_argv(&linux(Some("/usr/bin/notify-send"), true), &p).unwrap(),
            [
                "/usr/bin/notify-send",
                "--app-name=runner",
                "--",
                "runner: 001-a b",
                "spec 001-a b was interrupted: 2/3 chunks done"
            ]
        );
        assert_eq!(desktop_argv(&linux(Some("/n"), false), &p), None);
        assert_eq!(desktop_argv(&linux(None, true), &p), None);
        let mac = desktop_argv(&Desktop::MacOs, &p).unwrap();
        assert_eq!(mac[0], "osascript");
        assert_eq!(
            mac[mac.len() - 2..],
            ["runner: 001-a b".to_string(), p.message.clone()]
        );
        assert!(
            mac.iter()
                .all(|a| !a.contains("001-a b") || !a.contains("display"))
        );
    }
}
