//! The two config files: the user's (`$XDG_CONFIG_HOME/runner/config.toml`, else
//! `~/.config/runner/config.toml`) under the repository's (`.auto-claude/config.toml`). Each is
//! read and checked on its own, so an error names the file it is in; the repository's keys
//! then win over the user's, key by key — except the keys that name the agent, which come
//! from one file (`AGENT_IDENTITY`).

use std::path::{Path, PathBuf};

use super::keys::{Source, UnknownKey, unknown_keys};
use super::{CONFIG_FILE, Config};
use crate::error::RunnerError;

/// The user's config file: `$XDG_CONFIG_HOME/runner/config.toml`, else
/// `$HOME/.config/runner/config.toml`. A variable that is unset, empty or not an absolute
/// path counts as unset (as the XDG rules say); `None` when neither gives a folder.
fn user_config_path() -> Option<PathBuf> {
    let absolute = |name: &str| {
        let dir = PathBuf::from(std::env::var_os(name)?);
        dir.is_absolute().then_some(dir)
    };
    let base =
        absolute("XDG_CONFIG_HOME").or_else(|| absolute("HOME").map(|h| h.join(".config")))?;
    Some(base.join("runner").join(CONFIG_FILE))
}

/// Where the config is read from: the user's file (if there is a place for one) and the
/// repository's.
#[derive(Debug, Clone)]
pub struct ConfigFiles {
    pub user: Option<PathBuf>,
    pub repository: PathBuf,
}

impl ConfigFiles {
    /// The repository's file at `repository`, under the user's file of this environment.
    pub fn of_repository(repository: PathBuf) -> ConfigFiles {
        ConfigFiles {
            user: user_config_path(),
            repository,
        }
    }
}

/// The config the files give, and what each file set (`None`: no file).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// The user's table as it counts: without the agent's keys when the repository names its
    /// own agent.
    pub user: Option<toml::Table>,
    pub repository: Option<toml::Table>,
    /// The keys of either file the config does not know (each warned of once).
    pub unknown: Vec<UnknownKey>,
}

impl Loaded {
    /// Where each key's value came from, the repository's file first.
    pub fn sources(&self, files: &ConfigFiles) -> Vec<(Source, Option<&toml::Table>)> {
        let mut out = vec![(
            Source::File {
                path: files.repository.display().to_string(),
            },
            self.repository.as_ref(),
        )];
        if let Some(user) = &files.user {
            out.push((
                Source::UserFile {
                    path: user.display().to_string(),
                },
                self.user.as_ref(),
            ));
        }
        out
    }
}

/// The keys of `[agent]` that together say which agent runs: a repository that sets any of
/// them is given none of the user's (mixed, the user's `program` would run under the
/// repository's preset).
const AGENT_IDENTITY: [&str; 4] = ["preset", "command", "program", "args"];

/// Whose file a problem is in, for its advice.
#[derive(Clone, Copy)]
enum Whose {
    User,
    Repository,
}

/// Read both files. Each unknown key is handed to `output::warn`.
pub fn load(files: &ConfigFiles) -> Result<Loaded, RunnerError> {
    let user = match &files.user {
        Some(path) => read(path, Whose::User)?,
        None => None,
    };
    let repository = read(&files.repository, Whose::Repository)?;
    let mut unknown = Vec::new();
    for (table, path) in [
        (user.as_ref(), files.user.as_deref()),
        (repository.as_ref(), Some(files.repository.as_path())),
    ] {
        if let (Some(table), Some(path)) = (table, path) {
            unknown.extend(unknown_keys(table, path));
        }
    }
    for u in &unknown {
        crate::output::warn(&u.message());
    }
    let user = user.map(|mut user| {
        if let Some(repo) = &repository {
            drop_agent_identity_under(&mut user, repo);
        }
        user
    });
    let merged = merge(user.clone(), repository.as_ref());
    let config: Config = toml::Value::Table(merged).try_into().map_err(|e| {
        RunnerError::bad_input(format!(
            "invalid config ({} under {}): {e}",
            files.repository.display(),
            files
                .user
                .as_deref()
                .unwrap_or(Path::new("no user file"))
                .display()
        ))
    })?;
    Ok(Loaded {
        config,
        user,
        repository,
        unknown,
    })
}

/// The config of `files` without a word: a file that is missing, unreadable or invalid counts
/// as empty (`runner status` shows the budget; the commands that use the config report the
/// error).
pub fn load_quietly(files: &ConfigFiles) -> Config {
    let quiet = |path: &Path| {
        let text = crate::fs::safe::read_to_string(path).ok()?;
        let config: Config = toml::from_str(&text).ok()?;
        config.check(path).ok()?;
        toml::from_str::<toml::Table>(&text).ok()
    };
    let user = files.user.as_deref().and_then(quiet);
    let repository = quiet(&files.repository);
    let user = user.map(|mut user| {
        if let Some(repo) = &repository {
            drop_agent_identity_under(&mut user, repo);
        }
        user
    });
    toml::Value::Table(merge(user, repository.as_ref()))
        .try_into()
        .unwrap_or_default()
}

