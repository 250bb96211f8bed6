//! Telling someone: the `[notify]` command and the desktop notifier, each a child process run
//! as an agent is (`agent::process::run_child`): a process group of its own (a Ctrl-C on the
//! terminal reaches runner only), its stdin written from a thread of its own (a command that
//! never reads it cannot block runner), its output to a capped log, its group stopped at the
//! timeout (SIGTERM, SIGKILL 5 s later) or at a further Ctrl-C. Whatever it does, runner
//! goes on as before: a problem is one warning line (`output::warn`), never an error.
//! What to send is decided in `policy::notify`; the bell is the front end's (a progress event).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::{ChildSpec, Ended, Interrupt, run_child};
use crate::config::NotifyConfig;
use crate::policy::notify::{Desktop, Payload, desktop_argv};

/// What a notify command's log keeps (its head and its tail): enough to see why it failed.
const MAX_LOG_BYTES: u64 = 64 * 1024;

/// The notify command's log, in the spec's folder: the last call's output.
pub const LOG_FILE: &str = "notify.log";

/// The desktop notifier's log, beside it.
const DESKTOP_LOG_FILE: &str = "notify-desktop.log";

/// Send `payload` by the command and the desktop notifier `config` names (when it wants the
/// event): the command runs in `root` (the repository's root), its output goes to the log in
/// `log_dir` (the spec's folder). Returns when both are done or stopped: at most the timeout
/// each (and their grace), or at once after a further signal to `interrupt`.
pub async fn send(
    config: &NotifyConfig,
    payload: &Payload,
    root: &Path,
    log_dir: &Path,
    interrupt: &Interrupt,
) {
    if !config.wants(payload.event) {
        return;
    }
    if let Some(command) = &config.command {
        let argv = vec!["sh".to_string(), "-c".to_string(), command.clone()];
        let log = log_dir.join(LOG_FILE);
        let child = Child {
            argv,
            stdin: Some(payload.json()),
            env: payload.env(),
            log,
        };
        if let Some(problem) = run(&child, config.timeout(), root, interrupt).await {
            crate::output::warn(&format!(
                "the notify command {problem}; the run's outcome is unchanged (its output: {})",
                child.log.display()
            ));
        }
    }
    if config.desktop {
        desktop(config, payload, root, log_dir, interrupt).await;
    }
}

/// The desktop notification, where a desktop can show one; nothing (a debug line) where not.
async fn desktop(
    config: &NotifyConfig,
    payload: &Payload,
    root: &Path,
    log_dir: &Path,
    interrupt: &Interrupt,
) {
    let found = this_desktop();
    let Some(argv) = desktop_argv(&found, payload) else {
        tracing::debug!(?found, "no desktop notification: nothing here can show one");
        return;
    };
    let child = Child {
        argv,
        stdin: None,
        env: Vec::new(),
        log: log_dir.join(DESKTOP_LOG_FILE),
    };
    if let Some(problem) = run(&child, config.timeout(), root, interrupt).await {
        crate::output::warn(&format!(
            "the desktop notification ({}) {problem} (its output: {})",
            child.argv[0],
            child.log.display()
        ));
    }
}

/// What this machine has to show a desktop notification with.
fn this_desktop() -> Desktop {
    if cfg!(target_os = "macos") {
        return Desktop::MacOs;
    }
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    Desktop::Linux {
        notify_send: crate::fs::on_path("notify-send").map(|p| p.display().to_string()),
        session: set("DBUS_SESSION_BUS_ADDRESS") || set("DISPLAY") || set("WAYLAND_DISPLAY"),
    }
}

struct Child {
    argv: Vec<String>,
    stdin: Option<String>,
    env: Vec<(String, String)>,
    log: PathBuf,
}

/// Run `child` in `cwd` to its end, its timeout, or a further signal: what went wrong, in
/// words after "the notify command", or `None` when it exited 0.
async fn run(
    child: &Child,
    timeout: Duration,
    cwd: &Path,
    interrupt: &Interrupt,
) -> Option<String> {
    let spec = ChildSpec {
        argv: child.argv.clone(),
        cwd: cwd.to_path_buf(),
        env: child.env.clone(),
        stdin: child.stdin.clone(),
        log_path: child.log.clone(),
        timeout,
        // After a further Ctrl-C the person wants runner to end: no grace.
        drain: Duration::ZERO,
        max_log_bytes: MAX_LOG_BYTES,
        watch_for: None,
    };
    // The run may have ended by a signal already: only one that comes now stops the command.
    let stop = interrupt.next_signal();
    let ended = match run_child(&spec, &stop, &mut |_| {}).await {
        Ok(end) => end.ended,
        Err(e) => return Some(format!("could not start ({e:#})")),
    };
    tracing::debug!(argv = ?spec.argv, ?ended, "notification sent");
    match ended {
        Ended::Exited(0) => None,
        Ended::Exited(code) => Some(format!("exited with {code}")),
        Ended::Signaled(sig) => Some(format!("was killed by signal {sig}")),
        Ended::TimedOut => Some(format!(
            "was stopped after {} s (notify.timeout_secs)",
            timeout.as_secs()
        )),
        Ended::Interrupted { .. } => Some("was stopped by a signal to runner".to_string()),
    }
}
