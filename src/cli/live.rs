//! One run's bars on a terminal, under the lines it prints: the plan's bar once its size is
//! known, and while an agent session runs a spinner naming the session (planning, a chunk and
//! its attempt, recovery) with its elapsed time, and under it ONE line: the agent's latest
//! activity, made safe (`text::for_terminal`) and cut to the terminal's width (indicatif's
//! `{wide_msg}`, measured again at each draw, so a resized terminal is followed). A single run
//! and each job of `run --jobs` (named by its spec) have one of these.

use std::time::{Duration, SystemTime};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use runner::engine::progress::Progress;

/// The plan's bar of a run, and one of `run --jobs`'s (with its spec as the prefix);
/// `{chunks}` is the noun for the plan's size.
const BAR: &str = "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {chunks}  {msg}";
const JOB_BAR: &str = "{spinner} {prefix} [{elapsed_precise}] {bar:20} {pos}/{len} {chunks}  {msg}";
/// A session's spinner: its name (after the spec, for a job) and how long it has run; under
/// it the agent's latest activity, as wide as the terminal.
const SESSION: &str = "{spinner} {prefix} [{elapsed_precise}]\n  {wide_msg}";
/// How often a spinner turns and its elapsed time is drawn again.
const TICK: Duration = Duration::from_millis(250);
/// The activity line before the agent printed anything.
const NO_OUTPUT: &str = "(no output yet)";

/// `template` for a plan of `total` chunks: "1/1 chunk", "0/3 chunks".
fn bar_style(template: &str, total: usize) -> ProgressStyle {
    let template = template.replace("{chunks}", &runner::text::noun(total, "chunk"));
    ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar())
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

/// The agent's activity as its line shows it: safe for the terminal, and one line (a tab or a
/// newline would break the drawing of the bars).
pub fn activity_text(raw: &str) -> String {
    let safe = runner::text::for_terminal(raw).replace(['\n', '\t'], " ");
    match safe.trim() {
        "" => NO_OUTPUT.to_string(),
        text => text.to_string(),
    }
}

/// What a session's spinner is named: its label, after the spec for a job; made safe.
pub fn session_name(spec: Option<&str>, label: &str) -> String {
    let label = runner::text::for_terminal(label).replace(['\n', '\t'], " ");
    match spec {
        Some(spec) => format!("{spec} {label}"),
        None => label,
    }
}

/// One run's bars in a [`MultiProgress`].
pub struct RunBars {
    /// The spec a job's bars name, made safe; `None` for a single run.
    spec: Option<String>,
    /// The plan's bar.
    bar: Option<ProgressBar>,
    /// The session under way: its spinner and activity line.
    session: Option<ProgressBar>,
}

impl RunBars {
    pub fn new(spec: Option<String>) -> RunBars {
        RunBars {
            spec,
            bar: None,
            session: None,
        }
    }

    /// The spec a job's bars name.
    pub fn spec(&self) -> Option<&str> {
        self.spec.as_deref()
    }

    /// Show `event` if the bars show it, and say whether they did (a line of news is printed
    /// by the caller, above the bars).
    pub fn show(&mut self, multi: &MultiProgress, event: &Progress<'_>) -> bool {
        match *event {
            Progress::Position {
                done,
                total,
                current,
            } => {
                let template = self.bar_template();
                let bar = self.plan_bar(multi);
                if bar.length() != Some(total as u64) {
                    bar.set_style(bar_style(template, total));
                }
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(runner::text::for_terminal(current).into_owned());
            }
            Progress::Waiting { until, left_secs } => {
                self.plan_bar(multi)
                    .set_message(waiting_message(until, left_secs));
            }
            Progress::SessionStarted { label, started } => {
                self.end_session(multi);
                let elapsed = SystemTime::now()
                    .duration_since(started)
                    .unwrap_or_default();
                let spinner = ProgressBar::new_spinner()
                    .with_style(
                        ProgressStyle::with_template(SESSION)
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    )
                    .with_prefix(session_name(self.spec.as_deref(), label))
                    .with_message(NO_OUTPUT)
                    .with_elapsed(elapsed);
                let spinner = match &self.bar {
                    Some(bar) => multi.insert_after(bar, spinner),
                    None => multi.add(spinner),
                };
                spinner.enable_steady_tick(TICK);
                self.session = Some(spinner);
            }
            Progress::Activity(text) => {
                if let Some(session) = &self.session {
                    session.set_message(activity_text(text));
                }
            }
            Progress::SessionEnded => self.end_session(multi),
            Progress::Finished => {
                self.end_session(multi);
                if let Some(bar) = self.bar.take() {
                    bar.finish_and_clear();
                    multi.remove(&bar);
                }
            }
            Progress::Line(_) | Progress::Notice(_) | Progress::Bell => return false,
        }
        true
    }

