//! The one JSON shape (docs/json.md): every `--json` output is one object on stdout whose first
//! field is `"schema"`. An operation's object keeps its own fields at the top level; a list goes
//! under a plural key; an error is `{"schema":1,"error":{…}}`.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use super::Command;
use runner::engine::run::RunReport;
use runner::error::ErrorReport;
use runner::git::backup::Backup;
use runner::ops::discard::DiscardReport;
use runner::ops::merge::MergeReport;
use runner::ops::recover::RecoverReport;
use runner::ops::status::StatusReport;
use runner::ops::undo::{GcReport, UndoReport};

/// The version of every JSON shape. Fields are added without a bump; a field renamed or
/// removed, or a meaning changed, bumps it.
pub const SCHEMA: u32 = 1;

/// What a command prints with `--json`.
pub trait JsonOutput: Serialize {
    /// For a list: the plural key it is printed under. `None` for an object, whose fields go
    /// at the top level beside `schema`.
    const LIST_KEY: Option<&'static str> = None;
}

impl JsonOutput for StatusReport {}
impl JsonOutput for RunReport {}
impl JsonOutput for RecoverReport {}
impl JsonOutput for MergeReport {}
impl JsonOutput for DiscardReport {}
impl JsonOutput for UndoReport {}
impl JsonOutput for GcReport {}
impl JsonOutput for runner::ops::review::ReviewReport {}
impl JsonOutput for runner::ops::config::ConfigReport {}
impl JsonOutput for runner::ops::new::NewReport {}
impl JsonOutput for runner::ops::resume::ResumeReport {}
impl JsonOutput for runner::ops::plan::PlanReport {}
impl JsonOutput for runner::ops::worker::WorkerReport {}
impl JsonOutput for runner::ops::remote::submit::SubmitReport {}
impl JsonOutput for runner::ops::remote::status::RemoteStatusReport {}
impl JsonOutput for runner::ops::pr::PrReport {}
/// Built by the command (`review` with `--diff`, `chunk show`): must be an object.
impl JsonOutput for serde_json::Value {}
impl JsonOutput for Vec<RunReport> {
    const LIST_KEY: Option<&'static str> = Some("runs");
}
impl JsonOutput for Vec<Backup> {
    const LIST_KEY: Option<&'static str> = Some("backups");
}

/// `value` with the schema number in front, pretty-printed. A value that is not an object and
/// has no list key is an error (a bug), never printed in another shape.
pub fn to_json(value: &impl JsonOutput) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(&Envelope(value))?)
}

/// `{"schema":1,"error":{"code","kind","message","hints"}}`, pretty-printed.
pub fn error_to_json(report: &ErrorReport) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(
        &serde_json::json!({"schema": SCHEMA, "error": report}),
    )?)
}

/// Whether the command was asked for `--json`: then its error, too, is printed as JSON.
pub fn wants_json(command: &Command) -> bool {
    match command {
        Command::Run(a) => a.json,
        Command::New(a) => a.json,
        Command::Recover(a) => a.json,
        Command::Resume(a) => a.json,
        Command::Review(a) => a.json,
        Command::Merge(a) => a.json,
        Command::Pr(a) => a.json,
        Command::Discard(a) => a.json,
        Command::Undo(a) => a.json,
        Command::Gc(a) => a.json,
        Command::Status(a) => a.json,
        Command::Submit(a) => a.json,
        Command::Plan(a) => a.json,
        Command::Runs(a) => a.json,
        Command::Show(a) => a.json,
        Command::Logs(a) => a.json,
        Command::Chunk(c) => c.json(),
        Command::Demo(a) => a.json,
        Command::Config(a) => a.json,
        Command::Worker(a) => a.json,
        // A command without --json (the list is checked by a test below).
        _ => false,
    }
}

/// Print an error as `{"schema":1,"error":{…}}` on stdout, for `--json` (docs/json.md). A
/// closed stdout is not reported: the exit code still says what happened.
pub fn print_error_json(report: &ErrorReport) {
    if let Ok(text) = error_to_json(report) {
        println!("{text}");
    }
}

struct Envelope<'a, T>(&'a T);

