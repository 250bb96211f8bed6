//! Whether a chunk's next attempt continues the agent session its interrupted attempt left
//! (claude `--resume`, codex `exec resume`, gemini `--resume`), and whether a resume that was
//! tried failed at once, so that the attempt falls back to a fresh session with the full prompt.
//!
//! Every input here comes from the plan, which agents and people can edit: the id reaches the
//! agent's command line as one argv word (never through a shell), and only an id in the
//! canonical UUID form is passed at all (claude, codex and gemini all name their sessions by
//! UUID), so nothing from the plan can parse as an option (`--dangerously-…`), a search term
//! (claude's `--resume <term>`), gemini's `latest` or a session index.

use std::time::Duration;

use super::Ended;
use super::invocation::Preset;

/// The attempt outcomes whose agent session is continued: the attempt was cut off (runner
/// killed, a reboot, a drain that ran out) and recovery put its chunk back to `pending`.
pub const RESUMABLE_OUTCOMES: [&str; 1] = ["interrupted"];

/// A resumed session that ends with an error within this long, having done nothing, failed
/// at once (the CLI could not load the session).
pub const FAILS_AT_ONCE_WITHIN: Duration = Duration::from_secs(30);

/// What the chunk's last attempt that ran left behind, as read from its record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LastAttempt<'a> {
    pub outcome: Option<&'a str>,
    /// The preset that ran it (`agent_preset`, recorded as the attempt was taken).
    pub preset: Option<&'a str>,
    /// The spec it was taken in (`agent_spec`): a plan copied from another spec names that one.
    pub spec: Option<&'a str>,
    /// The agent's own session id (`agent_session_id`).
    pub agent_session_id: Option<&'a str>,
    /// Its session was started (runner's session folder holds its output): an attempt cut
    /// off between its take and its session's start recorded an id no agent session has.
    pub ran: bool,
}

/// Whether the presets can continue one of their sessions.
pub fn can_reattach(preset: Preset) -> bool {
    matches!(preset, Preset::Claude | Preset::Codex | Preset::Gemini)
}

/// `id` as an agent session id runner will pass on a command line: the canonical UUID form
/// (8-4-4-4-12 hexadecimal digits), nothing else.
pub fn valid_agent_session_id(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The agent session the next attempt continues (`Ok(id)`), or why it starts afresh.
pub fn choose(
    enabled: bool,
    preset: Preset,
    spec: &str,
    last: Option<LastAttempt>,
) -> Result<String, &'static str> {
    if !enabled {
        return Err("agent.resume_sessions is false");
    }
    if !can_reattach(preset) {
        return Err("the preset cannot resume a session");
    }
    let Some(last) = last else {
        return Err("no earlier attempt");
    };
    if !last
        .outcome
        .is_some_and(|o| RESUMABLE_OUTCOMES.contains(&o))
    {
        return Err("the last attempt was not interrupted");
    }
    if last.preset != Some(preset.name()) {
        return Err("the interrupted session was run by another agent preset");
    }
    if last.spec != Some(spec) {
        return Err("the interrupted session was recorded for another spec");
    }
    if !last.ran {
        return Err("the interrupted attempt's session never started");
    }
    let Some(id) = last.agent_session_id else {
        return Err("the interrupted session's id is not known");
    };
    if !valid_agent_session_id(id) {
        return Err("the recorded agent session id is not a UUID");
    }
    Ok(id.to_string())
}

/// How a resumed session ended, as the fallback rule needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReattachEnd<'a> {
    pub ended: &'a Ended,
    pub duration: Duration,
    /// The agent reported through `runner chunk done|fail`.
    pub reported: bool,
    /// Tokens the session's output says it used.
    pub tokens: u64,
    pub cost_usd: Option<f64>,
    /// The output says the usage limit was hit (a fresh session would hit it too).
    pub usage_limit: bool,
    /// The tail of the session's output (`output.log`, stdout and stderr).
    pub output: &'a str,
}

