//! `runner logs`: what an agent said and did in a spec's sessions, from their `output.log`s —
//! the latest session, one named (`--session`), or every session of a run (`--run`) — as a
//! stream of [`Piece`]s the front end renders: a session's start, its output (the bytes and the
//! activities they say), a word while it waits. With `follow`, the stream goes on as the logs
//! are written, into the run's next sessions, until the run ends (see `stream`).
//!
//! Reads only: nothing is written, no lock is held longer than a probe's instant.

use std::collections::VecDeque;
use std::time::Duration;

use crate::agent::output::activity::Activity;
use crate::error::RunnerError;
use crate::store::sessions::{self, Started};
use crate::store::workspace::SpecPaths;

mod stream;

pub use stream::Logs;

/// How often a followed log is looked at by default: a new line shows within this (and the
/// time to read it), and nothing changing costs a few `fstat`s each time.
pub const POLL: Duration = Duration::from_millis(200);

#[derive(Debug, Clone)]
pub struct LogsOptions {
    /// The spec as the user named it (fuzzy, as everywhere); none: the slot's or the only one.
    pub spec: Option<String>,
    /// Every session of this run (its id or a prefix of 4 characters or more).
    pub run: Option<String>,
    /// This one session (its folder's name).
    pub session: Option<String>,
    /// Go on as the logs are written, into the run's next sessions, until the run ends.
    pub follow: bool,
    /// The bytes only: no activities are read (`--raw`).
    pub raw: bool,
    /// How often a followed log is looked at.
    pub poll: Duration,
}

impl Default for LogsOptions {
    fn default() -> LogsOptions {
        LogsOptions {
            spec: None,
            run: None,
            session: None,
            follow: false,
            raw: false,
            poll: POLL,
        }
    }
}

/// One piece of what `runner logs` shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// A session begins: what is known of its start.
    Session(Started),
    /// Output of the session `session_id`: whole lines (and, at its end, its last line without
    /// a newline), as written, and the activities they say (none with `raw`).
    Output {
        session_id: String,
        bytes: Vec<u8>,
        activities: Vec<Activity>,
    },
    /// The session's log is not read (it is a link, not a regular file): why.
    Unreadable { session_id: String, why: String },
    /// Following, nothing to show yet: what is waited for (said once).
    Waiting(String),
    /// The followed run stopped without ending (killed, crashed): said at the end.
    RunGone(String),
}

/// `runner logs`: the spec's sessions to show, as a stream. Errors (exit 2): a spec that is not
/// one, a `--session` that is not one of the spec's sessions, a `--run` that is not one of its
/// runs, or (without `follow`) a spec with no session yet.
pub fn logs(ctx: &super::Ctx, opts: LogsOptions) -> anyhow::Result<Logs> {
    let name = ctx.spec_name(opts.spec.as_deref(), &super::Nobody)?;
    let paths = ctx.ws.spec(&name)?;
    let existing = sessions::list(&paths.sessions_dir);
    let logs_hint = || {
        format!(
            "`runner logs {}` shows its latest session",
            crate::sh(&name)
        )
    };
    // Following a run with no session yet: its sessions are those after the spec's latest.
    let latest = existing.last().cloned();
    let (queue, run, wait) = if let Some(id) = &opts.session {
        if !sessions::is_session_id(id) || !existing.contains(id) {
            return Err(RunnerError::bad_input(format!(
                "spec {name} has no session {:?}",
                crate::text::for_terminal(id)
            ))
            .with_hint(logs_hint())
            .into());
        }
        let run = sessions::started(&paths.dir, id).run_id;
        (VecDeque::from([id.clone()]), run, false)
    } else if let Some(query) = &opts.run {
        let run = run_of_spec(&paths, query)?;
        let ids: VecDeque<String> = sessions::of_run(&paths.dir, &run)
            .into_iter()
            .map(|s| s.session_id)
            .filter(|id| existing.contains(id))
            .collect();
        if ids.is_empty() && !opts.follow {
            return Err(RunnerError::bad_input(format!(
                "run {run} of spec {name} has no session logs"
            ))
            .with_hint(logs_hint())
            .into());
        }
        (ids, Some(run), false)
    } else {
        match existing.last() {
            Some(id) => {
                let run = sessions::started(&paths.dir, id).run_id;
                (VecDeque::from([id.clone()]), run, false)
            }
            None if opts.follow => (VecDeque::new(), None, true),
            None => {
                return Err(RunnerError::bad_input(format!(
                    "spec {name} has no sessions yet: no agent has run for it"
                ))
                .with_hint(format!(
                    "`runner logs {} --follow` waits for its first session",
                    crate::sh(&name)
                ))
                .into());
            }
        }
    };
    let after = if queue.is_empty() { latest } else { None };
    Ok(Logs::new(name, paths, opts, queue, run, wait, after))
}

/// The run of spec `paths` that `query` names (a whole run id, or a prefix of 4 characters or
/// more): one, or bad input naming the candidates.
fn run_of_spec(paths: &SpecPaths, query: &str) -> anyhow::Result<String> {
    let mut ids = crate::store::runs::list(&paths.dir);
    ids.sort();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut matched = crate::policy::runs::matching(&refs, query);
    matched.dedup();
    match matched.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(RunnerError::bad_input(format!(
            "spec {} has no run matching {:?}",
            paths.name,
            crate::text::for_terminal(query)
        ))
        .with_hint(format!(
            "`runner runs --spec {}` lists its runs",
            crate::sh(&paths.name)
        ))
        .into()),
        several => Err(RunnerError::bad_input(format!(
            "{:?} matches several runs of spec {}: {}",
            crate::text::for_terminal(query),
            paths.name,
            several.join(", ")
        ))
        .with_hint("give more characters of the run id")
        .into()),
    }
}
