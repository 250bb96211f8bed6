//! The MCP config that hands a claude session runner's own MCP server (`agent.mcp`): the file
//! `--mcp-config` reads, in the session's folder.
//!
//! Its shape is Claude Code's `.mcp.json` (`{"mcpServers": {NAME: {"command", "args", "env"}}}`,
//! anthropics/claude-code; `claude mcp add` writes the same). `env` repeats the session's
//! `RUNNER_*` variables, so the server knows the session even if the CLI started it with a
//! reduced environment (the chunk tools' rules depend on `RUNNER_SESSION_ID`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::{Map, Value, json};

/// The server's name in the config: claude names its tools `mcp__runner__<tool>`.
pub const SERVER_NAME: &str = "runner";

/// The config's text: `runner` (the program at `exe`) started as `runner mcp`, with the
/// `RUNNER_*` variables of `env`.
pub fn config_json(exe: &Path, env: &[(String, String)]) -> String {
    let env: Map<String, Value> = env
        .iter()
        .filter(|(key, _)| key.starts_with("RUNNER_"))
        .map(|(key, value)| (key.clone(), Value::from(value.as_str())))
        .collect();
    let config = json!({"mcpServers": {SERVER_NAME: {
        "command": exe.display().to_string(),
        "args": ["mcp"],
        "env": env,
    }}});
    serde_json::to_string_pretty(&config).unwrap_or_default()
}

/// Write `mcp.json` in `session_dir` (through the session folder's safe writes, like the
/// prompt) for the running runner; returns its path.
pub fn write_config(session_dir: &Path, env: &[(String, String)]) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("finding runner's own program for mcp.json")?;
    let path = session_dir.join("mcp.json");
    crate::fs::safe::write(&path, config_json(&exe, env).as_bytes())
        .map_err(crate::fs::at(&path))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_starts_runner_mcp_with_the_sessions_runner_variables_only() {
        let env = [
            ("RUNNER_SESSION_ID".to_string(), "s-1".to_string()),
            ("PATH".to_string(), "/bin".to_string()),
            (
                "RUNNER_SPEC_DIR".to_string(),
                "/r/specs/001 \"a\"".to_string(),
            ),
        ];
        let text = config_json(Path::new("/opt/bin/runner"), &env);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v,
            json!({"mcpServers": {"runner": {
                "command": "/opt/bin/runner",
                "args": ["mcp"],
                "env": {"RUNNER_SESSION_ID": "s-1", "RUNNER_SPEC_DIR": "/r/specs/001 \"a\""},
            }}})
        );
    }
}
