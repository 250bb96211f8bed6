//! What a run or a recovery tells the person watching while it works, as typed events to a
//! sink the front end passes in. The engine and the operations never print: the terminal's
//! sink (a bar and lines on stderr) is `cli::progress`; another front end (the MCP server)
//! passes its own, and a test passes [`Recorded`].

use std::cell::RefCell;
use std::rc::Rc;
use std::time::SystemTime;

/// One thing worth telling while a run or a recovery works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress<'a> {
    /// A line of news, in words: what was recovered, a chunk done (✓) or failed (✗), a session
    /// stopped. Its plan and agent text is raw: a terminal sink makes it safe to show.
    Line(&'a str),
    /// A line the person must see even with `--quiet`: where work was saved, what recovery
    /// did, a session cut off.
    Notice(&'a str),
    /// Where the run is: `done` of `total` chunks, working on `current`.
    Position {
        done: usize,
        total: usize,
        current: &'a str,
    },
    /// The run waits for a usage limit to reset (`run --wait`): `left_secs` of it are left,
    /// until `until`; 0 when the wait is over. A terminal shows a countdown; a log shows
    /// nothing (the run said until when in a line).
    Waiting { until: &'a str, left_secs: u64 },
    /// An agent session started (planner, coder, recovery evaluator): `label` names it
    /// (`policy::live::session_label`, raw plan text), `started` is when. A terminal shows a
    /// spinner with its elapsed time until [`Progress::SessionEnded`]; a log shows nothing.
    /// Sent only to a sink that is [`ProgressSink::live`].
    SessionStarted { label: &'a str, started: SystemTime },
    /// The session's agent did something new: its latest activity on one line, raw agent text
    /// (`agent::output::activity::latest_in_log`, cut by `policy::live::activity_line`).
    Activity(&'a str),
    /// The session under way ended (any way).
    SessionEnded,
    /// The run is over (any outcome): what shows its position goes away.
    Finished,
    /// `notify.bell`: ring the terminal's bell, where there is a terminal (never into a pipe
    /// or a file).
    Bell,
}

/// Where progress goes. Called on the run's thread; a sink must not block for long.
pub trait ProgressSink {
    fn report(&self, event: Progress<'_>);

    /// Whether the sink shows agent sessions as they run (a terminal): only then does the
    /// engine watch a session's log and send the session's events. A log, `--quiet` or a
    /// front end that renders at the end says no, and nothing is watched.
    fn live(&self) -> bool {
        false
    }

    /// Whether the sink is told when each agent session starts and ends, live or not: a job's
    /// parent (`run --jobs`, a worker) needs those to know how its jobs go (a usage limit's
    /// check, a stop at once), whether it shows them or not. Only a live sink gets the
    /// agent's activity.
    fn session_bounds(&self) -> bool {
        self.live()
    }

    /// The sink of one of several runs at once (`run --jobs`), working on `spec`: nobody
    /// watches it unless the sink says otherwise.
    fn job(&self, _spec: &str) -> Rc<dyn ProgressSink> {
        Rc::new(Silent)
    }
}

/// Progress nobody watches.
pub struct Silent;

impl ProgressSink for Silent {
    fn report(&self, _: Progress<'_>) {}
}

/// Every event, owned, in order: for tests, and for a front end that renders at the end.
#[derive(Debug, Default)]
pub struct Recorded(pub RefCell<Vec<Event>>);

/// A [`Progress`] event that owns its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Line(String),
    Notice(String),
    Position {
        done: usize,
        total: usize,
        current: String,
    },
    Waiting {
        until: String,
        left_secs: u64,
    },
    SessionStarted {
        label: String,
        started: SystemTime,
    },
    Activity(String),
    SessionEnded,
    Finished,
    Bell,
}

impl ProgressSink for Recorded {
    /// A test sees the live events too.
    fn live(&self) -> bool {
        true
    }

    fn report(&self, event: Progress<'_>) {
        self.0.borrow_mut().push(match event {
            Progress::Line(text) => Event::Line(text.to_string()),
            Progress::Notice(text) => Event::Notice(text.to_string()),
            Progress::Position {
                done,
                total,
                current,
            } => Event::Position {
                done,
                total,
                current: current.to_string(),
            },
            Progress::Waiting { until, left_secs } => Event::Waiting {
                until: until.to_string(),
                left_secs,
            },
            Progress::SessionStarted { label, started } => Event::SessionStarted {
                label: label.to_string(),
                started,
            },
            Progress::Activity(text) => Event::Activity(text.to_string()),
            Progress::SessionEnded => Event::SessionEnded,
            Progress::Finished => Event::Finished,
            Progress::Bell => Event::Bell,
        });
    }
}

/// The engine's handle on the sink it was given.
#[derive(Clone)]
pub struct Reporter(Rc<dyn ProgressSink>);

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reporter")
            .field("live", &self.live())
            .finish()
    }
}

impl Reporter {
    pub fn new(sink: Rc<dyn ProgressSink>) -> Reporter {
        Reporter(sink)
    }

    pub fn line(&self, msg: impl AsRef<str>) {
        self.0.report(Progress::Line(msg.as_ref()));
    }

    /// A line that `--quiet` keeps (see [`Progress::Notice`]).
    pub fn notice(&self, msg: impl AsRef<str>) {
        self.0.report(Progress::Notice(msg.as_ref()));
    }

    pub fn progress(&self, done: usize, total: usize, current: &str) {
        self.0.report(Progress::Position {
            done,
            total,
            current,
        });
    }

    /// A usage limit's countdown (see [`Progress::Waiting`]).
    pub fn waiting(&self, until: &str, left_secs: u64) {
        self.0.report(Progress::Waiting { until, left_secs });
    }

    /// The countdown is over.
    pub fn waiting_over(&self) {
        self.waiting("", 0);
    }

    /// Whether the sink shows sessions live ([`ProgressSink::live`]).
    pub fn live(&self) -> bool {
        self.0.live()
    }

    /// Whether the sink is told of sessions' starts and ends ([`ProgressSink::session_bounds`]).
    pub fn session_bounds(&self) -> bool {
        self.0.session_bounds()
    }

    /// An agent session started (see [`Progress::SessionStarted`]).
    pub fn session_started(&self, label: &str, started: SystemTime) {
        self.0.report(Progress::SessionStarted { label, started });
    }

    /// The session's agent's latest activity (see [`Progress::Activity`]).
    pub fn activity(&self, text: &str) {
        self.0.report(Progress::Activity(text));
    }

    /// The session under way ended.
    pub fn session_ended(&self) {
        self.0.report(Progress::SessionEnded);
    }

    pub fn finish(&self) {
        self.0.report(Progress::Finished);
    }

    /// The terminal bell (see [`Progress::Bell`]).
    pub fn bell(&self) {
        self.0.report(Progress::Bell);
    }
}
