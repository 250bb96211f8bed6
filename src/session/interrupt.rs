//! SIGINT and SIGTERM, counted. The first asks the run to stop (the agent's group gets SIGTERM
//! and a grace period); a second one kills at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    count: Arc<AtomicUsize>,
    notify: Arc<Notify>,
}

impl Interrupt {
    /// Listen for SIGINT and SIGTERM for the rest of the process. Needs a tokio runtime.
    pub fn install() -> anyhow::Result<Interrupt> {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = Interrupt::default();
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        let me = interrupt.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
                me.trigger();
            }
        });
        Ok(interrupt)
    }

    pub fn trigger(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    pub fn is_set(&self) -> bool {
        self.count() > 0
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
