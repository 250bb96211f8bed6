//! What a run shows while it works: an indicatif bar on a terminal, plain lines otherwise.

use std::cell::Cell;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Reporter {
    bar: Option<ProgressBar>,
    /// The bar is drawn once the plan's size is known; before that lines go straight to stderr.
    shown: Cell<bool>,
}

impl Reporter {
    /// A bar only when stderr is a terminal.
    pub fn new() -> Reporter {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} chunks  {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        Reporter {
            bar,
            shown: Cell::new(false),
        }
    }

    /// A line of the run's progress. Its plan and agent text is made safe for the terminal
    /// here (`text::for_terminal`), the one place every progress line goes through.
    pub fn line(&self, msg: impl AsRef<str>) {
        let msg = crate::text::for_terminal(msg.as_ref());
        match &self.bar {
            Some(bar) if self.shown.get() => bar.println(msg.as_ref()),
            _ => eprintln!("{msg}"),
        }
    }

    pub fn progress(&self, done: usize, total: usize, current: &str) {
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(crate::text::for_terminal(current).into_owned());
            if !self.shown.replace(true) {
                bar.set_draw_target(ProgressDrawTarget::stderr());
                bar.enable_steady_tick(Duration::from_millis(200));
            }
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Default for Reporter {
    fn default() -> Self {
        Reporter::new()
    }
}
