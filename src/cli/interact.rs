//! Questions on a terminal, and the rule for when runner may ask at all. Only the front end
//! asks: operations and the engine get their answers through `engine::run::ask::Asker`.
//!
//! runner asks only when stdin and stderr are both terminals and no `--yes`/`--auto-continue`
//! says not to. inquire would otherwise still reach `/dev/tty` with stdin redirected, so the
//! check is done here, before any question.

use std::io::IsTerminal;

use runner::error::RunnerError;

pub fn can_ask() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Esc or Ctrl-C at a question: a clean cancel (exit 130), nothing changed, and it says so
/// (not "interrupted … resume", which is for a run that was working).
pub fn cancelled(e: inquire::InquireError) -> anyhow::Error {
    match e {
        inquire::InquireError::OperationCanceled | inquire::InquireError::OperationInterrupted => {
            RunnerError::Cancelled.into()
        }
        other => anyhow::anyhow!("asking on the terminal: {other}"),
    }
}

pub fn confirm(question: &str) -> anyhow::Result<bool> {
    ask(|| inquire::Confirm::new(question).with_default(false).prompt())
}

/// Ask one question. While it is open, SIGINT, SIGTERM and SIGHUP cancel it: the terminal is
/// put back, "cancelled; nothing was changed" is said and runner exits 130. (The question
/// blocks the only thread that would otherwise see the signal, which was swallowed: the
/// question went on waiting and, answered, started a session.)
pub fn ask<T>(question: impl FnOnce() -> inquire::error::InquireResult<T>) -> anyhow::Result<T> {
    question_signals::open();
    let answer = question();
    question_signals::close();
    answer.map_err(cancelled)
}

mod question_signals {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, Ordering};

    static OPEN: AtomicBool = AtomicBool::new(false);
    /// The terminal's mode before the question (raw mode is the question's own).
    static TERMINAL: OnceLock<Option<libc::termios>> = OnceLock::new();
    static INSTALLED: OnceLock<()> = OnceLock::new();

    pub(super) fn open() {
        TERMINAL.get_or_init(|| {
            let mut t = std::mem::MaybeUninit::<libc::termios>::zeroed();
            // SAFETY: tcgetattr writes a termios into the buffer or fails.
            (unsafe { libc::tcgetattr(0, t.as_mut_ptr()) } == 0).then(|| unsafe { t.assume_init() })
        });
        INSTALLED.get_or_init(|| {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                // SAFETY: the action only does async-signal-safe things: atomics, tcsetattr,
                // write, _exit, signal and raise.
                let _ = unsafe { signal_hook_registry::register(sig, move || on_signal(sig)) };
            }
        });
        OPEN.store(true, Ordering::SeqCst);
    }

    pub(super) fn close() {
        OPEN.store(false, Ordering::SeqCst);
    }

    fn on_signal(sig: libc::c_int) {
        if OPEN.load(Ordering::SeqCst) {
            if let Some(Some(t)) = TERMINAL.get() {
                // SAFETY: async-signal-safe calls on our own descriptors.
                unsafe { libc::tcsetattr(0, libc::TCSANOW, t) };
            }
            let msg = b"\x1b[?25h\nrunner: cancelled; nothing was changed\n";
            // SAFETY: as above; _exit skips every destructor (nothing was changed).
            unsafe {
                libc::write(2, msg.as_ptr().cast(), msg.len());
                libc::_exit(130);
            }
        } else if !runner::agent::Interrupt::listening(sig) {
            // Nobody else handles it: what the signal would have done without this action.
            // SAFETY: signal and raise are async-signal-safe.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
        }
    }
}

/// Refuse to go on without a terminal: name the flag that answers the question.
pub fn needs_flag(what: &str, flag: &str) -> anyhow::Error {
    RunnerError::bad_input(format!(
        "{what} needs a confirmation and there is no terminal to ask on"
    ))
    .with_hint(format!("pass {flag} to {what} without a question"))
    .into()
}
