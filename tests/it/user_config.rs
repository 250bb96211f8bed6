//! The user-level config (`$XDG_CONFIG_HOME/runner/config.toml`, else
//! `~/.config/runner/config.toml`) under the repository's, and `runner config` saying where
//! each value came from. Each test gives its runner a config folder of its own.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::common::*;

/// A folder to stand for the user's config home, with `text` as runner's config in it.
fn user_home(repo: &TestRepo, text: &str) -> PathBuf {
    let home = repo.tmp.path().join("xdg");
    let file = home.join("runner/config.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
    home
}

/// `runner ARGS` in the repository with `XDG_CONFIG_HOME` at `home`.
fn with_home(repo: &TestRepo, home: &Path, args: &[&str]) -> Output {
    repo.cmd(args)
        .env("XDG_CONFIG_HOME", home)
        .output()
        .unwrap()
}

fn config_json(out: &Output) -> Value {
    assert_exit(out, 0);
    serde_json::from_str(&stdout(out)).unwrap()
}

fn setting<'a>(config: &'a Value, key: &str) -> &'a Value {
    config["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap_or_else(|| panic!("no {key} in {config}"))
}

#[test]
fn the_users_config_sits_under_the_repositorys_key_by_key() {
    let repo = TestRepo::new();
    let home = user_home(
        &repo,
        "[run]\nmax_attempts = 7\nmax_sessions = 11\n[agent]\npermission = \"full\"\n",
    );
    repo.write_config("[run]\nmax_sessions = 9\n");
    let user_file = home.join("runner/config.toml").display().to_string();
    let repo_file = repo.path(".auto-claude/config.toml").display().to_string();

    let v = config_json(&with_home(&repo, &home, &["config", "--json"]));
    assert_eq!(v["user_file"], user_file.as_str(), "{v}");
    assert_eq!(v["user_file_exists"], true, "{v}");
    assert_eq!(v["file"], repo_file.as_str(), "{v}");
    let at = |key: &str| {
        let s = setting(&v, key);
        (
            s["value"].clone(),
            s["source"].as_str().unwrap().to_string(),
            s["path"].as_str().map(str::to_string),
        )
    };
    assert_eq!(
        at("run.max_attempts"),
        (7.into(), "user_file".into(), Some(user_file.clone()))
    );
    assert_eq!(
        at("agent.permission"),
        ("full".into(), "user_file".into(), Some(user_file.clone()))
    );
    assert_eq!(
        at("run.max_sessions"),
        (9.into(), "file".into(), Some(repo_file.clone()))
    );
    assert_eq!(
        at("run.session_timeout"),
        (3600.into(), "default".into(), None)
    );

    // The text says the same: both files, and each key's source.
    let text = stdout(&with_home(&repo, &home, &["config"]));
    assert!(
        text.contains(&user_file) && text.contains(&repo_file),
        "{text}"
    );
    let line = |key: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key} in:\n{text}"))
            .to_string()
    };
    assert!(line("max_attempts").ends_with("user file"), "{text}");
    assert!(line("max_sessions").ends_with("repository file"), "{text}");
    assert!(line("session_timeout").ends_with("default"), "{text}");
}

