//! The terminal's progress sink: an indicatif bar on a terminal, plain lines otherwise, on
//! stderr. Every line is made safe for the terminal here (`text::for_terminal`): the plan's and
//! the agents' text reaches it.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::progress::{Progress, ProgressSink};

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
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} chunks  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }
}

impl Default for TerminalProgress {
    fn default() -> Self {
        TerminalProgress::new()
    }
}

/// The text a line of progress shows, made safe for a terminal; nothing for a position or the
/// end (without a bar they are not shown).
pub fn plain_line(event: &Progress<'_>) -> Option<String> {
    match event {
        Progress::Line(text) | Progress::Notice(text) => {
            Some(crate::text::for_terminal(text).into_owned())
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

/// What `-q/--quiet` keeps: the notices (where work was saved, what recovery did), not the
/// news of a run going well nor its bar.
pub fn shown_when_quiet(event: &Progress<'_>) -> bool {
    matches!(event, Progress::Notice(_) | Progress::Finished)
}

impl ProgressSink for TerminalProgress {
    fn report(&self, event: Progress<'_>) {
        if crate::output::quiet() && !shown_when_quiet(&event) {
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
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(crate::text::for_terminal(current).into_owned());
            }
            (Progress::Waiting { until, left_secs }, _) if self.bar_allowed => {
                let bar = bar.get_or_insert_with(TerminalProgress::new_bar);
                bar.set_message(match left_secs {
                    0 => String::new(),
                    left => format!(
                        "paused by a usage limit: {} left (until {})",
                        countdown(left),
                        crate::text::for_terminal(until)
                    ),
                });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::progress::{Event, Recorded, Reporter};
    use std::rc::Rc;

    #[test]
    fn a_line_is_shown_made_safe_and_positions_only_on_a_bar() {
        assert_eq!(
            plain_line(&Progress::Line("Chunk 1-1 done ✓ \u{1b}[2J")).as_deref(),
            Some(crate::text::for_terminal("Chunk 1-1 done ✓ \u{1b}[2J").as_ref())
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
