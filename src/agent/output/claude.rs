//! Claude Code, `claude -p --output-format stream-json --verbose`: one JSON event a line.
//!
//! - `{"type":"system","subtype":"init","session_id":…,"model":…}` opens the session;
//! - `{"type":"result","subtype":"success"|"error_…","is_error":…,"total_cost_usd":…,
//!   "usage":{"input_tokens","output_tokens","cache_read_input_tokens",
//!   "cache_creation_input_tokens"},"num_turns":…,"session_id":…,"result":…}` closes it.
//!   `is_error: true` is a failure even with `subtype: "success"` (that is how a usage limit
//!   or an API error ends a `-p` session); an error result may have no `result` text but an
//!   `errors` list of messages;
//! - `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":…}}` says
//!   the usage limit was hit (`allowed` / `allowed_warning` are only information); `resetsAt`
//!   is Unix seconds, milliseconds in some versions;
//! - the result text of a limited session is `Claude AI usage limit reached|<epoch>` (older
//!   versions) or `You've hit your limit · resets 3pm (Europe/Paris)` / `5-hour limit reached ∙
//!   resets 3pm` (newer ones, whose time has no date and a zone by name: it is not read, the
//!   `rate_limit_event` carries the exact time).

use serde::Deserialize;
use serde_json::Value;

use super::{
    CostSource, SessionFacts, Tokens, count, dollars, epoch, event, folded, lines, name, number,
    text,
};

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: Option<String>,
    subtype: Option<Value>,
    session_id: Option<Value>,
    model: Option<Value>,
    is_error: Option<Value>,
    total_cost_usd: Option<Value>,
    usage: Option<Value>,
    num_turns: Option<Value>,
    result: Option<Value>,
    rate_limit_info: Option<Value>,
    errors: Option<Value>,
    message: Option<Value>,
    cwd: Option<Value>,
    api_error_status: Option<Value>,
}

/// What the `assistant` events of a session showed of its usage: each API message's usage,
/// by message id (claude repeats it on every content block of the same message; the last one
/// seen is kept). Only read when the session has no `result` (it was killed): the `result`'s
/// own figures are the exact ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Streamed {
    by_message: std::collections::HashMap<String, Tokens>,
}

impl Streamed {
    /// Note the `message` of an `assistant` event (or of a transcript line).
    pub fn note(&mut self, message: Option<&Value>) {
        let Some(message) = message else { return };
        let (Some(id), Some(usage)) = (
            message.get("id").and_then(Value::as_str),
            message.get("usage"),
        ) else {
            return;
        };
        let tokens = usage_tokens(usage);
        // A session's messages are a few hundred; a flood of new ids is not kept.
        if self.by_message.len() < 100_000 || self.by_message.contains_key(id) {
            self.by_message.insert(id.to_string(), tokens);
        }
    }

    pub fn total(&self) -> Option<Tokens> {
        if self.by_message.is_empty() {
            return None;
        }
        Some(
            self.by_message
                .values()
                .fold(Tokens::default(), |total, m| total.plus(m)),
        )
    }
}

/// Anthropic's usage object as tokens.
fn usage_tokens(usage: &Value) -> Tokens {
    Tokens {
        input: count(usage.get("input_tokens")),
        output: count(usage.get("output_tokens")),
        cache_read: count(usage.get("cache_read_input_tokens")),
        cache_write: count(usage.get("cache_creation_input_tokens")),
    }
}

/// A session claude did not finish (no `result`: it was killed): where its transcript is,
/// which holds each message's final usage (`~/.claude/projects/<cwd, every character but
/// ASCII letters and digits made '-'>/<session id>.jsonl`), and what its stream showed.
#[derive(Debug, Clone, PartialEq)]
pub struct Unfinished {
    pub cwd: String,
    /// A UUID (runner gives claude one; anything else names no transcript of runner's).
    pub session_id: String,
    pub streamed: Streamed,
}

impl Unfinished {
    /// The transcript's path under claude's config folder (`$CLAUDE_CONFIG_DIR`, else
    /// `~/.claude`).
    pub fn transcript(&self, config_dir: &std::path::Path) -> std::path::PathBuf {
        let folder: String = self
            .cwd
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        config_dir
            .join("projects")
            .join(folder)
            .join(format!("{}.jsonl", self.session_id))
    }
}

/// The usage of a killed session: for each message, the larger of what the stream showed and
/// what the transcript's lines say (`None` when neither says anything).
pub fn transcript_tokens(transcript: &[u8], streamed: &Streamed) -> Option<Tokens> {
    let mut merged = streamed.clone();
    let mut seen = Streamed::default();
    for line in lines(transcript) {
        if let Some(ev) = event::<Event>(line)
            && ev.kind.as_deref() == Some("assistant")
        {
            seen.note(ev.message.as_ref());
        }
    }
    for (id, t) in seen.by_message {
        let was = merged.by_message.get(&id).copied().unwrap_or_default();
        if merged.by_message.len() < 100_000 || merged.by_message.contains_key(&id) {
            merged.by_message.insert(
                id,
                Tokens {
                    input: was.input.max(t.input),
                    output: was.output.max(t.output),
                    cache_read: was.cache_read.max(t.cache_read),
                    cache_write: was.cache_write.max(t.cache_write),
                },
            );
        }
    }
    merged.total()
}

