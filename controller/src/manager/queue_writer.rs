//! Keeps the status of the manager's AdmissionChecks, ClusterQueues and LocalQueues current.
//! It runs after reconciles report a change (batched), and every 30 s in case a change was
//! missed. It writes only what differs from the cached objects.

use std::sync::Arc;
use std::time::Duration;

use baton_crds::AdmissionCheck;
use chrono::Utc;
use kube::Client;
use kube::api::Api;
use tokio::sync::Notify;

use super::queues::{QueueObjects, check_activity, check_statuses, queue_activity};
use super::stores::ManagerStores;
use crate::queue_status::{self, Attribution, QueueInputs, patch_status, queue_statuses};

/// How long changes gather before one recomputation.
const BATCH: Duration = Duration::from_millis(100);
const RESYNC: Duration = Duration::from_secs(30);

/// Runs until the process stops.
pub async fn keep_queue_status(client: Client, stores: ManagerStores, changed: Arc<Notify>) {
    stores.synced().await;
    loop {
        write_changes(&client, &stores).await;
        let _ = tokio::time::timeout(RESYNC, changed.notified()).await;
        tokio::time::sleep(BATCH).await;
    }
}

async fn write_changes(client: &Client, stores: &ManagerStores) {
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
    let now = Utc::now();
    let checks_active = check_activity(&objects);
    for (name, status) in check_statuses(&checks, &checks_active, now) {
        patch_status(Api::<AdmissionCheck>::all(client.clone()), &name, &status).await;
    }
    let activity = queue_activity(&cluster_queues, &checks_active);
    let statuses = queue_statuses(
        &QueueInputs {
            workloads: &stores.workloads.state(),
            cluster_queues: &cluster_queues,
            local_queues: &stores.local_queues.state(),
            activity: &activity,
            attribution: Attribution::LocalQueue,
        },
        now,
    );
    queue_status::write(client, statuses).await;
}
