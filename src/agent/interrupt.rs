//! SIGINT, SIGTERM and SIGHUP, counted. The first asks the run to stop (the agent's group gets SIGTERM
//! and a grace period); a second one kills at once. SIGUSR1 is the runner that started this run
//! (`runner run --jobs`, `runner worker`) stopping it at once: a stop like a second Ctrl-C, told
//! in words that blame nobody's Ctrl-C (the parent says why it stopped the run).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Set once `Interrupt::install` listens (for SIGINT, SIGTERM and SIGHUP).
static LISTENING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Set by the signal handler itself, the moment a signal arrives: the task that counts signals
/// runs only when the (single-threaded) runtime gets to it, which is not before the next
/// `await`, and runner does much without one (a commit, plan writes, a session's start).
static ARRIVED: std::sync::LazyLock<Arc<std::sync::atomic::AtomicBool>> =
    std::sync::LazyLock::new(Arc::default);

/// The signals [`Interrupt::install`] handles.
const SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1];

/// The signal a runner sends a run it started to stop it at once.
pub const STOP_FROM_PARENT: libc::c_int = libc::SIGUSR1;

#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    count: Arc<AtomicUsize>,
    notify: Arc<Notify>,
    /// Seconds an agent may take to finish after the first signal, for the message saying so
    /// (0: not set, no agent is drained).
    drain_secs: Arc<AtomicU64>,
    /// This is the process's interrupt (`install`): a signal counts from the moment it arrives
    /// (`ARRIVED`), not only once the counting task ran.
    installed: bool,
    /// The stop came from the runner that started this run (SIGUSR1), not from a person.
    by_parent: Arc<std::sync::atomic::AtomicBool>,
}

impl Interrupt {
    /// Listen for SIGINT, SIGTERM, SIGHUP and SIGUSR1 for the rest of the process. Needs a tokio
    /// runtime.
    pub fn install() -> anyhow::Result<Interrupt> {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = Interrupt {
            installed: true,
            ..Interrupt::default()
        };
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        // A closed terminal (SIGHUP) is a stop like SIGTERM: drained and journaled, not a
        // death that leaves the agent's work unjudged.
        let mut hup = signal(SignalKind::hangup())?;
        let mut parent = signal(SignalKind::user_defined1())?;
        for sig in SIGNALS {
            signal_hook::flag::register(sig, Arc::clone(&ARRIVED))?;
        }
        let me = interrupt.clone();
        LISTENING.store(true, Ordering::SeqCst);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                    _ = parent.recv() => {
                        // At once, as a second Ctrl-C: counted twice.
                        me.by_parent.store(true, Ordering::SeqCst);
                        me.trigger();
                    }
                }
                me.trigger();
                // Said at once, before any waiting: the user must know what the signal did.
                // (The front end shows it: a terminal's on stderr, quietly.)
                crate::output::urgent(&me.message());
            }
        });
        Ok(interrupt)
    }

    /// Whether `install` handles `sig` (async-signal-safe: one atomic load).
    pub fn listening(sig: libc::c_int) -> bool {
        SIGNALS.contains(&sig) && LISTENING.load(Ordering::SeqCst)
    }

    /// How long the agent will be given after the first signal (for the message).
    pub fn set_drain(&self, drain: Duration) {
        self.drain_secs.store(drain.as_secs(), Ordering::SeqCst);
    }

    /// What runner says when a signal arrives, given how many arrived so far.
    pub fn message(&self) -> String {
        if self.by_parent() {
            return "runner: stopped at once by the runner that started this run; the agent is killed"
                .to_string();
        }
        match (self.count(), self.drain_secs.load(Ordering::SeqCst)) {
            (0 | 1, 0) => "runner: stopping; Ctrl-C again to stop now".to_string(),
            (0 | 1, secs) => format!(
                "runner: stopping: waiting up to {secs} s for the agent; Ctrl-C again to stop now"
            ),
            _ => "runner: stopping now (second Ctrl-C): the agent is killed".to_string(),
        }
    }

    /// A second signal arrived (or the parent's stop): the run was stopped, not drained out.
    pub fn forced(&self) -> bool {
        self.count() >= 2
    }

    /// The runner that started this run stopped it (SIGUSR1), not a person.
    pub fn by_parent(&self) -> bool {
        self.by_parent.load(Ordering::SeqCst)
    }

    pub fn trigger(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// A signal arrived (for the process's interrupt, even one the counting task has not seen
    /// yet: no new session starts after a Ctrl-C, whenever the runtime next polls).
    pub fn is_set(&self) -> bool {
        self.count() > 0 || (self.installed && ARRIVED.load(Ordering::SeqCst))
    }

    /// An interrupt that fires at the next signal after the ones seen so far: work started
    /// after the first Ctrl-C (the shutdown's own check) still stops at once on a second.
    /// Needs a tokio runtime.
    pub fn next_signal(&self) -> Interrupt {
        let next = Interrupt::default();
        let (me, fire, seen) = (self.clone(), next.clone(), self.count());
        tokio::spawn(async move {
            me.wait_beyond(seen).await;
            fire.trigger();
        });
        next
    }

    /// Resolves once at least one interrupt has arrived.
    pub async fn wait(&self) {
        self.wait_beyond(0).await
    }

    /// Resolves once more than `seen` interrupts have arrived.
    pub async fn wait_beyond(&self, seen: usize) {
        loop {
            let notified = self.notify.notified();
            if self.count() > seen {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_messages_say_what_each_signal_does() {
        let i = Interrupt::default();
        i.set_drain(Duration::from_secs(30));
        i.trigger();
        assert_eq!(
            i.message(),
            "runner: stopping: waiting up to 30 s for the agent; Ctrl-C again to stop now"
        );
        assert!(!i.forced());
        i.trigger();
        assert!(i.message().contains("stopping now"));
        assert!(i.forced());
        assert!(!i.by_parent());
        let stopped = Interrupt::default();
        stopped.by_parent.store(true, Ordering::SeqCst);
        stopped.trigger();
        stopped.trigger();
        assert!(stopped.forced());
        assert!(
            !stopped.message().contains("Ctrl-C"),
            "{}",
            stopped.message()
        );
    }
}
