//! What a run or a recovery tells the person watching while it works, as typed events to a
//! sink the front end passes in. The engine and the operations never print: the terminal's
//! sink (a bar and lines on stderr) is `cli::progress`; another front end (the MCP server)
//! passes its own, and a test passes [`Recorded`].

use std::cell::RefCell;
use std::rc::Rc;

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
    /// The run is over (any outcome): what shows its position goes away.
    Finished,
}

/// Where progress goes. Called on the run's thread; a sink must not block for long.
pub trait ProgressSink {
    fn report(&self, event: Progress<'_>);

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
    Finished,
}

impl ProgressSink for Recorded {
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
            Progress::Finished => Event::Finished,
        });
    }
}

/// The engine's handle on the sink it was given.
#[derive(Clone)]
pub struct Reporter(Rc<dyn ProgressSink>);

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

    pub fn finish(&self) {
        self.0.report(Progress::Finished);
    }
}
