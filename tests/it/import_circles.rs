//! No import circles in `src/`: between the modules of the crate (a folder's or a file's
//! module, e.g. `engine::recovery`, `store::journal`) and between single files, no module
//! uses one that uses it back, however long the way round.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every non-test `.rs` file under `src/`: its module path (`engine/run/mod.rs` →
/// `["engine", "run"]`) and its code without comments and without its `#[cfg(test)]` part.
fn modules() -> Vec<(Vec<String>, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let is_test = rel.ends_with("tests.rs") || rel.contains("/tests/");
            if !rel.ends_with(".rs") || is_test {
                continue;
            }
            let mut parts: Vec<String> = rel
                .trim_end_matches(".rs")
                .split('/')
                .map(String::from)
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text.split("#[cfg(test)]").next().unwrap();
            let code: Vec<&str> = text
                .lines()
                .map(|l| l.split("//").next().unwrap())
                .collect();
            out.push((parts, code.join("\n")));
        }
    }
    out
}

/// The lowercase path at the start of `s` (`a::b::C` → `a::b`), and, when it ends in a
/// `{…}` group, the paths of the group's items (`a::{b::c, d}` → `a::b::c`, `a::d`).
fn paths_at(s: &str) -> Vec<Vec<String>> {
    let mut parts = Vec::new();
    let mut rest = s;
    loop {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        let after = &rest[name.len()..];
        let starts_upper = after.starts_with(|c: char| c.is_ascii_uppercase());
        if name.is_empty() || starts_upper {
            break;
        }
        parts.push(name.clone());
        match after.strip_prefix("::") {
            Some(r) => rest = r,
            None => return vec![parts],
        }
    }
    let Some(group) = rest.strip_prefix('{') else {
        return if parts.is_empty() {
            vec![]
        } else {
            vec![parts]
        };
    };
    // The items of the group at its own depth, each read as a path of its own.
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.push(&group[start..i]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    let mut paths = Vec::new();
    for item in out {
        for inner in paths_at(item.trim()) {
            let mut p = parts.clone();
            p.extend(inner);
            paths.push(p);
        }
    }
    if paths.is_empty() && !parts.is_empty() {
        paths.push(parts);
    }
    paths
}

/// The module paths the code of `module` names: `crate::a::b` (lowercase names: modules and
/// functions, not types) and `super::x`, groups included.
fn named(module: &[String], code: &str) -> Vec<Vec<String>> {
    let word_before = |at: usize| {
        code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':')
    };
    let mut out = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if !word_before(at) {
            out.extend(paths_at(&code[at + "crate::".len()..]));
        }
    }
    for (at, _) in code.match_indices("super::") {
        if word_before(at) {
            continue;
        }
        // A file's `super` is its folder's module (a `mod.rs`'s module path is already its
        // folder's, so the same rule holds).
        let mut base: Vec<String> = module.to_vec();
        let mut rest = &code[at..];
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        for found in paths_at(rest) {
            let mut path = base.clone();
            path.extend(found);
            out.push(path);
        }
    }
    out
}

/// The strongly connected parts of more than one node (Tarjan's algorithm).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on: BTreeSet<String>,
        found: Vec<Vec<String>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, v: &str) {
            let n = self.index.len();
            self.index.insert(v.to_string(), n);
            self.low.insert(v.to_string(), n);
            self.stack.push(v.to_string());
            self.on.insert(v.to_string());
            for w in self.edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut part = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(&w);
                    let done = w == v;
                    part.push(w);
                    if done {
                        break;
                    }
                }
                if part.len() > 1 {
                    part.sort();
                    self.found.push(part);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        found: Vec::new(),
    };
    let nodes: BTreeSet<String> = edges
        .keys()
        .cloned()
        .chain(edges.values().flatten().cloned())
        .collect();
    for v in &nodes {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

/// The graph of the modules cut to `depth` path components (`usize::MAX`: whole paths), each
/// module's edges to those it names (not to itself, its parents or its children).
fn graph(depth: usize) -> BTreeMap<String, BTreeSet<String>> {
    let sources = modules();
    let tops: BTreeSet<String> = sources
        .iter()
        .filter_map(|(m, _)| m.first().cloned())
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in &sources {
        if module.is_empty() {
            continue;
        }
        let cut = |p: &[String]| p[..p.len().min(depth)].join("::");
        let me = cut(module);
        for target in named(module, code) {
            if !target.first().is_some_and(|t| tops.contains(t)) {
                continue;
            }
            let them = cut(&target);
            let related = them == me
                || me.starts_with(&format!("{them}::"))
                || them.starts_with(&format!("{me}::"));
            if !related {
                edges.entry(me.clone()).or_default().insert(them);
            }
        }
    }
    edges
}

#[test]
fn no_top_level_module_is_in_an_import_circle() {
    let found = circles(&graph(1));
    assert!(
        found.is_empty(),
        "top-level modules that use each other: {found:#?}"
    );
}

#[test]
fn no_module_of_the_crate_is_in_an_import_circle() {
    let found = circles(&graph(2));
    assert!(
        found.is_empty(),
        "modules that use each other, however long the way round: {found:#?}"
    );
}

#[test]
fn no_file_is_in_an_import_circle() {
    let found = circles(&graph(usize::MAX));
    assert!(
        found.is_empty(),
        "files that use each other, however long the way round: {found:#?}"
    );
}

#[test]
fn the_circle_finder_finds_a_long_way_round_and_nothing_else() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e")] {
        edges.entry(a.into()).or_default().insert(b.into());
    }
    assert_eq!(
        circles(&edges),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
    edges.remove("c");
    assert!(circles(&edges).is_empty());
    let code = "use crate::store::{journal::x};\nlet a = crate::engine::run::ask::Q;\nuse super::super::plan::model;";
    let found = named(&["engine".into(), "run".into(), "chunk".into()], code);
    assert_eq!(found[0], ["store", "journal", "x"]);
    assert_eq!(found[1], ["engine", "run", "ask"]);
    assert_eq!(found[2], ["engine", "plan", "model"]);
    let found = named(
        &["ops".into(), "new".into()],
        "use super::{detect::Candidate, run};",
    );
    assert_eq!(found, [vec!["ops", "detect"], vec!["ops", "run"]]);
}
