//! Keeps the status of the manager's AdmissionChecks current (their `Active` condition), and
//! tells the admission loop, which keeps the ClusterQueues' and LocalQueues' status and holds
//! a queue inactive while its check is. It runs after reconciles report a change (batched),
//! and every 30 s in case a change was missed. It writes only what differs from the cached
//! objects.

use std::sync::Arc;
use std::time::Duration;

use baton_crds::AdmissionCheck;
use chrono::Utc;
use kube::Client;
use kube::api::Api;
use tokio::sync::Notify;
use tokio::sync::mpsc::UnboundedSender;

use crate::manager::plan::queues::{QueueObjects, check_activity, check_statuses};
use crate::manager::shell::stores::ManagerStores;
use crate::queue_status::patch_status;

/// How long changes gather before one recomputation.
const BATCH: Duration = Duration::from_millis(100);
const RESYNC: Duration = Duration::from_secs(30);

/// Runs until the process stops.
pub async fn keep_queue_status(
    client: Client,
    stores: ManagerStores,
    changed: Arc<Notify>,
    admission_wake: UnboundedSender<()>,
) {
    stores.synced().await;
    loop {
        if write_changes(&client, &stores).await {
            let _ = admission_wake.send(());
        }
        let _ = tokio::time::timeout(RESYNC, changed.notified()).await;
        tokio::time::sleep(BATCH).await;
    }
}

/// Writes the checks' changed statuses; returns whether any changed.
async fn write_changes(client: &Client, stores: &ManagerStores) -> bool {
    let checks = stores.admission_checks.state();
    let configs = stores.configs.state();
    let clusters = stores.clusters.state();
    let cluster_queues = stores.cluster_queues.state();
    let objects = QueueObjects {
        checks: &checks,
        configs: &configs,
        clusters: &clusters,
        cluster_queues: &cluster_queues,
    };
    let changed = check_statuses(&checks, &check_activity(&objects), Utc::now());
    let any = !changed.is_empty();
    for (name, status) in changed {
        patch_status(Api::<AdmissionCheck>::all(client.clone()), &name, &status).await;
    }
    any
}
