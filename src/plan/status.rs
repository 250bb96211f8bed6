//! Chunk statuses: the five runner knows, and the spellings Auto-Claude and agents used for them.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Pending,
    InProgress,
    Completed,
    Failed,
    Blocked,
}

impl Status {
    pub const ALL: [Status; 5] = [
        Status::Pending,
        Status::InProgress,
        Status::Completed,
        Status::Failed,
        Status::Blocked,
    ];

    /// The spelling runner writes back.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Blocked => "blocked",
        }
    }

    /// Reads any spelling seen in real plans. Case, `-`, `_` and spaces do not matter.
    /// Anything else is `None`: the caller reports it, runner never guesses.
    pub fn parse(raw: &str) -> Option<Status> {
        // The spelling runner writes, without building a normalised copy: most plans.
        if let Some(&status) = Status::ALL.iter().find(|s| s.as_str() == raw) {
            return Some(status);
        }
        let key: String = raw
            .trim()
            .chars()
            .filter(|c| !matches!(c, '_' | '-' | ' '))
            .flat_map(char::to_lowercase)
            .collect();
        Some(match key.as_str() {
            "pending" | "notstarted" | "todo" | "queued" | "backlog" | "open" | "new" => {
                Status::Pending
            }
            "inprogress" | "started" | "running" | "active" | "wip" | "working" => {
                Status::InProgress
            }
            "completed" | "complete" | "done" | "finished" | "success" | "succeeded" | "passed" => {
                Status::Completed
            }
            "failed" | "fail" | "failure" | "error" | "errored" => Status::Failed,
            "blocked" | "stuck" | "needshuman" | "needsreview" => Status::Blocked,
            _ => return None,
        })
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// In the journal: the spelling runner writes; read back in any spelling `parse` knows.
impl serde::Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Status {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Status, D::Error> {
        let raw = String::deserialize(d)?;
        Status::parse(&raw)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown chunk status {raw:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synonyms_normalise() {
        for (raw, want) in [
            ("pending", Status::Pending),
            ("not_started", Status::Pending),
            ("todo", Status::Pending),
            ("TODO", Status::Pending),
            ("in-progress", Status::InProgress),
            ("in_progress", Status::InProgress),
            ("In Progress", Status::InProgress),
            ("done", Status::Completed),
            ("complete", Status::Completed),
            ("completed", Status::Completed),
            ("failed", Status::Failed),
            ("blocked", Status::Blocked),
        ] {
            assert_eq!(Status::parse(raw), Some(want), "{raw}");
        }
    }

    #[test]
    fn unknown_is_none() {
        assert_eq!(Status::parse("maybe"), None);
        assert_eq!(Status::parse(""), None);
    }

    #[test]
    fn canonical_spelling_round_trips() {
        for s in Status::ALL {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
    }
}
