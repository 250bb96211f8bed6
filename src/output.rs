//! Output choices the front end makes once per process (`-q/--quiet`) and the one way a lower
//! layer hands the front end a warning, so that no layer below `cli/` prints.
//!
//! Cheap to ask from anywhere (an atomic load): the run's progress renderer checks `quiet()`
//! before each informational line.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

static QUIET: AtomicBool = AtomicBool::new(false);
static VERBOSITY: AtomicU8 = AtomicU8::new(0);
static WARNING_SINK: OnceLock<fn(&str)> = OnceLock::new();
static URGENT_SINK: OnceLock<fn(&str)> = OnceLock::new();
/// The warnings given so far: a config read twice in one run warns once.
static WARNED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Set by the front end from `-q/--quiet` before any command runs.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Set by the front end from `-v/--verbose` (how many times it was given).
pub fn set_verbosity(n: u8) {
    VERBOSITY.store(n, Ordering::Relaxed);
}

/// How many times `-v/--verbose` was given (what runner's own child runs are given too).
pub fn verbosity() -> u8 {
    VERBOSITY.load(Ordering::Relaxed)
}

/// `-q/--quiet` was given: print no progress or informational line on stderr (errors, warnings
/// and the reports on stdout are unchanged).
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Where `warn` sends its lines; set once by the front end (later calls are ignored).
pub fn set_warning_sink(sink: fn(&str)) {
    let _ = WARNING_SINK.set(sink);
}

/// Where `urgent` sends its lines; set once by the front end (later calls are ignored).
pub fn set_urgent_sink(sink: fn(&str)) {
    let _ = URGENT_SINK.set(sink);
}

/// A line the person must see at once, from any thread, even with `--quiet`: what a signal
/// just did (the run's progress sink is not `Send`, and the news must not wait for the run's
/// thread). Without a sink it goes to the log.
pub fn urgent(message: &str) {
    match URGENT_SINK.get() {
        Some(sink) => sink(message),
        None => tracing::warn!("{message}"),
    }
}

/// A warning for the person (an unknown config key): shown even with `--quiet`, never an
/// error; each message once per process. Without a sink (the library used on its own) it goes
/// to the log.
pub fn warn(message: &str) {
    if let Ok(mut warned) = WARNED.lock() {
        if warned.iter().any(|w| w == message) {
            return;
        }
        warned.push(message.to_string());
    }
    match WARNING_SINK.get() {
        Some(sink) => sink(message),
        None => tracing::warn!("{message}"),
    }
}
