//! Which spec a command is about, with the question the front end may ask: the one resolver
//! (`store::spec::choose`) decides; on a terminal an open choice becomes a numbered question,
//! otherwise an error (exit 2) listing, for each spec, the command to type.

/// The command this process was started with, naming `spec`: what a person types to run the
/// same command on that spec.
pub fn typed_with_spec(spec: &str) -> String {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    command_with_spec(&args, spec)
}

/// `runner` and `args` (quoted for a POSIX shell), any `--spec X` / `--spec=X` among them
/// replaced by `--spec <spec>` at the end.
pub fn command_with_spec(args: &[String], spec: &str) -> String {
    let mut words = vec!["runner".to_string()];
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            break;
        }
        if arg == "--spec" {
            rest.next();
        } else if !arg.starts_with("--spec=") {
            words.push(runner::sh(arg));
        }
    }
    words.push("--spec".into());
    words.push(runner::sh(spec));
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_typed_command_names_the_spec() {
        assert_eq!(
            command_with_spec(&args(&["review"]), "001-a"),
            "runner review --spec 001-a"
        );
        assert_eq!(
            command_with_spec(&args(&["merge", "--spec", "login", "--squash"]), "001-a"),
            "runner merge --squash --spec 001-a"
        );
        assert_eq!(
            command_with_spec(
                &args(&["run", "--spec=x", "--agent-command", "claude -p"]),
                "0$(id)"
            ),
            "runner run --agent-command 'claude -p' --spec '0$(id)'"
        );
        assert_eq!(
            command_with_spec(&args(&["-C", "my dir", "undo"]), "b"),
            "runner -C 'my dir' undo --spec b"
        );
    }
}
