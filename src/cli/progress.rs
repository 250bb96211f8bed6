//! The terminal's progress sink: on a terminal, lines above a run's bars (the plan's bar, the
//! agent session's spinner and latest activity: `cli::live`); otherwise plain lines, and
//! nothing of the sessions. All on stderr. Every line is made safe for the terminal here
//! (`text::for_terminal`): the plan's and the agents' text reaches it.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::rc::Rc;

use indicatif::{MultiProgress, ProgressDrawTarget};

use super::live::RunBars;
use runner::engine::progress::{Progress, ProgressSink};

pub struct TerminalProgress {
    /// The bars, on a terminal (`None` otherwise: plain lines then, as a log wants them).
    multi: Option<MultiProgress>,
    /// The run's bars: the plan's, once its size is known, and the session's under way.
    bars: RefCell<RunBars>,
}

impl TerminalProgress {
    pub fn new() -> TerminalProgress {
        TerminalProgress {
            multi: std::io::stderr()
                .is_terminal()
                .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr())),
            bars: RefCell::new(RunBars::new(None)),
        }
    }
}

impl Default for TerminalProgress {
    fn default() -> Self {
        TerminalProgress::new()
    }
}

/// The text a line of progress shows, made safe for a terminal; nothing for what only bars
/// show (a position, a wait, a session) or the end.
pub fn plain_line(event: &Progress<'_>) -> Option<String> {
    match event {
        Progress::Line(text) | Progress::Notice(text) => {
            Some(runner::text::for_terminal(text).into_owned())
        }
        Progress::Position { .. }
        | Progress::Waiting { .. }
        | Progress::SessionStarted { .. }
        | Progress::Activity(_)
        | Progress::SessionEnded
        | Progress::Finished
        | Progress::Bell => None,
    }
}

/// BEL on stderr, which is a terminal (the callers know).
fn ring_bell() {
    // Not std's `eprint!`, which panics when stderr is gone.
    runner::write_quietly(&mut std::io::stderr().lock(), format_args!("\u{7}"));
}

/// What `-q/--quiet` keeps: the notices (where work was saved, what recovery did), not the
/// news of a run going well nor its bars.
pub fn shown_when_quiet(event: &Progress<'_>) -> bool {
    matches!(
        event,
        Progress::Notice(_) | Progress::Finished | Progress::Bell
    )
}

/// `line` with `[spec] ` before each of its lines (a line of news may run over several: a
/// failed check's output under its chunk's line).
pub fn prefixed(spec: Option<&str>, line: &str) -> String {
    match spec {
        Some(spec) => line
            .split('\n')
            .map(|l| format!("[{spec}] {l}"))
            .collect::<Vec<_>>()
            .join("\n"),
        None => line.to_string(),
    }
}

/// Show `event` on `bars` if they show it (on a terminal); else print its line — above the
/// bars on a terminal, plain otherwise — each of its lines after the job's spec.
fn show(multi: Option<&MultiProgress>, bars: &mut RunBars, event: &Progress<'_>) {
    if matches!(event, Progress::Bell) {
        // `notify.bell`: on a terminal only, never into a pipe or a file.
        if multi.is_some() {
            ring_bell();
        }
        return;
    }
    if let Some(multi) = multi
        && bars.show(multi, event)
    {
        return;
    }
    let Some(line) = plain_line(event) else {
        return;
    };
    // A chunk's ✓ or ✗ in colour, where stderr takes colour.
    let line = super::style::for_stderr().progress_line(&line);
    let line = prefixed(bars.spec(), &line);
    match multi {
        Some(multi) => {
            let _ = multi.println(line);
        }
        None => eprintln!("{line}"),
    }
}

impl ProgressSink for TerminalProgress {
    fn report(&self, event: Progress<'_>) {
        if runner::output::quiet() && !shown_when_quiet(&event) {
            return;
        }
        show(self.multi.as_ref(), &mut self.bars.borrow_mut(), &event);
    }

    fn live(&self) -> bool {
        self.multi.is_some() && !runner::output::quiet()
    }
}

/// A job's progress for its parent (`run --progress-events`, hidden: what `run --jobs` starts
/// each spec's run with): every event as a marked JSON line on stderr, unfiltered (the parent
/// applies `--quiet`). `live` (`--progress-live`) when the parent shows sessions live.
pub struct EventsProgress {
    pub live: bool,
}