    fn bar_template(&self) -> &'static str {
        match self.spec {
            Some(_) => JOB_BAR,
            None => BAR,
        }
    }

    /// The plan's bar, made (above the session's spinner, if one is shown) when first needed.
    fn plan_bar(&mut self, multi: &MultiProgress) -> &ProgressBar {
        let template = self.bar_template();
        let (spec, session) = (&self.spec, &self.session);
        self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::new(0).with_style(bar_style(template, 0));
            let bar = match session {
                Some(session) => multi.insert_before(session, bar),
                None => multi.add(bar),
            };
            bar.set_prefix(spec.clone().unwrap_or_default());
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        })
    }

    fn end_session(&mut self, multi: &MultiProgress) {
        if let Some(session) = self.session.take() {
            session.finish_and_clear();
            multi.remove(&session);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_text_reaches_the_activity_line_safe_and_on_one_line() {
        let shown = activity_text("\u{1b}[2J\u{1b}]0;pwned\u{7}editing\tsrc/lib.rs\nnow");
        assert!(!shown.contains('\u{1b}'), "{shown}");
        assert!(!shown.contains('\u{7}'), "{shown}");
        assert!(!shown.contains(['\n', '\t']), "{shown}");
        assert!(shown.ends_with("editing src/lib.rs now"), "{shown}");
        assert_eq!(activity_text("  "), NO_OUTPUT);
        assert_eq!(
            session_name(Some("010-a"), "1-2 (attempt 2)\u{1b}[2J"),
            "010-a 1-2 (attempt 2)\\u{1b}[2J"
        );
        assert_eq!(session_name(None, "planning"), "planning");
    }

    /// A terminal `width` columns wide that keeps every piece of text drawn on it.
    #[derive(Debug, Clone)]
    struct Drawn {
        width: u16,
        text: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    }

    impl indicatif::TermLike for Drawn {
        fn width(&self) -> u16 {
            self.width
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(s)
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            if !s.is_empty() {
                self.text.lock().unwrap().push(s.to_string());
            }
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Drawn {
        /// The index of the last piece drawn that `matches`, and the piece.
        fn last(&self, matches: impl Fn(&str) -> bool) -> Option<(usize, String)> {
            let text = self.text.lock().unwrap();
            let at = text.iter().rposition(|s| matches(s))?;
            Some((at, text[at].clone()))
        }
    }

    #[test]
    fn a_session_is_drawn_with_its_name_elapsed_time_and_activity_cut_to_the_width() {
        let term = Drawn {
            width: 40,
            text: Default::default(),
        };
        let multi = MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::term_like(
            Box::new(term.clone()),
        ));
        let mut bars = RunBars::new(None);
        let started = SystemTime::now() - Duration::from_secs(75);
        let start = Progress::SessionStarted {
            label: "planning",
            started,
        };
        assert!(bars.show(&multi, &start));
        let long = format!("editing src/lib.rs now {}", "x".repeat(100));
        assert!(bars.show(&multi, &Progress::Activity(&long)));
        assert!(!bars.show(&multi, &Progress::Line("a line")));
        bars.session.as_ref().unwrap().tick();
        let (_, name) = term.last(|s| s.contains("planning")).unwrap();
        assert!(name.contains("planning [00:01:1"), "{name}");
        let (_, activity) = term.last(|s| s.contains("editing")).unwrap();
        assert!(
            activity.starts_with("  editing src/lib.rs now x"),
            "{activity}"
        );
        assert!(
            activity.chars().count() <= 40,
            "cut to the width: {activity}"
        );
        // The plan's bar comes above the session's spinner; the end clears both.
        bars.show(
            &multi,
            &Progress::Position {
                done: 1,
                total: 3,
                current: "1-2",
            },
        );
        bars.session.as_ref().unwrap().tick();
        let (bar_at, _) = term.last(|s| s.contains("1/3 chunks")).unwrap();
        let (name_at, _) = term.last(|s| s.contains("planning")).unwrap();
        assert!(bar_at < name_at, "{:?}", term.text.lock().unwrap());
        bars.show(&multi, &Progress::SessionEnded);
        assert!(bars.session.is_none());
        assert!(bars.bar.is_some());
        bars.show(&multi, &Progress::Finished);
        assert!(bars.bar.is_none());
    }
}
