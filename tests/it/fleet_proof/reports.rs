//! What the workers themselves said: their stderr lines and `--json` reports, from every
//! incarnation's log files, counted by what they tell (a lease lost, a push refused, a spec
//! taken over).

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

    fn count(&self, any_of: &[&str]) -> usize {
        self.lines
            .iter()
            .filter(|(_, l)| {
                let l = l.to_lowercase();
                any_of.iter().any(|p| l.contains(p))
            })
            .count()
    }

    /// Lines saying a lease was lost.
    pub fn lease_lost(&self) -> usize {
        self.count(&[
            "lease lost",
            "lost the lease",
            "lost its lease",
            "lost lease",
        ])
    }

    /// Lines saying the remote refused a push.
    pub fn refused(&self) -> usize {
        self.count(&["refused"])
    }

    /// Lines saying a spec was taken over from another worker.
    pub fn takeovers(&self) -> usize {
        self.count(&["took over", "taking over", "takeover"])
    }

    pub fn figures(&self) -> Value {
        serde_json::json!({
            "lease_lost": self.lease_lost(),
            "refused_pushes": self.refused(),
            "takeovers": self.takeovers(),
            "stderr_lines": self.lines.len(),
            "json_reports": self.json.len(),
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