impl ProgressSink for EventsProgress {
    fn report(&self, event: Progress<'_>) {
        eprintln!("{}", runner::engine::jobs::wire::encode(&event));
    }

    fn live(&self) -> bool {
        self.live
    }

    /// The parent needs each session's start and end, shown or not (`engine::jobs`).
    fn session_bounds(&self) -> bool {
        true
    }
}

/// `run --jobs`: the progress of several runs at once. On a terminal, each running spec's bars
/// (named by it) under the lines; otherwise plain lines, each job's starting with `[spec] `.
pub struct JobsProgress {
    multi: Option<MultiProgress>,
}

impl JobsProgress {
    pub fn new() -> JobsProgress {
        JobsProgress {
            multi: std::io::stderr()
                .is_terminal()
                .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr())),
        }
    }

    /// The sink of runner's own lines (which spec starts where, which is skipped).
    pub fn own(&self) -> Rc<dyn ProgressSink> {
        Rc::new(JobProgress {
            multi: self.multi.clone(),
            bars: RefCell::new(RunBars::new(None)),
        })
    }

    /// Whether the jobs' sessions are shown live (their runs then send their sessions).
    pub fn live(&self) -> bool {
        self.multi.is_some() && !runner::output::quiet()
    }
}

struct JobProgress {
    multi: Option<MultiProgress>,
    bars: RefCell<RunBars>,
}

impl ProgressSink for JobProgress {
    /// Each job's runs show on bars of their own, under the same display.
    fn job(&self, spec: &str) -> Rc<dyn ProgressSink> {
        Rc::new(JobProgress {
            multi: self.multi.clone(),
            bars: RefCell::new(RunBars::new(Some(
                runner::text::for_terminal(spec).into_owned(),
            ))),
        })
    }

    fn report(&self, event: Progress<'_>) {
        if runner::output::quiet() && !shown_when_quiet(&event) {
            return;
        }
        show(self.multi.as_ref(), &mut self.bars.borrow_mut(), &event);
    }

    fn live(&self) -> bool {
        self.multi.is_some() && !runner::output::quiet()
    }
}

#[cfg(test)]
mod tests {
    use super::super::live::countdown;
    use super::*;
    use runner::engine::progress::{Event, Recorded, Reporter};
    use std::rc::Rc;

    #[test]
    fn a_line_is_shown_made_safe_and_positions_only_on_a_bar() {
        assert_eq!(
            plain_line(&Progress::Line("Chunk 1-1 done ✓ \u{1b}[2J")).as_deref(),
            Some(runner::text::for_terminal("Chunk 1-1 done ✓ \u{1b}[2J").as_ref())
        );
        assert!(
            !plain_line(&Progress::Line("\u{1b}[2J"))
                .unwrap()
                .contains('\u{1b}')
        );
        let at = Progress::Position {
            done: 1,
            total: 2,
            current: "1-2",
        };
        assert_eq!(plain_line(&at), None);
        assert_eq!(plain_line(&Progress::Finished), None);
        let waiting = Progress::Waiting {
            until: "2026-11-23T18:00:00Z",
            left_secs: 61,
        };
        assert_eq!(plain_line(&waiting), None, "a log gets no countdown");
        assert_eq!(countdown(61), "1:01");
        assert_eq!(countdown(3723), "1:02:03");
    }

    #[test]
    fn every_line_of_a_jobs_line_carries_its_spec() {
        assert_eq!(
            prefixed(Some("010-a"), "  ✗ 1-1 failed:\n    It printed nothing."),
            "[010-a]   ✗ 1-1 failed:\n[010-a]     It printed nothing."
        );
        assert_eq!(prefixed(Some("010-a"), "one"), "[010-a] one");
        assert_eq!(prefixed(None, "a\nb"), "a\nb");
    }

    #[test]
    fn the_engine_reporter_hands_every_event_to_the_sink_in_order() {
        let sink = Rc::new(Recorded::default());
        let reporter = Reporter::new(sink.clone());
        reporter.line("Recovered 001: x");
        reporter.progress(1, 3, "1-2");
        reporter.finish();
        assert_eq!(
            *sink.0.borrow(),
            vec![
                Event::Line("Recovered 001: x".into()),
                Event::Position {
                    done: 1,
                    total: 3,
                    current: "1-2".into()
                },
                Event::Finished
            ]
        );
    }
}
