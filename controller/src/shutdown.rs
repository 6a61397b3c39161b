//! Termination signals: SIGTERM (what the kubelet sends) and Ctrl-C. The handlers are
//! installed when [`Shutdown::install`] is called, so a signal that arrives at any later
//! moment is seen, however busy the process is.

use tokio::sync::watch;

/// Whether the process was asked to stop; cheap to clone and await from several places.
#[derive(Clone)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
    /// Installs the signal handlers now. Must be called inside the Tokio runtime.
    pub fn install() -> std::io::Result<Self> {
        let (tx, rx) = watch::channel(false);
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let mut term = signal(SignalKind::terminate())?;
            let mut interrupt = signal(SignalKind::interrupt())?;
            tokio::spawn(async move {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = interrupt.recv() => {}
                }
                tracing::info!("termination requested; finishing in-flight work");
                let _ = tx.send(true);
            });
        }
        #[cfg(not(unix))]
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("termination requested; finishing in-flight work");
            let _ = tx.send(true);
        });
        Ok(Shutdown(rx))
    }

    /// Resolves once a stop was requested.
    pub async fn requested(mut self) {
        // An error means the signal task is gone: nothing will ever ask us to stop.
        if self.0.wait_for(|stop| *stop).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
