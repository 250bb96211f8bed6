//! Hints printed after `runner -C DIR …`: the commands they name must run where the user typed
//! them, not in DIR, so each `runner <command>` in a hint gets the same `-C DIR`.

use clap::CommandFactory;

/// `hint` with `-C <dir>` (quoted for a POSIX shell) after every `runner` that starts a
/// command line naming one of runner's commands (`runner recover …`, `` `runner undo --list` ``).
/// A `runner` followed by anything else (prose, `-C`), or whose command line names `-C`
/// already, is left alone.
pub fn with_directory(hint: &str, dir: &str, commands: &[String]) -> String {
    let flag = format!("runner -C {} ", runner::sh(dir));
    let mut out = String::with_capacity(hint.len() + flag.len());
    let mut rest = hint;
    while let Some(at) = rest.find("runner ") {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let after = &from["runner ".len()..];
        let word_start = before
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_' || c == '/'));
        let word: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        // The rest of this command line (to its closing backtick): one that names a
        // directory already (the typed command line, repeated) must not get a second -C.
        let line = after.split('`').next().unwrap_or_default();
        let has_dir = line.split_whitespace().any(|w| w.starts_with("-C"));
        if word_start && commands.contains(&word) && !has_dir {
            out.push_str(&flag);
        } else {
            out.push_str("runner ");
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The names of runner's commands, as a hint would name them.
pub fn command_names() -> Vec<String> {
    super::Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect()
}

/// Every hint of `hints` carrying `-C <dir>` when the user gave it.
pub fn carry_directory(hints: &mut [String], dir: Option<&std::path::Path>) {
    if let Some(dir) = dir {
        let dir = dir.to_string_lossy();
        let names = command_names();
        for hint in hints {
            *hint = with_directory(hint, &dir, &names);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_commands_get_the_directory_and_prose_does_not() {
        let names = command_names();
        let w = |hint: &str| with_directory(hint, "my app", &names);
        assert_eq!(
            w("`runner undo --list` shows the backups"),
            "`runner -C 'my app' undo --list` shows the backups"
        );
        assert_eq!(
            w("resume where it stopped with: runner run --spec a --auto-continue"),
            "resume where it stopped with: runner -C 'my app' run --spec a --auto-continue"
        );
        assert_eq!(
            w("runner does not wait: run this again"),
            "runner does not wait: run this again"
        );
        assert_eq!(
            w("runner -C 'my app' review --spec b"),
            "runner -C 'my app' review --spec b"
        );
        assert_eq!(w("the-runner run x"), "the-runner run x");
        // -C after the command (a typed command line repeated): left as it is.
        assert_eq!(
            w("runner review -C 'my app' --spec b"),
            "runner review -C 'my app' --spec b"
        );
        assert_eq!(
            w("`runner recover --spec x` then `runner run --spec x`"),
            "`runner -C 'my app' recover --spec x` then `runner -C 'my app' run --spec x`"
        );
    }
}
