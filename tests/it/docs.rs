//! The documentation agrees with the binary: README.md, CONTRIBUTING.md, docs/*.md and `runner man`.

use std::path::{Path, PathBuf};

use crate::common::*;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `runner ARGS`'s stdout, from anywhere (these commands need no repository).
fn runner_out(args: &[&str]) -> String {
    let out = crate::common::runner_command().args(args).output().unwrap();
    assert_exit(&out, 0);
    stdout(&out)
}

/// The subcommands `runner --help` lists, in its order (without `help`).
fn subcommands() -> Vec<String> {
    let help = runner_out(&["--help"]);
    let list = help
        .split("Commands:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no Commands: in --help:\n{help}"));
    let names: Vec<String> = list
        .lines()
        .take_while(|l| !l.trim().is_empty())
        // A long description wraps onto lines indented further.
        .filter(|l| l.starts_with("  ") && !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect();
    assert!(names.len() >= 19, "{names:?}");
    names
}

/// The exit codes `runner --help` names ("Exit codes: 0 done, 1 …, 130 interrupted.").
fn help_exit_codes() -> Vec<String> {
    let help = runner_out(&["--help"]);
    // The last paragraph, which clap may wrap.
    let (_, list) = help
        .split_once("Exit codes:")
        .unwrap_or_else(|| panic!("--help names no exit codes:\n{help}"));
    let codes: Vec<String> = list
        .split(',')
        .filter_map(|item| item.split_whitespace().next())
        .filter(|word| word.parse::<i32>().is_ok())
        .map(str::to_string)
        .collect();
    assert!(codes.contains(&"130".to_string()), "{codes:?}");
    codes
}

/// The Markdown files that link to each other: README.md, CONTRIBUTING.md and docs/*.md.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("CONTRIBUTING.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Lines outside fenced code blocks.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push(line);
        }
    }
    out
}

/// GitHub's anchor for a heading: lowercase, spaces to dashes, punctuation other than `-` and
/// `_` dropped (a repeated heading's `-1` suffix is not needed here).
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    prose_lines(text)
        .into_iter()
        .filter(|l| l.starts_with('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect()
}

/// Every `](target)` of a Markdown text outside code blocks.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_lines(text) {
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            if let Some(end) = rest.find(')') {
                out.push(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    out
}

#[test]
fn every_subcommand_has_its_section_in_docs_commands() {
    let commands = read("docs/commands.md");
    let headings: Vec<&str> = commands.lines().filter(|l| l.starts_with("## ")).collect();
    let missing: Vec<String> = subcommands()
        .into_iter()
        .filter(|c| !headings.contains(&format!("## `runner {c}`").as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/commands.md has no `## `runner CMD`` section for {missing:?}"
    );
}

#[test]
fn every_exit_code_of_help_is_in_the_readme_the_docs_and_the_man_page() {
    let readme = read("README.md");
    let commands = read("docs/commands.md");
    let man = runner_out(&["man"]);
    for code in help_exit_codes() {
        let row = format!("| {code} |");
        assert!(
            readme.lines().any(|l| l.starts_with(&row)),
            "README.md's exit codes lack {code}"
        );
        assert!(
            commands.lines().any(|l| l.starts_with(&row)),
            "docs/commands.md's exit codes lack {code}"
        );
        assert!(
            man.contains(&format!(".TP\n\\fB{code}\\fR\n")),
            "the man page's EXIT STATUS lacks {code}"
        );
    }
}

#[test]
fn the_readme_is_a_front_door_of_at_most_300_lines() {
    let lines = read("README.md").lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines: move the detail to docs/"
    );
    // The two commands it opens with stay in it.
    let readme = read("README.md");
    assert!(readme.contains("runner demo"), "README lacks `runner demo`");
    assert!(
        readme.contains("scripts/test"),
        "README lacks `scripts/test`"
    );
}

#[test]
fn every_relative_link_points_at_an_existing_file_and_heading() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let dir = file.parent().unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = match link.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() {
                file.clone()
            } else {
                dir.join(path)
            };
            let name = file.strip_prefix(root()).unwrap().display().to_string();
            if !target.exists() {
                broken.push(format!("{name}: {link} (no such file)"));
                continue;
            }
            if let Some(fragment) = fragment
                && target.extension().is_some_and(|e| e == "md")
            {
                let target_text = std::fs::read_to_string(&target).unwrap();
                if !anchors(&target_text).iter().any(|a| a == fragment) {
                    broken.push(format!("{name}: {link} (no such heading)"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_man_page_has_exit_status_environment_files_and_examples() {
    let man = runner_out(&["man"]);
    for section in ["EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"] {
        assert!(
            man.lines()
                .any(|l| l == format!(".SH \"{section}\"") || l == format!(".SH {section}")),
            "the man page lacks {section}"
        );
    }
}

#[test]
fn every_config_key_is_in_docs_configuration() {
    let repo = TestRepo::new();
    let out = repo.runner(&["config", "--json"]);
    assert_exit(&out, 0);
    let config: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let documented = read("docs/configuration.md");
    let settings = config["settings"].as_array().unwrap();
    assert!(settings.len() > 10, "{config}");
    let missing: Vec<&str> = settings
        .iter()
        .map(|s| s["key"].as_str().unwrap())
        .filter(|key| !documented.contains(&format!("| `{key}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/configuration.md's table lacks {missing:?}"
    );
}
