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
    AgentReport, CostSource, Tokens, count, dollars, epoch, event, folded, lines, name, number,
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
}

pub fn parse(output: &[u8]) -> AgentReport {
    let mut report = AgentReport::default();
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
            }
            Some("result") => result(&mut report, &ev),
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
    report
}

fn result(report: &mut AgentReport, ev: &Event) {
    if let Some(id) = name(ev.session_id.as_ref()) {
        report.agent_session_id = Some(id);
    }
    if let Some(cost) = dollars(ev.total_cost_usd.as_ref()) {
        report.cost_usd = Some(cost);
        report.cost_source = CostSource::Reported;
    }
    if let Some(usage) = ev.usage.as_ref() {
        report.tokens = Tokens {
            input: count(usage.get("input_tokens")),
            output: count(usage.get("output_tokens")),
            cache_read: count(usage.get("cache_read_input_tokens")),
            cache_write: count(usage.get("cache_creation_input_tokens")),
        };
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
        } else if says_limit(said) {
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
    t.contains("you've hit your limit")
        || t.contains("usage limit reached")
        || t.contains("hour limit reached")
        || t.contains("weekly limit reached")
        || t.contains("opus limit reached")
        || t.contains("out of extra usage")
}