/// `id` is a UUID in canonical form (8-4-4-4-12 hex digits).
fn is_uuid(id: &str) -> bool {
    id.len() == 36
        && id.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

pub fn parse(output: &[u8]) -> SessionFacts {
    parse_unfinished(output).0
}

/// [`parse`], and for a session with no `result` (killed) where its transcript can be
/// found. Its usage is then what its `assistant` events showed, at prices claude charges
/// (`CostSource::Computed`): a crash must not make the ledger forget what a session spent.
pub fn parse_unfinished(output: &[u8]) -> (SessionFacts, Option<Unfinished>) {
    let mut report = SessionFacts::default();
    let mut streamed = Streamed::default();
    let mut finished = false;
    let mut cwd = None;
    for line in lines(output) {
        let Some(ev) = event::<Event>(line) else {
            // Not an event: the CLI's own words on stderr, if the log holds them.
            if let Some(at) = limit_epoch(&String::from_utf8_lossy(line)) {
                report.limit(at);
            }
            continue;
        };
        match ev.kind.as_deref() {
            Some("system") if text(ev.subtype.as_ref()) == Some("init") => {
                if let Some(id) = name(ev.session_id.as_ref()) {
                    report.agent_session_id = Some(id);
                }
                if let Some(model) = name(ev.model.as_ref()) {
                    report.model = Some(model);
                }
                cwd = text(ev.cwd.as_ref()).map(str::to_string);
            }
            Some("assistant") => streamed.note(ev.message.as_ref()),
            Some("result") => {
                finished = true;
                result(&mut report, &ev)
            }
            Some("rate_limit_event") => {
                let info = ev.rate_limit_info.as_ref();
                let status = info.and_then(|i| i.get("status")).and_then(Value::as_str);
                if status == Some("rejected") {
                    let at = info
                        .and_then(|i| i.get("resetsAt"))
                        .and_then(|v| number(Some(v)))
                        .and_then(epoch);
                    report.limit(at);
                }
            }
            _ => {}
        }
    }
    if finished {
        return (report, None);
    }
    if let Some(tokens) = streamed.total() {
        report.set_tokens_priced(tokens);
    }
    let unfinished = cwd
        .zip(report.agent_session_id.clone().filter(|id| is_uuid(id)))
        .map(|(cwd, session_id)| Unfinished {
            cwd,
            session_id,
            streamed,
        });
    (report, unfinished)
}

fn result(report: &mut SessionFacts, ev: &Event) {
    if let Some(id) = name(ev.session_id.as_ref()) {
        report.agent_session_id = Some(id);
    }
    if let Some(cost) = dollars(ev.total_cost_usd.as_ref()) {
        report.cost_usd = Some(cost);
        report.cost_source = CostSource::Reported;
    }
    if let Some(usage) = ev.usage.as_ref() {
        report.tokens = usage_tokens(usage);
    }
    if let Some(turns) = ev.num_turns.as_ref().and_then(Value::as_u64) {
        report.turns = Some(u32::try_from(turns).unwrap_or(u32::MAX));
    }
    let subtype = text(ev.subtype.as_ref()).unwrap_or("");
    let is_error = ev.is_error.as_ref().and_then(Value::as_bool) == Some(true);
    // An error result may carry no `result` text but an `errors` list (an unknown
    // `--resume` id: `No conversation found with session ID: …`).
    let first_error = ev
        .errors
        .as_ref()
        .and_then(Value::as_array)
        .and_then(|e| e.iter().find_map(Value::as_str));
    let said = text(ev.result.as_ref())
        .filter(|t| !t.trim().is_empty())
        .or(first_error)
        .unwrap_or("");
    // `error_max_budget_usd`: the result subtype of a session stopped at `--max-budget-usd`
    // (the Agent SDK's result subtypes, e.g. operaads/claude-agent-sdk-go
    // `ResultSubtypeErrorMaxBudgetUsd`, mirroring the TypeScript SDK's `SDKResultMessage`).
    report.budget_reached = subtype == "error_max_budget_usd";
    if is_error || (!subtype.is_empty() && subtype != "success") {
        if said.trim().is_empty() {
            report.set_error(if subtype.is_empty() { "error" } else { subtype });
        } else {
            report.set_error(said);
        }
        if let Some(at) = limit_epoch(said) {
            report.limit(at);
        } else if says_limit(said)
            || ev.api_error_status.as_ref().and_then(Value::as_u64) == Some(429)
        {
            // With an API key a 429 is only `api_error_status` (claude retried it already and
            // says no reset): a limit all the same, waited out by `run.limit_wait_default`.
            report.limit(None);
        }
    }
    // A success clears nothing: a limit event earlier in the same output still stands.
}

/// `Claude AI usage limit reached|1755615600`: `Some(reset)` when the text says it.
fn limit_epoch(text: &str) -> Option<Option<chrono::DateTime<chrono::Utc>>> {
    let at = text.find("usage limit reached|")?;
    let digits: String = text[at + "usage limit reached|".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .take(16)
        .collect();
    Some(digits.parse::<f64>().ok().and_then(epoch))
}

/// The newer wordings of a usage limit, whose reset time is not machine-readable.
fn says_limit(text: &str) -> bool {
    let t = folded(text);
    // 2.1.197: "You've hit your session limit · resets 9:18am (UTC)", "… weekly limit",
    // "… Opus limit"; "You've reached your …" in the same family.
    t.contains("you've hit your")
        || t.contains("you've reached your")
        || t.contains("usage limit reached")
        || t.contains("hour limit reached")
        || t.contains("weekly limit reached")
        || t.contains("opus limit reached")
        || t.contains("out of extra usage")
}
