//! The terminal's progress sink: an indicatif bar on a terminal, plain lines otherwise, on
//! stderr. Every line is made safe for the terminal here (`text::for_terminal`): the plan's and
//! the agents' text reaches it.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::rc::Rc;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use runner::engine::progress::{Progress, ProgressSink};

pub struct TerminalProgress {
    /// Whether stderr is a terminal: a bar then, plain lines otherwise.
    bar_allowed: bool,
    /// The bar, once the plan's size is known; before that (and after a run finished) lines
    /// go straight to stderr.
    bar: RefCell<Option<ProgressBar>>,
}

impl TerminalProgress {
    pub fn new() -> TerminalProgress {
        TerminalProgress {
            bar_allowed: std::io::stderr().is_terminal(),
            bar: RefCell::new(None),
        }
    }

    fn new_bar() -> ProgressBar {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(bar_style(BAR, 0));
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }
}

impl Default for TerminalProgress {
    fn default() -> Self {
        TerminalProgress::new()
    }
}

/// A run's bar, and one of `run --jobs`'s (with its spec as the prefix); `{chunks}` is the noun
/// for the plan's size.
const BAR: &str = "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {chunks}  {msg}";
const JOB_BAR: &str = "{spinner} {prefix} [{elapsed_precise}] {bar:20} {pos}/{len} {chunks}  {msg}";

/// `template` for a plan of `total` chunks: "1/1 chunk", "0/3 chunks".
fn bar_style(template: &str, total: usize) -> ProgressStyle {
    let template = template.replace("{chunks}", &runner::text::noun(total, "chunk"));
    ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// The text a line of progress shows, made safe for a terminal; nothing for a position or the
/// end (without a bar they are not shown).
pub fn plain_line(event: &Progress<'_>) -> Option<String> {
    match event {
        Progress::Line(text) | Progress::Notice(text) => {
            Some(runner::text::for_terminal(text).into_owned())
        }
        Progress::Position { .. } | Progress::Waiting { .. } | Progress::Finished => None,
    }
}

/// `1:02:03`, `2:03`: what is left of a wait.
pub fn countdown(secs: u64) -> String {
    match (secs / 3600, secs / 60 % 60, secs % 60) {
        (0, m, s) => format!("{m}:{s:02}"),
        (h, m, s) => format!("{h}:{m:02}:{s:02}"),
    }
}

/// A bar's message while a usage limit pauses the run (nothing once the wait is over).
fn waiting_message(until: &str, left_secs: u64) -> String {
    match left_secs {
        0 => String::new(),
        left => format!(
            "paused by a usage limit: {} left (until {})",
            countdown(left),
            runner::text::for_terminal(until)
        ),
    }
}

/// What `-q/--quiet` keeps: the notices (where work was saved, what recovery did), not the
/// news of a run going well nor its bar.
pub fn shown_when_quiet(event: &Progress<'_>) -> bool {
    matches!(event, Progress::Notice(_) | Progress::Finished)
}

impl ProgressSink for TerminalProgress {
    fn report(&self, event: Progress<'_>) {
        if runner::output::quiet() && !shown_when_quiet(&event) {
            return;
        }
        let mut bar = self.bar.borrow_mut();
        match (event, bar.as_ref()) {
            (
                Progress::Position {
                    done,
                    total,
                    current,
                },
                _,
            ) if self.bar_allowed => {
                let bar = bar.get_or_insert_with(TerminalProgress::new_bar);
                if bar.length() != Some(total as u64) {
                    bar.set_style(bar_style(BAR, total));
                }
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(runner::text::for_terminal(current).into_owned());
            }
            (Progress::Waiting { until, left_secs }, _) if self.bar_allowed => {
                let bar = bar.get_or_insert_with(TerminalProgress::new_bar);
                bar.set_message(waiting_message(until, left_secs));
            }
            (Progress::Finished, _) => {
                if let Some(bar) = bar.take() {
                    bar.finish_and_clear();
                }
            }
            (event, shown) => {
                if let Some(line) = plain_line(&event) {
                    // A chunk's ✓ or ✗ in colour, where stderr takes colour.
                    let line = super::style::for_stderr().progress_line(&line);
                    match shown {
                        Some(bar) => bar.println(line),
                        None => eprintln!("{line}"),
                    }
                }
            }
        }
    }
}

/// A job's progress for its parent (`run --progress-events`, hidden: what `run --jobs` starts
/// each spec's run with): every event as a marked JSON line on stderr, unfiltered (the parent
/// applies `--quiet`).
pub struct EventsProgress;

impl ProgressSink for EventsProgress {
    fn report(&self, event: Progress<'_>) {
        eprintln!("{}", runner::engine::jobs::wire::encode(&event));
    }
}

/// `run --jobs`: the progress of several runs at once. On a terminal, one bar per running spec
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
            spec: None,
            multi: self.multi.clone(),
            bar: RefCell::new(None),
        })
    }
}

struct JobProgress {
    spec: Option<String>,
    multi: Option<MultiProgress>,
    bar: RefCell<Option<ProgressBar>>,
}

impl JobProgress {
    fn new_bar(&self, multi: &MultiProgress) -> ProgressBar {
        let bar = multi.add(ProgressBar::new(0));
        bar.set_style(bar_style(JOB_BAR, 0));
        bar.set_prefix(self.spec.clone().unwrap_or_default());
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }
}

impl ProgressSink for JobProgress {
    /// Each job's runs show on a line of their own, under the same display.
    fn job(&self, spec: &str) -> Rc<dyn ProgressSink> {
        Rc::new(JobProgress {
            spec: Some(runner::text::for_terminal(spec).into_owned()),
            multi: self.multi.clone(),
            bar: RefCell::new(None),
        })
    }

    fn report(&self, event: Progress<'_>) {
        if runner::output::quiet() && !shown_when_quiet(&event) {
            return;
        }
        let mut bar = self.bar.borrow_mut();
        match (event, self.multi.as_ref()) {
            (
                Progress::Position {
                    done,
                    total,
                    current,
                },
                Some(multi),
            ) => {
                let bar = bar.get_or_insert_with(|| self.new_bar(multi));
                if bar.length() != Some(total as u64) {
                    bar.set_style(bar_style(JOB_BAR, total));
                }
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(runner::text::for_terminal(current).into_owned());
            }
            (Progress::Waiting { until, left_secs }, Some(multi)) => {
                let bar = bar.get_or_insert_with(|| self.new_bar(multi));
                bar.set_message(waiting_message(until, left_secs));
            }
            (Progress::Finished, multi) => {
                if let (Some(bar), Some(multi)) = (bar.take(), multi) {
                    bar.finish_and_clear();
                    multi.remove(&bar);
                }
            }
            (event, multi) => {
                let Some(line) = plain_line(&event) else {
                    return;
                };
                let line = super::style::for_stderr().progress_line(&line);
                let line = match &self.spec {
                    Some(spec) => format!("[{spec}] {line}"),
                    None => line,
                };
                match multi {
                    Some(multi) => {
                        let _ = multi.println(line);
                    }
                    None => eprintln!("{line}"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