impl<T: JsonOutput> Serialize for Envelope<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match T::LIST_KEY {
            Some(key) => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("schema", &SCHEMA)?;
                map.serialize_entry(key, self.0)?;
                map.end()
            }
            None => {
                #[derive(Serialize)]
                struct Flat<'a, T: Serialize> {
                    schema: u32,
                    #[serde(flatten)]
                    body: &'a T,
                }
                Flat {
                    schema: SCHEMA,
                    body: self.0,
                }
                .serialize(serializer)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::{CommandFactory, Parser};
    use serde_json::{Value, json};

    fn parsed(value: &impl JsonOutput) -> Value {
        serde_json::from_str(&to_json(value).unwrap()).unwrap()
    }

    #[test]
    fn an_object_gets_the_schema_first_and_keeps_its_fields() {
        let v = parsed(&GcReport {
            removed: vec!["refs/auto-claude/backup/001/1".into()],
            kept: 2,
            days: 30,
        });
        assert_eq!(
            v,
            json!({"schema": 1, "removed": ["refs/auto-claude/backup/001/1"], "kept": 2})
        );
        let text = to_json(&json!({"spec": "001"})).unwrap();
        assert!(text.find("\"schema\"") < text.find("\"spec\""), "{text}");
    }

    #[test]
    fn a_list_goes_under_its_plural_key() {
        let v = parsed(&Vec::<Backup>::new());
        assert_eq!(v, json!({"schema": 1, "backups": []}));
        let v = parsed(&Vec::<RunReport>::new());
        assert_eq!(v, json!({"schema": 1, "runs": []}));
    }

    #[test]
    fn a_value_that_is_not_an_object_is_refused_not_printed_in_another_shape() {
        assert!(to_json(&json!(["a"])).is_err());
        assert!(to_json(&json!("a")).is_err());
    }

    #[test]
    fn an_error_is_one_object_under_error() {
        let report = ErrorReport {
            code: 4,
            kind: "busy",
            message: "spec 001 is being run".into(),
            hints: vec!["wait".into()],
        };
        let v: Value = serde_json::from_str(&error_to_json(&report).unwrap()).unwrap();
        assert_eq!(
            v,
            json!({"schema": 1, "error": {"code": 4, "kind": "busy",
                "message": "spec 001 is being run", "hints": ["wait"]}})
        );
    }

    /// Each command line, with its required arguments, of a command that takes `--json`.
    const WITH_JSON: &[&[&str]] = &[
        &["run"],
        &["new", "x"],
        &["recover"],
        &["resume"],
        &["review"],
        &["merge"],
        &["discard"],
        &["undo"],
        &["gc"],
        &["status"],
        &["submit"],
        &["worker"],
        &["runs"],
        &["show", "r1234"],
        &["logs"],
        &["demo"],
        &["config"],
        &["chunk", "done", "x"],
        &["chunk", "fail", "x", "--reason", "r"],
        &["chunk", "show"],
        &["plan"],
        &["pr"],
    ];

    #[test]
    fn every_command_that_takes_json_prints_its_errors_as_json() {
        for argv in WITH_JSON {
            let with = |json: bool| {
                let mut args = vec!["runner"];
                args.extend_from_slice(argv);
                args.extend(json.then_some("--json"));
                wants_json(&Cli::try_parse_from(args).unwrap().command)
            };
            assert!(with(true), "{argv:?} --json");
            assert!(!with(false), "{argv:?}");
        }
    }

    /// A new command with `--json` must be listed above (and so in `wants_json`).
    #[test]
    fn the_list_of_commands_with_json_is_complete() {
        fn walk(cmd: &clap::Command, path: &mut Vec<String>, found: &mut Vec<String>) {
            if cmd.get_arguments().any(|a| a.get_id() == "json") {
                found.push(path.join(" "));
            }
            for sub in cmd.get_subcommands() {
                path.push(sub.get_name().to_string());
                walk(sub, path, found);
                path.pop();
            }
        }
        let mut found = Vec::new();
        walk(&Cli::command(), &mut Vec::new(), &mut found);
        let mut listed: Vec<String> = WITH_JSON
            .iter()
            .map(|argv| {
                let words = if argv[0] == "chunk" { 2 } else { 1 };
                argv[..words].join(" ")
            })
            .collect();
        found.sort();
        listed.sort();
        assert_eq!(found, listed);
    }
}