/// The file at `path`, checked: `None` when there is none. A file that is there but cannot
/// be read, or is not valid config, is an error naming it.
fn read(path: &Path, whose: Whose) -> Result<Option<toml::Table>, RunnerError> {
    let text = match crate::fs::safe::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // A user config folder that is a file (ENOTDIR) holds no config either.
        Err(e) if matches!(whose, Whose::User) && e.raw_os_error() == Some(libc::ENOTDIR) => {
            return Ok(None);
        }
        Err(e) => {
            let mut err = RunnerError::bad_input(format!("cannot read {}: {e}", path.display()));
            // A refusal (a FIFO, a link) carries its advice: keep it.
            let refused = e.get_ref().and_then(|i| i.downcast_ref::<RunnerError>());
            for hint in refused.map(RunnerError::hints).unwrap_or_default() {
                err = err.with_hint(hint.clone());
            }
            // (`runner init --force` is no advice for a file that cannot be read: the
            // refusal's own is.)
            // (Nor is "fix the key it names": a file that does not read names no key.)
            return Err(match whose {
                Whose::User => err.with_hint(
                    "this is your user-level config, read in every repository \
                     (docs/configuration.md)",
                ),
                Whose::Repository => err,
            });
        }
    };
    let invalid = |e: toml::de::Error| {
        with_whose_hint(
            RunnerError::bad_input(format!("invalid config {}: {e}", path.display())),
            whose,
        )
    };
    // The typed parse and its checks first: they name the key (`agent.max_log_bytes`) and
    // its line, and take any u64 (the untyped table below holds only i64).
    let config: Config = toml::from_str(&text).map_err(invalid)?;
    config.check(path).map_err(|e| with_whose_hint(e, whose))?;
    let table: toml::Table = toml::from_str(&text).map_err(invalid)?;
    Ok(Some(table))
}

fn with_whose_hint(err: RunnerError, whose: Whose) -> RunnerError {
    match whose {
        Whose::Repository => err.with_hint(
            "`runner init --force` writes a fresh one with every key and its default (the old \
             one is replaced)",
        ),
        Whose::User => err.with_hint(
            "this is your user-level config, read in every repository (docs/configuration.md): \
             fix the key it names, or move the file away",
        ),
    }
}

/// Take the agent's identity keys out of the user's table when the repository's sets any.
fn drop_agent_identity_under(user: &mut toml::Table, repository: &toml::Table) {
    let names_agent = repository
        .get("agent")
        .and_then(toml::Value::as_table)
        .is_some_and(|agent| AGENT_IDENTITY.iter().any(|k| agent.contains_key(*k)));
    if let (true, Some(toml::Value::Table(agent))) = (names_agent, user.get_mut("agent")) {
        agent.retain(|key, _| !AGENT_IDENTITY.contains(&key));
    }
}

/// `user` with `repository`'s keys on top, table by table, key by key.
fn merge(user: Option<toml::Table>, repository: Option<&toml::Table>) -> toml::Table {
    let mut merged = user.unwrap_or_default();
    for (name, value) in repository.into_iter().flatten() {
        match (merged.get_mut(name), value) {
            (Some(toml::Value::Table(mine)), toml::Value::Table(theirs)) => {
                for (key, v) in theirs {
                    mine.insert(key.clone(), v.clone());
                }
            }
            _ => {
                merged.insert(name.clone(), value.clone());
            }
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn the_repository_wins_key_by_key() {
        let user = table("[run]\nmax_attempts = 7\nmax_sessions = 11\n[backup]\nkeep_days = 2\n");
        let repo = table("[run]\nmax_sessions = 9\n");
        let merged = merge(Some(user), Some(&repo));
        let config: Config = toml::Value::Table(merged).try_into().unwrap();
        assert_eq!(config.run.max_attempts, 7);
        assert_eq!(config.run.max_sessions, 9);
        assert_eq!(config.backup.keep_days, 2);
    }

    #[test]
    fn the_agents_keys_come_from_one_file() {
        let mut user = table(
            "[agent]\npreset = \"claude\"\nprogram = \"/opt/claude\"\npermission = \"full\"\n",
        );
        drop_agent_identity_under(&mut user, &table("[agent]\ncommand = \"my-agent\"\n"));
        assert_eq!(user, table("[agent]\npermission = \"full\"\n"));
        // A repository that names no agent leaves the user's.
        let mut user = table("[agent]\npreset = \"claude\"\n");
        drop_agent_identity_under(&mut user, &table("[agent]\nmcp = true\n"));
        assert_eq!(user, table("[agent]\npreset = \"claude\"\n"));
    }
}