/// Why a resumed session failed at once, if it did: it did not report through `runner chunk`,
/// did not hit a usage limit and used no tokens and no dollars, and either its CLI said it does
/// not know the session (whatever its exit: some gemini versions exit 0 there), or it exited
/// non-zero within [`FAILS_AT_ONCE_WITHIN`]. A session that used tokens did work: the words
/// in its output (the agent's own tools print anything, a grep of "thread not found" too) do
/// not make it a failed resume, whose fresh session would run again in the same attempt and
/// leave the first one's cost off the record.
/// Anything else (a signal, a timeout, an interruption, a session that worked) is judged as any
/// session is.
pub fn failed_at_once(end: &ReattachEnd) -> Option<String> {
    let Ended::Exited(code) = *end.ended else {
        return None;
    };
    if end.reported || end.usage_limit {
        return None;
    }
    let idle = end.tokens == 0 && end.cost_usd.is_none_or(|c| c <= 0.0);
    if says_unknown_session(end.output) && idle {
        return Some(format!(
            "the agent CLI does not know the session (exit {code})"
        ));
    }
    (code != 0 && end.duration <= FAILS_AT_ONCE_WITHIN && idle).then(|| {
        format!(
            "the resumed session ended at once (exit {code}, {} s) without doing any work",
            end.duration.as_secs()
        )
    })
}

/// What each CLI prints when asked to resume a session it does not have:
/// - claude: `No conversation found with session ID: <id>` (reported by users of `claude -p
///   --resume`, e.g. github.com/link-assistant/hive-mind/issues/1139);
/// - codex: `thread/resume failed: no rollout found for thread id <id>` (codex-rs
///   `thread_manager.rs`, as in github.com/openai/codex/issues/22064 and vm0-ai/vm0#16125), or
///   `thread not found` / `thread not loaded` in other versions;
/// - gemini: `Error resuming session: Invalid session identifier "<id>"` (gemini-cli's
///   `SessionSelector`, `packages/cli/src/utils/sessionUtils.ts`; exit 42 in the versions seen).
const UNKNOWN_SESSION: [&str; 6] = [
    "no conversation found with session id",
    "no rollout found for thread id",
    "thread not found",
    "thread not loaded",
    "invalid session identifier",
    "error resuming session",
];

