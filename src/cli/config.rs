//! `runner config`: the effective configuration, and where each value came from.

use std::path::Path;

use clap::Args;

use super::style::{Style, for_stdout};
use runner::config::{Setting, Source, UnknownKey};
use runner::ops::config::ConfigOptions;

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Print JSON: {"schema": 1, "file", "file_exists", "settings": [...], "unknown_keys": [...]}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cwd: &Path, args: ConfigArgs) -> anyhow::Result<i32> {
    let ctx = super::open(cwd)?;
    let r = runner::ops::config::config(&ctx, ConfigOptions::default())?;
    if args.json {
        super::print_json(&r)?;
    } else {
        print!(
            "{}",
            render(
                &r.path,
                r.file_exists,
                &r.settings,
                &r.unknown_keys,
                for_stdout()
            )
        );
    }
    Ok(0)
}

/// `[table]` headers, then `key = value` and its source, aligned.
pub fn render(
    path: &Path,
    file_exists: bool,
    all: &[Setting],
    unknown: &[UnknownKey],
    style: Style,
) -> String {
    let t = |s: &str| runner::text::for_terminal(s).into_owned();
    let file = t(&path.display().to_string());
    let mut out = if file_exists {
        format!("Config file: {file}\n")
    } else {
        format!(
            "Config file: {file} (none: every value is the default; `runner init` writes one)\n"
        )
    };
    let mut table = "";
    for s in all {
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
            Source::File { path } => t(path),
        };
        out.push_str(&format!("  {:<34} {source}\n", format!("{key} = {value}")));
    }
    if !unknown.is_empty() {
        out.push_str(&format!("\n{}\n", style.warn("Ignored (unknown keys):")));
        for u in unknown {
            out.push_str(&format!("  {}\n", t(&u.message(path))));
        }
    }
    out
}
