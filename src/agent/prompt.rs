//! Prompts: minijinja templates embedded from `templates/`, overridable per repository by files
//! of the same name in `.auto-claude/templates/`.

use std::path::{Path, PathBuf};

use minijinja::Environment;
use serde::Serialize;

pub const PLANNER: &str = "planner.md";
pub const CODER: &str = "coder.md";
pub const CODER_RETRY: &str = "coder_retry.md";
pub const RECOVERY: &str = "recovery.md";
/// The short prompt of a resumed agent session (`engine::run::reattach`).
pub const CODER_RESUME: &str = "coder_resume.md";

const EMBEDDED: [(&str, &str); 5] = [
    (PLANNER, include_str!("../../templates/planner.md")),
    (CODER, include_str!("../../templates/coder.md")),
    (CODER_RETRY, include_str!("../../templates/coder_retry.md")),
    (RECOVERY, include_str!("../../templates/recovery.md")),
    (
        CODER_RESUME,
        include_str!("../../templates/coder_resume.md"),
    ),
];

/// The `shell_quote` filter: `value` as one word of a POSIX shell command line (single-quoted
/// when it holds anything but plain characters). Every plan text put into a command the agent
/// is told to run goes through it: a chunk id such as `x; rm -rf ~` comes from the plan, which
/// the planner (or anyone) wrote, and must not reach the agent's shell as a command.
fn shell_quote(value: &minijinja::Value) -> String {
    let text = match value.as_str() {
        Some(s) => s.to_string(),
        None => value.to_string(),
    };
    shell_words::quote(&text).into_owned()
}

/// runner's own program as one shell word: its absolute path (`runner` when it cannot be
/// known, as before).
///
/// Found once per process, so that every prompt, claude's permission rule and sandbox
/// exclusion and gemini's policy name the same program even if the binary is replaced during
/// a run (an upgrade); Linux then names the running one `<path> (deleted)`, which is not a
/// program: the path is taken without that suffix (the new binary at the same place).
pub fn runner_word() -> String {
    static WORD: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    WORD.get_or_init(|| {
        std::env::current_exe()
            .ok()
            .and_then(|exe| {
                exe.to_str()
                    .map(|s| s.strip_suffix(" (deleted)").unwrap_or(s))
                    .map(|s| shell_words::quote(s).into_owned())
            })
            .unwrap_or_else(|| "runner".to_string())
    })
    .clone()
}

pub struct Prompts {
    env: Environment<'static>,
}

impl Prompts {
    /// Templates from `override_dir` win over the embedded ones.
    pub fn new(override_dir: &Path) -> Prompts {
        let dir: PathBuf = override_dir.to_path_buf();
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.add_filter("shell_quote", shell_quote);
        // The command an agent reports with: runner by its absolute path, shell-quoted. An
        // agent's shell may not see runner's PATH (codex runs commands in a login shell, which
        // resets PATH from /etc/profile), so a bare `runner` is not found there.
        env.add_global("runner", runner_word());
        env.add_global("agent_reports", true);
        env.set_loader(move |name| {
            if let Ok(text) = crate::fs::safe::read_to_string(dir.join(name)) {
                return Ok(Some(text));
            }
            Ok(EMBEDDED
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, text)| text.to_string()))
        });
        Prompts { env }
    }

    /// Whether the agent can run a command to report its chunk (`agent_reports` in the
    /// templates; aider cannot: it is judged by its exit and the chunk's verification).
    pub fn with_reports(mut self, reports: bool) -> Prompts {
        self.env.add_global("agent_reports", reports);
        self
    }

    pub fn render(&self, name: &str, context: impl Serialize) -> anyhow::Result<String> {
        let template = self.env.get_template(name).map_err(|e| {
            crate::error::RunnerError::bad_input(format!("prompt template {name}: {e:#}"))
        })?;
        let context = serde_json::to_value(context).map(|v| template_value(&v))?;
        template.render(context).map_err(|e| {
            crate::error::RunnerError::bad_input(format!("rendering prompt template {name}: {e:#}"))
                .into()
        })
    }
}

impl Prompts {
    /// [`Prompts::render`] of `context` (a JSON object) with `extra` keys already in the form
    /// the templates see (`template_value`): a part kept from one prompt to the next is not
    /// converted again.
    pub fn render_with(
        &self,
        name: &str,
        context: serde_json::Value,
        extra: Vec<(String, minijinja::Value)>,
    ) -> anyhow::Result<String> {
        let template = self.env.get_template(name).map_err(|e| {
            crate::error::RunnerError::bad_input(format!("prompt template {name}: {e:#}"))
        })?;
        let mut map = std::collections::BTreeMap::new();
        if let serde_json::Value::Object(fields) = &context {
            for (k, v) in fields {
                map.insert(k.clone(), template_value(v));
            }
        }
        map.extend(extra);
        template.render(minijinja::Value::from(map)).map_err(|e| {
            crate::error::RunnerError::bad_input(format!("rendering prompt template {name}: {e:#}"))
                .into()
        })
    }
}

/// A JSON value as the templates see it. Through serde, a number with serde_json's
/// `arbitrary_precision` (kept so that plans keep their digits) reaches minijinja as a map, so
/// `{{ attempt - 1 }}` failed: numbers are converted here, by value.
pub fn template_value(v: &serde_json::Value) -> minijinja::Value {
    use serde_json::Value as J;
    match v {
        J::Null => minijinja::Value::from(()),
        J::Bool(b) => minijinja::Value::from(*b),
        J::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => minijinja::Value::from(i),
            (None, Some(u), _) => minijinja::Value::from(u),
            (None, None, Some(f)) => minijinja::Value::from(f),
            _ => minijinja::Value::from(n.to_string()),
        },
        J::String(s) => minijinja::Value::from(s.as_str()),
        J::Array(items) => items.iter().map(template_value).collect(),
        J::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), template_value(v)))
            .collect::<std::collections::BTreeMap<_, _>>()
            .into(),
    }
}
