//! The agent's last words: the text of its final message, for a question runner asks it (the
//! recovery evaluator's `{"decision": …}`). The stream-json CLIs print that text inside a JSON
//! string (claude's `result`, codex's `agent_message` item, gemini's assistant `message`), where
//! a search of the raw output for a JSON object cannot see it.

use serde::Deserialize;
use serde_json::Value;

use super::{event, lines, text};
use crate::policy::invocation::Preset;

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: Option<String>,
    result: Option<Value>,
    message: Option<Value>,
    item: Option<Value>,
    role: Option<Value>,
    content: Option<Value>,
    delta: Option<Value>,
}

/// The text of the agent's final message in `output`, when `preset` prints its messages as
/// events; `None` for the plain-text CLIs (aider, a `command`), whose output is the text.
pub fn final_text(preset: Preset, output: &[u8]) -> Option<String> {
    let mut last: Option<String> = None;
    // gemini streams an answer as consecutive `delta` messages: they are joined.
    let mut joining = false;
    for line in lines(output) {
        let Some(ev) = event::<Event>(line) else {
            continue;
        };
        let kind = ev.kind.as_deref();
        match preset {
            Preset::Claude => match kind {
                Some("result") => {
                    if let Some(t) = text(ev.result.as_ref()) {
                        last = Some(t.to_string());
                    }
                }
                Some("assistant") => {
                    if let Some(t) = claude_text(ev.message.as_ref()) {
                        last = Some(t);
                    }
                }
                _ => {}
            },
            Preset::Codex => {
                let item = ev.item.as_ref();
                let is_message = item.and_then(|i| i.get("type")).and_then(Value::as_str)
                    == Some("agent_message");
                if kind == Some("item.completed")
                    && is_message
                    && let Some(t) = item.and_then(|i| i.get("text")).and_then(Value::as_str)
                {
                    last = Some(t.to_string());
                }
            }
            Preset::Gemini => {
                let assistant =
                    kind == Some("message") && text(ev.role.as_ref()) == Some("assistant");
                match (assistant, text(ev.content.as_ref())) {
                    (true, Some(t)) => {
                        let delta = ev.delta.as_ref().and_then(Value::as_bool) == Some(true);
                        match (&mut last, joining && delta) {
                            (Some(so_far), true) => so_far.push_str(t),
                            _ => last = Some(t.to_string()),
                        }
                        joining = delta;
                    }
                    // Anything else between (a tool call, the user's turn) ends the answer.
                    _ => joining = false,
                }
            }
            Preset::Aider | Preset::Command => return None,
        }
    }
    last
}

/// The text blocks of a claude `assistant` message, joined.
fn claude_text(message: Option<&Value>) -> Option<String> {
    let blocks = message?.get("content")?.as_array()?;
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = r#"I looked. {"decision": "next", "reason": "all there"}"#;

    fn json_line(v: Value) -> String {
        format!("{v}\n")
    }

    #[test]
    fn the_final_message_is_found_in_each_clis_events() {
        let claude = [
            json_line(serde_json::json!({"type":"system","subtype":"init","session_id":"s"})),
            json_line(serde_json::json!({"type":"assistant","message":{"content":[{"type":"text","text":"thinking"}]}})),
            json_line(serde_json::json!({"type":"result","subtype":"success","result":ANSWER})),
        ]
        .concat();
        assert_eq!(
            final_text(Preset::Claude, claude.as_bytes()).as_deref(),
            Some(ANSWER)
        );
        // A result without text: the last assistant text stands.
        let cut = [
            json_line(serde_json::json!({"type":"assistant","message":{"content":[{"type":"tool_use"},{"type":"text","text":ANSWER}]}})),
            json_line(serde_json::json!({"type":"result","subtype":"error_max_turns"})),
        ]
        .concat();
        assert_eq!(
            final_text(Preset::Claude, cut.as_bytes()).as_deref(),
            Some(ANSWER)
        );

        let codex = [
            json_line(serde_json::json!({"type":"item.completed","item":{"type":"agent_message","text":"first"}})),
            json_line(serde_json::json!({"type":"item.completed","item":{"type":"command_execution","aggregated_output":"{\"decision\":\"restart\"}"}})),
            json_line(serde_json::json!({"type":"item.completed","item":{"type":"agent_message","text":ANSWER}})),
            json_line(serde_json::json!({"type":"turn.completed","usage":{}})),
        ]
        .concat();
        assert_eq!(
            final_text(Preset::Codex, codex.as_bytes()).as_deref(),
            Some(ANSWER)
        );

        let (a, b) = ANSWER.split_at(12);
        let gemini = [
            json_line(serde_json::json!({"type":"message","role":"user","content":"question"})),
            json_line(serde_json::json!({"type":"message","role":"assistant","content":"old","delta":true})),
            json_line(serde_json::json!({"type":"tool_use","tool_name":"x"})),
            json_line(serde_json::json!({"type":"message","role":"assistant","content":a,"delta":true})),
            json_line(serde_json::json!({"type":"message","role":"assistant","content":b,"delta":true})),
            json_line(serde_json::json!({"type":"result","status":"success"})),
        ]
        .concat();
        assert_eq!(
            final_text(Preset::Gemini, gemini.as_bytes()).as_deref(),
            Some(ANSWER)
        );
    }

    #[test]
    fn plain_text_clis_and_garbage_have_no_final_message() {
        assert_eq!(final_text(Preset::Aider, ANSWER.as_bytes()), None);
        assert_eq!(final_text(Preset::Command, ANSWER.as_bytes()), None);
        for preset in [Preset::Claude, Preset::Codex, Preset::Gemini] {
            assert_eq!(final_text(preset, b"\xff\xfe not json\n{\"type\":"), None);
        }
    }
}
