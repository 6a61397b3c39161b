//! SIGINT and SIGTERM, registered as soon as the sandbox starts: a signal that arrived before
//! its handler existed would end the process at once and leave the controllers orphaned.

use tokio::signal::unix::{Signal, SignalKind, signal};

/// The signals that stop the sandbox.
pub struct Shutdown {
    interrupt: Signal,
    terminate: Signal,
}

impl Shutdown {
    /// Takes over SIGINT and SIGTERM from now on.
    pub fn register() -> std::io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Waits for either signal.
    pub async fn requested(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}
