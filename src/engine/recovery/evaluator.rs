//! `[recovery] evaluator = "agent"`: for a chunk with partial work, ask the agent what to do.
//! It gets the recovery prompt (template `recovery.md`) on stdin and must answer with a JSON
//! object `{"decision": "continue|restart|next|human_review", "reason": "…"}` in its output.
//! Anything else falls back to the rules; the choice and its source are recorded.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::decide::{ChunkFacts, Decision};
use crate::agent::{ChildSpec, Interrupt, Prompts, run_child};
use crate::plan::Chunk;

#[derive(Debug, Clone)]
pub struct AgentEvaluator {
    /// The agent asked: a fresh session of its preset, the prompt as any session's.
    pub agent: crate::agent::AgentSetup,
    pub templates_dir: PathBuf,
    pub timeout: Duration,
    pub max_log_bytes: u64,
    /// Who watches the session live (a run's progress; `engine::live`), if anyone.
    pub live: Option<crate::engine::progress::Reporter>,
}

/// The last JSON object in `output` with a known `decision`.
pub fn parse_answer(output: &str) -> Option<(Decision, String)> {
    let starts: Vec<usize> = output.match_indices('{').map(|(i, _)| i).collect();
    for &i in starts.iter().rev() {
        let mut stream = serde_json::Deserializer::from_str(&output[i..]).into_iter::<Value>();
        if let Some(Ok(v)) = stream.next()
            && let Some(decision) = v["decision"].as_str().and_then(Decision::parse)
        {
            let reason = v["reason"]
                .as_str()
                .unwrap_or("no reason given")
                .to_string();
            return Some((decision, reason));
        }
    }
    None
}

/// Ask the agent. `Err` carries why its answer was not usable (for the record);
/// `Err(Interrupted)` that a signal stopped it (the answer it did not give decides nothing).
#[allow(clippy::too_many_arguments)]
pub async fn ask(
    evaluator: &AgentEvaluator,
    paths: &crate::store::SpecPaths,
    chunk: &Chunk,
    facts: &ChunkFacts,
    rule: (Decision, &str),
    worktree: &std::path::Path,
    session_id: &str,
    interrupt: &Interrupt,
) -> Result<(Decision, String), Unanswered> {
    let prompts = Prompts::new(&evaluator.templates_dir);
    let prompt = prompts
        .render(
            crate::agent::prompt::RECOVERY,
            json!({
                "spec_name": paths.name,
                "chunk": {"id": chunk.id, "description": chunk.description()},
                "facts": {
                    "new_commits": facts.new_commits,
                    "dirty": facts.dirty,
                    "reported_done": facts.reported_done,
                    "has_check": facts.has_check,
                },
                "rule_decision": rule.0.as_str(),
                "rule_reason": rule.1,
            }),
        )
        .map_err(|e| format!("{e:#}"))?;
    let session_dir = paths.session_dir(session_id).map_err(|e| e.to_string())?;
    let _ = crate::store::safe::write(&session_dir.join("prompt.md"), prompt.as_bytes());
    let log_path = session_dir.join("output.log");
    let invocation = evaluator.agent.invocation(
        worktree,
        &paths.dir,
        &session_dir,
        &evaluator.agent.fresh_mode(),
        None,
        None,
        Default::default(),
    );
    let mut env: Vec<(String, String)> = vec![
        ("RUNNER_ROLE".into(), "recovery".into()),
        ("RUNNER_SPEC".into(), paths.name.clone()),
        ("RUNNER_SPEC_DIR".into(), paths.dir.display().to_string()),
        (
            "RUNNER_PLAN_FILE".into(),
            paths.plan.path().display().to_string(),
        ),
        ("RUNNER_CHUNK_ID".into(), chunk.id.clone()),
        ("RUNNER_SESSION_ID".into(), session_id.into()),
        ("RUNNER_WORKTREE".into(), worktree.display().to_string()),
    ];
    env.extend(invocation.env);
    let spec_child = ChildSpec {
        argv: invocation.argv,
        cwd: worktree.to_path_buf(),
        env,
        stdin: invocation.prompt_on_stdin.then_some(prompt),
        log_path: log_path.clone(),
        timeout: evaluator.timeout,
        drain: Duration::from_secs(1),
        max_log_bytes: evaluator.max_log_bytes,
        watch_for: None,
    };
    let label = crate::policy::live::session_label(crate::policy::live::Session::Recovery {
        chunk: &chunk.id,
    });
    let end = crate::engine::live::watched(
        evaluator.live.as_ref(),
        &label,
        &log_path,
        run_child(&spec_child, interrupt, &mut |_| {}),
    )
    .await
    .map_err(|e| format!("the agent could not run: {e:#}"))?;
    if matches!(end.ended, crate::agent::Ended::Interrupted { .. }) {
        return Err(Unanswered::Interrupted);
    }
    // The log is capped, and its tail (where the answer is) kept; a non-UTF-8 byte must not
    // lose the answer. A stream-json CLI prints the answer inside its final message's JSON
    // string: that text is searched first, then the raw output.
    let bytes = crate::store::safe::read(&log_path).unwrap_or_default();
    let last_words =
        crate::agent::output::answer::final_text(evaluator.agent.choice.preset, &bytes);
    let output = String::from_utf8_lossy(&bytes).into_owned();
    last_words
        .as_deref()
        .and_then(parse_answer)
        .or_else(|| parse_answer(&output))
        .ok_or_else(|| {
            "the agent's answer had no JSON object with a known \"decision\""
                .to_string()
                .into()
        })
}

/// Why the evaluator gave no decision.
#[derive(Debug, PartialEq)]
pub enum Unanswered {
    /// A signal stopped it: nothing may be decided.
    Interrupted,
    /// Its answer was not usable (why, for the record): the rules decide.
    Unusable(String),
}

impl From<String> for Unanswered {
    fn from(why: String) -> Self {
        Unanswered::Unusable(why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_valid_json_answer_counts() {
        let out = "thinking... {\"decision\": \"restart\"}\nmore\n{\"decision\": \"continue\", \"reason\": \"half done\"}\n";
        assert_eq!(
            parse_answer(out),
            Some((Decision::Continue, "half done".into()))
        );
        assert_eq!(parse_answer("{\"decision\": \"dance\"}"), None);
        assert_eq!(parse_answer("no json here"), None);
        assert_eq!(
            parse_answer("{\"decision\": \"next\"} trailing {broken"),
            Some((Decision::Next, "no reason given".into()))
        );
    }
}
