//! What a live `runner run` says of the agent session under way: the session's name beside
//! its spinner ("planning", "core-b (attempt 2)") and the agent's latest activity, kept to one
//! short line. Pure: the engine gathers the facts, a terminal sink renders the words.

/// The longest activity line sent on (characters): wider than any terminal, short enough that
/// an agent printing one endless line costs nothing to pass around (`run --jobs` sends it from
/// each spec's run to its parent). The terminal cuts it again to its own width.
pub const MAX_ACTIVITY_CHARS: usize = 400;

/// Which agent session it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session<'a> {
    /// The planner's attempt `attempt` (1 for the first).
    Planner { attempt: u32 },
    /// A coder session of `chunk`, its attempt numbered as `run.max_attempts` counts (failed
    /// attempts only, see `policy::attempt_count`); `reattached` when it continues the agent
    /// CLI's own earlier session.
    Coder {
        chunk: &'a str,
        attempt: u32,
        reattached: bool,
    },
    /// The recovery evaluator asked about `chunk`.
    Recovery { chunk: &'a str },
}

impl Session<'_> {
    /// The role the session's agent is given (`RUNNER_ROLE`, the journal's `role`).
    pub fn role(&self) -> &'static str {
        match self {
            Session::Planner { .. } => "planner",
            Session::Coder { .. } => "coder",
            Session::Recovery { .. } => "recovery",
        }
    }

    /// The chunk it works on (none for the planner).
    pub fn chunk(&self) -> Option<&str> {
        match self {
            Session::Planner { .. } => None,
            Session::Coder { chunk, .. } | Session::Recovery { chunk } => Some(chunk),
        }
    }
}

/// The session's name beside its spinner: "planning", "planning (attempt 2)", "core-b",
/// "core-b (attempt 2)", "core-b (reattached)", "recovery of core-b". Raw plan text: the
/// terminal makes it safe.
pub fn session_label(session: Session<'_>) -> String {
    let again = |attempt: u32| (attempt > 1).then(|| format!("attempt {attempt}"));
    let with = |name: &str, notes: Vec<String>| match notes.is_empty() {
        true => name.to_string(),
        false => format!("{name} ({})", notes.join(", ")),
    };
    match session {
        Session::Planner { attempt } => with("planning", again(attempt).into_iter().collect()),
        Session::Coder {
            chunk,
            attempt,
            reattached,
        } => with(
            chunk,
            again(attempt)
                .into_iter()
                .chain(reattached.then(|| "reattached".to_string()))
                .collect(),
        ),
        Session::Recovery { chunk } => format!("recovery of {chunk}"),
    }
}

/// The agent's latest activity as it is passed on: at most [`MAX_ACTIVITY_CHARS`] characters
/// (cut on a character's boundary, with "…"); `None` for nothing to show.
pub fn activity_line(latest: &str) -> Option<String> {
    let latest = latest.trim();
    if latest.is_empty() {
        return None;
    }
    Some(match latest.char_indices().nth(MAX_ACTIVITY_CHARS) {
        Some((end, _)) => format!("{}…", &latest[..end]),
        None => latest.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_named_by_what_it_works_on_and_its_attempt_after_the_first() {
        let coder = |attempt, reattached| Session::Coder {
            chunk: "1-2",
            attempt,
            reattached,
        };
        let cases = [
            (Session::Planner { attempt: 1 }, "planning"),
            (Session::Planner { attempt: 3 }, "planning (attempt 3)"),
            (coder(1, false), "1-2"),
            (coder(2, false), "1-2 (attempt 2)"),
            (coder(1, true), "1-2 (reattached)"),
            (coder(2, true), "1-2 (attempt 2, reattached)"),
            (Session::Recovery { chunk: "1-2" }, "recovery of 1-2"),
        ];
        for (session, label) in cases {
            assert_eq!(session_label(session), label, "{session:?}");
        }
        // Attempt 0 (never numbered so) reads as the first.
        assert_eq!(session_label(coder(0, false)), "1-2");
    }

    #[test]
    fn an_activity_line_is_trimmed_and_cut_on_a_character_boundary() {
        assert_eq!(
            activity_line("  editing src/lib.rs  ").as_deref(),
            Some("editing src/lib.rs")
        );
        assert_eq!(activity_line(" \t "), None);
        assert_eq!(activity_line(""), None);
        let exact = "é".repeat(MAX_ACTIVITY_CHARS);
        assert_eq!(activity_line(&exact).as_deref(), Some(exact.as_str()));
        let long = "é".repeat(MAX_ACTIVITY_CHARS + 1);
        let cut = activity_line(&long).unwrap();
        assert_eq!(cut.chars().count(), MAX_ACTIVITY_CHARS + 1);
        assert!(cut.ends_with("é…"), "{cut}");
    }
}