/// Without `XDG_CONFIG_HOME` (or with a relative one, which the XDG rules say to ignore) the
/// file is `~/.config/runner/config.toml`.
#[test]
fn without_xdg_config_home_the_file_is_under_home() {
    let repo = TestRepo::new();
    let home = repo.tmp.path().join("home");
    let file = home.join(".config/runner/config.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "[backup]\nkeep_days = 5\n").unwrap();
    for xdg in [None, Some("relative/dir")] {
        let mut cmd = repo.cmd(&["config", "--json"]);
        cmd.env("HOME", &home);
        match xdg {
            Some(dir) => cmd.env("XDG_CONFIG_HOME", dir),
            None => cmd.env_remove("XDG_CONFIG_HOME"),
        };
        let v = config_json(&cmd.output().unwrap());
        assert_eq!(v["user_file"], file.display().to_string().as_str(), "{v}");
        assert_eq!(setting(&v, "backup.keep_days")["value"], 5, "{v}");
        assert_eq!(
            setting(&v, "backup.keep_days")["source"],
            "user_file",
            "{v}"
        );
    }
}

/// The user's config counts for the commands that work, not only for `runner config`: a
/// user-level agent runs a spec with no agent named anywhere else.
#[test]
fn a_run_takes_its_agent_from_the_users_config() {
    let repo = TestRepo::new();
    repo.add_spec("001-a");
    let agent = fixture("fake-agent").display().to_string();
    let home = user_home(&repo, &format!("[agent]\ncommand = [\"{agent}\"]\n"));
    let out = with_home(&repo, &home, &["run", "--spec", "001-a"]);
    assert_exit(&out, 0);
    assert!(repo.statuses("001-a").iter().all(|(_, s)| s == "completed"));
}

/// The keys that name the agent (`preset`, `command`, `program`, `args`) come from one file: a
/// repository that names its agent is not given the user's program or preset on top.
#[test]
fn a_repository_that_names_its_agent_gets_none_of_the_users_agent_keys() {
    let repo = TestRepo::new();
    repo.add_spec("001-a");
    let home = user_home(
        &repo,
        "[agent]\npreset = \"claude\"\nprogram = \"/nowhere/claude\"\nargs = \"--bogus\"\npermission = \"full\"\n",
    );
    let agent = fixture("fake-agent").display().to_string();
    repo.write_config(&format!("[agent]\ncommand = [\"{agent}\"]\n"));
    let v = config_json(&with_home(&repo, &home, &["config", "--json"]));
    for key in ["agent.preset", "agent.program"] {
        assert_eq!(setting(&v, key)["value"], Value::Null, "{key}: {v}");
        assert_eq!(setting(&v, key)["source"], "default", "{key}: {v}");
    }
    assert_eq!(
        setting(&v, "agent.args")["value"],
        serde_json::json!([]),
        "{v}"
    );
    // The other agent keys still come from the user.
    assert_eq!(
        setting(&v, "agent.permission")["source"],
        "user_file",
        "{v}"
    );
    let out = with_home(&repo, &home, &["run", "--spec", "001-a"]);
    assert_exit(&out, 0);
    assert!(repo.statuses("001-a").iter().all(|(_, s)| s == "completed"));
}

/// A broken user config stops every command that reads the config with exit 2, naming the
/// file; an unknown key in it is a warning that names it too.
#[test]
fn a_broken_user_config_is_an_error_that_names_it() {
    let repo = TestRepo::new();
    repo.add_spec("001-a");
    let home = user_home(&repo, "[run]\nmax_attempts = \"three\"\n");
    let file = home.join("runner/config.toml").display().to_string();
    let agent = fixture("fake-agent").display().to_string();
    for args in [
        &["config"][..],
        &["run", "--spec", "001-a", "--agent-command", &agent],
    ] {
        let out = with_home(&repo, &home, args);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains(&format!("invalid config {file}")),
            "{args:?}: {err}"
        );
        assert!(err.contains("max_attempts"), "{args:?}: {err}");
        assert!(
            err.contains("user"),
            "{args:?}: the hint says whose file it is: {err}"
        );
    }
    let out = with_home(&repo, &home, &["config", "--json"]);
    assert_exit(&out, 2);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        v["error"]["message"].as_str().unwrap().contains(&file),
        "{v}"
    );
    assert!(repo.agent_log().is_empty(), "no session started");

    let home = user_home(&repo, "[run]\nmax_attempt = 5\n");
    let out = with_home(&repo, &home, &["config", "--json"]);
    let v = config_json(&out);
    let err = stderr(&out);
    assert!(
        err.contains("unknown key `run.max_attempt`") && err.contains(&file),
        "{err}"
    );
    assert_eq!(v["unknown_keys"][0]["file"], file.as_str(), "{v}");
}

/// The harness itself: every runner a test starts sees an empty user config folder of the
/// test build, never the developer's own (`common::isolated`; `house.rs` checks that no test
/// starts runner another way).
#[test]
fn the_harness_gives_every_runner_an_empty_user_config() {
    let repo = TestRepo::new();
    let v = config_json(&repo.runner(&["config", "--json"]));
    let want = user_config_home().join("runner/config.toml");
    assert_eq!(v["user_file"], want.display().to_string().as_str(), "{v}");
    assert_eq!(v["user_file_exists"], false, "{v}");
    assert!(!want.exists());
}

/// A user config that cannot be read says what is there and how to clear it: a folder at its
/// path (made by `mkdir -p ~/.config/runner/config.toml`) is a folder, not "a FIFO, a device or
/// a socket", and `rm` would not remove it; no key is named, so no hint says to fix one.
#[test]
fn a_folder_or_fifo_where_the_user_config_belongs_is_said_for_what_it_is() {
    let repo = TestRepo::new();
    let home = repo.tmp.path().join("xdg");
    let file = home.join("runner/config.toml");
    std::fs::create_dir_all(&file).unwrap();
    let out = with_home(&repo, &home, &["config"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{} is a folder, where runner reads a file",
            file.display()
        )),
        "{err}"
    );
    assert!(!err.contains("FIFO") && !err.contains("`rm "), "{err}");
    assert!(!err.contains("the key it names"), "{err}");
    assert!(err.contains("user-level config"), "{err}");

    std::fs::remove_dir(&file).unwrap();
    let made = isolated("mkfifo").arg(&file).status().unwrap();
    assert!(made.success());
    let out = with_home(&repo, &home, &["config"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("not a regular file"), "{err}");
    assert!(!err.contains("the key it names"), "{err}");
}
