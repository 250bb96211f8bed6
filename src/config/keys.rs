//! The keys the config knows, read off the types themselves (so this list cannot drift from
//! them), the unknown keys a file has, and where each effective value came from.

use std::path::Path;

use serde::Serialize;

use super::Config;

/// Every table of the config and its keys, in the order the types declare them.
pub fn known_keys() -> Vec<(String, Vec<String>)> {
    // Serialized as JSON, not TOML: an unset Option (git.base_branch) stays as a null key.
    let Ok(serde_json::Value::Object(tables)) = serde_json::to_value(Config::default()) else {
        return Vec::new();
    };
    tables
        .into_iter()
        .map(|(table, keys)| {
            let keys = match keys {
                serde_json::Value::Object(keys) => keys.keys().cloned().collect(),
                _ => Vec::new(),
            };
            (table, keys)
        })
        .collect()
}

/// A key (or a table) in the file that the config does not know: ignored, with a warning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnknownKey {
    /// `run.max_attempt`, or `[foo]` for a whole unknown table.
    pub key: String,
    /// The table it is in, when that table is known.
    pub table: Option<String>,
    /// What the table knows (or the known tables, for an unknown table or top-level key).
    pub known: Vec<String>,
    /// The file it is in (the user's or the repository's).
    pub file: String,
}

impl UnknownKey {
    /// The warning line: the key, the file, and what would have been right.
    pub fn message(&self) -> String {
        let known = self.known.join(", ");
        match &self.table {
            Some(table) => format!(
                "unknown key `{}` in {} is ignored; [{table}] knows: {known}",
                self.key, self.file
            ),
            None => format!(
                "unknown key `{}` in {} is ignored; the tables are: {known}",
                self.key, self.file
            ),
        }
    }
}

/// The keys of `file` (read from `path`) the config does not know (in the table's order:
/// sorted).
pub fn unknown_keys(file: &toml::Table, path: &Path) -> Vec<UnknownKey> {
    let path = path.display().to_string();
    let known = known_keys();
    let tables: Vec<String> = known.iter().map(|(t, _)| t.clone()).collect();
    let mut unknown = Vec::new();
    for (name, value) in file {
        let Some((_, keys)) = known.iter().find(|(t, _)| t == name) else {
            let key = match value {
                toml::Value::Table(_) => format!("[{name}]"),
                _ => name.clone(),
            };
            unknown.push(UnknownKey {
                key,
                table: None,
                known: tables.clone(),
                file: path.clone(),
            });
            continue;
        };
        // A known table given as something else is the typed parse's error, not a warning.
        let toml::Value::Table(entries) = value else {
            continue;
        };
        for key in entries.keys().filter(|k| !keys.contains(k)) {
            unknown.push(UnknownKey {
                key: format!("{name}.{key}"),
                table: Some(name.clone()),
                known: keys.clone(),
                file: path.clone(),
            });
        }
    }
    unknown
}

/// Where an effective value came from. (No environment variable sets a config key, and the
/// one-run flags are not config.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Source {
    Default,
    /// The user's file (`$XDG_CONFIG_HOME/runner/config.toml` or `~/.config/…`).
    UserFile {
        path: String,
    },
    /// The repository's file, `.auto-claude/config.toml` (named `file` since before there
    /// was a user file).
    File {
        path: String,
    },
}

/// One key of the effective configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Setting {
    /// `table.key`, e.g. `run.max_attempts`.
    pub key: String,
    /// As the config holds it (`agent.command` always as a list; an unset key is null).
    pub value: serde_json::Value,
    #[serde(flatten)]
    pub source: Source,
}

/// Every known key of `config`, its value, and where it came from: the first of `layers`
/// (each a source and the table it read, if any) whose table sets it, else the default.
pub fn settings(config: &Config, layers: &[(Source, Option<&toml::Table>)]) -> Vec<Setting> {
    let values = serde_json::to_value(config).unwrap_or_default();
    let mut out = Vec::new();
    for (table, keys) in known_keys() {
        for key in keys {
            let sets = |file: &toml::Table| {
                file.get(&table)
                    .and_then(|t| t.as_table())
                    .is_some_and(|t| t.contains_key(&key))
            };
            let source = layers
                .iter()
                .find(|(_, file)| file.is_some_and(sets))
                .map_or(Source::Default, |(source, _)| source.clone());
            out.push(Setting {
                value: values[&table][&key].clone(),
                key: format!("{table}.{key}"),
                source,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn the_known_keys_come_from_the_types() {
        let known = known_keys();
        let tables: Vec<&str> = known.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            tables,
            [
                "agent", "run", "git", "recovery", "backup", "budget", "resume", "notify", "fleet"
            ]
        );
        let resume = &known.iter().find(|(t, _)| t == "resume").unwrap().1;
        assert_eq!(resume, &["stale_after", "handoff"]);
        let git = &known.iter().find(|(t, _)| t == "git").unwrap().1;
        assert_eq!(git, &["base_branch"], "an unset Option is still a key");
    }

    #[test]
    fn unknown_keys_and_tables_are_named_with_what_is_known() {
        let found = unknown_keys(
            &table("top = 1\n[run]\nmax_attempt = 5\nmax_attempts = 2\n[colour]\nx = 1\n"),
            Path::new("/r/.auto-claude/config.toml"),
        );
        let keys: Vec<&str> = found.iter().map(|u| u.key.as_str()).collect();
        assert_eq!(keys, ["[colour]", "run.max_attempt", "top"]);
        let msg = found[1].message();
        assert!(msg.contains("`run.max_attempt`"), "{msg}");
        assert!(msg.contains("/r/.auto-claude/config.toml"), "{msg}");
        assert!(
            msg.contains("[run] knows: session_timeout, max_attempts"),
            "{msg}"
        );
        assert!(found[0].message().contains("agent, run, git"));
        assert!(unknown_keys(&table("[run]\nmax_attempts = 2\n"), Path::new("c")).is_empty());
    }

    #[test]
    fn settings_say_where_each_value_came_from() {
        let file = table("[run]\nmax_attempts = 7\n");
        let config: Config = toml::from_str("[run]\nmax_attempts = 7\n").unwrap();
        let user = table("[run]\nmax_attempts = 2\nmax_sessions = 4\n");
        let repo = Source::File {
            path: "/r/c.toml".into(),
        };
        let mine = Source::UserFile {
            path: "/u/c.toml".into(),
        };
        let all = settings(&config, &[(repo, Some(&file)), (mine.clone(), Some(&user))]);
        let get = |k: &str| all.iter().find(|s| s.key == k).unwrap();
        assert_eq!(get("run.max_attempts").value, 7);
        assert_eq!(
            get("run.max_attempts").source,
            Source::File {
                path: "/r/c.toml".into()
            }
        );
        assert_eq!(get("run.max_sessions").source, mine);
        assert_eq!(get("run.session_timeout").source, Source::Default);
        assert_eq!(get("git.base_branch").value, serde_json::Value::Null);
        let count: usize = known_keys().iter().map(|(_, k)| k.len()).sum();
        assert_eq!(all.len(), count);
    }
}
