//! The layers of `src/` (see DESIGN.md, "How the code is laid out"), checked on the source
//! text: a rule broken names the file and line.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `file:line: text` for each line of the files under `src/` (outside `allowed_dir`) that
/// `breaks` says breaks the rule.
fn offending_lines(allowed_dirs: &[&str], breaks: impl Fn(&str) -> bool) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for path in rust_files(&root.join("src")) {
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if allowed_dirs.iter().any(|dir| rel.starts_with(dir)) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            if breaks(line) {
                found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

/// A line that names the git2 crate: a path through it or an import of it.
fn names_git2(line: &str) -> bool {
    let code = line.trim_start();
    line.contains("git2::")
        || code.starts_with("use git2")
        || code.starts_with("pub use git2")
        || code.starts_with("extern crate git2")
}

#[test]
fn every_git2_call_lives_in_src_git() {
    // src/fleet/ too: the published folder's trees and the lease commits are built there.
    let found = offending_lines(&["src/git/", "src/fleet/"], names_git2);
    assert!(
        found.is_empty(),
        "git2 is used outside src/git/ and src/fleet/ (move the operation into a function of src/git/):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_git2_rule_sees_paths_and_imports() {
    assert!(names_git2("    let r = git2::Repository::open(p)?;"));
    assert!(names_git2("use git2::{Oid, Repository};"));
    assert!(names_git2("pub use git2::Oid;"));
    assert!(!names_git2("/// (libgit2 keeps a lock file)"));
    assert!(!names_git2("use crate::git::{Oid, Repository};"));
}

// ---- The layers, printing, and size ----

/// The layer of a top-level module of the crate, lowest first. Each may use its own layer and
/// those below it. The crate's leaf utilities (`error`, `text`, `clock`, `failpoint`, `output`,
/// the print macros and `sh` in lib.rs) have no layer: every layer may use them.
fn layer_of(module: &str) -> Option<u8> {
    Some(match module {
        "policy" | "fs" => 0,
        "plan" | "store" | "git" | "agent" | "config" | "notify" | "fleet" => 1,
        "engine" => 2,
        "ops" => 3,
        "cli" | "mcp" => 4,
        _ => return None,
    })
}

const LAYER_NAMES: [&str; 5] = [
    "ground (policy, fs)",
    "mechanism",
    "engine",
    "operations",
    "front end",
];

/// Every `.rs` file under `src/`: its path relative to `src/`, and its text.
fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let out: Vec<(String, String)> = rust_files(&root)
        .into_iter()
        .map(|path| {
            let rel = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (rel, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    assert!(out.len() > 20, "found only {} source files", out.len());
    out
}

/// `policy/transition.rs` → `policy`; `lib.rs` → `lib`.
fn module_of(rel: &str) -> &str {
    let first = rel.split('/').next().unwrap();
    first.strip_suffix(".rs").unwrap_or(first)
}

/// The code of a line, without a `//` comment (a `//` inside a string literal cuts the line
/// short, which only hides text, never invents a use).
fn code(line: &str) -> &str {
    line.split("//").next().unwrap()
}

/// The crate modules a line names: `crate::x::…`, `crate::{x, y::…}`.
fn crate_modules(line: &str) -> Vec<String> {
    crate_uses("lib.rs", line)
        .into_iter()
        .map(|(_, module)| module)
        .collect()
}

/// The top-level modules of the crate that the code of the file `rel` (relative to `src/`)
/// names, with the line (1-based) of each: `crate::x`, a `crate::{x, y::{…}}` group however
/// it is nested or spread over lines, and a `super::super::x` that climbs to the crate's root.
/// Comments are left out.
fn crate_uses(rel: &str, text: &str) -> Vec<(usize, String)> {
    let mut code_text = String::new();
    let mut line_of = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for _ in 0..code(line).len() + 1 {
            line_of.push(n + 1);
        }
        code_text.push_str(code(line));
        code_text.push('\n');
    }
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    for (at, _) in code_text.match_indices("crate::") {
        let after = &code_text[at + "crate::".len()..];
        let Some(group) = after.strip_prefix('{') else {
            found.push((line_of[at], ident(after)));
            continue;
        };
        // The first name of each item at the group's own depth.
        let (mut depth, mut item_start) = (0usize, true);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => item_start = true,
                c if c.is_whitespace() => {}
                _ if item_start => {
                    item_start = false;
                    let offset = at + "crate::{".len() + i;
                    found.push((line_of[offset], ident(&group[i..])));
                }
                _ => {}
            }
        }
    }
    // `super::` climbs one module: from `engine/run/chunk.rs` (module `engine::run::chunk`),
    // three of them reach the crate's root.
    let depth = {
        let parts: Vec<&str> = rel.trim_end_matches(".rs").split('/').collect();
        match parts.last() {
            Some(&"mod") | Some(&"lib") | Some(&"main") => parts.len() - 1,
            _ => parts.len(),
        }
    };
    let mut rest_at = 0;
    while let Some(found_at) = code_text[rest_at..].find("super::") {
        let at = rest_at + found_at;
        let preceded = code_text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        let mut end = at;
        let mut climbs = 0;
        while code_text[end..].starts_with("super::") {
            climbs += 1;
            end += "super::".len();
        }
        if !preceded && depth > 0 && climbs >= depth {
            found.push((line_of[at], ident(&code_text[end..])));
        }
        rest_at = end;
    }
    found.retain(|(_, m)| !m.is_empty());
    found
}

#[test]
fn no_layer_uses_a_layer_above_it() {
    let mut wrong = Vec::new();
    for (rel, text) in sources() {
        let Some(own) = layer_of(module_of(&rel)) else {
            continue;
        };
        for (n, used) in crate_uses(&rel, &text) {
            // The plan model is plain data that policy decides over (a chunk's status, its
            // attempts); policy uses none of plan/'s reading or writing.
            if module_of(&rel) == "policy" && used == "plan" {
                continue;
            }
            if let Some(theirs) = layer_of(&used)
                && theirs > own
            {
                wrong.push(format!(
                    "src/{rel}:{n}: the {} layer uses `{used}` ({})",
                    LAYER_NAMES[own as usize], LAYER_NAMES[theirs as usize]
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "layer violations:\n{}", wrong.join("\n"));
}

/// The leaf utilities use no layer above the mechanism: they sit under everything.
#[test]
fn the_leaf_utilities_use_no_engine_operation_or_front_end() {
    let mut wrong = Vec::new();
    for (rel, text) in sources() {
        if layer_of(module_of(&rel)).is_some() || rel == "main.rs" {
            continue;
        }
        for (n, used) in crate_uses(&rel, &text) {
            if layer_of(&used).is_some_and(|l| l >= 2) {
                wrong.push(format!("src/{rel}:{n}: uses `{used}`"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Where `word` stands in `code` as a word of its own (`println!` inside `eprintln!` does not).
fn names_word(code: &str, word: &str) -> bool {
    code.match_indices(word).any(|(at, _)| {
        !code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn only_the_front_ends_print_or_ask() {
    // Besides the macros: a write to the process's own stdout or stderr by hand, the quiet
    // writer behind runner's print macros, reading the terminal (asking), deciding by whether
    // there is one, and leaving the process without main's rendering of the error.
    const FORBIDDEN: [&str; 14] = [
        "println!",
        "eprintln!",
        "print!",
        "eprint!",
        "dbg!",
        "inquire",
        "indicatif",
        "stdout()",
        "stderr()",
        "write_quietly",
        "stdin()",
        "is_terminal",
        "IsTerminal",
        "process::exit",
    ];
    let mut wrong = Vec::new();
    for (rel, text) in sources() {
        // main.rs and the front ends talk to a person; lib.rs defines the quiet print macros
        // they use.
        if matches!(module_of(&rel), "cli" | "mcp" | "main" | "lib") {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let code = code(line);
            for word in FORBIDDEN.iter().filter(|w| names_word(code, w)) {
                wrong.push(format!("src/{rel}:{}: {word}", n + 1));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "printing or asking below the front end:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_rules_read_uses_and_words_as_written() {
    assert_eq!(
        crate_modules("use crate::{engine::run, store::Journal};"),
        ["engine", "store"]
    );
    assert_eq!(
        crate_modules("    crate::ops::merge::finish(ws)?;"),
        ["ops"]
    );
    // A group spread over lines or nested, and `super::` climbing to the crate's root.
    let group = "use crate::{\n    store::{Journal, event::{A, B}},\n    cli::x,\n};";
    assert_eq!(
        crate_uses("engine/run/chunk.rs", group),
        [(2, "store".to_string()), (3, "cli".to_string())]
    );
    assert_eq!(
        crate_uses(
            "engine/run/chunk.rs",
            "use super::super::super::ops::x;\nuse super::super::drive;"
        ),
        [(1, "ops".to_string())]
    );
    assert_eq!(
        crate_uses("engine/run/mod.rs", "use super::super::cli;"),
        [(1, "cli".to_string())]
    );
    assert!(crate_uses("engine/run/mod.rs", "use super::slot; // crate::cli").is_empty());
    assert!(names_word("    eprintln!(\"x\");", "eprintln!"));
    assert!(names_word(
        "    let _ = std::io::stderr().write_all(b);",
        "stderr()"
    ));
    assert!(!names_word("    eprintln!(\"x\");", "println!"));
    assert_eq!(code("let a = 1; // crate::cli::x"), "let a = 1; ");
}

/// A file of unit tests (`tests.rs`, or a file under a `tests/` folder) is test code.
fn is_test_file(rel: &str) -> bool {
    rel.ends_with("/tests.rs") || rel.contains("/tests/")
}

#[test]
fn no_source_file_is_over_600_lines() {
    let long: Vec<String> = sources()
        .into_iter()
        .filter(|(rel, text)| !is_test_file(rel) && text.lines().count() > 600)
        .map(|(rel, text)| format!("src/{rel}: {} lines", text.lines().count()))
        .collect();
    assert!(
        long.is_empty(),
        "files over 600 lines:\n{}",
        long.join("\n")
    );
}

/// A line's text after the words that may stand before `fn`: `pub`, `pub(crate)`,
/// `pub(in some::path)`, `const`, `async`, `unsafe`, `extern "C"`, in any order.
fn after_qualifiers(mut text: &str) -> &str {
    loop {
        let rest = if let Some(rest) = text.strip_prefix("pub(") {
            match rest.split_once(") ") {
                Some((_, rest)) => rest,
                None => return text,
            }
        } else if let Some(rest) = text.strip_prefix("extern \"") {
            match rest.split_once("\" ") {
                Some((_, rest)) => rest,
                None => return text,
            }
        } else if let Some(rest) = ["pub ", "const ", "async ", "unsafe ", "extern "]
            .iter()
            .find_map(|q| text.strip_prefix(q))
        {
            rest
        } else {
            return text;
        };
        text = rest;
    }
}

/// Each `fn` with a body, from its signature to the closing brace at its own indentation.
fn function_lengths(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let Some(rest) = after_qualifiers(trimmed).strip_prefix("fn ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // A whole function on one line (`fn a() -> u8 { 1 }`).
        if line.trim_end().ends_with('}') && line.contains('{') {
            out.push((i + 1, name, 1));
            continue;
        }
        // A declaration without a body (a trait's), or a one-line function.
        let Some(end) = lines[i..].iter().position(|l| {
            *l == format!("{indent}}}")
                || l.trim_end().ends_with(';')
                    && l.starts_with(indent)
                    && l[indent.len()..].starts_with(|c: char| !c.is_whitespace())
                    && !l.trim_start().starts_with('}')
        }) else {
            continue;
        };
        out.push((i + 1, name, end + 1));
    }
    out
}

#[test]
fn no_function_is_over_120_lines() {
    let mut long = Vec::new();
    for (rel, text) in sources() {
        for (line, name, length) in function_lengths(&text) {
            if length > 120 {
                long.push(format!("src/{rel}:{line}: fn {name} is {length} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over 120 lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_function_measure_counts_a_body_to_its_closing_brace() {
    let text = "fn a() {\n    let x = 1;\n}\n\nimpl T {\n    pub fn b(&self) -> u8 {\n        1\n    }\n    fn decl(&self);\n}\n";
    let found = function_lengths(text);
    assert_eq!(found[0], (1, "a".to_string(), 3));
    assert_eq!(found[1], (6, "b".to_string(), 3));
    assert_eq!(found[2], (9, "decl".to_string(), 1));
    // Qualifiers in any order, and a one-line function that does not run on to the next.
    let text = "impl T {\n    pub(in crate::engine) async fn c() {\n        1;\n    }\n    pub(crate) const unsafe extern \"C\" fn d() -> u8 { 1 }\n    fn e() {\n        2;\n        3;\n    }\n}\n";
    let found = function_lengths(text);
    assert_eq!(found[0], (2, "c".to_string(), 3));
    assert_eq!(found[1], (5, "d".to_string(), 1));
    assert_eq!(found[2], (6, "e".to_string(), 4));
}

// ---- The front ends stand outside the library ----

#[test]
fn the_library_exports_no_front_end_and_the_binary_holds_both() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    let main = std::fs::read_to_string(root.join("main.rs")).unwrap();
    for front in ["cli", "mcp"] {
        assert!(
            !lib.lines()
                .any(|l| code(l).contains(&format!("mod {front};"))),
            "lib.rs declares the front end `{front}`: it belongs to the binary (src/main.rs)"
        );
        assert!(
            main.lines()
                .any(|l| code(l).trim() == format!("mod {front};")),
            "src/main.rs does not declare `mod {front};`"
        );
    }
}

#[test]
fn the_mcp_server_builds_nothing_with_the_cli() {
    let found = offending_lines(&[], |line| {
        let code = code(line);
        code.contains("crate::cli") || code.contains("super::super::cli")
    })
    .into_iter()
    .filter(|l| l.starts_with("src/mcp/"))
    .collect::<Vec<_>>();
    assert!(
        found.is_empty(),
        "the MCP server uses the command line's code (move what both need into ops):\n{}",
        found.join("\n")
    );
}

/// The plan's plain data that policy may decide over: its model's types and what sessions
/// said and spent (`session_facts`), never its reading, writing or summaries.
const PLAN_DATA: [&str; 11] = [
    "Chunk",
    "Status",
    "Attempt",
    "Phase",
    "Plan",
    "PhaseKey",
    "PhaseRef",
    "ChunkPos",
    "SessionFacts",
    "Spent",
    "clean_usd",
];

#[test]
fn policy_imports_only_plain_data() {
    let mut wrong = Vec::new();
    for (rel, text) in sources() {
        if module_of(&rel) != "policy" {
            continue;
        }
        // Its tests may build a plan from text.
        let text = text.split("#[cfg(test)]").next().unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = code(line);
            let Some(at) = code.find("crate::plan::") else {
                continue;
            };
            let rest = &code[at + "crate::plan::".len()..];
            let rest = rest.strip_prefix("session_facts::").unwrap_or(rest);
            let names: Vec<&str> = rest
                .trim_start_matches('{')
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .take_while(|w| {
                    PLAN_DATA.contains(w) || w.starts_with(|c: char| c.is_ascii_uppercase())
                })
                .collect();
            if names.is_empty() || names.iter().any(|w| !PLAN_DATA.contains(w)) {
                wrong.push(format!("src/{rel}:{}: {}", n + 1, code.trim()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "policy names more of plan/ than its data:\n{}",
        wrong.join("\n")
    );
}

// ---- One door: the workspace opened once per command ----

/// How many times the command `args` opened the workspace (its `-vv` log says each time),
/// and its exit code.
fn workspace_opens(repo: &crate::common::TestRepo, args: &[&str]) -> (usize, Option<i32>) {
    let mut all = vec!["-vv"];
    all.extend_from_slice(args);
    let out = repo.cmd(&all).env_remove("RUST_LOG").output().unwrap();
    let opens = String::from_utf8_lossy(&out.stderr)
        .matches("opening the workspace of")
        .count();
    (opens, out.status.code())
}

#[test]
fn every_command_opens_the_workspace_once() {
    let repo = crate::common::TestRepo::new();
    repo.add_spec("001-a");
    let agent = crate::common::fixture("fake-agent").display().to_string();
    let run = ["run", "--spec", "001-a", "--agent-command", agent.as_str()];
    assert_eq!(workspace_opens(&repo, &run), (1, Some(0)), "run");
    for args in [
        &["status"][..],
        &["review", "--spec", "001-a"],
        &["runs"],
        &["recover"],
        &["config"],
        &["chunk", "show", "--spec", "001-a"],
        &["undo", "--list"],
        &["gc", "--dry-run"],
        &["merge", "--spec", "001-a", "--yes"],
        &["undo", "--spec", "001-a"],
        &["discard", "--spec", "001-a", "--yes"],
    ] {
        assert_eq!(workspace_opens(&repo, args), (1, Some(0)), "{args:?}");
    }
    // Nothing was interrupted: resume says so (exit 2) after one look.
    let resume = ["resume", "001-a", "--no-run"];
    assert_eq!(workspace_opens(&repo, &resume).0, 1, "resume");
}

/// The ground floor's file primitives stand on nothing but the leaf utilities: git/, plan/,
/// agent/ and store/ use them without any of those being needed below.
#[test]
fn the_ground_floor_uses_no_other_layer() {
    let mut wrong = Vec::new();
    for (rel, text) in sources() {
        if module_of(&rel) != "fs" {
            continue;
        }
        for (n, used) in crate_uses(&rel, &text) {
            if used != "fs" && layer_of(&used).is_some() {
                wrong.push(format!("src/{rel}:{n}: uses `{used}`"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
