//! Colour for people, plain text for everything else. `--color auto|always|never` is read once
//! (`init`); `auto` colours a stream only when it is a terminal, `NO_COLOR` (non-empty) turns
//! colour off unless `--color always`, and `TERM=dumb` gets none either.
//!
//! Renderers ask for a `Style` for the stream they write to (`for_stdout`, `for_stderr`) and wrap
//! the parts a person scans for: ✓ green, ✗ red, headers bold, details dim, a diff's lines.
//! Text is made safe for the terminal (`text::for_terminal`) *before* it is wrapped here, so
//! the only escapes on the screen are the ones added here.

use std::io::IsTerminal;
use std::sync::OnceLock;

/// The value of `--color`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when the output is a terminal and NO_COLOR is not set.
    #[default]
    Auto,
    /// Always colour, even into a pipe or with NO_COLOR.
    Always,
    /// Never colour.
    Never,
}

static CHOICE: OnceLock<ColorChoice> = OnceLock::new();
static STDOUT: OnceLock<Style> = OnceLock::new();
static STDERR: OnceLock<Style> = OnceLock::new();

/// Record `--color` (first call wins; before it, `auto` is assumed).
pub fn init(choice: ColorChoice) {
    let _ = CHOICE.set(choice);
}

/// Pure decision: does a stream get colour? `no_color` is the environment's `NO_COLOR` being
/// set and non-empty (or `TERM=dumb`), `is_terminal` whether the stream is one.
pub fn resolve(choice: ColorChoice, no_color: bool, is_terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => !no_color && is_terminal,
    }
}

fn env_forbids_colour() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
        || std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}

fn choice() -> ColorChoice {
    CHOICE.get().copied().unwrap_or_default()
}

/// The style for what goes to stdout (reports), resolved once.
pub fn for_stdout() -> Style {
    *STDOUT.get_or_init(|| Style {
        color: resolve(
            choice(),
            env_forbids_colour(),
            std::io::stdout().is_terminal(),
        ),
    })
}

/// The style for what goes to stderr (a run's progress lines, warnings), resolved once.
pub fn for_stderr() -> Style {
    *STDERR.get_or_init(|| Style {
        color: resolve(
            choice(),
            env_forbids_colour(),
            std::io::stderr().is_terminal(),
        ),
    })
}

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";

/// Whether to colour one stream; its methods return the text wrapped, or unchanged when plain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    color: bool,
}

impl Style {
    /// No colour at all (the tests of the plain text).
    #[cfg(test)]
    pub const PLAIN: Style = Style { color: false };
    /// Colour always (the tests of the coloured text).
    #[cfg(test)]
    pub const COLOR: Style = Style { color: true };

    /// Whether this stream takes colour (the log's subscriber asks, to follow `--color`).
    pub fn enabled(self) -> bool {
        self.color
    }

    fn wrap(self, code: &str, text: &str) -> String {
        if self.color && !text.is_empty() {
            format!("{code}{text}{RESET}")
        } else {
            text.to_string()
        }
    }

    /// Success: a ✓, a completed status, an added line.
    pub fn ok(self, text: &str) -> String {
        self.wrap(GREEN, text)
    }

    /// Failure: a ✗, a failed status, a removed line.
    pub fn bad(self, text: &str) -> String {
        self.wrap(RED, text)
    }

    /// Something under way or needing a look (running, interrupted).
    pub fn warn(self, text: &str) -> String {
        self.wrap(YELLOW, text)
    }

    /// Headers and names a person scans for.
    pub fn bold(self, text: &str) -> String {
        self.wrap(BOLD, text)
    }

    /// Details below a line.
    pub fn dim(self, text: &str) -> String {
        self.wrap(DIM, text)
    }

    /// A run's progress line: a leading ✓ turns green, a leading ✗ red; the rest is unchanged.
    /// For the run's progress renderer (`runner::cli::style::for_stderr().progress_line(..)`).
    pub fn progress_line(self, line: &str) -> String {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        for (mark, paint) in [
            ("✓", Style::ok as fn(Style, &str) -> String),
            ("✗", Style::bad),
        ] {
            if let Some(rest) = body.strip_prefix(mark) {
                return format!("{indent}{}{rest}", paint(self, mark));
            }
        }
        line.to_string()
    }

    /// A unified diff (`git diff` text), coloured line by line the way git does.
    pub fn diff(self, patch: &str) -> String {
        if !self.color {
            return patch.to_string();
        }
        let mut out = String::with_capacity(patch.len() + patch.len() / 8);
        for line in patch.split_inclusive('\n') {
            let (text, end) = match line.strip_suffix('\n') {
                Some(text) => (text, "\n"),
                None => (line, ""),
            };
            let painted = if text.starts_with("diff --git") || is_file_header(text) {
                self.bold(text)
            } else if text.starts_with("@@") {
                self.wrap(CYAN, text)
            } else if text.starts_with('+') {
                self.ok(text)
            } else if text.starts_with('-') {
                self.bad(text)
            } else {
                text.to_string()
            };
            out.push_str(&painted);
            out.push_str(end);
        }
        out
    }
}

fn is_file_header(line: &str) -> bool {
    [
        "--- ",
        "+++ ",
        "index ",
        "new file mode",
        "deleted file mode",
    ]
    .iter()
    .any(|p| line.starts_with(p))
}

/// Print a warning on stderr (`runner: warning: …`): the front end's sink for
/// `output::warn`, so a lower layer never prints.
pub fn print_warning(message: &str) {
    let text = runner::text::for_terminal(message);
    let label = for_stderr().warn("warning:");
    eprintln!("runner: {label} {text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_colours_only_a_terminal_without_no_color() {
        assert!(resolve(ColorChoice::Auto, false, true));
        assert!(!resolve(ColorChoice::Auto, false, false));
        assert!(!resolve(ColorChoice::Auto, true, true));
        assert!(resolve(ColorChoice::Always, true, false));
        assert!(!resolve(ColorChoice::Never, false, true));
    }

    #[test]
    fn plain_leaves_text_alone() {
        let s = Style::PLAIN;
        assert_eq!(s.ok("✓"), "✓");
        assert_eq!(s.progress_line("  ✗ c1 failed"), "  ✗ c1 failed");
        assert_eq!(s.diff("+a\n-b\n"), "+a\n-b\n");
    }

    #[test]
    fn marks_and_diff_lines_are_coloured() {
        let s = Style::COLOR;
        assert_eq!(
            s.progress_line("  ✓ c1 completed"),
            "  \x1b[32m✓\x1b[0m c1 completed"
        );
        assert_eq!(s.progress_line("  ✗ c1"), "  \x1b[31m✗\x1b[0m c1");
        assert_eq!(s.progress_line("planning"), "planning");
        let d = s.diff("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n ctx");
        assert_eq!(
            d,
            "\x1b[1mdiff --git a/x b/x\x1b[0m\n\x1b[1m--- a/x\x1b[0m\n\x1b[1m+++ b/x\x1b[0m\n\
             \x1b[36m@@ -1 +1 @@\x1b[0m\n\x1b[31m-old\x1b[0m\n\x1b[32m+new\x1b[0m\n ctx"
        );
    }
}
