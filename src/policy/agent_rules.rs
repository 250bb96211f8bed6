//! What runner's `safe` permission tells each agent CLI it may do, in the CLI's own terms:
//! claude's tool rule and sandbox settings, gemini's policy file. Pure text from the facts
//! (runner's program as the prompts name it, the chunk's verification); `invocation` puts
//! them on the command line and the engine writes gemini's file.

/// The claude tool rule that lets it run `<runner> chunk …` without asking, `runner` as the
/// prompts name it.
pub fn claude_chunk_rule(runner: &str) -> String {
    format!("Bash({runner} chunk:*)")
}

/// claude's `safe` settings: every Bash command runs in claude's own sandbox (bubblewrap on
/// Linux: writes only inside the worktree, no network) and is then allowed without asking, so
/// the agent can run the chunk's verification and the project's tests; nothing runs outside the
/// sandbox (`allowUnsandboxedCommands: false`), and a machine without the sandbox fails the
/// session with claude's own words (`failIfUnavailable`) instead of running unconfined. Only
/// runner's report command runs outside it: it writes the plan in the spec folder.
pub fn claude_sandbox_settings(runner: &str) -> String {
    serde_json::json!({
        "sandbox": {
            "enabled": true,
            "autoAllowBashIfSandboxed": true,
            "allowUnsandboxedCommands": false,
            "failIfUnavailable": true,
            "excludedCommands": [format!("{runner} chunk:*")],
        }
    })
    .to_string()
}

/// gemini's policy for a `safe` session: its shell may run `<runner> chunk …` (the report) and
/// the chunk's verification command exactly as the plan says it (`check`), and nothing else
/// (gemini has no sandbox; its file tools are confined to the worktree). A command with a
/// redirection, a chain, a pipe, a background `&`, a substitution, a variable or a line break
/// is refused whatever it starts with: gemini checks each part of a chain on its own and does
/// not refuse a redirection in `auto_edit` mode, so `<runner> chunk done > ~/.bashrc` would
/// otherwise pass. TOML, as `gemini --policy FILE` reads it; of the rules that match, the one
/// with the highest priority decides.
///
/// gemini matches a `commandRegex` against the call's arguments as JSON, from just after
/// `"command":"` (gemini 0.61 `buildArgsPatterns`): the patterns here stay inside that JSON
/// string (`([^"\\]|\\.)*`) and the exact match ends at its closing quote.
pub fn gemini_policy(runner: &str, check: Option<&str>) -> String {
    let rule = |matcher: &str, value: &str, decision: &str, priority: u32| {
        format!(
            "[[rule]]\ntoolName = \"run_shell_command\"\n{matcher} = {}\ndecision = \"{decision}\"\npriority = {priority}\n",
            toml_string(value)
        )
    };
    // Capturing groups: gemini refuses a pattern with a quantifier inside a quantified group
    // (its ReDoS check counts the `?` of `(?:`), and drops that rule alone.
    let shell_syntax = r#"([^"\\]|\\.)*([<>;|&`$]|\\[nr])"#;
    // The arguments are matched as one JSON text, nested objects too: a call that adds an
    // argument of its own holding `{"command": "<an allowed command>"}` would match an allow
    // rule while its real command runs. gemini's JSON puts each top-level key after a NUL
    // byte; a `"command":` after `{`, `,` or `[` is a nested one, refused first.
    let mut text = format!(
        "[[rule]]\ntoolName = \"run_shell_command\"\nargsPattern = {}\ndecision = \"deny\"\npriority = 999\n\n",
        toml_string(r#"[{,\[]"command":"#)
    );
    text.push_str(&rule("commandRegex", shell_syntax, "deny", 999));
    text.push('\n');
    // gemini lets a prefix match only where a space or a quote follows it.
    text.push_str(&rule(
        "commandPrefix",
        &format!("{runner} chunk"),
        "allow",
        900,
    ));
    if let Some(check) = check.filter(|c| !c.trim().is_empty()) {
        text.push('\n');
        let json = serde_json::Value::String(check.trim().to_string()).to_string();
        let exact = regex_literal(&json[1..]);
        text.push_str(&rule("commandRegex", &exact, "allow", 900));
    }
    text
}

/// `text` as a regular expression that matches it literally (JavaScript's syntax characters
/// escaped; nothing else is, so the pattern is valid with or without the `u` flag).
fn regex_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if "\\^$.*+?()[]{}|/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` as a TOML basic string: JSON's escapes are TOML's, and the control characters JSON
/// leaves as they are (DEL) are escaped too (TOML refuses them, and gemini would drop the
/// whole policy file, runner's report rule with it).
fn toml_string(text: &str) -> String {
    serde_json::Value::String(text.to_string())
        .to_string()
        .replace('\u{7f}', "\\u007F")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_policy_denies_shell_syntax_first_and_allows_the_report_and_the_exact_check() {
        let p = gemini_policy("'/opt/my runner/runner'", Some("test -f \"a.txt\"\u{7f}"));
        // Four rules: the denies of nested arguments and of shell syntax at the top priority,
        // then the two allows.
        assert_eq!(p.matches("[[rule]]").count(), 4);
        assert!(p.contains("decision = \"deny\"\npriority = 999"));
        assert!(p.contains(r#"argsPattern = "[{,\\[]\"command\":""#), "{p}");
        assert!(
            p.contains("commandPrefix = \"'/opt/my runner/runner' chunk\""),
            "{p}"
        );
        // The check as JSON text (its quotes escaped), up to the closing quote.
        assert!(
            p.contains(r#"commandRegex = "test -f \\\\\"a\\.txt\\\\\"\u007F\"""#),
            "{p}"
        );
        assert!(!p.contains('\u{7f}'));
        assert_eq!(gemini_policy("r", None).matches("[[rule]]").count(), 3);
        assert_eq!(
            gemini_policy("r", Some("  ")).matches("[[rule]]").count(),
            3
        );
    }
}