pub fn says_unknown_session(output: &str) -> bool {
    let lower = output.to_lowercase();
    UNKNOWN_SESSION.iter().any(|m| lower.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0b0e6c2a-4d1f-4a8e-9c3b-7f2d1e5a6b90";

    fn last(outcome: &'static str, preset: &'static str, id: &'static str) -> LastAttempt<'static> {
        LastAttempt {
            outcome: Some(outcome),
            preset: Some(preset),
            spec: Some("001-a"),
            agent_session_id: Some(id),
            ran: true,
        }
    }

    #[test]
    fn only_canonical_uuids_are_ids() {
        assert!(valid_agent_session_id(ID));
        assert!(valid_agent_session_id(&ID.to_uppercase()));
        for bad in [
            "",
            "latest",
            "1",
            "--dangerously-skip-permissions",
            "-0b0e6c2a-4d1f-4a8e-9c3b-7f2d1e5a6b90",
            "0b0e6c2a-4d1f-4a8e-9c3b-7f2d1e5a6b90 --model x",
            "0b0e6c2a-4d1f-4a8e-9c3b-7f2d1e5a6b9;rm",
            "0b0e6c2a-4d1f-4a8e-9c3b-7f2d1e5a6b9g",
            "0b0e6c2a4d1f4a8e9c3b7f2d1e5a6b90",
            "0b0e6c2a-4d1f-4a8e-9c3b-7f2d1e5a6b90-",
            "0b0e6c2a-4d1f-4a8e-9c3b-7f2d1e5a6b90\n",
            "$(touch x)-4d1f-4a8e-9c3b-7f2d1e5a6b90",
            "0b0e6c2a-4d1f-4a8e-9c3b-7f2d1e5a6bé",
        ] {
            assert!(!valid_agent_session_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn an_interrupted_session_of_the_same_preset_and_spec_is_resumed() {
        for preset in [Preset::Claude, Preset::Codex, Preset::Gemini] {
            let l = last("interrupted", preset.name(), ID);
            assert_eq!(choose(true, preset, "001-a", Some(l)), Ok(ID.to_string()));
        }
    }

    #[test]
    fn everything_else_starts_afresh() {
        let l = last("interrupted", "claude", ID);
        let fresh = |enabled, preset, spec, l| choose(enabled, preset, spec, l).is_err();
        assert!(fresh(false, Preset::Claude, "001-a", Some(l)), "disabled");
        assert!(fresh(true, Preset::Claude, "001-a", None), "first attempt");
        // A preset changed between runs: a claude id never goes to codex.
        assert!(fresh(true, Preset::Codex, "001-a", Some(l)));
        assert!(fresh(
            true,
            Preset::Aider,
            "001-a",
            Some(last("interrupted", "aider", ID))
        ));
        assert!(fresh(
            true,
            Preset::Command,
            "001-a",
            Some(last("interrupted", "command", ID))
        ));
        // A plan copied from another spec.
        assert!(fresh(true, Preset::Claude, "002-b", Some(l)));
        for outcome in [
            "failed",
            "completed",
            "not_started",
            "usage_limited",
            "budget_exhausted",
        ] {
            assert!(fresh(
                true,
                Preset::Claude,
                "001-a",
                Some(last(outcome, "claude", ID))
            ));
        }
        assert!(fresh(
            true,
            Preset::Claude,
            "001-a",
            Some(last("interrupted", "claude", "--help"))
        ));
        let unknown = LastAttempt {
            agent_session_id: None,
            ..l
        };
        assert!(fresh(true, Preset::Claude, "001-a", Some(unknown)));
        let never_ran = LastAttempt { ran: false, ..l };
        assert!(fresh(true, Preset::Claude, "001-a", Some(never_ran)));
        let no_preset = LastAttempt { preset: None, ..l };
        assert!(fresh(true, Preset::Claude, "001-a", Some(no_preset)));
    }

    fn end<'a>(ended: &'a Ended, secs: u64, tokens: u64, output: &'a str) -> ReattachEnd<'a> {
        ReattachEnd {
            ended,
            duration: Duration::from_secs(secs),
            reported: false,
            tokens,
            cost_usd: None,
            usage_limit: false,
            output,
        }
    }

    #[test]
    fn a_resume_fails_at_once_on_an_unknown_session_or_an_idle_quick_error() {
        let one = Ended::Exited(1);
        // Each CLI's own words, whenever they come, from a session that did nothing.
        for said in [
            "No conversation found with session ID: x",
            "Error: thread/resume: thread/resume failed: no rollout found for thread id x",
            "Error resuming session: Invalid session identifier \"x\".",
        ] {
            assert!(failed_at_once(&end(&one, 500, 0, said)).is_some(), "{said}");
            // The same words from a session that used tokens: it worked, it is a session.
            assert_eq!(failed_at_once(&end(&one, 5, 10, said)), None, "{said}");
        }
        // Silent, quick, idle.
        let why = failed_at_once(&end(&Ended::Exited(42), 2, 0, "")).unwrap();
        assert!(why.contains("exit 42"), "{why}");
        // Exit 0 with the words and nothing done is one too; with work done it is a session.
        let unknown = "Invalid session identifier \"x\"";
        assert!(failed_at_once(&end(&Ended::Exited(0), 1, 0, unknown)).is_some());
        assert_eq!(failed_at_once(&end(&Ended::Exited(0), 1, 9, unknown)), None);
        // Not a failure to resume: success, work done, slow, reported, a limit, a signal.
        assert_eq!(failed_at_once(&end(&Ended::Exited(0), 1, 0, "")), None);
        assert_eq!(failed_at_once(&end(&one, 1, 5, "")), None);
        assert_eq!(failed_at_once(&end(&one, 31, 0, "")), None);
        let costly = ReattachEnd {
            cost_usd: Some(0.2),
            ..end(&one, 1, 0, "")
        };
        assert_eq!(failed_at_once(&costly), None);
        let reported = ReattachEnd {
            reported: true,
            ..end(&one, 1, 0, "No conversation found with session ID: x")
        };
        assert_eq!(failed_at_once(&reported), None);
        let limit = ReattachEnd {
            usage_limit: true,
            ..end(&one, 1, 0, "")
        };
        assert_eq!(failed_at_once(&limit), None);
        for other in [
            Ended::Signaled(9),
            Ended::TimedOut,
            Ended::Interrupted { drained: false },
        ] {
            assert_eq!(failed_at_once(&end(&other, 1, 0, "")), None, "{other:?}");
        }
    }
}
