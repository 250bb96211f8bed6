//! `runner config`: the effective configuration, and where each value came from.

use std::path::Path;

use clap::Args;

use super::style::{Style, for_stdout};
use runner::config::Source;
use runner::ops::config::{ConfigOptions, ConfigReport};

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Print JSON: {"schema": 1, "file", "file_exists", "user_file", "user_file_exists",
    /// "settings": [...], "unknown_keys": [...]}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cwd: &Path, args: ConfigArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    let r = runner::ops::config::config(&ctx, ConfigOptions::default())?;
    if args.json {
        super::print_json(&r)?;
    } else {
        print!("{}", render(&r, for_stdout()));
    }
    Ok(0)
}

/// The two files, then `[table]` headers with `key = value` and its source, aligned.
pub fn render(r: &ConfigReport, style: Style) -> String {
    let t = |s: &str| runner::text::for_terminal(s).into_owned();
    let mut out = String::from("Config files (the repository's keys win over the user's):\n");
    let user = match (&r.user_path, r.user_file_exists) {
        (Some(path), true) => t(&path.display().to_string()),
        (Some(path), false) => format!("{} (none)", t(&path.display().to_string())),
        (None, _) => "none (neither XDG_CONFIG_HOME nor HOME names a folder)".to_string(),
    };
    out.push_str(&format!("  user file:       {user}\n"));
    let file = t(&r.path.display().to_string());
    if r.file_exists {
        out.push_str(&format!("  repository file: {file}\n"));
    } else {
        out.push_str(&format!(
            "  repository file: {file} (none; `runner init` writes one)\n"
        ));
    }
    let mut table = "";
    for s in &r.settings {
        let (name, key) = s.key.split_once('.').unwrap_or(("", &s.key));
        if name != table {
            table = name;
            out.push_str(&format!("\n{}\n", style.bold(&format!("[{name}]"))));
        }
        let value = match &s.value {
            serde_json::Value::Null => "(unset)".to_string(),
            v => t(&v.to_string()),
        };
        let source = match &s.source {
            Source::Default => style.dim("default"),
            Source::UserFile { .. } => "user file".to_string(),
            Source::File { .. } => "repository file".to_string(),
        };
        out.push_str(&format!("  {:<34} {source}\n", format!("{key} = {value}")));
    }
    if !r.unknown_keys.is_empty() {
        out.push_str(&format!("\n{}\n", style.warn("Ignored (unknown keys):")));
        for u in &r.unknown_keys {
            out.push_str(&format!("  {}\n", t(&u.message())));
        }
    }
    out
}
