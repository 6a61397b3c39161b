//! Leader election on a Lease (kube-lease-manager): only the holder writes. A replica
//! waits here until it leads; if it ever loses the lease it stops (the pod restarts and
//! queues up again), so two replicas never act at once.

use std::time::Duration;

use kube::Client;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use std::sync::Arc;

use crate::config::{Configuration, LeaderElectionConfig};
use crate::http::{Readiness, serve_operations};
use crate::metrics::Metrics;

/// The lease, held.
pub struct Leadership {
    state: watch::Receiver<bool>,
    task: JoinHandle<kube_lease_manager::Result<LeaseManager>>,
}

/// This replica's identity: the pod name when running in a pod, else host and process.
fn identity() -> String {
    std::env::var("POD_NAME").unwrap_or_else(|_| {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "baton".into());
        format!("{host}-{}", std::process::id())
    })
}

/// Waits until this replica holds the lease; `None` when leader election is disabled. While
/// it waits, the replica reports itself ready (a standby is healthy) and becomes not ready
/// again once it leads, until its caches sync.
pub async fn acquire(
    client: Client,
    config: &LeaderElectionConfig,
    default_name: &str,
    namespace: &str,
    ready: &Readiness,
) -> anyhow::Result<Option<Leadership>> {
    if !config.enabled {
        return Ok(None);
    }
    let name = config
        .lease_name
        .clone()
        .unwrap_or_else(|| default_name.to_string());
    let duration = config.lease_duration.as_secs().max(1);
    let grace = duration
        .saturating_sub(config.renew_deadline.as_secs())
        .clamp(1, duration.saturating_sub(1).max(1));
    let identity = identity();
    let manager = LeaseManagerBuilder::new(client, &name)
        .with_namespace(namespace)
        .with_identity(&identity)
        .with_duration(duration)
        .with_grace(grace)
        .build()
        .await
        .map_err(|e| anyhow::anyhow!("cannot use Lease {namespace}/{name}: {e}"))?;
    let (mut state, task) = manager.watch().await;
    ready.set_ready();
    tracing::info!(lease = %format!("{namespace}/{name}"), %identity, "waiting for leadership");
    while !*state.borrow_and_update() {
        state
            .changed()
            .await
            .map_err(|_| anyhow::anyhow!("leader election stopped before this replica led"))?;
    }
    ready.set_not_ready();
    tracing::info!(lease = %format!("{namespace}/{name}"), %identity, "leading");
    Ok(Some(Leadership { state, task }))
}

impl Leadership {
    /// Resolves when the lease is lost.
    pub async fn lost(&mut self) {
        loop {
            if self.state.changed().await.is_err() || !*self.state.borrow() {
                return;
            }
        }
    }

    /// Gives the lease up so a standby takes over at once instead of after it expires.
    pub async fn release(self) {
        drop(self.state);
        match tokio::time::timeout(Duration::from_secs(5), self.task).await {
            Ok(Ok(Ok(_))) => tracing::info!("lease released"),
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "cannot release the lease"),
            Ok(Err(e)) => tracing::warn!(error = %e, "lease task failed"),
            Err(_) => tracing::warn!("lease release timed out"),
        }
    }
}

/// What every controller starts with: metrics, readiness, the operations endpoints, and the
/// lease (when leader election is on, this returns only once this replica leads).
pub struct Started {
    pub metrics: Arc<Metrics>,
    pub ready: Readiness,
    pub leadership: Option<Leadership>,
}

/// Serves `/metrics`, `/livez`, `/readyz`, then waits for the Lease `default_lease` (unless
/// the configuration names another) in `namespace`.
pub async fn start(
    client: Client,
    config: &Configuration,
    default_lease: &str,
    namespace: &str,
) -> anyhow::Result<Started> {
    let metrics = Arc::new(Metrics::with_role(
        crate::metrics::ReplicaRole::under_election(config.leader_election.enabled),
    ));
    let ready = Readiness::default();
    serve_operations(
        &config.metrics_bind_address,
        &config.health_probe_bind_address,
        metrics.clone(),
        ready.clone(),
    )
    .await?;
    let leadership = acquire(
        client,
        &config.leader_election,
        default_lease,
        namespace,
        &ready,
    )
    .await?;
    Ok(Started {
        metrics,
        ready,
        leadership,
    })
}

/// Waits for either leadership loss (if leading under election) or forever.
pub async fn lost(leadership: &mut Option<Leadership>) {
    match leadership {
        Some(l) => l.lost().await,
        None => std::future::pending().await,
    }
}
