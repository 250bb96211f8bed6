//! What the workers themselves said: their stderr lines and `--json` reports, from every
//! incarnation's log files, counted by what they tell (a lease lost, a push refused). A worker
//! killed with -9 prints no report: its stderr lines are what it said.

use std::path::Path;

use serde_json::Value;

use super::supervise::Loop;

#[derive(Debug, Default)]
pub struct Reports {
    /// (file name, line) of every stderr line.
    lines: Vec<(String, String)>,
    /// Every JSON document the workers printed on stdout.
    pub json: Vec<Value>,
}

impl Reports {
    /// Every incarnation's output of these loops.
    pub fn gather(loops: &[Loop]) -> Reports {
        let mut out = Reports::default();
        for exit in loops.iter().flat_map(|l| &l.exits) {
            out.read_stderr(&exit.stderr);
            out.read_stdout(&exit.stdout);
        }
        out
    }

    /// Every `*.stderr` and `*.stdout` file in `dir` (a host's `logs/`), while its workers run.
    pub fn of_logs(dir: &Path) -> Reports {
        let mut out = Reports::default();
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for f in files {
            match f.extension().and_then(|e| e.to_str()) {
                Some("stderr") => out.read_stderr(&f),
                Some("stdout") => out.read_stdout(&f),
                _ => {}
            }
        }
        out
    }

    fn read_stderr(&mut self, path: &Path) {
        let name = path
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .map(|h| {
                format!(
                    "{}/{}",
                    h.to_string_lossy(),
                    path.file_name().unwrap().to_string_lossy()
                )
            })
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
        self.lines
            .extend(text.lines().map(|l| (name.clone(), l.to_string())));
    }

    fn read_stdout(&mut self, path: &Path) {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
        let docs = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
        // A worker killed mid-line leaves a cut document: the ones before it count.
        self.json.extend(docs.map_while(Result::ok));
    }

    /// Lines holding every one of `all`.
    fn count(&self, all: &[&str]) -> usize {
        self.lines
            .iter()
            .filter(|(_, l)| all.iter().all(|p| l.contains(p)))
            .count()
    }

    /// The sum of `field` over the JSON reports (a number, or a list's length).
    fn sum(&self, field: &str) -> usize {
        self.json
            .iter()
            .map(|r| match &r[field] {
                Value::Array(a) => a.len(),
                v => v.as_u64().unwrap_or(0) as usize,
            })
            .sum()
    }

    /// Lines saying a lease was lost (`runner worker: lease of spec S lost (…)`).
    pub fn lease_lost(&self) -> usize {
        self.count(&["lease of spec ", " lost ("])
    }

    /// Pushes refused, as the workers that ended with a report counted them.
    pub fn refused(&self) -> usize {
        self.sum("pushes_refused")
    }

    pub fn figures(&self) -> Value {
        serde_json::json!({
            "lease_lost_lines": self.lease_lost(),
            "leases_lost_in_reports": self.sum("leases_lost"),
            "pushes_refused_in_reports": self.refused(),
            "remote_errors_in_reports": self.sum("remote_errors"),
            "json_reports": self.json.len(),
            "stderr_lines": self.lines.len(),
        })
    }

    /// The last `n` stderr lines, each with its host and file.
    pub fn tail(&self, n: usize) -> String {
        let start = self.lines.len().saturating_sub(n);
        self.lines[start..]
            .iter()
            .map(|(f, l)| format!("{f}: {l}\n"))
            .collect()
    }
}
